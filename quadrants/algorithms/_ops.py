"""qd.algorithms.reduce_{add,min,max}, exclusive_scan_{add,min,max} and sort (and the index scan
of select and reduce_by_key_add): kernel-scope builtins, the rows of
csrc/frontend/algorithms.def.

Each call is checked and lowered by csrc/frontend/lower_algorithm.c to a top_level template of
quadrants/templates/alg_reduce.qir, alg_scan.qir or alg_sort.qir: the staircase of tiles on the
plain CPU, the block forms (one-loop grid reduce, decoupled look-back scan, radix sort passes
with a look-back per digit) where subgroups have 32 lanes. The partials, tile states and digit
counts live in the caller's scratch buffer.
"""

from quadrants import _core
from quadrants._builtins import _add_binder, _kernel_only


def _define(namespace):
    """Defines the ops of csrc/frontend/algorithms.def in namespace."""
    for name, signature, doc in _core.ALGORITHMS:
        builtin = _kernel_only(f"algorithms.{name}", doc, signature)
        builtin.__name__ = builtin.__qualname__ = name
        _add_binder(builtin)
        namespace[name] = builtin


_define(globals())
