"""Device memory of fields and ndarrays on CUDA and Vulkan (``quadrants._core.DeviceBuffer``).

On a GPU arch the device copy is the truth and the NumPy array a field or ndarray keeps is a host
mirror that is only valid right after a pull: Python-scope reads copy the data (or the one
element) down first, writes change the mirror and copy it (or the one element) up. The copies
are the driver's synchronous ones on the default stream (Vulkan launches are synchronous), so
a read sees every kernel launched before it and a kernel sees every write made before it. On the CPU every function here is a
no-op: the NumPy array is the memory.
"""

import numpy as np

from quadrants import _core, _runtime


def on_cuda():
    """Whether the live runtime runs on CUDA."""
    cfg = _runtime.current_cfg()
    return cfg is not None and cfg.arch is _runtime.cuda


def on_vulkan():
    """Whether the live runtime runs on Vulkan."""
    cfg = _runtime.current_cfg()
    return cfg is not None and cfg.arch is _runtime.vulkan


def allocate(array):
    """A zero-filled DeviceBuffer shaped like `array` on CUDA or Vulkan, else None."""
    if on_cuda():
        return _core.DeviceBuffer(array.shape, array.itemsize)
    if on_vulkan():
        return _core.DeviceBuffer(array.shape, array.itemsize, vulkan=True)
    return None


def register_field(field_id, array, device):
    """Backs field `field_id` with `device` on a GPU arch, with `array` on the CPU."""
    if device is not None:
        _core.cuda_register_field(field_id, device)
    else:
        _core.register_field(field_id, array)


def pull(device, array):
    """Copies the device data into the host mirror `array` (C-contiguous, same size)."""
    if device is not None:
        device.download(array)


def push(device, array):
    """Copies the host mirror `array` to the device."""
    if device is not None:
        device.upload(array)


def _offset(view, position):
    """Byte offset of view[position] from the start of the memory `view` looks at (a view of
    the mirror whose strides may be permuted, never shifted)."""
    return sum(int(index) * stride for index, stride in zip(position, view.strides))


def read_item(device, view, position):
    """Element `position` of `view`: from the device on a GPU arch, from the mirror on the CPU."""
    if device is None:
        return view[position]
    data = device.read(_offset(view, position), view.itemsize)
    return np.frombuffer(data, dtype=view.dtype)[0]


def write_item(device, view, position):
    """Copies element `position` of the mirror `view` (already written) to the device."""
    if device is not None:
        item = np.ascontiguousarray(view[position])
        device.write(_offset(view, position), item.tobytes())
