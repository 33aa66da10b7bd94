"""The deprecated host-side algorithms, kept for programs written against earlier releases:
parallel_sort (Batcher's odd-even merge sort of 1-D fields, one kernel launch per stage) and
PrefixSumExecutor (an inclusive in-place prefix sum of a 1-D i32 field). New code calls sort and
exclusive_scan_add at the top level of its own kernel instead.
"""

import warnings

import quadrants as qd
from quadrants.algorithms import _ops, _sizing


@qd.kernel
def _merge_stage(keys: qd.template(), values: qd.template(), has_values: qd.template(), n: qd.i32,
                 p: qd.i32, k: qd.i32, groups: qd.i32):
    # compare-exchange pairs (a, a + k) of the stage (p, k) of the network, for
    # a = k % p + 2 k g + i, keeping only pairs inside one block of 2 p elements
    for g, i in qd.ndrange(groups, k):
        a = k % p + 2 * k * g + i
        b = a + k
        if b < n and a // (2 * p) == b // (2 * p):
            if keys[b] < keys[a]:
                keys[a], keys[b] = keys[b], keys[a]
                if qd.static(has_values):
                    values[a], values[b] = values[b], values[a]


def parallel_sort(keys, values=None):
    """Sorts the 1-D field keys ascending in place (not stable); with values, applies the same
    permutation to the 1-D field values. Deprecated: use qd.algorithms.sort."""
    warnings.warn(
        "qd.algorithms.parallel_sort is deprecated; call qd.algorithms.sort at the top level of a "
        "kernel instead (see docs/algorithms.md)",
        DeprecationWarning,
        stacklevel=2,
    )
    n = keys.shape[0]
    p = 1
    while p < n:
        k = p
        while k >= 1:
            groups = (n - k - k % p) // (2 * k) + 1
            if groups > 0:
                _merge_stage(keys, keys if values is None else values, values is not None, n, p, k,
                             groups)
            k //= 2
        p *= 2


@qd.kernel
def _inclusive_scan(arr: qd.template(), tmp: qd.template(), scratch: qd.template(), n: qd.i32,
                    depth: qd.template()):
    _ops.exclusive_scan_add(arr, tmp, scratch, n, qd.i32, depth)
    for i in range(n):
        arr[i] += tmp[i]


class PrefixSumExecutor:
    """Inclusive in-place prefix sum of 1-D i32 fields of a fixed length. Deprecated: use
    qd.algorithms.exclusive_scan_add."""

    def __init__(self, length):
        warnings.warn(
            "qd.algorithms.PrefixSumExecutor is deprecated; call qd.algorithms.exclusive_scan_add "
            "at the top level of a kernel instead (see docs/algorithms.md)",
            DeprecationWarning,
            stacklevel=2,
        )
        self.length = int(length)
        self.depth = qd.algorithms._common.depth_for(max(self.length, 1))
        self.tmp = qd.field(qd.i32, shape=max(self.length, 1))
        self.scratch = qd.field(
            qd.u32, shape=_sizing.exclusive_scan_scratch_slots(self.length, self.depth)
        )

    def run(self, input_arr):
        if input_arr.dtype != qd.i32:
            raise RuntimeError("Only qd.i32 type is supported for prefix sum.")
        _inclusive_scan(input_arr, self.tmp, self.scratch, self.length, self.depth)
