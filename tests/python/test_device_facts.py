"""qd.extension, qd.is_extension_enabled, qd.DeviceCapability, qd.clock_freq_hz, qd.experimental
and qd.tools."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import quadrants as qd

EXTENSIONS = ["sparse", "quant", "mesh", "quant_basic", "data64", "adstack", "bls", "assertion",
              "extfunc"]


@pytest.fixture
def cpu():
    qd.init(arch=qd.cpu)
    yield
    qd.reset()


def test_extension_members():
    assert [e.name for e in qd.extension] == EXTENSIONS
    assert [e.value for e in qd.extension] == list(range(len(EXTENSIONS)))
    assert str(qd.extension.sparse) == "Extension.sparse"


def test_is_extension_enabled(cpu):
    enabled = {e.name for e in qd.extension if qd.is_extension_enabled(e)}
    assert enabled == {"data64", "assertion"}
    with pytest.raises(TypeError):
        qd.is_extension_enabled("sparse")
    with pytest.raises(TypeError):
        qd.is_extension_enabled(qd.cpu, qd.extension.sparse)


def test_is_extension_enabled_needs_init():
    qd.reset()
    with pytest.raises(qd.QuadrantsRuntimeError):
        qd.is_extension_enabled(qd.extension.data64)


def test_data64_extension_holds(cpu):
    values = np.random.default_rng().integers(2**40, 2**50, 16)

    @qd.kernel
    def twice(a: qd.types.ndarray(qd.i64, 1)):
        for i in a:
            a[i] = a[i] * 2

    got = values.copy()
    twice(got)
    np.testing.assert_array_equal(got, values * 2)


def test_device_capability_names():
    names = [n for n in dir(qd.DeviceCapability) if n.startswith("spirv_")]
    assert "spirv_has_int64" in names and "spirv_version_1_5" in names
    for n in names:
        assert getattr(qd.DeviceCapability, n) == n


def test_clock_freq_hz_on_cpu(cpu):
    with pytest.raises(NotImplementedError, match="not implemented for arch (x64|arm64)"):
        qd.clock_freq_hz()


def test_clock_freq_hz_needs_init():
    qd.reset()
    with pytest.raises(qd.QuadrantsRuntimeError):
        qd.clock_freq_hz()


def test_experimental_real_func(cpu):
    with pytest.warns(DeprecationWarning, match="qd.real_func"):

        @qd.experimental.real_func
        def plus_one(x: qd.i32) -> qd.i32:
            return x + 1

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return plus_one(x)

    x = int(np.random.default_rng().integers(-1000, 1000))
    assert k(x) == x + 1


def test_tools_names():
    assert callable(qd.tools.diagnose.main)
    with pytest.raises(NotImplementedError, match="PLYWriter"):
        qd.tools.PLYWriter(10)
    with pytest.raises(NotImplementedError, match="write_vtk"):
        qd.tools.write_vtk(None, "out")
    assert qd.tools.np2ply.PLYWriter is qd.tools.PLYWriter
    assert qd.tools.vtk.write_vtk is qd.tools.write_vtk


def test_diagnose_runs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = subprocess.run(
            [sys.executable, "-m", "quadrants.tools.diagnose"], capture_output=True, text=True,
            timeout=120,
        )
    assert out.returncode == 0, out.stderr
    assert "cpu: yes" in out.stdout
