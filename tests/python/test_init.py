"""qd.init / qd.reset / qd.sync / qd.cfg: option sources (keywords, QD_* environment variables),
arch selection and fallback, version checks, and the runtime-before-init error."""

import os
import platform
import warnings

import pytest

import quadrants as qd
from quadrants import _core, _runtime, _types


@pytest.fixture(autouse=True)
def clean_state(monkeypatch):
    """No QD_* variable of the outer environment leaks in; every test ends reset."""
    for name in list(os.environ):
        if name.startswith("QD_"):
            monkeypatch.delenv(name)
    qd.reset()
    yield
    qd.reset()


@pytest.fixture
def no_cuda(monkeypatch):
    """No GPU arch: CUDA and Vulkan report no device."""
    monkeypatch.setattr(_core, "cuda_available", lambda: False)
    monkeypatch.setattr(_core, "vulkan_available", lambda: False)


def test_cfg_is_none_before_init():
    assert qd.cfg is None
    qd.init()
    assert isinstance(qd.cfg, _runtime.CompileConfig)
    qd.reset()
    assert qd.cfg is None


def test_default_arch_is_the_host_cpu(capsys):
    assert qd.init() is None
    host = "arm64" if platform.machine().lower() in ("arm64", "aarch64") else "x64"
    assert qd.cfg.arch is qd.cpu
    assert qd.cpu.name == host
    assert capsys.readouterr().out.splitlines()[-1] == f"[Quadrants] Starting on arch={host}"


def test_arch_objects():
    assert qd.x86_64 is qd.x64
    assert isinstance(qd.gpu, list)
    assert qd.gpu == [qd.cuda, qd.metal, qd.vulkan, qd.amdgpu]
    assert qd.cpu in (qd.x64, qd.arm64)
    assert {
        a.name for a in (qd.x64, qd.arm64, qd.cuda, qd.amdgpu, qd.metal, qd.vulkan, qd.python)
    } == {"x64", "arm64", "cuda", "amdgpu", "metal", "vulkan", "python"}


def test_defaults():
    qd.init()
    cfg = qd.cfg
    assert cfg.offline_cache is True
    assert cfg.fast_math is True
    assert cfg.debug is False and cfg.check_out_of_bound is False
    assert cfg.opt_level == 1 and cfg.external_optimization_level == 3
    assert cfg.default_cpu_block_dim == 32 and cfg.default_gpu_block_dim == 128
    assert cfg.cpu_max_num_threads == (os.cpu_count() or 1)
    assert cfg.random_seed == 0
    assert cfg.default_fp is qd.f32 and cfg.default_ip is qd.i32 and cfg.default_up is qd.u32
    assert cfg.debug_dump_path == "/tmp/ir/"
    assert cfg.offline_cache_file_path.endswith(os.path.join(".cache", "quadrants", "qdcache"))
    assert cfg.num_compile_threads == 4 and cfg.device_memory_GB == 1.0
    special = qd.init(_test_mode=True)
    assert special.log_level == "info" and special.gdb_trigger is False
    assert special.short_circuit_operators is True and special.print_full_traceback is False
    assert special.unrolling_limit == 32


def test_unknown_attribute_of_config():
    qd.init()
    with pytest.raises(AttributeError):
        qd.cfg.no_such_option = 1


def test_keyword_options():
    qd.init(
        debug=True,
        opt_level=3,
        random_seed=7,
        fast_math=False,
        offline_cache=False,
        debug_dump_path="/tmp/elsewhere",
        device_memory_GB=2,
        cpu_max_num_threads=3,
    )
    cfg = qd.cfg
    assert cfg.debug is True
    assert cfg.check_out_of_bound is True  # implied by debug
    assert cfg.opt_level == 3 and cfg.random_seed == 7 and cfg.cpu_max_num_threads == 3
    assert cfg.fast_math is False and cfg.offline_cache is False
    assert cfg.debug_dump_path == "/tmp/elsewhere"
    assert cfg.device_memory_GB == 2.0 and isinstance(cfg.device_memory_GB, float)


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("debug", "1", True),
        ("debug", "0", False),
        ("offline_cache", "0", False),
        ("opt_level", "3", 3),
        ("random_seed", "42", 42),
        ("device_memory_GB", "2.5", 2.5),
        ("offline_cache_file_path", "/tmp/qdcache_test", "/tmp/qdcache_test"),
        ("print_kernel_asm", "1", True),
        ("cpu_max_num_threads", "2", 2),
    ],
)
def test_environment_options(monkeypatch, name, text, expected):
    monkeypatch.setenv("QD_" + name.upper(), text)
    qd.init()
    assert getattr(qd.cfg, name) == expected
    assert type(getattr(qd.cfg, name)) is type(expected)


def test_empty_environment_value_has_no_effect(monkeypatch):
    monkeypatch.setenv("QD_OPT_LEVEL", "")
    qd.init()
    assert qd.cfg.opt_level == 1


def test_bad_environment_value(monkeypatch):
    monkeypatch.setenv("QD_DEBUG", "yes")
    with pytest.raises(ValueError, match="QD_DEBUG"):
        qd.init()


def test_keyword_wins_over_environment_with_a_warning(monkeypatch):
    monkeypatch.setenv("QD_OPT_LEVEL", "3")
    with pytest.warns(
        UserWarning, match='QD_OPT_LEVEL=3 overridden by qd.init argument "opt_level"'
    ):
        qd.init(opt_level=2)
    assert qd.cfg.opt_level == 2


def test_keyword_of_wrong_type():
    with pytest.raises(TypeError, match="opt_level"):
        qd.init(opt_level="3")
    with pytest.raises(TypeError, match="debug_dump_path"):
        qd.init(debug_dump_path=3)


def test_special_options(monkeypatch):
    special = qd.init(_test_mode=True, short_circuit_operators=False, log_level="warn")
    assert special.short_circuit_operators is False and special.log_level == "warn"
    assert qd.cfg is None  # test mode leaves Quadrants uninitialized
    monkeypatch.setenv("QD_PRINT_FULL_TRACEBACK", "1")
    monkeypatch.setenv("QD_UNROLLING_LIMIT", "64")
    monkeypatch.setenv("QD_GDB_TRIGGER", "1")
    special = qd.init(_test_mode=True)
    assert special.print_full_traceback is True
    assert special.unrolling_limit == 64
    assert special.gdb_trigger is True
    monkeypatch.delenv("QD_UNROLLING_LIMIT")
    qd.init(unrolling_limit=5)
    assert _runtime.special_config().unrolling_limit == 5
    assert _runtime.compile_options()["unrolling_limit"] == 5


def test_unknown_keyword():
    with pytest.raises(KeyError, match=r"Unrecognized keyword argument\(s\) for qd.init: foo_bar"):
        qd.init(debug=True, foo_bar=233)
    with pytest.raises(KeyError, match="foo, bar"):
        qd.init(foo=1, bar=2)


def test_default_up_is_rejected():
    with pytest.raises(KeyError, match="default_up"):
        qd.init(default_up=qd.u64)


def test_default_types():
    qd.init(default_fp=qd.f64, default_ip=qd.i64)
    assert qd.cfg.default_fp is qd.f64
    assert qd.cfg.default_ip is qd.i64 and qd.cfg.default_up is qd.u64
    assert _types.cook_dtype(float) is qd.f64 and _types.cook_dtype(int) is qd.i64
    assert qd.field(float, shape=2).dtype is qd.f64
    qd.reset()
    assert _types.cook_dtype(float) is qd.f32 and _types.cook_dtype(int) is qd.i32
    with pytest.raises(ValueError):
        qd.init(default_fp=qd.i32)
    with pytest.raises(ValueError):
        qd.init(default_ip=qd.i16)


@pytest.mark.parametrize("text, fp", [("32", "f32"), ("64", "f64")])
def test_default_fp_from_environment(monkeypatch, text, fp):
    monkeypatch.setenv("QD_DEFAULT_FP", text)
    qd.init()
    assert qd.cfg.default_fp is getattr(qd, fp)
    assert _types.cook_dtype(float) is getattr(qd, fp)


@pytest.mark.parametrize("text, ip, up", [("32", "i32", "u32"), ("64", "i64", "u64")])
def test_default_ip_from_environment(monkeypatch, text, ip, up):
    monkeypatch.setenv("QD_DEFAULT_IP", text)
    qd.init()
    assert qd.cfg.default_ip is getattr(qd, ip) and qd.cfg.default_up is getattr(qd, up)


@pytest.mark.parametrize("name", ["QD_DEFAULT_FP", "QD_DEFAULT_IP"])
def test_default_type_environment_must_be_32_or_64(monkeypatch, name):
    monkeypatch.setenv(name, "16")
    with pytest.raises(ValueError, match=f"Invalid {name}=16, should be 32 or 64"):
        qd.init()


def test_default_type_keyword_wins_over_environment(monkeypatch):
    monkeypatch.setenv("QD_DEFAULT_FP", "32")
    with pytest.warns(UserWarning, match='overridden by qd.init argument "default_fp"'):
        qd.init(default_fp=qd.f64)
    assert qd.cfg.default_fp is qd.f64


def test_init_resets_everything():
    qd.init()
    x = qd.field(qd.i32, shape=4)
    x[0] = 5
    qd.init()
    with pytest.raises(qd.QuadrantsRuntimeError):
        x[0]


def test_gpu_falls_back_to_cpu(no_cuda, capsys):
    with pytest.warns(
        UserWarning,
        match=r"Arch=\[cuda, metal, vulkan, amdgpu\] is not supported, falling back to CPU",
    ):
        qd.init(arch=qd.gpu)
    assert qd.cfg.arch is qd.cpu
    assert f"[Quadrants] Starting on arch={qd.cpu.name}" in capsys.readouterr().out


def test_gpu_fallback_names_a_cpu_vulkan_device(monkeypatch):
    """qd.gpu passes over a Vulkan device that is a CPU implementation (lavapipe), and the
    warning says so."""
    monkeypatch.setattr(_core, "cuda_available", lambda: False)
    monkeypatch.setattr(_core, "vulkan_available", lambda: True)
    monkeypatch.setattr(_core, "vulkan_device_info",
                        lambda: {"name": "llvmpipe (test)", "device_type": "cpu"})
    with pytest.warns(UserWarning, match=r"falling back to CPU \(the Vulkan device, llvmpipe "
                                         r"\(test\), is a CPU implementation"):
        qd.init(arch=qd.gpu)
    assert qd.cfg.arch is qd.cpu


def test_single_arch_is_wrapped_in_a_list(no_cuda):
    with pytest.warns(UserWarning, match=r"Arch=\[vulkan\] is not supported, falling back to CPU"):
        qd.init(arch=qd.vulkan)
    assert qd.cfg.arch is qd.cpu


def test_first_available_arch_wins(no_cuda):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qd.init(arch=[qd.vulkan, qd.cpu])
    assert qd.cfg.arch is qd.cpu


def test_no_fallback_raises(no_cuda):
    with pytest.raises(RuntimeError, match=r"Arch=\[cuda\] is not supported"):
        qd.init(arch=qd.cuda, enable_fallback=False)
    assert qd.cfg is None


def test_cuda_chosen_when_available(monkeypatch, capsys):
    monkeypatch.setattr(_core, "cuda_available", lambda: True)
    qd.init(arch=qd.gpu, _test_mode=True)
    assert capsys.readouterr().out.splitlines()[-1] == "[Quadrants] Starting on arch=cuda"


def test_cuda_unavailable_without_probe(monkeypatch):
    monkeypatch.delattr(_core, "cuda_available")
    assert not _runtime.is_arch_supported(qd.cuda)
    with pytest.raises(RuntimeError):
        qd.init(arch=qd.cuda, enable_fallback=False)


def test_cuda_probe_that_raises(monkeypatch):
    def broken():
        raise OSError("driver exploded")

    monkeypatch.setattr(_core, "cuda_available", broken)
    with pytest.warns(UserWarning, match="driver exploded"):
        assert not _runtime.is_arch_supported(qd.cuda)


def test_other_gpus_unavailable():
    for arch in (qd.metal, qd.amdgpu, qd.python):
        assert not _runtime.is_arch_supported(arch)
    assert _runtime.is_arch_supported(qd.cpu)
    assert _runtime.is_arch_supported(qd.vulkan) == _core.vulkan_available()


def test_qd_arch_environment_overrides(monkeypatch, no_cuda, capsys):
    monkeypatch.setenv("QD_ARCH", "cuda")
    with pytest.raises(RuntimeError, match="not supported"):
        qd.init(arch=qd.cpu, enable_fallback=False)
    monkeypatch.setenv("QD_ARCH", qd.cpu.name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qd.init(arch=qd.gpu)
    assert qd.cfg.arch is qd.cpu
    monkeypatch.setenv("QD_ARCH", "cpu")
    qd.init(arch=qd.vulkan)
    assert qd.cfg.arch is qd.cpu
    monkeypatch.setenv("QD_ARCH", "no_such_arch")
    with pytest.raises(ValueError, match="no_such_arch"):
        qd.init()


def test_require_version():
    major, minor, patch = (int(n) for n in qd.__version__.split(".")[:3])
    for ok in (f"{major}.{minor}", f"{major}.{minor}.{patch}", f"{major}.{minor}.{patch}rc1"):
        qd.init(require_version=ok)
    if minor > 0:
        qd.init(require_version=f"{major}.{minor - 1}.{patch + 5}")
    for bad in (f"{major + 1}.0", f"{major}.{minor + 1}", f"{major}.{minor}.{patch + 1}"):
        with pytest.raises(Exception, match="Quadrants version mismatch"):
            qd.init(require_version=bad)
    with pytest.raises(Exception, match="PEP 440"):
        qd.init(require_version="latest")


def test_runtime_before_init():
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"forgot to call qd.init\(\)"):
        qd.field(qd.f32, shape=4)
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"forgot to call qd.init\(\)"):
        qd.ndarray(qd.f32, 4)
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"forgot to call qd.init\(\)"):
        qd.sync()
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"forgot to call qd.init\(\)"):
        qd.root.dense(qd.i, 4)

    @qd.kernel
    def noop():
        pass

    with pytest.raises(qd.QuadrantsRuntimeError, match=r"forgot to call qd.init\(\)"):
        noop()


def test_sync_after_init():
    qd.init()
    assert qd.sync() is None


def test_dump_compile_config(capsys):
    qd.init(opt_level=2)
    qd.dump_compile_config()
    lines = capsys.readouterr().out.splitlines()
    assert "opt_level=2" in lines and "debug=False" in lines
    assert lines[1:] == sorted(lines[1:])


def test_print_ir_with_cache_warns():
    with pytest.warns(UserWarning, match="offline_cache=False"):
        qd.init(print_ir=True)


def test_load_ir_needs_caching_disabled(monkeypatch):
    monkeypatch.setenv("QD_LOAD_IR", "1")
    with pytest.raises(ValueError, match="QD_LOAD_IR"):
        qd.init()
    qd.init(offline_cache=False, src_ll_cache=False)


def test_compile_options():
    qd.init(
        default_fp=qd.f64,
        debug=True,
        opt_level=2,
        external_optimization_level=2,
        fast_math=False,
        print_kernel_asm=True,
        cpu_max_num_threads=3,
        short_circuit_operators=False,
    )
    options = _runtime.compile_options()
    assert options["default_fp"] == qd.f64._qd_dtype and options["default_ip"] == qd.i32._qd_dtype
    assert options["debug"] is True and options["short_circuit"] is False
    assert options["unrolling_limit"] == 32 and options["fast_math"] is False
    # The core's "opt_level" is LLVM's level: the reference's external_optimization_level.
    assert options["opt_level"] == 2 and options["num_threads"] == 3
    assert options["print_kernel_asm"] is True
    assert (
        options["print_kernel_llvm_ir"] is False
        and options["print_kernel_llvm_ir_optimized"] is False
    )
