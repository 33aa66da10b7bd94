"""Without a usable CUDA driver (none, one whose cuInit fails, one without a device, one too old
to have every entry point): the module imports, cuda_available() is False with a reason,
qd.gpu falls back to the CPU with a warning, arch=qd.cuda without fallback raises RuntimeError,
and every CUDA entry point raises QuadrantsRuntimeError instead of crashing. Each case runs in a
fresh interpreter (the driver is loaded once per process) pointed at a fake driver through
$QD_CUDA_DRIVER. Runs on every machine, GPU or not."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
API_DEF = REPO / "csrc" / "runtime" / "cuda" / "cuda_api.def"

PROBE = r"""
import json, warnings
import numpy as np
import quadrants as qd
from quadrants import _core
out = {"available": _core.cuda_available(), "reason": _core.cuda_unavailable_reason()}
try:
    qd.init(arch=qd.cuda, enable_fallback=False)
    out["no_fallback"] = "initialised"
except RuntimeError as exc:
    out["no_fallback"] = type(exc).__name__ + ": " + str(exc)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    qd.init(arch=qd.gpu)
out["gpu_arch"] = qd.cfg.arch.name
out["warnings"] = [str(w.message) for w in caught]

@qd.kernel
def double(x: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        x[i] = 2 * x[i]

a = np.arange(4, dtype=np.float32)
double(a)
out["cpu_result"] = a.tolist()
for name, call in [("DeviceBuffer", lambda: _core.DeviceBuffer((4,), 4)),
                   ("cuda_sync", _core.cuda_sync),
                   ("cuda_device_info", _core.cuda_device_info)]:
    try:
        call()
        out[name] = "no error"
    except qd.QuadrantsRuntimeError as exc:
        out[name] = str(exc)
print("RESULT " + json.dumps(out))
"""


def run_probe(driver, tmp_path):
    """Runs PROBE (from a file: kernels need their source) with $QD_CUDA_DRIVER = driver."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    # no Vulkan loader either: qd.gpu then has nothing but the CPU to fall back to
    env = dict(os.environ, QD_CUDA_DRIVER=str(driver), PYTHONPATH=str(REPO),
               QD_VULKAN_LOADER="/nonexistent/libvulkan.so.1")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          cwd=str(REPO))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"probe crashed (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1][len("RESULT "):])


def api_symbols():
    """The exported symbol of every row of cuda_api.def."""
    symbols = []
    for line in API_DEF.read_text().splitlines():
        if line.startswith(("QD_CUDA_API(", "QD_CUDA_API_OPTIONAL(")):
            symbols.append(line.split('"')[1])
    return symbols


def fake_driver(tmp_path, init_result=0, device_count=0, missing=()):
    """A shared library with every entry point of cuda_api.def but `missing`: cuInit returns
    `init_result`, cuDeviceGetCount reports `device_count`, everything else fails with
    CUDA_ERROR_NO_DEVICE (100)."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build a fake driver")
    lines = ['static const char *no_device = "CUDA_ERROR_NO_DEVICE";']
    for symbol in api_symbols():
        if symbol in missing:
            continue
        if symbol == "cuInit":
            lines.append(f"int cuInit(unsigned f) {{ (void)f; return {init_result}; }}")
        elif symbol == "cuDeviceGetCount":
            lines.append(f"int cuDeviceGetCount(int *n) {{ *n = {device_count}; return 0; }}")
        elif symbol in ("cuGetErrorName", "cuGetErrorString"):
            lines.append(f"int {symbol}(int e, const char **s) {{ (void)e; *s = no_device; return 0; }}")
        else:
            lines.append(f"int {symbol}(void) {{ return 100; }}")
    src = tmp_path / "fake_cuda.c"
    lib = tmp_path / "libcuda_fake.so"
    src.write_text("\n".join(lines) + "\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def check_fallback(out):
    assert out["available"] is False
    assert out["no_fallback"].startswith("RuntimeError") and "cuda" in out["no_fallback"]
    assert out["gpu_arch"] in ("x64", "arm64")
    assert any("falling back to CPU" in w for w in out["warnings"])
    assert out["cpu_result"] == [0.0, 2.0, 4.0, 6.0]
    for name in ("DeviceBuffer", "cuda_sync", "cuda_device_info"):
        assert "CUDA is not available" in out[name] or "no CUDA device" in out[name], out[name]


def test_no_driver_library(tmp_path):
    out = run_probe(tmp_path / "no" / "libcuda.so.1", tmp_path)
    check_fallback(out)
    assert "cannot be loaded" in out["reason"] and "libcuda.so.1" in out["reason"]


def test_cuinit_fails(tmp_path):
    out = run_probe(fake_driver(tmp_path, init_result=100), tmp_path)
    check_fallback(out)
    assert "cuInit failed: CUDA_ERROR_NO_DEVICE" in out["reason"]


def test_driver_without_devices(tmp_path):
    out = run_probe(fake_driver(tmp_path, device_count=0), tmp_path)
    check_fallback(out)
    assert out["reason"] == "no CUDA device"


def test_driver_missing_an_entry_point(tmp_path):
    out = run_probe(fake_driver(tmp_path, missing=("cuLaunchKernel",)), tmp_path)
    check_fallback(out)
    assert "lacks the entry point cuLaunchKernel" in out["reason"]


def test_driver_missing_an_optional_entry_point(tmp_path):
    """cuLaunchKernelEx (CUDA 12) is optional: an older driver loads, and launches without it."""
    out = run_probe(fake_driver(tmp_path, missing=("cuLaunchKernelEx",)), tmp_path)
    check_fallback(out)
    assert out["reason"] == "no CUDA device"


def test_every_entry_point_is_in_the_table():
    """Every cuXxx the runtime calls goes through the QdCudaApi table of cuda_api.def."""
    import re

    names = {line.split("(")[1].split(",")[0].strip() for line in API_DEF.read_text().splitlines()
             if line.startswith(("QD_CUDA_API(", "QD_CUDA_API_OPTIONAL("))}
    used = set()
    for path in (REPO / "csrc" / "runtime" / "cuda").glob("*.c"):
        used |= set(re.findall(r"(?:api\.|cu->)(cu[A-Za-z0-9]+)\(", path.read_text()))
    assert used and used <= names, used - names
    # nothing links or includes NVIDIA's headers
    for path in (REPO / "csrc").rglob("*.[ch]"):
        assert "#include <cuda.h>" not in path.read_text(), path


def test_cuda_available_is_a_bool_and_never_raises():
    from quadrants import _core

    assert _core.cuda_available() in (True, False)
    reason = _core.cuda_unavailable_reason()
    assert reason is None if _core.cuda_available() else isinstance(reason, str)
