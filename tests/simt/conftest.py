"""SIMT tests: every test runs once per selected arch with a fresh runtime; on the CPU with the
SIMT emulation on (cpu_simt=True)."""

import warnings

import pytest

import quadrants as qd


@pytest.fixture(autouse=True)
def qd_arch(arch):
    """Initialise quadrants on `arch` before the test and reset it afterwards."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arch == "cpu":
            qd.init(arch=qd.cpu, cpu_simt=True)
        else:
            qd.init(arch=getattr(qd, arch))
    yield arch
    qd.reset()


@pytest.fixture
def gpu(qd_arch):
    """A runtime that runs qd.simt: a GPU, or the CPU with cpu_simt."""
    return qd_arch
