"""qd.profiler, the kernel profiler: one record per task of every launch (fast path and Python
launch path alike), named <kernel>_c<id>_<specialization>_kernel_<task>_<kind>; the 'count' and
'trace' tables; total time, query, clear; nothing recorded or reported while it is off."""

import re

import numpy as np
import pytest

import quadrants as qd

NAME = re.compile(r"^(\w+)_c(\d+)_(\d+)_kernel_(\d+)_(serial|range_for)$")


@pytest.fixture
def profiled(arch):
    qd.init(arch=getattr(qd, arch), kernel_profiler=True)
    yield
    qd.reset()


def records():
    return qd.profiler.kernel_profiler.get_default_kernel_profiler()._traced_records


def traced():
    """The (name, ms) records, read the way the tables read them."""
    qd.profiler.get_kernel_profiler_total_time()
    return list(records())


def two_tasks(n):
    x = qd.field(qd.f32, shape=n)

    @qd.kernel
    def fill(v: qd.f32):
        for i in x:
            x[i] = v
        for i in x:
            x[i] += 1.0

    return x, fill


def test_records_every_task_of_every_launch(profiled):
    x, fill = two_tasks(64)
    launches = np.random.randint(2, 9)
    for _ in range(launches):
        fill(2.0)
    qd.sync()
    np.testing.assert_allclose(x.to_numpy(), np.full(64, 3.0, np.float32))
    recs = traced()
    assert len(recs) == 2 * launches
    names = [name for name, _ in recs]
    first, second = names[0], names[1]
    assert NAME.match(first).group(1, 4, 5) == ("fill", "0", "range_for")
    assert NAME.match(second).group(1, 4, 5) == ("fill", "1", "range_for")
    assert names == [first, second] * launches
    assert all(ms >= 0.0 for _, ms in recs)


def test_fast_path_and_python_path_both_record(profiled, slow_calls):
    x = qd.field(qd.i32, shape=8)

    @qd.kernel
    def put(v: qd.i32):
        x[0] = v

    put(1)  # compiles: the Python launch path
    put(2)  # the C fast path
    put(v=3)
    assert slow_calls.count(put) == 1
    names = [name for name, _ in traced()]
    assert len(names) == 3
    assert len(set(names)) == 1 and NAME.match(names[0]).group(1, 4, 5) == ("put", "0", "serial")
    assert x[0] == 3


def test_specializations_and_kernels_are_numbered(profiled):
    a = qd.field(qd.f32, shape=4)
    b = qd.field(qd.f32, shape=4)

    @qd.kernel
    def inc(f: qd.template()):
        for i in f:
            f[i] += 1

    @qd.kernel
    def other():
        a[0] = 1

    inc(a)
    inc(b)
    inc(a)
    other()
    parsed = [NAME.match(name).groups() for name, _ in traced()]
    assert [p[0] for p in parsed] == ["inc", "inc", "inc", "other"]
    assert parsed[0][1] == parsed[1][1] == parsed[2][1] != parsed[3][1]
    assert [p[2] for p in parsed[:3]] == ["0", "1", "0"]


def test_kernel_without_tasks_records_nothing(profiled):
    @qd.kernel
    def empty():
        pass

    empty()
    assert traced() == []


def test_total_time_and_query(profiled):
    x, fill = two_tasks(1000)
    n = 5
    for _ in range(n):
        fill(1.0)
    recs = traced()
    total = qd.profiler.get_kernel_profiler_total_time()
    assert isinstance(total, float)
    assert total == pytest.approx(sum(ms for _, ms in recs) / 1000.0)
    task0 = [ms for name, ms in recs if name.endswith("_kernel_0_range_for")]
    task1 = [ms for name, ms in recs if name.endswith("_kernel_1_range_for")]
    # the kernel's name selects all its tasks: the sum over tasks of each task's statistic
    result = qd.profiler.query_kernel_profiler_info("fill")
    assert result.counter == n
    assert result.min == pytest.approx(min(task0) + min(task1))
    assert result.max == pytest.approx(max(task0) + max(task1))
    assert result.avg == pytest.approx(sum(task0) / n + sum(task1) / n)
    # a full task name selects that task
    one = qd.profiler.query_kernel_profiler_info(recs[0][0])
    assert (one.counter, one.min, one.max) == (n, min(task0), max(task0))
    none = qd.profiler.query_kernel_profiler_info("no_such_kernel")
    assert (none.counter, none.min, none.max, none.avg) == (0, 0.0, 0.0, 0.0)


def test_query_warns_about_tasks_launched_another_number_of_times(profiled, capfd):
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def k1():
        x[0] = 1

    @qd.kernel
    def k2():
        x[1] = 1

    k1()
    k1()
    k2()
    result = qd.profiler.query_kernel_profiler_info("k")
    assert result.counter == 2
    err = capfd.readouterr().err
    assert re.search(r"k\.counter\(2\) != k2_c\d+_0_kernel_0_serial\.counter\(1\)\.", err)


def test_clear(profiled):
    x, fill = two_tasks(16)
    fill(1.0)
    assert len(traced()) == 2
    qd.profiler.clear_kernel_profiler_info()
    assert traced() == []
    assert qd.profiler.get_kernel_profiler_total_time() == 0.0
    assert qd.profiler.query_kernel_profiler_info("fill").counter == 0
    fill(1.0)
    assert len(traced()) == 2


def test_count_table(profiled, capsys):
    x, fill = two_tasks(4096)

    @qd.kernel
    def one():
        x[0] = 1

    for _ in range(3):
        fill(1.0)
    one()
    capsys.readouterr()
    qd.profiler.print_kernel_profiler_info()
    lines = capsys.readouterr().out.splitlines()
    arch = qd.cfg.arch.value.upper()
    assert lines[1].startswith(f"Kernel Profiler(count, default) @ {arch}")
    columns = "[      %     total   count |      min       avg       max   ] Kernel name"
    assert lines[3] == columns
    width = len(columns)
    assert lines[0] == lines[2] == lines[-1] == "=" * width
    assert lines[4] == lines[-3] == "-" * width
    rows = lines[5:-3]
    assert len(rows) == 3
    row = re.compile(
        r"^\[ *(\d+\.\d\d)% +(\d+\.\d{3}) s +(\d+)x \| *(\d+\.\d{3}) +(\d+\.\d{3}) +"
        r"(\d+\.\d{3}) ms\] (\S+)$"
    )
    parsed = [row.match(r).groups() for r in rows]
    counts = {p[6]: int(p[2]) for p in parsed}
    assert sorted(counts.values()) == [1, 3, 3]
    assert sum(float(p[0]) for p in parsed) == pytest.approx(100.0, abs=0.05)
    # sorted by total time, largest first
    stats = qd.profiler.kernel_profiler.get_default_kernel_profiler()._statistical_results
    totals = [stats[p[6]].total_time for p in parsed]
    assert totals == sorted(totals, reverse=True)
    assert re.match(
        r"^\[100\.00%\] Total execution time: +\d+\.\d{3} s   number of results: 3$", lines[-2]
    )


def test_trace_table(profiled, capsys):
    x, fill = two_tasks(16)
    fill(1.0)
    fill(1.0)
    capsys.readouterr()
    qd.profiler.print_kernel_profiler_info("trace")
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("Kernel Profiler(trace, default) @ ")
    columns = "[  start.time | kernel.time ] Kernel name"
    assert lines[3] == columns
    width = max(len(columns), len(lines[1]))
    assert lines[0] == lines[2] == lines[-1] == "=" * width
    assert lines[4] == lines[-3] == "-" * width
    assert lines[-2] == "Number of records:  4"
    row = re.compile(r"^\[ *(\d+\.\d{3}) ms \| *(\d+\.\d{3}) ms \] (\S+)$")
    parsed = [row.match(r).groups() for r in lines[5:-3]]
    assert [p[2] for p in parsed] == [name for name, _ in traced()]
    assert float(parsed[0][0]) == 0.0


def test_bad_mode(profiled):
    with pytest.raises(ValueError, match="has the value 'count' or 'trace'"):
        qd.profiler.print_kernel_profiler_info("counts")


def test_toolkit_and_metrics(profiled, capfd):
    x, fill = two_tasks(8)
    fill(1.0)
    assert qd.profiler.set_kernel_profiler_toolkit("cupti") is False
    assert "Failed to set kernel profiler toolkit (cupti) , keep using (default)." in (
        capfd.readouterr().err
    )
    suite = qd.profiler.get_predefined_cupti_metrics("global_access")
    assert all(isinstance(m, qd.profiler.CuptiMetric) for m in suite)
    assert qd.profiler.get_predefined_cupti_metrics("nope") is None
    # metrics are kept but not measured: setting them drops the records
    qd.profiler.set_kernel_profiler_metrics(suite)
    assert traced() == []
    with qd.profiler.collect_kernel_profiler_metrics(suite) as profiler:
        fill(1.0)
        assert profiler is qd.profiler.kernel_profiler.get_default_kernel_profiler()
        assert len(traced()) == 2


def test_off_records_nothing(arch, capfd):
    qd.init(arch=getattr(qd, arch))
    try:
        x, fill = two_tasks(8)
        fill(1.0)
        assert qd.profiler.get_kernel_profiler_total_time() == 0.0
        assert qd.profiler.query_kernel_profiler_info("fill") is None
        assert qd.profiler.print_kernel_profiler_info() is None
        assert qd.profiler.clear_kernel_profiler_info() is None
        out, err = capfd.readouterr()
        assert "Kernel Profiler" not in out
        assert err.count("use 'qd.init(kernel_profiler = True)' to turn on KernelProfiler.") == 4
        assert qd._core.kernel_profiler_records() == []
    finally:
        qd.reset()


def test_reinit_drops_records(arch):
    qd.init(arch=getattr(qd, arch), kernel_profiler=True)
    x, fill = two_tasks(8)
    fill(1.0)
    assert len(traced()) == 2
    qd.init(arch=getattr(qd, arch), kernel_profiler=True)
    assert traced() == []
    qd.reset()
    assert qd._core.kernel_profiler_records() == []
