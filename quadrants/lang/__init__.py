"""``quadrants.lang``: module names of the reference that programs reach into.

The reference keeps its implementation under ``quadrants.lang``, and programs written against it
(the Genesis physics engine among them) use a few of those internals directly: they wrap
``quadrants.lang.impl.PyQuadrants.materialize`` and ``clear`` to run code at those moments,
read ``impl.get_runtime().default_fp`` and ``impl.current_cfg()``, size shared memory with
``impl.get_max_shared_memory_bytes``, and set ``quadrants.lang._template_mapper.__builtins__``.
This package provides those names with the reference's behaviour so such programs run
unchanged; our implementation lives elsewhere (quadrants/_runtime.py, quadrants/_kernel.py).
Only what such programs use is here.
"""

from quadrants.lang import _template_mapper, impl

__all__ = ["impl"]
