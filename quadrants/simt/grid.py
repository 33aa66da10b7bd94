"""``qd.simt.grid``: ``mem_fence()``, a device-scope memory fence (``memfence()``: deprecated
alias). There is no grid barrier: end the kernel instead."""

from quadrants.simt._builtin import kernel_only

mem_fence = kernel_only("grid", "mem_fence", "mem_fence(): device-scope memory fence.")
memfence = kernel_only("grid", "memfence", "memfence(): deprecated alias of mem_fence().")

__all__ = ["mem_fence", "memfence"]
