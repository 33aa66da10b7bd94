"""The capacity checks the scratch-size helpers (and the deprecated APIs) share with the ops.

The ops themselves are IR templates (quadrants/templates/alg_*.qir), checked and lowered by
csrc/frontend/lower_algorithm.c, which makes the same depth check in C with the same message.
"""

BLOCK_DIM = 256
MAX_LOG256_MAX_N = 4


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
