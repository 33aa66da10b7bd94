"""Zero-copy interop: DLPack export of fields and ndarrays, and the ``copy=`` argument of
``to_numpy`` / ``to_torch``.

Every export describes the canonical axes (a permuted layout shows as permuted strides) over
the memory kernels use, so writes through a view are seen by later kernels and the other way
round:

- on the CPU the memory is a NumPy array: the export is NumPy's own, of the canonical view
  (``__dlpack_device__`` is ``(1, 0)``, kDLCPU);
- on CUDA it is a ``DeviceBuffer``: ``DeviceBuffer.to_dlpack`` (csrc/python/dlpack.c) makes the
  capsule, holding the buffer alive; every launched kernel is waited for first, so a consumer on
  any stream sees their results (``__dlpack_device__`` is ``(2, ordinal)``, kDLCUDA);
- on Vulkan ``__dlpack_device__`` is ``(7, 0)``, kDLVulkan, but nothing exports: no DLPack
  consumer (torch, CuPy, NumPy) takes Vulkan memory, so an export raises BufferError and
  ``to_torch`` / ``to_numpy`` copy (``copy=False`` raises ValueError).

``copy=True`` (the default) always copies; ``copy=False`` aliases the memory or raises
ValueError; ``copy=None`` aliases when it can and copies otherwise. ``to_numpy`` aliases only on
the CPU (NumPy cannot hold device memory). ``to_torch`` aliases the dtypes the reference does
(i32, i64, f32, f64, u1) through ``torch.utils.dlpack``, not a 0-d field, and only when the
requested device is where the memory is. A vector/matrix field keeps one array per element
and a struct field one per member: neither is one strided tensor, so neither exports.

Views and capsules stay valid while they live, also after the field or ndarray is dropped; after
``qd.reset()`` / ``qd.init()`` a CUDA view's memory belongs to a released context (undefined, as
in the reference).
"""

from quadrants import _core

DL_CPU = 1
DL_CUDA = 2
DL_VULKAN = 7

# DLPack type codes by NumPy kind
_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}

# the dtypes whose torch views the reference makes
_TORCH_ZERO_COPY = ("i32", "i64", "f32", "f64", "u1")


def _cuda_strides(view):
    """Element strides of canonical view `view` of a C-contiguous physical array."""
    return tuple(stride // view.itemsize for stride in view.strides)


def export(view, device, *, versioned=False, max_version=None, copy=None):
    """A DLPack capsule of canonical view `view` (on CUDA: of the host mirror, describing the
    same axes of DeviceBuffer `device`)."""
    if device is None:
        kwargs = {}
        if versioned or (max_version is not None and tuple(max_version) >= (1, 0)):
            kwargs["max_version"] = (1, 0)
        if copy is not None:
            kwargs["copy"] = copy
        return view.__dlpack__(**kwargs)
    if _on_vulkan():
        raise BufferError(
            "Vulkan memory cannot be exported through DLPack (no consumer takes it); copy it "
            "with to_numpy() or to_torch()"
        )
    if copy:
        raise BufferError("a copying DLPack export of device memory is not supported")
    if max_version is not None:
        versioned = tuple(max_version) >= (1, 0)
    _core.cuda_sync()  # the results of every launched kernel, for a consumer on any stream
    return device.to_dlpack(
        _DL_CODES[view.dtype.kind], view.itemsize * 8, view.shape, _cuda_strides(view),
        bool(versioned),
    )


def _on_vulkan():
    from quadrants import _device

    return _device.on_vulkan()


def device_of(device):
    """``__dlpack_device__``: (kDLCPU, 0), (kDLCUDA, ordinal) for memory on CUDA, (kDLVulkan, 0)
    on Vulkan."""
    if device is None:
        return (DL_CPU, 0)
    if _on_vulkan():
        return (DL_VULKAN, 0)
    return (DL_CUDA, _core.cuda_device_info()["ordinal"])


class Exportable:
    """Mixin: the DLPack protocol for a class with ``_dlpack_view()`` -> (canonical NumPy view,
    DeviceBuffer or None)."""

    __slots__ = ()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        view, device = self._dlpack_view()
        if dl_device is not None and tuple(dl_device) != device_of(device):
            raise BufferError(f"cannot export to device {tuple(dl_device)}")
        return export(view, device, max_version=max_version, copy=copy)

    def __dlpack_device__(self):
        return device_of(self._dlpack_view()[1])

    def to_dlpack(self, versioned=False):
        """A DLPack capsule over the memory: "dltensor" (DLPack 0.x, what
        ``torch.utils.dlpack.from_dlpack`` takes) or, with `versioned`, "dltensor_versioned"."""
        view, device = self._dlpack_view()
        return export(view, device, versioned=versioned)


def numpy_copy(device, copy):
    """The `copy` argument ``to_numpy`` applies to a NumPy view of the memory (``_to_numpy``):
    `copy` itself on the CPU; on CUDA, where the view is only a host mirror, True, or ValueError
    for ``copy=False``."""
    if device is None or copy is True:
        return copy
    if copy is False:
        raise ValueError(
            "Zero-copy numpy requires a CPU backend (numpy arrays cannot reference GPU memory)"
        )
    return True


def to_torch(view, device, qd_dtype, torch_device, copy, to_copy, *, is_0d_field=False):
    """``to_torch(torch_device, copy=copy)`` of the memory `view` / `device` describe: a torch
    tensor aliasing it through DLPack when asked for (``copy`` False or None) and possible, else
    `to_copy()` (ValueError instead for ``copy=False``)."""
    if copy is not False and copy is not None:
        return to_copy()
    if str(qd_dtype) not in _TORCH_ZERO_COPY or is_0d_field:
        if copy is False:
            arch = "cuda" if device is not None else "x64"
            raise ValueError(f"Zero-copy not available for arch={arch}, dtype={qd_dtype}")
        return to_copy()
    import torch
    import torch.utils.dlpack

    try:
        tensor = torch.utils.dlpack.from_dlpack(export(view, device))
    except (RuntimeError, BufferError) as exc:
        if copy is False:
            raise ValueError(f"Zero-copy not available: {exc}") from None
        return to_copy()
    if torch_device is not None:
        requested = torch.device(torch_device)
        if tensor.device.type != requested.type or (
            requested.index is not None and tensor.device.index is not None
            and tensor.device.index != requested.index
        ):
            if copy is False:
                raise ValueError(
                    f"copy=False is incompatible with device transfer (data on {tensor.device}, "
                    f"requested {torch_device})"
                )
            return to_copy()
    return tensor
