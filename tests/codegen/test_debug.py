"""print, assert, compile errors, dump files and the quality of the generated code.

There is no CUDA here (no ptxas): the code-quality check is on the CPU's own output, that the
saxpy loop is vectorized in the optimized LLVM IR.
"""

import re

import numpy as np
import pytest

import quadrants as qd
from qir_helpers import load, run
from quadrants._core import _testing


def test_print(capfd):
    run(load("debug.qir"), "show", [42, 2.0 / 3.0, 3], nthreads=2)
    out = capfd.readouterr().out.splitlines()
    assert out[0] == "x = 42, y = 0.667"
    assert out[1] == "u8 200 i8 -5 hex c8% big 12345678901 half 0.5"
    assert sorted(out[2:]) == ["item 0", "item 1", "item 2"]


@pytest.mark.parametrize("fmt,message", [
    ('"%s\\n", %x', "unsupported conversion '%s'"),
    ('"%d %d\\n", %x', "2 conversions for 1 values"),
])
def test_print_bad_format(fmt, message):
    text = "kernel @k(%x: i32) {\n  task serial {\n    print " + fmt + "\n  }\n}\n"
    with pytest.raises(qd.QuadrantsCompilationError, match=message):
        run(text, "k", [1])


def test_assert_serial():
    text = load("debug.qir")
    assert run(text, "check", [3]) == [3]
    with pytest.raises(qd.QuadrantsAssertionError, match="x must be positive"):
        run(text, "check", [-3])


def test_assert_parallel():
    h = _testing.compile_qir(load("debug.qir"), "check_range", nthreads=2)
    assert h.launch(100000, 100000) == []
    with pytest.raises(qd.QuadrantsAssertionError, match="index out of range"):
        h.launch(100000, 99000)
    assert h.launch(10, 10) == []  # the failure does not stick to the next launch


def test_simt_is_rejected():
    with pytest.raises(qd.QuadrantsSyntaxError,
                       match=r"thread_idx` \(qd.simt\) is not supported for arch cpu"):
        run(load("simt.qir"), "uses_lane", [np.zeros(4, np.int32)])


def test_prologue_must_not_write():
    text = """\
field @f : i32 []
kernel @k(%n: i32) {
  task range_for {
    %zero = const 0 : i32
    %p = field_ptr @f : ptr<i32, global>
    store %p, %n
    parallel_for %i = %zero to %n {
    }
  }
}
"""
    with pytest.raises(qd.QuadrantsCompilationError, match="prologue"):
        run(text, "k", [4], fields={"f": np.zeros((), np.int32)})


def test_parse_error_and_unknown_kernel():
    with pytest.raises(qd.QuadrantsSyntaxError):
        run("kernel @k( {", "k", [])
    with pytest.raises(qd.QuadrantsCompilationError, match="no kernel @nope"):
        run(load("saxpy.qir"), "nope", [])


def test_dump_files(tmp_path):
    options = {
        "print_kernel_llvm_ir": True,
        "print_kernel_llvm_ir_optimized": True,
        "print_kernel_asm": True,
        "dump_dir": str(tmp_path),
    }
    _testing.compile_qir(load("saxpy.qir"), "saxpy", options=options)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 3
    assert re.fullmatch(r"quadrants_kernel_cpu_llvm_ir_\d{4}\.ll", names[0])
    assert re.fullmatch(r"quadrants_kernel_cpu_llvm_ir_optimized_\d{4}\.ll", names[1])
    assert re.fullmatch(r"quadrants_kernel_cpu_llvm_ir_optimized_asm_\d{4}\.s", names[2])
    assert "define void @saxpy.t0(" in (tmp_path / names[0]).read_text()
    assert "saxpy.t0.bounds:" in (tmp_path / names[2]).read_text()


def test_saxpy_is_vectorized(tmp_path):
    options = {"print_kernel_llvm_ir_optimized": True, "dump_dir": str(tmp_path)}
    _testing.compile_qir(load("saxpy.qir"), "saxpy", options=options)
    ir = next(tmp_path.iterdir()).read_text()
    assert re.search(r"fmul [a-z ]*<\d+ x float>", ir), "the saxpy loop was not vectorized"


def test_opt_levels_agree():
    x = np.arange(1000, dtype=np.float32)
    results = []
    for level in range(4):
        y = np.ones(1000, dtype=np.float32)
        run(load("saxpy.qir"), "saxpy", [3.0, x, y], options={"opt_level": level})
        results.append(y)
    for y in results[1:]:
        np.testing.assert_allclose(y, results[0], rtol=1e-6)
