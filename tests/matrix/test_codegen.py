"""Generated code of vector/matrix kernels: the QIR of small kernels against golden files (an
element per scalar, no memory for values), and the CUDA path without a GPU: the final QIR of
matrix kernels compiled to PTX and assembled by ``ptxas -arch=sm_90`` where a CUDA toolkit is
installed. ``pytest --update-golden`` rewrites the golden files."""

import os
import pathlib
import re
import subprocess
import tempfile

import numpy as np
import pytest

import quadrants as qd
from quadrants._core import _testing
from quadrants._toolkit import find_ptxas

# The QIR is taken from kernels compiled on the CPU; the PTX comes from that QIR without a GPU.
pytestmark = pytest.mark.cpu_only

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
vec3f = qd.types.vector(3, qd.f32)
mat3f = qd.types.matrix(3, 3, qd.f32)


PTXAS = find_ptxas()


def compiled_of(kernel):
    for entry in kernel._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if type(item).__name__ == "CompiledKernel":
                return item
    raise AssertionError("kernel not compiled")


def transform_kernel():
    @qd.kernel
    def transform(p: qd.types.NDArray[vec3f, 1], m: qd.types.NDArray[mat3f, 1],
                  out: qd.types.NDArray[vec3f, 1]):
        for i in range(p.shape[0]):
            out[i] = m[i] @ p[i]

    n = 4
    transform(np.zeros((n, 3), np.float32), np.zeros((n, 3, 3), np.float32), np.zeros((n, 3), np.float32))
    return transform


def methods_kernel():
    @qd.kernel
    def methods(a: qd.types.NDArray[vec3f, 1], out: qd.types.NDArray[qd.f32, 1]):
        for i in range(a.shape[0]):
            v = a[i]
            w = v.cross(qd.Vector([0.0, 0.0, 1.0])).normalized()
            m = v.outer_product(w)
            k = i % 3
            out[i] = v[k] + (m @ w).sum() + m.transpose().trace() + qd.max(v, w).norm()

    a = np.zeros((4, 3), np.float32)
    methods(a, np.zeros(4, np.float32))
    return methods


def updates_kernel():
    f = qd.Vector.field(4, qd.f32, shape=16)

    @qd.kernel
    def updates(a: qd.types.NDArray[qd.f32, 1]):
        for i in range(a.shape[0]):
            j = i % 4
            f[i % 16][j] += a[i]
            qd.atomic_max(f[(i + 1) % 16], qd.Vector([a[i], 0.0, 1.0, 2.0]))
            v = qd.Vector([a[i], 1.0, 2.0, 3.0])
            v[j] = v[(j + 1) % 4] * 2.0
            a[i] = v.xzy.sum() + v[j]

    updates(np.zeros(32, np.float32))
    return updates


CASES = {"transform": transform_kernel, "methods": methods_kernel, "updates": updates_kernel}


def check_golden(path, text, update):
    if update or not os.path.exists(path):
        if not update:
            pytest.fail(f"missing golden file {path}; run with --update-golden")
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        assert text == f.read()


def test_transform_qir_golden(keep_qir, update_golden):
    kernel = transform_kernel()
    compiled = compiled_of(kernel)
    prefix = HERE + os.sep
    text = compiled.qir_frontend.replace(prefix, "")
    check_golden(os.path.join(GOLDEN, "transform.qir"), text, update_golden)
    assert _testing.parse_print(text) == text
    # Values never touch memory: no alloca in the final QIR, one load per input element.
    final = compiled.qir
    assert "alloca" not in final
    assert final.count("= load ") == 12


@pytest.mark.parametrize("name", sorted(CASES))
def test_ptx_assembles(name, keep_qir):
    kernel = CASES[name]()
    qir = compiled_of(kernel).qir
    entry = re.search(r"kernel @([\w.$]+)", qir).group(1)
    result = _testing.qir_to_ptx(qir, entry)
    ptx = result["ptx"]
    assert ".entry" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx
    if PTXAS is None:
        pytest.skip("ptxas (CUDA toolkit) is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / f"{name}.ptx"
        src.write_text(ptx)
        proc = subprocess.run([PTXAS, "-v", "-arch=sm_90", "-o", str(src.with_suffix(".cubin")), str(src)],
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "0 bytes spill stores" in proc.stderr, proc.stderr
