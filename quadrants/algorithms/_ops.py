"""The ops of qd.algorithms (reduce_*, exclusive_scan_*, select, sort, reduce_by_key_add):
kernel-scope builtins, the rows of csrc/frontend/algorithms.def.

Each call is checked and lowered by csrc/frontend/lower_algorithm.c to calls of the top_level
templates of quadrants/templates/alg_*.qir: the staircase of tiles on the plain CPU, the block
forms (one-loop grid reduce, decoupled look-back scan, radix sort passes with a look-back per
digit) where subgroups have 32 lanes. The partials, tile states and digit counts live in the
caller's scratch buffer.
"""

from typing import TYPE_CHECKING, Any

from quadrants import _core
from quadrants._builtins import _add_binder, _kernel_only

if TYPE_CHECKING:
    # The functions are defined from a table at import time (csrc/frontend/algorithms.def), which
    # type checkers cannot see: every attribute of the module is a builtin returning Any.
    def __getattr__(name: str) -> Any: ...


def _define(namespace):
    """Defines the ops of csrc/frontend/algorithms.def in namespace."""
    for name, signature, doc in _core.ALGORITHMS:
        builtin = _kernel_only(f"algorithms.{name}", doc, signature)
        builtin.__name__ = builtin.__qualname__ = name
        _add_binder(builtin)
        namespace[name] = builtin


_define(globals())
