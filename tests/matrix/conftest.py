"""Vector and matrix tests: every test runs once per selected arch with a fresh runtime."""

import warnings

import pytest

import quadrants as qd


@pytest.fixture(autouse=True)
def qd_arch(arch):
    """Initialise quadrants on `arch` before the test and reset it afterwards."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=getattr(qd, arch))
    yield arch
    qd.reset()
