"""qd.algorithms.select (stream compaction) and reduce_by_key_add (sums of runs of equal keys).

Both write a per-element index into their u32 scratch with an exclusive scan (the private
_exclusive_scan_add_into of algorithms.def, its tile states stored after the n indices) and then
scatter: select copies each flagged
element to its index; reduce_by_key zeroes each run's output slot at the run's head, then adds
every value into its run's slot.
"""

import quadrants as qd
from quadrants.algorithms import _common as c
from quadrants.algorithms._ops import _exclusive_scan_add_into as _scan_into


@qd.func
def _flag(flags: qd.template(), i):
    return qd.cast(flags[i] == 1, qd.u32)


@qd.func
def _scatter_flagged(arr: qd.template(), flags: qd.template(), out: qd.template(),
                     scratch: qd.template(), n):
    for i in range(n):
        if flags[i] == 1:
            out[qd.cast(scratch[i], qd.i32)] = arr[i]


@qd.func
def _count_flagged(flags: qd.template(), num_out: qd.template(), scratch: qd.template(), n):
    for _ in range(1):
        total = 0
        if n > 0:
            total = qd.cast(scratch[n - 1] + _flag(flags, n - 1), qd.i32)
        num_out[0] = total


@qd.func(requires_top_level=True)
def select(arr: qd.template(), flags: qd.template(), out: qd.template(), num_out: qd.template(),
           scratch: qd.template(), n: qd.i32, log256_max_n: qd.template()):
    """Stable compaction: out[0:k] = the elements arr[i] (i < n) with flags[i] == 1, in order;
    num_out[0] = k. flags is an i32 tensor of 0s and 1s; out's tail is not written."""
    qd.static(c.check_depth(log256_max_n))
    qd.static(c.check_distinct(arr, out, "select"))
    _scan_into(flags, scratch, scratch, n, n, qd.u32, log256_max_n)
    _scatter_flagged(arr, flags, out, scratch, n)
    _count_flagged(flags, num_out, scratch, n)
