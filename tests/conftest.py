"""Shared pytest configuration.

Options:
    --arch NAME       run arch-parametrized tests on NAME (cpu, cuda, vulkan); repeatable.
                      Default: every arch available on this machine.
    --update-golden   rewrite the expected files of the IR golden tests instead of comparing.

Tests that take an ``arch`` argument are run once per selected arch.
"""

import os
import sys

import pytest

# Tests import the package built in place (`make build`) from the repository root.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

ARCHS = ("cpu", "cuda", "vulkan")


def available_archs():
    """The archs this machine can run. Only the CPU backend exists so far."""
    return ["cpu"]


def pytest_addoption(parser):
    parser.addoption(
        "--arch",
        action="append",
        choices=ARCHS,
        help="arch to run arch-parametrized tests on (repeatable; default: all available)",
    )
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the .expected files of the IR golden tests",
    )


def selected_archs(config):
    return config.getoption("--arch") or available_archs()


def pytest_generate_tests(metafunc):
    if "arch" in metafunc.fixturenames:
        metafunc.parametrize("arch", selected_archs(metafunc.config))


@pytest.fixture
def update_golden(request):
    """Whether golden files are rewritten (--update-golden) rather than compared."""
    return request.config.getoption("--update-golden")
