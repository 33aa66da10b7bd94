"""Shared pytest configuration.

Options:
    --arch NAME       run arch-parametrized tests on NAME (cpu, cuda, vulkan); repeatable.
                      Default: every arch available on this machine.
    --update-golden   rewrite the expected files of the IR golden tests instead of comparing.

Tests that take an ``arch`` argument are run once per selected arch; a selected arch this
machine cannot run (``--arch cuda`` without a GPU) is reported as skipped.

Vulkan (Mesa's lavapipe on a machine without a GPU) runs every arch-parametrized test but those
of the files in VULKAN_NOT_BY_DEFAULT (each with the reason); ``--arch vulkan`` runs them too.
"""

import os
import sys

import pytest

# Tests import the package built in place (`make build`) from the repository root.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

ARCHS = ("cpu", "cuda", "vulkan")


# Test files (relative to tests/) not run on Vulkan unless asked for with --arch vulkan, and why.
VULKAN_NOT_BY_DEFAULT = {
    "lang/test_real_func_recursion.py": "GLSL has no recursion (docs/vulkan.md)",
}
# Files whose kernels are written for 32-lane subgroups (lane indices, masks and tiles of 32): run
# on Vulkan by default where subgroups have 32 lanes. The collectives, the block code and
# tests/simt/test_subgroup_size.py follow the device's size and run everywhere.
VULKAN_32_LANES = (
    "simt/test_simt_subgroup.py",
    "simt/test_subgroup_lanes.py",
    "simt/test_tile.py",
)


def _vulkan_subgroup_size():
    try:
        from quadrants import _core

        return _core.vulkan_device_info()["subgroup_size"]
    except Exception:
        return 0


def available_archs():
    """The archs this machine can run: the CPU, and CUDA / Vulkan where a driver and a device
    exist."""
    archs = ["cpu"]
    for name in ("cuda", "vulkan"):
        try:
            from quadrants import _core

            if getattr(_core, f"{name}_available")():
                archs.append(name)
        except Exception:  # a broken build or driver: its tests are skipped, the rest runs
            pass
    return archs


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
    parser.addoption(
        "--shard",
        default=None,
        metavar="K/N",
        help="run only every N-th collected test, starting at the K-th (0-based): N such runs "
        "side by side cover the suite once",
    )


def selected_archs(config):
    return config.getoption("--arch") or available_archs()


def pytest_configure(config):
    # The offline cache is on by default: a test session gets a fresh directory of its own, so
    # runs neither depend on nor fill the user's cache. Tests of the cache use their own paths.
    if "QD_OFFLINE_CACHE_FILE_PATH" not in os.environ:
        import tempfile

        cache_dir = tempfile.mkdtemp(prefix="qd_test_cache_")
        os.environ["QD_OFFLINE_CACHE_FILE_PATH"] = cache_dir
        config._qd_cache_dir = cache_dir
    config.addinivalue_line(
        "markers", "cpu_only: tests of CPU specifics (NumPy views of field memory, ...): "
        "skipped when the test's arch is not the CPU"
    )


def pytest_unconfigure(config):
    cache_dir = getattr(config, "_qd_cache_dir", None)
    if cache_dir:
        import shutil

        shutil.rmtree(cache_dir, ignore_errors=True)
        os.environ.pop("QD_OFFLINE_CACHE_FILE_PATH", None)


def pytest_collection_modifyitems(config, items):
    explicit_vulkan = "vulkan" in (config.getoption("--arch") or ())
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        arch = getattr(item, "callspec", None) and item.callspec.params.get("arch")
        if arch and arch != "cpu" and item.get_closest_marker("cpu_only"):
            item.add_marker(pytest.mark.skip(reason=f"CPU specifics, not on {arch}"))
        elif arch == "vulkan" and not explicit_vulkan:
            rel = os.path.relpath(str(item.fspath), tests_dir)
            if rel in VULKAN_NOT_BY_DEFAULT:
                item.add_marker(pytest.mark.skip(reason=VULKAN_NOT_BY_DEFAULT[rel]))
            elif rel in VULKAN_32_LANES and _vulkan_subgroup_size() != 32:
                item.add_marker(pytest.mark.skip(reason="written for 32-lane subgroups"))
    shard = config.getoption("--shard")
    if shard:
        k, n = _parse_shard(shard)
        kept = [item for i, item in enumerate(items) if i % n == k]
        dropped = [item for i, item in enumerate(items) if i % n != k]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _parse_shard(text):
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard expects K/N with integers, got {text!r}") from None
    if n < 1 or not 0 <= k < n:
        raise pytest.UsageError(f"--shard {text}: need 0 <= K < N")
    return k, n


def pytest_generate_tests(metafunc):
    """Parametrizes `arch`; a selected arch this machine cannot run is skipped, not failed."""
    if "arch" in metafunc.fixturenames:
        available = available_archs()
        params = [
            pytest.param(
                arch,
                id=arch,
                marks=() if arch in available else pytest.mark.skip(reason=f"no {arch} here"),
            )
            for arch in selected_archs(metafunc.config)
        ]
        metafunc.parametrize("arch", params)


@pytest.fixture
def update_golden(request):
    """Whether golden files are rewritten (--update-golden) rather than compared."""
    return request.config.getoption("--update-golden")


@pytest.fixture
def keep_qir(monkeypatch):
    """Kernels compiled during the test keep their QIR (CompiledKernel.qir / .qir_frontend)."""
    from quadrants import _runtime

    original = _runtime.compile_options

    def with_qir():
        options = dict(original())
        options["keep_qir"] = 1
        return options

    monkeypatch.setattr(_runtime, "compile_options", with_qir)


@pytest.fixture
def slow_calls(monkeypatch):
    """The kernels of the calls that took the Python launch path (Kernel._launch), in order: a
    call missing from it was launched by the C fast path."""
    from quadrants import _kernel

    calls = []
    original = _kernel.Kernel._launch

    def counting(self, args, kwargs):
        calls.append(self)
        return original(self, args, kwargs)

    monkeypatch.setattr(_kernel.Kernel, "_launch", counting)
    return calls
