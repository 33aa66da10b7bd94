"""The runtime state: ``qd.init``, ``qd.reset``, ``qd.sync``, ``qd.cfg`` and the archs.

``init`` follows the reference's order of operations: version check, copy of the arguments,
``reset()``, a fresh ``CompileConfig``, ``QD_DEFAULT_FP``/``QD_DEFAULT_IP``, every option from
a keyword argument or its ``QD_<UPPER_NAME>`` environment variable (the keyword wins, with a
warning), unknown keywords -> KeyError, arch selection (``QD_ARCH`` overrides ``arch=``), then
the ``[Quadrants] Starting on arch=...`` line. Warnings are Python ``UserWarning``s.

Other modules use three things from here: ``require_init()`` (raises QuadrantsRuntimeError before
``qd.init``), ``generation()`` (a counter bumped by every reset; objects created under an older
generation are dead) and ``register_reset_hook()`` (callbacks run by ``reset``: fields and
ndarrays drop their memory, kernels clear their compiled-kernel caches).
"""

import copy
import enum
import os
import platform
import warnings

from quadrants import _cache, _core, _logging, _types
from quadrants._core import QuadrantsRuntimeError
from quadrants._version import __version__


class Arch(enum.Enum):
    """A backend. ``qd.cpu`` is the host's CPU arch (x64 or arm64)."""

    x64 = "x64"
    arm64 = "arm64"
    cuda = "cuda"
    metal = "metal"
    vulkan = "vulkan"
    amdgpu = "amdgpu"
    python = "python"


def _host_arch():
    machine = platform.machine().lower()
    return Arch.arm64 if machine in ("arm64", "aarch64") else Arch.x64


x64 = x86_64 = Arch.x64
arm64 = Arch.arm64
cuda = Arch.cuda
metal = Arch.metal
vulkan = Arch.vulkan
amdgpu = Arch.amdgpu
python = Arch.python
cpu = _host_arch()
gpu = [cuda, metal, vulkan, amdgpu]


def arch_from_name(name):
    """The Arch called `name` (``"x64"``, ``"cuda"``, ...; ``"cpu"`` is the host arch)."""
    if name == "cpu":
        return cpu
    if name == "x86_64":
        return Arch.x64
    try:
        return Arch[name]
    except KeyError:
        known = ", ".join(["cpu"] + [a.name for a in Arch])
        raise ValueError(f"Unknown arch name {name!r} (known: {known})") from None


def is_arch_supported(arch):
    """Whether `arch` can run on this machine. CPU: the host arch only. CUDA and Vulkan: when
    the core reports a usable driver and device. Metal and AMDGPU are not implemented."""
    if arch in (Arch.x64, Arch.arm64):
        return arch is cpu
    if arch in (Arch.cuda, Arch.vulkan):
        probe = getattr(_core, f"{arch.name}_available", None)
        if probe is None:
            return False
        try:
            return bool(probe())
        except Exception as exc:  # a broken driver must not stop qd.init from falling back
            warnings.warn(
                f"{type(exc).__name__}: '{exc}' occurred when detecting {arch.name}", stacklevel=4
            )
            return False
    return False


# Every CompileConfig option with its default (a callable is called for a fresh default).
# The environment variable QD_<NAME.upper()> is parsed with the type of the default.
_OPTIONS = {
    "debug": False,
    "check_out_of_bound": False,
    "offline_cache": True,
    "offline_cache_file_path": lambda: os.path.join(
        os.path.expanduser("~"), ".cache", "quadrants", "qdcache"
    ),
    "offline_cache_cleaning_policy": "lru",
    "offline_cache_max_size_of_files": 100 * 1024 * 1024,
    "offline_cache_cleaning_factor": 0.25,
    "print_kernel_asm": False,
    "print_kernel_llvm_ir": False,
    "print_kernel_llvm_ir_optimized": False,
    "print_ir": False,
    "print_preprocessed_ir": False,
    "print_accessor_ir": False,
    "print_ir_dbg_info": False,
    "print_struct_llvm_ir": False,
    "print_kernel_amdgcn": False,
    "debug_dump_path": "/tmp/ir/",
    "random_seed": 0,
    "fast_math": True,
    # CPU: emulate qd.simt (blocks of threads as cooperating fibers) instead of rejecting it.
    "cpu_simt": False,
    "opt_level": 1,
    "external_optimization_level": 3,
    "cfg_optimization": True,
    "advanced_optimization": True,
    "constant_folding": True,
    "default_gpu_block_dim": 128,
    "default_cpu_block_dim": 32,
    "cpu_block_dim_adaptive": True,
    "cpu_max_num_threads": lambda: os.cpu_count() or 1,
    "saturating_grid_dim": 0,
    "max_block_dim": 0,
    "gpu_max_reg": 0,
    "device_memory_GB": 1.0,
    "device_memory_fraction": 0.0,
    "num_compile_threads": 4,
    "kernel_profiler": False,
    "timeline": False,
    "verbose_kernel_launches": False,
    "verbose": True,
    "ad_stack_experimental_enabled": False,
    "ad_stack_size": 0,
    "ad_stack_sparse_threshold_bytes": 100 * 1024 * 1024,
    "raise_on_templated_floats": False,
    # Optimisation toggles: accepted and stored.
    "flatten_if": False,
    "make_thread_local": True,
    "make_block_local": True,
    "detect_read_only": True,
    "real_matrix_scalarize": True,
    "force_scalarize_matrix": False,
    "half2_vectorization": False,
    "demote_dense_struct_fors": True,
    "cache_loop_invariant_global_vars": True,
    "move_loop_invariant_outside_if": False,
    "simplify_before_lower_access": True,
    "lower_access": True,
    "simplify_after_lower_access": True,
    "serial_schedule": False,
    "max_vector_width": 8,
    "make_cpu_multithreading_loop": True,
    "quant_opt_store_fusion": True,
    "quant_opt_atomic_demotion": True,
    # Backend specifics.
    "vk_api_version": "",
    "cuda_stack_limit": 0,
    "external_metal_command_queue": 0,
    "external_metal_command_queue_is_torch_queue": False,
    # This project: run SIMT blocks as cooperating lanes on the CPU (DESIGN.md, Execution).
    "cpu_simt": False,
    # qd.nn products of f16 vectors by f16 matrices on tensor cores where the target has them
    # (docs/nn.md); False keeps the per-thread loops everywhere.
    "nn_tensor_cores": True,
}

# Attributes of CompileConfig that init sets itself (not from kwargs or the environment).
_DERIVED = ("arch", "default_fp", "default_ip", "default_up")


class CompileConfig:
    """The compiler options of one ``qd.init`` (``qd.cfg``). Every option of the spec's table is
    an attribute; setting an unknown attribute raises AttributeError."""

    __slots__ = _DERIVED + tuple(_OPTIONS)

    def __init__(self):
        self.arch = cpu
        self.default_fp = _types.f32
        self.default_ip = _types.i32
        self.default_up = _types.u32
        for name, default in _OPTIONS.items():
            setattr(self, name, default() if callable(default) else default)

    def fit(self):
        """Options implied by others: debug implies check_out_of_bound."""
        if self.debug:
            self.check_out_of_bound = True

    def items(self):
        """(name, value) of every attribute, sorted by name."""
        return sorted((name, getattr(self, name)) for name in self.__slots__)

    def __repr__(self):
        return "CompileConfig(" + ", ".join(f"{k}={v!r}" for k, v in self.items()) + ")"


class SpecialConfig:
    """Options of ``qd.init`` that are not compiler options (kwarg or ``QD_<NAME>``)."""

    def __init__(self):
        self.log_level = "info"
        self.gdb_trigger = False
        self.short_circuit_operators = True
        self.print_full_traceback = False
        self.unrolling_limit = 32


_SPECIAL_OPTIONS = (
    "log_level",
    "gdb_trigger",
    "short_circuit_operators",
    "print_full_traceback",
    "unrolling_limit",
)


class _State:
    """Everything qd.reset restores."""

    def __init__(self, generation=0):
        self.cfg = None  # CompileConfig after qd.init, else None
        self.special = SpecialConfig()
        self.src_ll_cache = True
        self.print_non_pure = False
        self.subgroup_size = 32  # lanes per subgroup of the arch qd.init chose
        self.generation = generation


_state = _State()
_reset_hooks = []


def register_reset_hook(callback):
    """Registers `callback()` to run at every qd.reset (and so at every qd.init)."""
    _reset_hooks.append(callback)
    return callback


def generation():
    """A counter bumped by every reset: objects made under an older value are dead."""
    return _state.generation


def current_cfg():
    """The live CompileConfig, or None before qd.init (this is ``qd.cfg``)."""
    return _state.cfg


def special_config():
    return _state.special


def is_initialized():
    return _state.cfg is not None


def require_init():
    """The live CompileConfig; raises QuadrantsRuntimeError before qd.init."""
    cfg = _state.cfg
    if cfg is None:
        raise QuadrantsRuntimeError(
            "Quadrants is not initialized: maybe you forgot to call qd.init() first?"
        )
    return cfg


def reset():
    """Destroys every field, ndarray and compiled kernel and restores the default
    configuration. A new ``qd.init()`` is needed afterwards."""
    # First the core: it waits for launches still running on other threads, which may use the
    # fields and ndarrays that the hooks release.
    _core.runtime_reset()
    _state.__init__(_state.generation + 1)
    _types.set_defaults(_types.f32, _types.i32)
    for hook in list(_reset_hooks):
        hook()


def sync():
    """Waits until all launched work is done."""
    cfg = require_init()
    from quadrants.lang import impl  # the reference materializes its runtime here too

    impl.materialize_runtime()
    # CPU launches finish before the kernel call returns; CUDA and Vulkan ones are asynchronous.
    if cfg.arch is Arch.cuda:
        _core.cuda_sync()
    elif cfg.arch is Arch.vulkan:
        _core.vulkan_sync()


def check_require_version(require_version):
    """Raises Exception unless the installed version has the same major and at least the
    required minor.patch. Accepts "major.minor[.patch]" with anything after it ignored."""
    number = require_version
    for index, char in enumerate(require_version):
        if not (char.isdigit() or char == "."):
            number = require_version[:index]
            break
    try:
        parts = [int(n) for n in number.split(".")]
        major, minor = parts[0], parts[1]
        patch = parts[2] if len(parts) > 2 else 0
    except (ValueError, IndexError):
        raise Exception(
            "The require_version should be formatted following PEP 440, and include major, minor "
            "and patch numbers, e.g. major.minor.patch."
        ) from None
    installed = [int(n) for n in __version__.split(".")[:3]] + [0, 0]
    matches = major == installed[0] and (
        minor < installed[1] or (minor == installed[1] and patch <= installed[2])
    )
    if not matches:
        raise Exception(
            f"Quadrants version mismatch. Required version >= {major}.{minor}.{patch}, installed "
            f"version = {__version__}."
        )


def _parse_bool(text):
    return bool(int(text))


def _coerce(name, value, default):
    """`value` given for option `name` checked against the type of its default."""
    kind = type(default)
    if kind is bool:
        if isinstance(value, (bool, int)):
            return bool(value)
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    raise TypeError(f"qd.init: option {name} expects a {kind.__name__}, got {value!r}")


class _OptionSource:
    """Takes option values from the keyword arguments (consuming them) or the environment."""

    def __init__(self, kwargs):
        self.kwargs = kwargs

    def apply(self, target, name, default):
        env_name = "QD_" + name.upper()
        env_value = os.environ.get(env_name, "")
        parse = _parse_bool if isinstance(default, bool) else type(default)
        if name in self.kwargs:
            setattr(target, name, _coerce(name, self.kwargs.pop(name), default))
            if env_value:
                warnings.warn(
                    f"Environment variable {env_name}={env_value} overridden by qd.init argument "
                    f'"{name}"',
                    stacklevel=3,
                )
        elif env_value:
            try:
                setattr(target, name, parse(env_value))
            except ValueError:
                raise ValueError(
                    f"Invalid {env_name}={env_value}: expected a {type(default).__name__}"
                ) from None


def _default_type_from_env(kwarg_value, env_name, choices):
    """default_fp/default_ip: the keyword, else QD_DEFAULT_FP/IP ("32" or "64"), else None."""
    env_value = os.environ.get(env_name)
    if not env_value:
        return kwarg_value
    if kwarg_value is not None:
        key = env_name[3:].lower()
        warnings.warn(
            f'Environment variable {env_name}={env_value} overridden by qd.init argument "{key}"',
            stacklevel=3,
        )
        return kwarg_value
    if env_value not in choices:
        raise ValueError(f"Invalid {env_name}={env_value}, should be 32 or 64")
    return choices[env_value]


def _as_arch(value):
    if isinstance(value, Arch):
        return value
    if isinstance(value, str):
        return arch_from_name(value)
    raise TypeError(
        f"qd.init: arch must be a qd arch (qd.cpu, qd.cuda, ...) or a list of them, got {value!r}"
    )


def _is_cpu_vulkan(arch):
    """Whether `arch` is Vulkan on a CPU implementation (Mesa's lavapipe): chosen when asked for
    by name, passed over in a list such as ``qd.gpu``, where the CPU backend runs faster."""
    if arch is not Arch.vulkan:
        return False
    try:
        return _core.vulkan_device_info().get("device_type") == "cpu"
    except Exception:
        return False


def _select_arch(arch, enable_fallback):
    """The first available arch of `arch` (one arch or a list); CPU when `arch` is None."""
    if arch is None:
        return cpu
    candidates = [_as_arch(a) for a in (arch if isinstance(arch, (list, tuple)) else [arch])]
    for candidate in candidates:
        if is_arch_supported(candidate) and not (len(candidates) > 1 and _is_cpu_vulkan(candidate)):
            return candidate
    names = "[" + ", ".join(a.name for a in candidates) + "]"
    if not enable_fallback:
        raise RuntimeError(f"Arch={names} is not supported")
    why = ""
    if any(_is_cpu_vulkan(a) for a in candidates if a is Arch.vulkan):
        device = _core.vulkan_device_info().get("name", "")
        why = (f" (the Vulkan device, {device}, is a CPU implementation, slower than the CPU "
               f"backend: qd.init(arch=qd.vulkan) asks for it by name)")
    warnings.warn(f"Arch={names} is not supported, falling back to CPU{why}", stacklevel=3)
    return cpu


def _check_load_ir(cfg, src_ll_cache):
    if os.environ.get("QD_LOAD_IR", "0") in ("", "0"):
        return
    if cfg.arch in (Arch.x64, Arch.arm64, Arch.cuda, Arch.amdgpu) and (
        cfg.offline_cache or src_ll_cache
    ):
        raise ValueError(
            "Caching must be disabled when using QD_LOAD_IR: cached kernels skip code generation, "
            "so the replacement IR would be silently ignored. Pass offline_cache=False and "
            "src_ll_cache=False to qd.init, or unset QD_LOAD_IR."
        )


def init(
    arch=None,
    default_fp=None,
    default_ip=None,
    _test_mode=False,
    enable_fallback=True,
    require_version=None,
    print_non_pure=False,
    src_ll_cache=True,
    **kwargs,
):
    """Initializes Quadrants: resets everything, then configures the compiler and picks the
    arch. ``arch=None`` means the CPU; ``qd.gpu`` tries CUDA, Metal, Vulkan and AMDGPU in that
    order. Every compiler option (see ``CompileConfig``) may be given as a keyword argument or
    through the environment variable ``QD_<OPTION>``. With ``_test_mode=True`` the options are
    processed and the arch is chosen but Quadrants stays uninitialized; the non-compiler
    options (``SpecialConfig``) are returned."""
    if require_version is not None:
        check_require_version(require_version)
    if "default_up" in kwargs:
        raise KeyError(
            "'default_up' is always the unsigned type of 'default_ip'. Please set 'default_ip' "
            "instead."
        )
    default_fp = copy.deepcopy(default_fp)
    default_ip = copy.deepcopy(default_ip)
    kwargs = copy.deepcopy(kwargs)
    reset()

    cfg = CompileConfig()
    special = SpecialConfig()
    default_fp = _default_type_from_env(
        default_fp, "QD_DEFAULT_FP", {"32": _types.f32, "64": _types.f64}
    )
    default_ip = _default_type_from_env(
        default_ip, "QD_DEFAULT_IP", {"32": _types.i32, "64": _types.i64}
    )
    fp = _types.f32 if default_fp is None else default_fp
    ip = _types.i32 if default_ip is None else default_ip
    if fp not in (_types.f16, _types.f32, _types.f64):
        raise ValueError(f"default_fp must be qd.f16, qd.f32 or qd.f64, got {fp!r}")
    if ip not in (_types.i32, _types.i64):
        raise ValueError(f"default_ip must be qd.i32 or qd.i64, got {ip!r}")
    cfg.default_fp, cfg.default_ip, cfg.default_up = fp, ip, _types.unsigned_of(ip)

    source = _OptionSource(kwargs)
    for name in _SPECIAL_OPTIONS:
        source.apply(special, name, getattr(special, name))
    for name in _OPTIONS:
        source.apply(cfg, name, getattr(cfg, name))
    if kwargs:
        raise KeyError(f"Unrecognized keyword argument(s) for qd.init: {', '.join(kwargs)}")
    if (cfg.print_ir or os.environ.get("QD_DUMP_IR") == "1") and cfg.offline_cache:
        warnings.warn(
            "Even with print_ir/QD_DUMP_IR enabled, already cached kernels won't get their IRs "
            "shown. You might want to disable caching with offline_cache=False.",
            stacklevel=2,
        )

    env_arch = os.environ.get("QD_ARCH")
    if env_arch:
        arch = arch_from_name(env_arch)
    cfg.arch = _select_arch(arch, enable_fallback)
    cfg.fit()
    print(f"[Quadrants] Starting on arch={cfg.arch.name}")
    _check_load_ir(cfg, src_ll_cache)
    if _test_mode:
        return special

    _types.set_defaults(fp, ip)
    _state.cfg = cfg
    _state.special = special
    _logging.set_logging_level(special.log_level)
    _state.src_ll_cache = bool(src_ll_cache)
    _state.print_non_pure = bool(print_non_pure)
    if cfg.arch is Arch.vulkan:
        _state.subgroup_size = int(_core.vulkan_device_info()["subgroup_size"])
    from quadrants.profiler import kernel_profiler

    kernel_profiler.get_default_kernel_profiler().set_kernel_profiler_mode(bool(cfg.kernel_profiler))
    return None


def compile_options():
    """The options dict handed to ``quadrants._core.compile_kernel`` (from the live config)."""
    cfg = require_init()
    special = _state.special
    return {
        "default_fp": cfg.default_fp._qd_dtype,
        "default_ip": cfg.default_ip._qd_dtype,
        "debug": bool(cfg.debug),
        "short_circuit": bool(special.short_circuit_operators),
        "unrolling_limit": int(special.unrolling_limit),
        "fast_math": bool(cfg.fast_math),
        "cpu_simt": bool(cfg.cpu_simt),
        "nn_tensor_cores": bool(cfg.nn_tensor_cores),
        # LLVM's optimization level: the reference's external_optimization_level (default 3);
        # its opt_level concerns its own IR passes.
        "opt_level": int(cfg.external_optimization_level),
        "print_kernel_llvm_ir": bool(cfg.print_kernel_llvm_ir),
        "print_kernel_llvm_ir_optimized": bool(cfg.print_kernel_llvm_ir_optimized),
        "print_kernel_asm": bool(cfg.print_kernel_asm),
        "num_threads": int(cfg.cpu_max_num_threads or 0),
        # Beyond the minimal set: the core may ignore these.
        "check_out_of_bound": bool(cfg.check_out_of_bound),
        "random_seed": int(cfg.random_seed),
        "print_full_traceback": bool(special.print_full_traceback),
        "arch": cfg.arch.name,
        "default_gpu_block_dim": int(cfg.default_gpu_block_dim),
        "saturating_grid_dim": int(cfg.saturating_grid_dim),
        "offline_cache": bool(cfg.offline_cache),
        "offline_cache_file_path": str(cfg.offline_cache_file_path),
        "offline_cache_max_size_of_files": int(cfg.offline_cache_max_size_of_files),
        "offline_cache_cleaning_policy": str(cfg.offline_cache_cleaning_policy),
        "offline_cache_cleaning_factor": float(cfg.offline_cache_cleaning_factor),
        "compiler_id": _cache.compiler_id(),
        "subgroup_size": _state.subgroup_size,
    }


def subgroup_size():
    """Lanes per subgroup: the Vulkan device's after ``qd.init(arch=qd.vulkan)``, else 32 (CUDA
    warps, the CPU's SIMT emulation)."""
    return _state.subgroup_size


def dump_compile_config():
    """Prints every option of the live CompileConfig, one ``name=value`` per line."""
    cfg = require_init()
    print("\n".join(f"{name}={value}" for name, value in cfg.items()))


__all__ = [
    "init",
    "reset",
    "sync",
    "dump_compile_config",
    "CompileConfig",
    "cpu",
    "x64",
    "x86_64",
    "arm64",
    "cuda",
    "amdgpu",
    "metal",
    "vulkan",
    "python",
    "gpu",
]
