"""``qd.extension``, ``qd.is_extension_enabled``, ``qd.DeviceCapability`` and ``qd.clock_freq_hz``.

``qd.extension`` lists the optional features the reference names (the same members, in the same
order). ``qd.is_extension_enabled(ext)`` answers for the arch of the running program (after
``qd.init``) and tells what *this* package provides there, which is less than the reference on
some points: sparse SNodes, quantized types, meshes, the autodiff stack, block-local caching and
external functions are not provided, so those extensions read False everywhere; 64-bit data and
kernel assertions (``debug=True``) are provided on every arch.

``qd.DeviceCapability`` holds the names of the SPIR-V device capabilities, as strings (the
reference's constants; no arch of this package is a SPIR-V one).

``qd.clock_freq_hz()`` is the frequency of the counter that ``qd.clock_counter()`` reads: the
device's peak clock on CUDA. On the CPU it raises NotImplementedError, as in the reference.
"""

import enum

from quadrants import _core, _runtime


class Extension(enum.Enum):
    """An optional feature (``qd.extension.sparse``, ...)."""

    sparse = 0
    quant = 1
    mesh = 2
    quant_basic = 3
    data64 = 4
    adstack = 5
    bls = 6
    assertion = 7
    extfunc = 8

    def __repr__(self):
        return f"Extension.{self.name}"

    def __str__(self):
        return f"Extension.{self.name}"


extension = Extension

# What this package provides, on every arch it runs on.
_PROVIDED = frozenset({Extension.data64, Extension.assertion})


def is_extension_enabled(ext):
    """Whether extension `ext` (a ``qd.extension`` member) is available on the current arch."""
    if not isinstance(ext, Extension):
        raise TypeError(f"is_extension_enabled() expects a qd.extension member, got {ext!r}")
    _runtime.require_init()
    return ext in _PROVIDED


class DeviceCapability:
    """Names of SPIR-V device capabilities (strings)."""

    spirv_version_1_3 = "spirv_version_1_3"
    spirv_version_1_4 = "spirv_version_1_4"
    spirv_version_1_5 = "spirv_version_1_5"
    spirv_has_int8 = "spirv_has_int8"
    spirv_has_int16 = "spirv_has_int16"
    spirv_has_int64 = "spirv_has_int64"
    spirv_has_float16 = "spirv_has_float16"
    spirv_has_float64 = "spirv_has_float64"
    spirv_has_atomic_int64 = "spirv_has_atomic_int64"
    spirv_has_atomic_float16 = "spirv_has_atomic_float16"
    spirv_has_atomic_float16_add = "spirv_has_atomic_float16_add"
    spirv_has_atomic_float16_minmax = "spirv_has_atomic_float16_minmax"
    spirv_has_atomic_float = "spirv_has_atomic_float"
    spirv_has_atomic_float_add = "spirv_has_atomic_float_add"
    spirv_has_atomic_float_minmax = "spirv_has_atomic_float_minmax"
    spirv_has_atomic_float64 = "spirv_has_atomic_float64"
    spirv_has_atomic_float64_add = "spirv_has_atomic_float64_add"
    spirv_has_atomic_float64_minmax = "spirv_has_atomic_float64_minmax"
    spirv_has_variable_ptr = "spirv_has_variable_ptr"
    spirv_has_physical_storage_buffer = "spirv_has_physical_storage_buffer"
    spirv_has_subgroup_basic = "spirv_has_subgroup_basic"
    spirv_has_subgroup_vote = "spirv_has_subgroup_vote"
    spirv_has_subgroup_arithmetic = "spirv_has_subgroup_arithmetic"
    spirv_has_subgroup_ballot = "spirv_has_subgroup_ballot"
    spirv_has_non_semantic_info = "spirv_has_non_semantic_info"
    spirv_has_no_integer_wrap_decoration = "spirv_has_no_integer_wrap_decoration"


def clock_freq_hz():
    """Frequency in Hz of the counter read by ``qd.clock_counter()`` (CUDA: the peak clock)."""
    arch = _runtime.require_init().arch
    if arch is _runtime.Arch.cuda:
        khz = _core.cuda_device_info().get("clock_rate_khz", 0)
        if khz > 0:
            return khz * 1000
        raise NotImplementedError(
            "clock_freq_hz: the CUDA driver does not report the device's clock rate"
        )
    raise NotImplementedError(f"clock_freq_hz not implemented for arch {arch.name}")


__all__ = ["Extension", "extension", "is_extension_enabled", "DeviceCapability", "clock_freq_hz"]
