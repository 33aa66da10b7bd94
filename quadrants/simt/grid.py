"""``qd.simt.grid``: device-wide memory fences (there is no grid barrier: end the kernel)."""

from quadrants.simt._make import primitives

globals().update(primitives("grid", {
    "mem_fence": "mem_fence(): orders this thread's memory accesses as seen by the device.",
    "memfence": "memfence(): deprecated alias of mem_fence().",
}))
