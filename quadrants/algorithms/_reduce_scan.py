"""qd.algorithms.reduce_{add,min,max} and exclusive_scan_{add,min,max}, and their scratch sizes.

The reductions are kernel-scope builtins: each call lowers to a top_level template of
quadrants/templates/alg_reduce.qir (the rows of csrc/frontend/algorithms.def, checked and
expanded by csrc/frontend/lower_algorithm.c). The scans stage their per-tile partials in the
caller's scratch buffer (u32 for 4-byte dtypes, u64 for 8-byte ones, the partials bit-cast to and
from the element dtype); see _common.py for the staircase (the plain CPU) and scan_lookback (GPUs
and cpu_simt).
"""

import quadrants as qd
from quadrants import _core
from quadrants._builtins import _add_binder, _kernel_only
from quadrants.algorithms import _common as c


def _define(namespace):
    """Defines the ops of csrc/frontend/algorithms.def in namespace."""
    for name, signature, doc in _core.ALGORITHMS:
        builtin = _kernel_only(f"algorithms.{name}", doc, signature)
        builtin.__name__ = builtin.__qualname__ = name
        _add_binder(builtin)
        namespace[name] = builtin


_define(globals())


def _scratch_dtype_check(dtype, what):
    c.check_scalar_dtype(dtype, what)
    return True


def _make_scan(op_name):
    op, kind = c.OPS[op_name]
    name = f"exclusive_scan_{op_name}"

    @qd.func(requires_top_level=True)
    def exclusive_scan(arr: qd.template(), out: qd.template(), scratch: qd.template(), n: qd.i32,
                       dtype: qd.template(), log256_max_n: qd.template()):
        qd.static(c.check_depth(log256_max_n))
        qd.static(_scratch_dtype_check(dtype, name))
        qd.static(c.check_distinct(arr, out, name))
        c.exclusive_scan(arr, False, out, False, scratch, 0, n, log256_max_n, op, kind, dtype)

    exclusive_scan.__name__ = exclusive_scan.__qualname__ = name
    return exclusive_scan


exclusive_scan_add = _make_scan("add")
exclusive_scan_min = _make_scan("min")
exclusive_scan_max = _make_scan("max")
