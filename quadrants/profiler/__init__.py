"""``qd.profiler``: the kernel profiler (``qd.init(kernel_profiler=True)``; see
kernel_profiler.py) and the CUPTI metric descriptions it accepts (kernel_metrics.py)."""

from quadrants.profiler import kernel_metrics, kernel_profiler
from quadrants.profiler.kernel_metrics import *  # noqa: F403
from quadrants.profiler.kernel_profiler import *  # noqa: F403

__all__ = [*kernel_metrics.__all__, *kernel_profiler.__all__]
