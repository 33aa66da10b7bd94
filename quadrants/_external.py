"""Arrays of other libraries as kernel arguments (spec 0.13): torch tensors, CuPy arrays and
anything else that describes its memory through ``__cuda_array_interface__`` (device memory)
or ``__array_interface__`` / the buffer protocol (host memory).

Kernels read and write such arrays in place; what the caller sees after the call is what the
kernel wrote. Where the memory already is where the kernel runs, nothing is copied: on CUDA a
tensor in device memory is launched as a ``DeviceBuffer`` over its pointer (``wrap``: never
freed here, the tensor keeps it alive); on the CPU a host tensor becomes a NumPy view of its
memory. Otherwise the data is copied to where the kernel runs and back after the call: a CUDA
tensor passed to a CPU kernel through a host copy, a host tensor passed to a CUDA kernel like a
NumPy array (copied in and back by the launcher).

Only C-contiguous arrays are taken as they are (like NumPy arrays: ``ValueError`` otherwise).
The CUDA launch runs on the legacy default stream, which orders it after work that torch or
CuPy queued on their default streams.
"""

import numpy as np

from quadrants import _core


class DeviceArray:
    """Another library's C-contiguous device array, ready to launch: ``dtype`` (NumPy),
    ``shape`` and ``buffer`` (a DeviceBuffer over its memory)."""

    __slots__ = ("dtype", "shape", "buffer")

    def __init__(self, dtype, shape, buffer):
        self.dtype = dtype
        self.shape = shape
        self.buffer = buffer


def _is_torch_tensor(value):
    kind = type(value)
    return kind.__module__.startswith("torch") and hasattr(value, "is_cuda")


def _c_contiguous_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _check_contiguous(shape, strides, itemsize):
    if strides is None:
        return
    if any(extent > 1 and stride != want for extent, stride, want in
           zip(shape, strides, _c_contiguous_strides(shape, itemsize))):
        raise ValueError(
            "Non contiguous tensors are not supported, please call tensor.contiguous() before "
            "passing it into quadrants kernel."
        )


def _device_array(value):
    """A DeviceArray over the memory `value` describes with ``__cuda_array_interface__``."""
    info = value.__cuda_array_interface__
    dtype = np.dtype(info["typestr"])
    shape = tuple(int(d) for d in info["shape"])
    _check_contiguous(shape, info.get("strides"), dtype.itemsize)
    ptr = int(info["data"][0] or 0)
    return DeviceArray(dtype, shape, _core.DeviceBuffer.wrap(ptr, shape, dtype.itemsize, value))


def _host_view(value):
    """A NumPy array sharing the host memory of `value`."""
    if _is_torch_tensor(value):
        value = value.detach()
        if not value.is_contiguous():
            _check_contiguous(tuple(value.shape), (0,) * value.dim(), 1)  # raises
        return value.numpy()
    return np.asarray(value)


def is_array(value):
    """Whether `value` is another library's array that ``adapt`` takes (not a NumPy array)."""
    return (
        hasattr(value, "__cuda_array_interface__")
        or _is_torch_tensor(value)
        or hasattr(value, "__array_interface__")
    )


def adapt(value, on_cuda, callbacks):
    """`value` as what the launcher takes, when it is another library's array: a NumPy array
    (host memory, or a host copy whose data `callbacks` copy back after the call) or, on CUDA,
    a DeviceArray. None when `value` is not such an array."""
    if isinstance(value, np.ndarray):
        return None
    if hasattr(value, "__cuda_array_interface__"):
        if on_cuda:
            return _device_array(value)
        if _is_torch_tensor(value):
            host = value.detach().cpu().numpy()
            callbacks.append(lambda: value.copy_(to_torch(host, value.device)))
            return host
        raise ValueError(
            f"an array in CUDA device memory ({type(value).__name__}) cannot be passed to a "
            "kernel on the CPU; copy it to the host first"
        )
    if _is_torch_tensor(value) or hasattr(value, "__array_interface__"):
        return _host_view(value)
    return None


def to_torch(array, device=None):
    """A torch tensor holding a copy of NumPy array `array`, on `device` when given."""
    import torch

    tensor = torch.from_numpy(np.array(array, copy=True))
    return tensor.to(device) if device is not None else tensor


def torch_to_numpy(tensor):
    """The data of torch tensor `tensor` as a NumPy array (a host copy for device tensors)."""
    return tensor.detach().cpu().numpy()
