"""``qd.profiler.kernel_metrics``: CUPTI performance metrics of the kernel profiler.

Hardware counters (memory bandwidth, cache hit rates, occupancy) are collected only by the
CUPTI toolkit, which this build does not have: ``set_kernel_profiler_toolkit('cupti')`` fails
with a warning, and metrics given to ``set_kernel_profiler_metrics`` are kept but never
measured (the trace table shows no metric columns), as with the reference on a build without
CUPTI. The metric descriptions and the predefined suites are provided so that programs that
name them keep running.
"""

from quadrants import _logging


class CuptiMetric:
    """One CUPTI metric: its CUPTI `name`, the column `header` and value format (`val_format`)
    of the trace table, and the `scale` its value is multiplied by when printed."""

    def __init__(self, name="", header="unnamed_header", val_format="     {:8.0f} ", scale=1.0):
        self.name = name
        self.header = header
        self.val_format = val_format
        self.scale = scale


_MB = 1.0 / 1024 / 1024
_GB = _MB / 1024

# (python name, CUPTI metric, header, format, scale)
_METRICS = (
    ("dram_utilization", "dram__throughput.avg.pct_of_peak_sustained_elapsed", " global.uti ",
     "   {:6.2f} % ", 1.0),
    ("dram_bytes_sum", "dram__bytes.sum", "  global.R&W ", "{:9.3f} MB ", _MB),
    ("dram_bytes_throughput", "dram__bytes.sum.per_second", " global.R&W/s ", "{:8.3f} GB/s ",
     _GB),
    ("dram_bytes_read", "dram__bytes_read.sum", "   global.R ", "{:8.3f} MB ", _MB),
    ("dram_read_throughput", "dram__bytes_read.sum.per_second", "   global.R/s ",
     "{:8.3f} GB/s ", _GB),
    ("dram_bytes_write", "dram__bytes_write.sum", "   global.W ", "{:8.3f} MB ", _MB),
    ("dram_write_throughput", "dram__bytes_write.sum.per_second", "   global.W/s ",
     "{:8.3f} GB/s ", _GB),
    ("shared_utilization",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
     " uqd.shared ", "   {:6.2f} % ", 1.0),
    ("shared_transactions_load", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
     " shared.trans.W ", "     {:10.0f} ", 1.0),
    ("shared_transactions_store", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
     " shared.trans.R ", "     {:10.0f} ", 1.0),
    ("shared_bank_conflicts_store", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
     " bank.conflict.W ", "      {:10.0f} ", 1.0),
    ("shared_bank_conflicts_load", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
     " bank.conflict.R ", "      {:10.0f} ", 1.0),
    ("global_op_atom", "l1tex__t_set_accesses_pipe_lsu_mem_global_op_atom.sum",
     " global.atom ", "    {:8.0f} ", 1.0),
    ("global_op_reduction", "l1tex__t_set_accesses_pipe_lsu_mem_global_op_red.sum",
     " global.red ", "   {:8.0f} ", 1.0),
    ("sm_throughput", "smsp__cycles_active.avg.pct_of_peak_sustained_elapsed", " core.uti ",
     " {:6.2f} % ", 1.0),
    ("dram_throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "  mem.uti ",
     " {:6.2f} % ", 1.0),
    ("l1tex_throughput", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed", "   L1.uti ",
     " {:6.2f} % ", 1.0),
    ("l2_throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed", "   L2.uti ",
     " {:6.2f} % ", 1.0),
    ("l1_hit_rate", "l1tex__t_sector_hit_rate.pct", "   L1.hit ", " {:6.2f} % ", 1.0),
    ("l2_hit_rate", "lts__t_sector_hit_rate.pct", "   L2.hit ", " {:6.2f} % ", 1.0),
    ("achieved_occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", " occupancy",
     "   {:6.0f} ", 1.0),
)

for _row in _METRICS:
    globals()[_row[0]] = CuptiMetric(*_row[1:])

# The predefined suites, by the name get_predefined_cupti_metrics takes.
_SUITES = {
    "global_access": ("dram_bytes_sum", "dram_bytes_throughput", "dram_bytes_read",
                      "dram_read_throughput", "dram_bytes_write", "dram_write_throughput"),
    "shared_access": ("shared_transactions_load", "shared_transactions_store",
                      "shared_bank_conflicts_store", "shared_bank_conflicts_load"),
    "atomic_access": ("global_op_atom", "global_op_reduction"),
    "cache_hit_rate": ("l1_hit_rate", "l2_hit_rate"),
    "device_utilization": ("sm_throughput", "dram_throughput", "shared_utilization",
                           "l1tex_throughput", "l2_throughput"),
}
predefined_cupti_metrics = {
    suite: [globals()[name] for name in names] for suite, names in _SUITES.items()
}
globals().update(predefined_cupti_metrics)


def get_predefined_cupti_metrics(name=""):
    """The predefined metric suite `name` (a list of CuptiMetric): 'global_access',
    'shared_access', 'atomic_access', 'cache_hit_rate' or 'device_utilization'. Any other name
    warns with the valid ones and returns None."""
    if name not in predefined_cupti_metrics:
        _logging.warn("Valid Quadrants predefined metrics list (str):")
        for key in predefined_cupti_metrics:
            _logging.warn(f"    '{key}'")
        return None
    return predefined_cupti_metrics[name]


default_cupti_metrics = [dram_bytes_sum]  # noqa: F821  (defined from _METRICS above)
"""The metrics collected when none are set: the DRAM bytes read and written."""

__all__ = ["CuptiMetric", "get_predefined_cupti_metrics"]
