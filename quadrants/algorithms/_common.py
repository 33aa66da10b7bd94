"""Shared pieces of the device-wide algorithms written in Python (select, reduce_by_key_add,
sort): the block size, the capacity and dtype checks, and which form the phases take.

The reductions and scans are IR templates (quadrants/templates/alg_*.qir, lowered by
csrc/frontend/lower_algorithm.c, which makes the same checks in C). An op is a fixed sequence of
top-level phases of the caller's kernel, so the boundaries between phases are the grid-wide
barriers the algorithms need: on a GPU (and on the CPU with ``cpu_simt=True``) a tile is a block
of 256 threads combined with the ``qd.simt.block`` collectives; on the plain CPU a tile is one
iteration of a parallel loop that walks its elements in order.
"""

import quadrants as qd
from quadrants import _runtime
from quadrants.simt import _subgroup_collectives as _sgc

BLOCK_DIM = 256
MAX_LOG256_MAX_N = 4

SCALAR_DTYPES_32 = (qd.i32, qd.u32, qd.f32)
SCALAR_DTYPES_64 = (qd.i64, qd.u64, qd.f64)

OPS = {name: _sgc.OPS[name] for name in ("add", "min", "max")}


def check_depth(log256_max_n):
    """The compile-time capacity: an int in [1, 4]."""
    if isinstance(log256_max_n, bool) or not isinstance(log256_max_n, int):
        raise TypeError(f"log256_max_n must be a compile-time int, got {log256_max_n!r}")
    if log256_max_n > MAX_LOG256_MAX_N:
        raise ValueError(
            f"log256_max_n={log256_max_n} exceeds the maximum of {MAX_LOG256_MAX_N}: tensors are "
            f"indexed by signed 32-bit integers and 256 ** {MAX_LOG256_MAX_N} == 2**32 already covers "
            f"every valid length"
        )
    if log256_max_n < 1:
        raise ValueError(f"log256_max_n must be at least 1, got {log256_max_n}")
    return log256_max_n


def depth_for(n):
    """The smallest D >= 1 with 256 ** D >= n (host only)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(
            f"the depth can only be derived from a Python int; pass log256_max_n explicitly "
            f"(got n={n!r})"
        )
    d = 1
    while BLOCK_DIM**d < n:
        d += 1
    return d


def simt():
    """Whether phases run as blocks of threads (GPU, or the CPU with cpu_simt) or as tiles walked
    by one thread each. The block code is written for subgroups of 32 lanes: on a Vulkan device
    whose subgroups have another size the tiles are walked by one thread each there too."""
    cfg = _runtime.current_cfg()
    if cfg is None or _runtime.subgroup_size() != 32:
        return False
    return cfg.arch is not _runtime.cpu or bool(cfg.cpu_simt)


def check_distinct(a, b, what):
    if a is b:
        raise ValueError(f"{what}: the output must be a different buffer from the input")
    return True
