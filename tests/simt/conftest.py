"""qd.simt tests: each runs once per selected arch with a fresh runtime. On the CPU the
primitives run under the emulation of qd.init(cpu_simt=True)."""

import warnings

import pytest

import quadrants as qd


@pytest.fixture(autouse=True)
def qd_arch(arch):
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
