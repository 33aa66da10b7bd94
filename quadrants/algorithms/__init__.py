"""``qd.algorithms``: device-wide algorithms called at the top level of a kernel.

Each op is a kernel-scope function called where a top-level statement of the kernel could stand
(like a ``@qd.func(requires_top_level=True)``): it expands into a fixed sequence of top-level
phases of the calling kernel (the phase boundaries are its grid-wide barriers; the phases are IR
templates, quadrants/templates/alg_*.qir), reads its live element count on the device and
handles any count up to ``256 ** log256_max_n``. The caller owns the scratch buffer; the
``*_scratch_slots`` helpers size it. See docs/algorithms.md.
"""

from typing import Any as _Any

from quadrants.algorithms import _ops
from quadrants.algorithms._deprecated import PrefixSumExecutor, parallel_sort
from quadrants.algorithms._sizing import (
    exclusive_scan_scratch_slots,
    reduce_by_key_scratch_slots,
    reduce_scratch_slots,
    select_scratch_slots,
    sort_scratch_slots,
)

# the ops, defined from csrc/frontend/algorithms.def (attributes of _ops, typed Any)
exclusive_scan_add: _Any = _ops.exclusive_scan_add
exclusive_scan_max: _Any = _ops.exclusive_scan_max
exclusive_scan_min: _Any = _ops.exclusive_scan_min
reduce_add: _Any = _ops.reduce_add
reduce_by_key_add: _Any = _ops.reduce_by_key_add
reduce_max: _Any = _ops.reduce_max
reduce_min: _Any = _ops.reduce_min
select: _Any = _ops.select
sort: _Any = _ops.sort

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
