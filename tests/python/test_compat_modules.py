"""Module names of the reference that programs reach into: ``quadrants.lang.impl``,
``quadrants.lang._template_mapper``, ``qd._logging``, ``qd.types.primitive_types``.

Spec, observed on the reference (quadrants 1.3.3):

- ``impl.get_runtime()`` is a ``PyQuadrants``; one exists at import. ``qd.init()`` and
  ``qd.reset()`` call ``clear()`` on it once and replace it (``get_runtime()`` is another object
  afterwards). ``materialize()`` runs before each kernel compilation (first launch; a new
  template value) and not on a repeated launch; ``qd.sync()`` calls it too. A wrapper assigned
  to ``PyQuadrants.materialize`` / ``.clear`` runs at those moments.
- ``get_runtime().prog.synchronize()`` waits for launched work and does not call
  ``materialize()``; reading ``prog`` before ``qd.init`` or on a runtime a reset replaced raises
  QuadrantsRuntimeError.
- ``get_runtime().default_fp`` is f32 before ``qd.init`` and the ``default_fp`` given to it
  (``is qd.f64``) after; ``default_ip`` likewise.
- ``impl.get_max_shared_memory_bytes(is_lowerbound_ok=True)`` is 0 on the CPU;
  ``is_lowerbound_ok=False`` raises RuntimeError there; before ``qd.init`` it raises
  QuadrantsRuntimeError; the argument is keyword-only.
- ``quadrants.lang._template_mapper.__builtins__`` is a dict (Genesis sets ``"__debug__"``).
- ``qd._logging``: levels ``trace < debug < info < warn < error < critical`` (constants
  ``TRACE`` ... ``CRITICAL`` are the lower-case names; ``supported_log_levels``); the default
  and what ``qd.init()`` restores is info; ``qd.init(log_level="warn")`` sets it;
  ``_get_logging(level)`` returns ``logger(msg, *args, **kwargs)`` writing the formatted message
  to stderr; the error and critical loggers raise RuntimeError; an unknown level name raises
  RuntimeError.
- ``qd.types.primitive_types.real_types == {f16, f32, f64, float}``; ``integer_types`` holds the
  integer types, ``int`` and ``bool``.
"""

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import impl


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()
    qd.set_logging_level(qd.INFO)


@pytest.fixture
def hook_calls(monkeypatch):
    """Wraps PyQuadrants.materialize and .clear the way Genesis does; returns the call log."""
    calls = []
    materialize, clear = impl.PyQuadrants.materialize, impl.PyQuadrants.clear

    def wrapped_materialize(self):
        calls.append("materialize")
        materialize(self)

    def wrapped_clear(self):
        calls.append("clear")
        clear(self)

    monkeypatch.setattr(impl.PyQuadrants, "materialize", wrapped_materialize)
    monkeypatch.setattr(impl.PyQuadrants, "clear", wrapped_clear)
    return calls


def _take(calls):
    taken = list(calls)
    calls.clear()
    return taken


def test_runtime_hooks(arch, hook_calls):
    old = impl.get_runtime()
    assert isinstance(old, impl.PyQuadrants)
    qd.init(arch=getattr(qd, arch))
    assert _take(hook_calls) == ["clear"]
    runtime = impl.get_runtime()
    assert runtime is not old and not runtime.materialized

    n = qd.ndarray(qd.f32, 4)

    @qd.kernel
    def k(a: qd.types.ndarray(), s: qd.template()):
        for i in range(4):
            a[i] = s

    k(n, 1)
    assert _take(hook_calls) == ["materialize"] and runtime.materialized
    k(n, 1)
    assert _take(hook_calls) == []
    k(n, 2)
    assert _take(hook_calls) == ["materialize"]
    np.testing.assert_array_equal(n.to_numpy(), [2, 2, 2, 2])
    qd.sync()
    assert _take(hook_calls) == ["materialize"]
    qd.reset()
    assert _take(hook_calls) == ["clear"] and impl.get_runtime() is not runtime


def test_prog_synchronize(arch, hook_calls):
    """Genesis calls ``impl.get_runtime().prog.synchronize()`` inside a wrapped materialize."""
    runtime = impl.get_runtime()
    n = qd.ndarray(qd.f32, 4)

    @qd.kernel
    def k(a: qd.types.ndarray()):
        for i in range(4):
            a[i] = i

    k(n)
    _take(hook_calls)
    runtime.prog.synchronize()
    assert _take(hook_calls) == []
    np.testing.assert_array_equal(n.to_numpy(), [0, 1, 2, 3])
    assert runtime.prog is runtime.prog
    qd.reset()
    for stale in (runtime, impl.get_runtime()):
        with pytest.raises(qd.QuadrantsRuntimeError, match="qd.init"):
            stale.prog
    qd.init(arch=getattr(qd, arch))
    impl.get_runtime().prog.synchronize()


def test_default_types(arch):
    qd.reset()
    assert impl.get_runtime().default_fp is qd.f32 and impl.get_runtime().default_ip is qd.i32
    qd.init(arch=getattr(qd, arch), default_fp=qd.f64, default_ip=qd.i64)
    runtime = impl.get_runtime()
    assert runtime.default_fp is qd.f64 and runtime.default_ip is qd.i64
    assert runtime.default_up is qd.u64
    assert impl.current_cfg() is qd.cfg and impl.current_cfg().arch is getattr(qd, arch)
    qd.reset()
    with pytest.raises(qd.QuadrantsRuntimeError):
        impl.current_cfg()


def test_max_shared_memory_bytes(arch):
    if arch in ("cuda", "vulkan"):
        limit = impl.get_max_shared_memory_bytes(is_lowerbound_ok=False)
        assert limit >= (48 if arch == "cuda" else 16) * 1024  # Vulkan guarantees 16 KiB
        assert impl.get_max_shared_memory_bytes(is_lowerbound_ok=True) == limit
    else:
        assert impl.get_max_shared_memory_bytes(is_lowerbound_ok=True) == 0
        with pytest.raises(RuntimeError, match="not implemented for arch"):
            impl.get_max_shared_memory_bytes(is_lowerbound_ok=False)
    with pytest.raises(TypeError):
        impl.get_max_shared_memory_bytes(True)
    qd.reset()
    with pytest.raises(qd.QuadrantsRuntimeError):
        impl.get_max_shared_memory_bytes(is_lowerbound_ok=True)


def test_template_mapper_module():
    import quadrants.lang._template_mapper as template_mapper

    assert qd.lang._template_mapper is template_mapper
    assert isinstance(template_mapper.__builtins__, dict)
    assert qd.lang.impl is impl


def test_logging_levels(arch, capsys):
    log = qd._logging
    assert (log.TRACE, log.DEBUG, log.INFO, log.WARN, log.ERROR, log.CRITICAL) == (
        "trace", "debug", "info", "warn", "error", "critical"
    )
    assert log.supported_log_levels == ["debug", "trace", "info", "warn", "error", "critical"]
    assert qd.DEBUG == "debug" and qd.set_logging_level is log.set_logging_level
    assert log.is_logging_effective("info") and not log.is_logging_effective("debug")
    qd.set_logging_level("error")
    assert not log.is_logging_effective("warn") and log.is_logging_effective("critical")
    qd.set_logging_level("trace")
    assert log.is_logging_effective("trace")
    qd.set_logging_level("off")
    assert not log.is_logging_effective("critical")
    with pytest.raises(RuntimeError, match="Unknown logging level"):
        qd.set_logging_level("loud")
    with pytest.raises(RuntimeError, match="Unknown logging level"):
        log.is_logging_effective("loud")
    qd.init(arch=getattr(qd, arch), log_level="warn")
    assert not log.is_logging_effective("info") and log.is_logging_effective("warn")
    qd.init(arch=getattr(qd, arch))
    assert log.is_logging_effective("info")


def test_loggers(capsys):
    log = qd._logging
    capsys.readouterr()
    log.warn("value {} and {name}", 3, name="x")
    err = capsys.readouterr().err
    assert err.startswith("[W] [test_compat_modules.py:test_loggers@") and "value 3 and x" in err
    log.debug("hidden")
    assert capsys.readouterr().err == ""
    with pytest.raises(RuntimeError, match="broken 1"):
        log.error("broken {}", 1)
    with pytest.raises(RuntimeError, match="fatal"):
        log.critical("fatal")
    # Genesis replaces the loggers and later restores them through _get_logging
    restored = log._get_logging(log.INFO)
    restored("back")
    assert "[I] " in capsys.readouterr().err


def test_primitive_types():
    import quadrants.types.primitive_types as primitive_types

    assert qd.types.primitive_types is primitive_types
    assert primitive_types.real_types == {qd.f16, qd.f32, qd.f64, float}
    assert primitive_types.integer_types == {
        qd.i8, qd.i16, qd.i32, qd.i64, qd.u1, qd.u8, qd.u16, qd.u32, qd.u64, int, bool
    }
    assert primitive_types.all_types == primitive_types.real_types | primitive_types.integer_types
    assert id(qd.f32) in primitive_types.real_type_ids and id(qd.i32) in primitive_types.type_ids
    assert primitive_types.f32 is qd.f32 and qd.i32 not in primitive_types.real_types
