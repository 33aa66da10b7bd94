"""qd.algorithms tests: every test runs once per mode with a fresh runtime.

Modes: on the CPU both code paths of the algorithms, the plain one (``cpu-plain``: a tile of 256
elements is one iteration of a parallel loop) and the GPU one run by the SIMT emulation
(``cpu-simt``: a tile is a block of 256 threads); on CUDA and Vulkan the GPU itself (``cuda``,
``vulkan``; the block code is written for subgroups of 32 lanes, and a Vulkan device with
subgroups of another size, such as lavapipe's 8, runs the plain path). The archs come from
``--arch`` (default: every arch this machine has), as for the rest of the suite.
"""

import warnings

import numpy as np
import pytest

import quadrants as qd

MODES_OF_ARCH = {"cpu": ("cpu-plain", "cpu-simt"), "cuda": ("cuda",), "vulkan": ("vulkan",)}


def _available_archs():
    archs = ["cpu"]
    try:
        from quadrants import _core

        if _core.cuda_available():
            archs.append("cuda")
        if _core.vulkan_available():
            archs.append("vulkan")
    except Exception:  # a broken build or driver: the GPU modes are skipped
        pass
    return archs


def pytest_generate_tests(metafunc):
    if "mode" not in metafunc.fixturenames:
        return
    available = _available_archs()
    params = []
    for arch in metafunc.config.getoption("--arch") or available:
        skip = () if arch in available else pytest.mark.skip(reason=f"no {arch} here")
        params += [pytest.param(m, id=m, marks=skip) for m in MODES_OF_ARCH[arch]]
    metafunc.parametrize("mode", params, indirect=True)


@pytest.fixture(autouse=True)
def mode(request):
    """Initialise quadrants for the test's mode before the test and reset it afterwards."""
    m = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if m == "cpu-plain":
            qd.init(arch=qd.cpu)
        elif m == "cpu-simt":
            qd.init(arch=qd.cpu, cpu_simt=True)
        else:
            qd.init(arch=getattr(qd, m))
    yield m
    qd.reset()


@pytest.fixture
def rng():
    """A fresh generator: every run draws new inputs. Its seed is printed, so that pytest shows it
    with a failure (rerun with np.random.default_rng(seed) to reproduce)."""
    seed = np.random.SeedSequence().entropy
    print(f"rng seed: {seed}")
    return np.random.default_rng(seed)
