"""``quadrants.lang.impl``: the runtime object of the reference, and two helpers.

``get_runtime()`` returns the current ``PyQuadrants``. As in the reference there is one at
import, and every ``qd.reset()`` (so every ``qd.init()``) calls ``clear()`` on it and replaces it
with a fresh one. Its ``materialize()`` runs before every kernel compilation (a kernel's first
launch, and each new specialisation of it) and in ``qd.sync()``; the reference also compiles
small kernels for Python-scope field and ndarray access and calls it then, which we do not, as
that access needs no kernel here. Both hooks are looked up on the class at each call, so a
program that replaces ``PyQuadrants.materialize`` or ``PyQuadrants.clear`` with a wrapper has
its wrapper run.

``prog`` is the program of an initialised runtime; of it only ``synchronize()`` is here (Genesis
calls it after filling fields at materialization): it waits for launched work without
materializing. Before ``qd.init``, and on a runtime a reset replaced, reading ``prog`` raises
QuadrantsRuntimeError, as in the reference.

``default_fp``, ``default_ip`` and ``default_up`` are the live defaults of ``qd.init`` (f32, i32
and u32 before it). ``current_cfg()`` is ``qd.cfg``. ``get_max_shared_memory_bytes`` answers
with the shared memory one block may use.
"""

from quadrants import _core, _runtime, _types
from quadrants._core import QuadrantsRuntimeError


class Program:
    """What ``get_runtime().prog`` returns: the reference's program object, of which programs
    call ``synchronize()``."""

    def synchronize(self):
        """Waits until all launched work is done (CPU launches finish before they return; CUDA
        ones are asynchronous). Unlike ``qd.sync()`` it does not materialize the runtime."""
        cfg = _runtime.require_init()
        if cfg.arch is _runtime.Arch.cuda:
            _core.cuda_sync()
        elif cfg.arch is _runtime.Arch.vulkan:
            _core.vulkan_sync()


class PyQuadrants:
    """The runtime object that ``get_runtime()`` returns (see the module docstring)."""

    def __init__(self):
        self.materialized = False  # materialize() has run since the last reset

    def _default(self, name, fallback):
        cfg = _runtime.current_cfg()
        return fallback if cfg is None else getattr(cfg, name)

    @property
    def prog(self):
        """The program of this runtime (see the module docstring)."""
        if self is not pyquadrants or _runtime.current_cfg() is None:
            raise QuadrantsRuntimeError(
                "_prog attribute not initialized. Maybe you forgot to call `qd.init()` first?"
            )
        return _program

    @property
    def default_fp(self):
        return self._default("default_fp", _types.f32)

    @property
    def default_ip(self):
        return self._default("default_ip", _types.i32)

    @property
    def default_up(self):
        return self._default("default_up", _types.u32)

    @staticmethod
    def _qd_cache_key(runtime):
        """What a kernel can read from this object while it compiles (``get_runtime().default_fp``
        in a ``qd.static`` expression): the offline cache keys kernels that name it by these
        values (quadrants/_cache.py)."""
        return ("PyQuadrants", runtime.default_fp, runtime.default_ip, runtime.default_up)

    def materialize(self):
        """Called before every kernel compilation and in ``qd.sync()``. Our fields get their
        memory when they are created, so there is nothing left to do here but to record the
        call; the method exists to be wrapped."""
        self.materialized = True

    def clear(self):
        """Called by ``qd.reset()`` (and ``qd.init()``) before this runtime is replaced."""
        self.materialized = False


pyquadrants = PyQuadrants()
_program = Program()


def get_runtime():
    """The current runtime object (replaced by every reset)."""
    return pyquadrants


def materialize_runtime():
    """Calls ``materialize`` of the current runtime through its class, so that a wrapper a
    program put on ``PyQuadrants.materialize`` runs."""
    runtime = pyquadrants
    type(runtime).materialize(runtime)


@_runtime.register_reset_hook
def _replace_runtime():
    global pyquadrants
    old = pyquadrants
    type(old).clear(old)
    pyquadrants = PyQuadrants()
_program = Program()


def current_cfg():
    """The live compile configuration (``qd.cfg``); QuadrantsRuntimeError before ``qd.init``."""
    return _runtime.require_init()


def get_max_shared_memory_bytes(*, is_lowerbound_ok):
    """Bytes of shared memory one block of a kernel may use. On CUDA: the device's limit for a
    block's static shared memory (kernels here do not opt in to more). On the CPU shared
    memory is emulated, and the answer is 0 when `is_lowerbound_ok` (the reference's lower
    bound), else RuntimeError, as the reference gives for backends it cannot query."""
    cfg = _runtime.require_init()
    if cfg.arch is _runtime.Arch.cuda:
        return int(_core.cuda_device_info()["max_shared_memory_per_block"])
    if cfg.arch is _runtime.Arch.vulkan:
        return int(_core.vulkan_device_info()["max_shared_bytes"])
    if is_lowerbound_ok:
        return 0
    raise RuntimeError(f"get_max_shared_memory_bytes not implemented for arch {cfg.arch.name}")


__all__ = ["PyQuadrants", "Program", "get_runtime", "current_cfg", "get_max_shared_memory_bytes"]
