"""``qd.perf_dispatch``: one entry point, several interchangeable implementations, the fastest chosen by timing.

A function decorated with ``@qd.perf_dispatch(get_geometry_hash=...)`` is a prototype: its body never runs. Each
implementation (a kernel, or any Python function with the same parameters) is registered with
``@proto.register`` or ``@proto.register(is_compatible=...)``. A call of the prototype runs one compatible
implementation. For each *geometry* (the value ``get_geometry_hash(*args, **kwargs)`` returns) the dispatcher runs
the compatible implementations in turn -- first some untimed warm-up calls each, then ``active`` timed calls each,
between ``qd.sync()`` calls -- and from then on calls the one with the lowest mean time. Measuring starts again after
``repeat_after_count`` further calls or ``repeat_after_seconds`` seconds of that geometry.

``QD_PERFDISPATCH_FORCE="proto:impl,..."`` pins a prototype to the implementation of that function name, and
``QD_PERFDISPATCH_PRINT_DEBUG=1`` prints each choice.
"""

import inspect
import os
import time

from quadrants._runtime import sync
from quadrants._core import QuadrantsRuntimeError, QuadrantsSyntaxError

# Re-measuring every this many calls of a geometry when neither trigger is given.
DEFAULT_REPEAT_AFTER_COUNT = 300


def _parse_force(text):
    """'proto1:impl1,proto2:impl2' -> {proto1: impl1, proto2: impl2}."""
    forced = {}
    for pair in (text or "").split(","):
        pair = pair.strip()
        if not pair:
            continue
        if ":" not in pair:
            raise ValueError(f"Malformed QD_PERFDISPATCH_FORCE entry '{pair}'. Expected format: 'dispatcher:impl'.")
        proto, impl = (s.strip() for s in pair.split(":", 1))
        forced[proto] = impl
    return forced


def _debug_enabled():
    return os.environ.get("QD_PERFDISPATCH_PRINT_DEBUG", "0") == "1"


def _force_active():
    return bool(_parse_force(os.environ.get("QD_PERFDISPATCH_FORCE")))


def _python_function(fn):
    """The plain Python function behind a kernel, func or other wrapper (for names and signatures)."""
    seen = set()
    while id(fn) not in seen:
        seen.add(id(fn))
        inner = getattr(fn, "__wrapped__", None) or getattr(fn, "fn", None) or getattr(fn, "func", None)
        if inner is None or not callable(inner):
            break
        fn = inner
    return fn


def _parameter_names(fn):
    return list(inspect.signature(_python_function(fn)).parameters)



def _same_objects(args0, kwargs0, args, kwargs):
    """Whether (args, kwargs) are the very objects of (args0, kwargs0)."""
    if len(args) != len(args0) or len(kwargs) != len(kwargs0):
        return False
    for a, b in zip(args, args0):
        if a is not b:
            return False
    for name, value in kwargs.items():
        if name not in kwargs0 or kwargs0[name] is not value:
            return False
    return True

class DispatchImpl:
    """One registered implementation: calls through to it, and remembers its compatibility test."""

    def __init__(self, implementation, is_compatible):
        self.__wrapped__ = implementation
        self.is_compatible = is_compatible
        self.__name__ = _python_function(implementation).__name__

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self):
        return f"<perf_dispatch implementation {self.__name__}>"


class _Geometry:
    """Measurements of one geometry."""

    __slots__ = ("trials", "times", "fastest", "calls_since_choice", "chosen_at", "measured_once", "is_single")

    def __init__(self):
        self.trials = {}  # DispatchImpl -> calls made in the current measuring round
        self.times = {}  # DispatchImpl -> timed durations (seconds) of the current round
        self.fastest = None  # the chosen DispatchImpl, None while measuring
        self.calls_since_choice = 0
        self.chosen_at = 0.0  # time.time() of the choice
        self.measured_once = False  # a first round finished (later rounds use `warmup`, not `first_warmup`)
        self.is_single = False  # chosen as the only compatible implementation


class PerformanceDispatcher:
    """The object ``@qd.perf_dispatch(...)`` turns a prototype into; call it like the prototype."""

    def __init__(
        self,
        fn,
        get_geometry_hash,
        first_warmup=1,
        warmup=0,
        active=1,
        repeat_after_count=None,
        repeat_after_seconds=None,
    ):
        if not callable(get_geometry_hash):
            raise TypeError("perf_dispatch: get_geometry_hash must be callable")
        if active < 1:
            raise ValueError("perf_dispatch: active must be at least 1")
        self.__name__ = _python_function(fn).__name__
        self.__doc__ = getattr(fn, "__doc__", None)
        self._params = _parameter_names(fn)
        self._get_geometry_hash = get_geometry_hash
        self.num_first_warmup = first_warmup
        self.num_warmup = warmup
        self.num_active = active
        # None means "pick for me"; <= 0 turns a trigger off. With both None: every 300 calls.
        if repeat_after_count is None and repeat_after_seconds is None:
            repeat_after_count = DEFAULT_REPEAT_AFTER_COUNT
        self.repeat_after_count = repeat_after_count
        self.repeat_after_seconds = repeat_after_seconds
        self._impls = []
        self._geometries = {}
        self._forced = None
        self._force_checked = False
        # (args, kwargs, impl) of the last call that found one compatible implementation: a call
        # with the very same argument objects runs it again without computing the geometry
        self._last_single = None

    # --- registration ---

    def register(self, implementation=None, *, is_compatible=None):
        """Registers an implementation with the prototype's parameters (``@proto.register`` or
        ``@proto.register(is_compatible=lambda *args, **kwargs: ...)``). ``is_compatible`` gets the call's arguments
        and returns False where the implementation cannot run them; it is asked on every measuring call."""

        def decorator(fn):
            names = _parameter_names(fn)
            for name in names:
                if name not in self._params:
                    raise QuadrantsSyntaxError(
                        f"Signature parameter {name} of function not in perf_dispatch function prototype"
                    )
            if len(names) != len(self._params):
                raise QuadrantsSyntaxError(
                    f"Number of function parameters {len(names)} doesn't match number of parameters in "
                    f"perf_dispatch function prototype {len(self._params)}"
                )
            impl = DispatchImpl(fn, is_compatible)
            self._impls.append(impl)
            if _debug_enabled() or _force_active():  # the names QD_PERFDISPATCH_FORCE can take
                print(f"perf_dispatch '{self.__name__}': registered '{impl.__name__}'")
            return impl

        if implementation is not None:
            return decorator(implementation)
        return decorator

    # --- calling ---

    def _check_force(self):
        """QD_PERFDISPATCH_FORCE, read on the first call (when every implementation is registered)."""
        self._force_checked = True
        force = _parse_force(os.environ.get("QD_PERFDISPATCH_FORCE"))
        if not force:
            return
        names = [impl.__name__ for impl in self._impls]
        print(f"perf_dispatch '{self.__name__}': available implementations: {names}")
        forced = force.get(self.__name__)
        if forced is None:
            return
        for impl in self._impls:
            if impl.__name__ == forced:
                self._forced = impl
                print(f"perf_dispatch '{self.__name__}': forced to '{forced}' via QD_PERFDISPATCH_FORCE")
                return
        print(
            f"[perf_dispatch] WARNING: QD_PERFDISPATCH_FORCE requested '{forced}' for '{self.__name__}', but no "
            f"such implementation found. Available: {names}. Falling back to normal benchmarking."
        )

    def _choose(self, geo, why=""):
        fastest = min(geo.times, key=lambda impl: sum(geo.times[impl]) / len(geo.times[impl]))
        self._settle(geo, fastest, why)

    def _settle(self, geo, impl, why=""):
        geo.fastest = impl
        geo.is_single = False
        geo.calls_since_choice = 0
        geo.chosen_at = time.time()
        geo.measured_once = True
        if _debug_enabled():
            print(
                f"perf_dispatch '{self.__name__}': chose '{impl.__name__}' out of {len(self._impls)} registered "
                f"functions.{why}"
            )

    def _due_for_remeasure(self, geo):
        geo.calls_since_choice += 1
        count, seconds = self.repeat_after_count, self.repeat_after_seconds
        if count is not None and count > 0 and geo.calls_since_choice >= count:
            return True
        return seconds is not None and seconds > 0 and time.time() - geo.chosen_at >= seconds

    def __call__(self, *args, **kwargs):
        if not self._force_checked:
            self._check_force()
        if self._forced is not None:
            return self._forced(*args, **kwargs)
        last = self._last_single
        if last is not None and _same_objects(last[0], last[1], args, kwargs):
            return last[2](*args, **kwargs)
        key = self._get_geometry_hash(*args, **kwargs)
        geo = self._geometries.get(key)
        if geo is None:
            geo = self._geometries[key] = _Geometry()
        if geo.fastest is not None:
            if not self._due_for_remeasure(geo):
                if geo.is_single:
                    self._last_single = (args, kwargs, geo.fastest)
                return geo.fastest(*args, **kwargs)
            geo.fastest = None
            geo.trials.clear()
            geo.times.clear()
        compatible = [
            impl for impl in self._impls if impl.is_compatible is None or impl.is_compatible(*args, **kwargs)
        ]
        if not compatible:
            raise QuadrantsRuntimeError("No suitable functions were found.")
        if len(compatible) == 1:
            self._settle(geo, compatible[0], " Only 1 was compatible.")
            geo.is_single = True
            self._last_single = (args, kwargs, compatible[0])
            return compatible[0](*args, **kwargs)
        # The compatible implementation with the fewest calls this round runs next.
        impl = min(compatible, key=lambda c: geo.trials.get(c, 0))
        warmup = self.num_warmup if geo.measured_once else self.num_first_warmup
        in_warmup = geo.trials.get(impl, 0) < warmup
        geo.trials[impl] = geo.trials.get(impl, 0) + 1
        if in_warmup:
            return impl(*args, **kwargs)
        sync()  # earlier work is not charged to this implementation
        start = time.perf_counter()
        result = impl(*args, **kwargs)
        sync()  # launches are asynchronous: wait for this one
        geo.times.setdefault(impl, []).append(time.perf_counter() - start)
        if all(geo.trials.get(c, 0) >= warmup + self.num_active for c in compatible):
            self._choose(geo)
        return result


def perf_dispatch(
    *,
    get_geometry_hash,
    first_warmup=1,
    warmup=0,
    active=1,
    repeat_after_count=None,
    repeat_after_seconds=None,
):
    """Makes the decorated function a prototype whose registered implementations are chosen among by timing.

    Args:
        get_geometry_hash: called with the call's arguments; returns a hashable key. Calls with the same key are
            assumed to favour the same implementation (hash shapes, sizes, static configuration; avoid reading
            device data, which would synchronise).
        first_warmup: untimed calls of each implementation before the first measurement of a geometry.
        warmup: untimed calls of each implementation before each later re-measurement.
        active: timed calls of each implementation; the lowest mean wins.
        repeat_after_count: measure again after this many calls of a geometry (<= 0: never).
        repeat_after_seconds: measure again after this many seconds (<= 0: never). With both left None, the
            dispatcher measures again every 300 calls.
    """

    def decorator(fn):
        return PerformanceDispatcher(
            fn,
            get_geometry_hash,
            first_warmup=first_warmup,
            warmup=warmup,
            active=active,
            repeat_after_count=repeat_after_count,
            repeat_after_seconds=repeat_after_seconds,
        )

    return decorator


__all__ = ["perf_dispatch", "PerformanceDispatcher", "DispatchImpl"]
