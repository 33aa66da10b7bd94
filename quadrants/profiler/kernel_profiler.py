"""``qd.profiler.kernel_profiler``: the kernel profiler.

``qd.init(kernel_profiler=True)`` turns it on. From then on every kernel launch records, for
each of its offloaded tasks (a top-level loop, or a run of top-level statements), the task's
name and its elapsed time in milliseconds:

    <kernel>_c<id>_<specialization>_kernel_<task index>_<serial | range_for>

``<id>`` numbers the kernels of the process in the order of their first compilation and
``<specialization>`` the argument signatures (template arguments, ndarray dtypes/ranks) of one
kernel, so ``fill_c0_0_kernel_1_range_for`` is the second task of the first compiled version of
``fill``. A kernel without tasks (an empty body) records nothing.

Times: on the CPU, the wall-clock time of the task (launches are synchronous); on CUDA the
device is synchronized before the first task of a profiled launch and after each task, so a
record is the task's device time plus the launch and synchronization latency (profiling
serializes the launches; turn it off for throughput measurements).

The statistics (``'count'`` table, ``query_kernel_profiler_info``) and the ``'trace'`` table are
computed from the records on every call; ``clear_kernel_profiler_info`` drops them.
"""

import re
from contextlib import contextmanager

from quadrants import _core, _logging, _runtime
from quadrants.profiler.kernel_metrics import default_cupti_metrics


class StatisticalResult:
    """The statistics of the records of one task name: ``counter`` launches, ``min_time``,
    ``max_time`` and ``total_time`` in milliseconds. Sorted by total time."""

    def __init__(self, name):
        self.name = name
        self.counter = 0
        self.min_time = 0.0
        self.max_time = 0.0
        self.total_time = 0.0

    def __lt__(self, other):
        return self.total_time < other.total_time

    def insert_record(self, time):
        """Counts one record of `time` milliseconds."""
        if self.counter == 0:
            self.min_time = self.max_time = time
        else:
            self.min_time = min(self.min_time, time)
            self.max_time = max(self.max_time, time)
        self.counter += 1
        self.total_time += time


class KernelProfilerQueryResult:
    """What ``query_kernel_profiler_info`` returns: ``counter`` launches and the ``min``,
    ``max`` and ``avg`` elapsed times in milliseconds (all 0 when nothing matched)."""

    def __init__(self, counter=0, min=0.0, max=0.0, avg=0.0):
        self.counter = counter
        self.min = min
        self.max = max
        self.avg = avg

    def __repr__(self):
        return (
            f"KernelProfilerQueryResult(counter={self.counter}, min={self.min}, max={self.max}, "
            f"avg={self.avg})"
        )


_NOT_ON = "use 'qd.init(kernel_profiler = True)' to turn on KernelProfiler."


class KernelProfiler:
    """The kernel profiler: reads the launch records of the core and prints or queries their
    statistics. One instance exists (``get_default_kernel_profiler()``)."""

    COUNT = "count"  # the statistics (min, avg, max time) of every task name
    TRACE = "trace"  # every record, in launch order

    def __init__(self):
        self._profiling_mode = False
        self._profiling_toolkit = "default"
        self._metric_list = [default_cupti_metrics]
        self._total_time_ms = 0.0
        self._traced_records = []
        self._statistical_results = {}

    def set_kernel_profiler_mode(self, mode=False):
        """Turns recording on or off (off drops the records)."""
        if type(mode) is not bool:
            raise TypeError(
                f"Arg `mode` must be of type boolean. Type {type(mode)} is not supported."
            )
        self._profiling_mode = mode
        _core.kernel_profiler_enable(mode)
        if not mode:
            self._clear_frontend()

    def get_kernel_profiler_mode(self):
        """Whether the profiler records."""
        return self._profiling_mode

    def set_toolkit(self, toolkit_name="default"):
        """Only the default toolkit (timing) exists in this build: any change fails with a
        warning and returns False, as the reference does without CUPTI."""
        if self._not_on():
            return False
        _logging.warn(
            f"Failed to set kernel profiler toolkit ({toolkit_name}) , keep using "
            f"({self._profiling_toolkit})."
        )
        return False

    def get_total_time(self):
        """The elapsed time of every recorded task, in seconds."""
        if self._not_on():
            return 0.0
        self._update()
        return self._total_time_ms / 1000

    def clear_info(self):
        """Drops every record (the mode and the metric list stay)."""
        if self._not_on():
            return None
        _core.kernel_profiler_clear()
        self._clear_frontend()
        return None

    def query_info(self, name):
        """See ``query_kernel_profiler_info``."""
        if self._not_on():
            return None
        self._update()
        pattern = re.compile(name + "(.*)")
        result = KernelProfilerQueryResult()
        for stat in self._statistical_results.values():
            if not pattern.fullmatch(stat.name):
                continue
            if result.counter == 0:
                result = KernelProfilerQueryResult(
                    stat.counter, stat.min_time, stat.max_time, stat.total_time / stat.counter
                )
            elif result.counter == stat.counter:
                result.min += stat.min_time
                result.max += stat.max_time
                result.avg += stat.total_time / stat.counter
            else:
                _logging.warn(
                    f"{name}.counter({result.counter}) != {stat.name}.counter({stat.counter})."
                )
        return result

    def set_metrics(self, metric_list=default_cupti_metrics):
        """Keeps `metric_list` for the CUPTI toolkit (which this build lacks: nothing is
        measured) and drops the records."""
        if self._not_on():
            return None
        self._metric_list = metric_list
        self.clear_info()
        return None

    @contextmanager
    def collect_metrics_in_context(self, metric_list=default_cupti_metrics):
        """``set_metrics(metric_list)`` for the duration of a with block."""
        if self._not_on():
            yield None
            return
        self.set_metrics(metric_list)
        yield self
        self.set_metrics()

    def print_info(self, mode=COUNT):
        """See ``print_kernel_profiler_info``."""
        if self._not_on():
            return None
        self._update()
        if mode == self.COUNT:
            self._print_statistics()
        elif mode == self.TRACE:
            self._print_trace()
        else:
            raise ValueError("Arg `mode` must be of type 'str', and has the value 'count' or 'trace'.")
        return None

    # internals

    def _not_on(self):
        if not self._profiling_mode:
            _logging.warn(_NOT_ON)
            return True
        return False

    def _clear_frontend(self):
        self._total_time_ms = 0.0
        self._traced_records = []
        self._statistical_results = {}

    def _update(self):
        """Reads the records and counts them per name (first seen first)."""
        self._clear_frontend()
        self._traced_records = _core.kernel_profiler_records()
        stats = self._statistical_results
        for name, ms in self._traced_records:
            stat = stats.get(name)
            if stat is None:
                stat = stats[name] = StatisticalResult(name)
            stat.insert_record(ms)
            self._total_time_ms += ms

    def _table_header(self, mode):
        cfg = _runtime.current_cfg()
        arch = cfg.arch.value.upper() if cfg is not None else "X64"
        device = " "
        if cfg is not None and cfg.arch is _runtime.Arch.cuda:
            device = " on " + _core.cuda_device_info()["name"]
        return f"Kernel Profiler({mode}, {self._profiling_toolkit}) @ {arch}{device}"

    def _print_statistics(self):
        header = self._table_header("count")
        columns = "[      %     total   count |      min       avg       max   ] Kernel name"
        width = max(len(columns), len(header))
        stats = sorted(self._statistical_results.values(), reverse=True)
        total = self._total_time_ms
        print("=" * width)
        print(header)
        print("=" * width)
        print(columns)
        print("-" * width)
        for stat in stats:
            share = stat.total_time / total * 100.0 if total > 0 else 0.0
            print(
                f"[{share:6.2f}% {stat.total_time / 1000.0:7.3f} s {stat.counter:6d}x |"
                f"{stat.min_time:9.3f} {stat.total_time / stat.counter:9.3f} "
                f"{stat.max_time:9.3f} ms] {stat.name}"
            )
        print("-" * width)
        print(
            f"[100.00%] Total execution time: {total / 1000:7.3f} s   "
            f"number of results: {len(stats)}"
        )
        print("=" * width)

    def _print_trace(self):
        header = self._table_header("trace")
        columns = "[  start.time | kernel.time ] Kernel name"
        width = max(len(columns), len(header))
        print("=" * width)
        print(header)
        print("=" * width)
        print(columns)
        print("-" * width)
        start = 0.0
        for name, ms in self._traced_records:
            print(f"[{start:9.3f} ms |{ms:9.3f} ms ] {name}")
            start += ms
        print("-" * width)
        print(f"Number of records:  {len(self._traced_records)}")
        print("=" * width)


_kernel_profiler = KernelProfiler()


def _reset():
    _kernel_profiler.set_kernel_profiler_mode(False)


_runtime.register_reset_hook(_reset)


def get_default_kernel_profiler():
    """The kernel profiler (there is one)."""
    return _kernel_profiler


def print_kernel_profiler_info(mode="count"):
    """Prints the profiling records. ``'count'`` (default): one line per task name, sorted by
    total time: share of the total, total seconds, launches, min / avg / max milliseconds.
    ``'trace'``: one line per record in launch order, with the sum of the earlier records'
    times as its start. Needs ``qd.init(kernel_profiler=True)`` (else a warning); any other
    mode raises ValueError."""
    get_default_kernel_profiler().print_info(mode)


def query_kernel_profiler_info(name):
    """Statistics of the tasks whose names start with `name` (a regular expression matched at
    the start: a kernel's name selects all its tasks): a KernelProfilerQueryResult with
    ``counter``, and ``min``, ``max``, ``avg`` in milliseconds summed over the matching task
    names (one launch of the kernel), the first matching name giving the counter; names with
    another counter are left out with a warning. Clear the records first
    (``clear_kernel_profiler_info``) to measure a section of the program."""
    return get_default_kernel_profiler().query_info(name)


def clear_kernel_profiler_info():
    """Drops every kernel profiler record."""
    get_default_kernel_profiler().clear_info()


def get_kernel_profiler_total_time():
    """The elapsed time of all recorded tasks, in seconds."""
    return get_default_kernel_profiler().get_total_time()


def set_kernel_profiler_toolkit(toolkit_name="default"):
    """Selects the profiling toolkit. Only the default one (timing) exists in this build:
    returns False with a warning."""
    return get_default_kernel_profiler().set_toolkit(toolkit_name)


def set_kernel_profiler_metrics(metric_list=default_cupti_metrics):
    """Sets the CUPTI metrics to collect (kept, but not measured without CUPTI) and drops the
    records."""
    get_default_kernel_profiler().set_metrics(metric_list)


@contextmanager
def collect_kernel_profiler_metrics(metric_list=default_cupti_metrics):
    """``set_kernel_profiler_metrics(metric_list)`` inside a with block, the default metrics
    after it."""
    get_default_kernel_profiler().set_metrics(metric_list)
    yield get_default_kernel_profiler()
    get_default_kernel_profiler().set_metrics()


__all__ = [
    "clear_kernel_profiler_info",
    "collect_kernel_profiler_metrics",
    "get_kernel_profiler_total_time",
    "print_kernel_profiler_info",
    "query_kernel_profiler_info",
    "set_kernel_profiler_metrics",
    "set_kernel_profiler_toolkit",
]
