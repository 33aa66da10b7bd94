"""IR golden tests of the frontend: the QIR a kernel lowers to, before and after the passes.

For each case of lowering_cases.py the test compiles the kernel with keep_qir, takes the QIR the
frontend produced (`<case>.qir`) and the QIR handed to the code generator (`<case>.final.qir`),
and compares both with the files in golden/ (`pytest --update-golden` rewrites them). Source
locations are printed relative to this directory so the files do not depend on the checkout's
path. Every golden file must also parse and print back unchanged.
"""

import os
import re
import subprocess

import pytest

import quadrants as qd
from quadrants._core import _testing
from quadrants._toolkit import find_ptxas

import lowering_cases

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")


def _compiled_kernels(kernel):
    for entry in kernel._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if type(item).__name__ == "CompiledKernel":
                yield item


def _stable_field_names(text):
    """Field ids count the fields of the whole process; number them by first appearance. The
    printer aligns source locations after the longest line, so the renamed text is printed
    again: its layout must not depend on how many digits the process's ids have."""
    names = {}
    text = re.sub(r"@f(\d+)\b", lambda m: "@f%d" % names.setdefault(m.group(1), len(names)), text)
    return _testing.parse_print(text)


def _check(path, text, update):
    if update or not os.path.exists(path):
        if not update:
            pytest.fail(f"missing golden file {path}; run with --update-golden")
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        expected = f.read()
    assert text == expected


@pytest.mark.parametrize("name", sorted(lowering_cases.CASES))
def test_lowering(name, keep_qir, update_golden):
    qd.init(arch=qd.cpu)
    kernel = lowering_cases.CASES[name]()
    (compiled,) = list(_compiled_kernels(kernel))
    prefix = HERE + os.sep
    frontend = _stable_field_names(compiled.qir_frontend.replace(prefix, ""))
    final = _stable_field_names(compiled.qir.replace(prefix, ""))
    _check(os.path.join(GOLDEN, name + ".qir"), frontend, update_golden)
    _check(os.path.join(GOLDEN, name + ".final.qir"), final, update_golden)
    for text in (frontend, final):
        assert _testing.parse_print(text) == text
        _testing.verify(text)


@pytest.mark.parametrize(
    "case", ["recursive_real_func_aggregates", "recursive_real_func_early_return_template"]
)
def test_recursive_real_func_aggregates_assemble_for_cuda(case, keep_qir, tmp_path):
    """The CUDA code generator on the QIR of a recursive real_func with struct, ndarray and vector
    values, and of one with a template parameter returning a vector from inside a loop (no GPU
    here: PTX, assembled by ptxas where the CUDA toolkit is installed)."""
    qd.init(arch=qd.cpu)
    kernel = lowering_cases.CASES[case]()
    (compiled,) = list(_compiled_kernels(kernel))
    name = re.search(r"^kernel @(\S+)\(", compiled.qir_frontend, re.M).group(1)
    ptx = _testing.qir_to_ptx(compiled.qir_frontend, name)["ptx"]
    assert ".func" in ptx and "call.uni" in ptx
    # the result pointer crosses the call as a 32-bit local address (a generic one faulted on
    # the GPU when a warp's threads recursed to different depths)
    assert re.search(r"st\.local\.f32\s+\[%r\d+\]", ptx), ptx
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) is not installed")
    (tmp_path / "k.ptx").write_text(ptx)
    cmd = [ptxas, "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(tmp_path / "k.ptx")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
