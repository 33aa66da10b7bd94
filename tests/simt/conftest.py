"""qd.simt tests: each runs once per selected arch with a fresh runtime. The primitives need a
GPU; on the CPU only their errors (and, through tests/simt/ptx.py, the CUDA code generated
without a GPU) are tested."""

import warnings

import pytest

import quadrants as qd


@pytest.fixture(autouse=True)
def qd_arch(arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=getattr(qd, arch))
    yield arch
    qd.reset()


@pytest.fixture
def gpu(qd_arch):
    if qd_arch == "cpu":
        pytest.skip("qd.simt primitives run on GPU backends")
    return qd_arch
