"""The *_scratch_slots helpers: how many scratch slots each op needs for n elements.

Plain integer arithmetic, callable from Python scope (n an int; the depth may be omitted, then the
smallest one that covers n is used) and from kernels (n a runtime i32, the depth a compile-time
int), where a kernel can compare the result with ``scratch.shape[0]`` without reading n back.
Every helper returns at least 1 so that its result can size an allocation directly.
"""

import quadrants as qd
from quadrants.algorithms import _common as c

B = c.BLOCK_DIM


def _depth(n, log256_max_n):
    if log256_max_n is None:
        return c.check_depth(c.depth_for(n))
    return c.check_depth(log256_max_n)


@qd.pyfunc
def _ceil(x):
    return (x + (B - 1)) // B


@qd.pyfunc
def _at_least_one(s):
    return s + (s < 1)


@qd.pyfunc
def _levels(t, cur):
    # the partial levels above a first level of t tiles; a level of one slot is not stored
    for _ in qd.static(range(8)):
        t = _ceil(t)
        cur = cur + t * (t > 1)
    return cur


@qd.pyfunc
def reduce_scratch_slots(n, log256_max_n: qd.template() = None):
    """Slots of the u32 (4-byte dtypes) or u64 (8-byte) scratch of reduce_{add,min,max}."""
    depth = qd.static(_depth(n, log256_max_n))
    s = 0
    m = n
    for _ in qd.static(range(depth - 1)):
        m = _ceil(m)
        s = s + m
    return _at_least_one(s)


@qd.pyfunc
def exclusive_scan_scratch_slots(n, log256_max_n: qd.template() = None):
    """Slots of the u32 (4-byte dtypes) or u64 (8-byte) scratch of exclusive_scan_{add,min,max}."""
    depth = qd.static(_depth(n, log256_max_n))
    m = _ceil(n)
    s = m
    for _ in qd.static(range(depth - 2)):
        m = _ceil(m)
        s = s + m
    if qd.static(depth <= 1):
        s = 1
    return _at_least_one(s)


@qd.pyfunc
def sort_scratch_slots(n, log256_max_n: qd.template() = None):
    """Slots of sort's u32 scratch: the per-tile digit histograms and the partials of their scan
    (on a GPU: digit totals, a counter and a status word per tile and digit, within it)."""
    depth = qd.static(_depth(n, log256_max_n))
    m = _ceil(n) * B
    s = m
    for _ in qd.static(range(depth - 1)):
        m = _ceil(m)
        s = s + m
    return _at_least_one(s)


@qd.pyfunc
def select_scratch_slots(n):
    """Slots of select's u32 scratch: the write index of every element and the scan's partials."""
    b0 = _ceil(n)
    s = _at_least_one(_levels(b0, n + b0))
    if n <= 0:
        s = 1
    return s


@qd.pyfunc
def reduce_by_key_scratch_slots(n):
    """Slots of reduce_by_key_add's u32 scratch: the run index of every element and the partials."""
    b0 = _ceil(n)
    s = _levels(b0, n + b0)
    if n <= B:
        s = n
    if n <= 0:
        s = 1
    return s
