"""``qd.algorithms``: device-wide algorithms called at the top level of a kernel.

Each op is a ``@qd.func(requires_top_level=True)``: it expands into a fixed sequence of top-level
phases of the calling kernel (the phase boundaries are its grid-wide barriers), reads its live
element count on the device and handles any count up to ``256 ** log256_max_n``. The caller owns
the scratch buffer; the ``*_scratch_slots`` helpers size it. See docs/algorithms.md.
"""

from quadrants.algorithms._deprecated import PrefixSumExecutor, parallel_sort
from quadrants.algorithms._ops import (
    exclusive_scan_add,
    exclusive_scan_max,
    exclusive_scan_min,
    reduce_add,
    reduce_by_key_add,
    reduce_max,
    reduce_min,
    sort,
)
from quadrants.algorithms._select import select
from quadrants.algorithms._sizing import (
    exclusive_scan_scratch_slots,
    reduce_by_key_scratch_slots,
    reduce_scratch_slots,
    select_scratch_slots,
    sort_scratch_slots,
)

__all__ = [
    "PrefixSumExecutor",
    "exclusive_scan_add",
    "exclusive_scan_max",
    "exclusive_scan_min",
    "exclusive_scan_scratch_slots",
    "parallel_sort",
    "reduce_add",
    "reduce_by_key_add",
    "reduce_by_key_scratch_slots",
    "reduce_max",
    "reduce_min",
    "reduce_scratch_slots",
    "select",
    "select_scratch_slots",
    "sort",
    "sort_scratch_slots",
]
