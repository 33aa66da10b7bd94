"""The launch fast path for dataclass arguments, qd.Tensor wrappers and vector/matrix
ndarrays (csrc/python/dispatch.c): a repeat of a call whose arguments hold these launches from C,
reaching each member by attribute reads checked against the containers' exact types, and gives
exactly what the Python launch path gives -- after members are rebound to other arrays, scalars or
fields, and when a container type cannot be read without running Python code.

`slow_calls` (tests/conftest.py) lists the calls that take the Python launch path."""

import dataclasses

import numpy as np
import pytest
from qd_helpers import requires_compiler

import quadrants as qd

pytestmark = requires_compiler

rng = np.random.default_rng()


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


@dataclasses.dataclass
class Inner:
    vel: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)
    gain: qd.f32


@dataclasses.dataclass
class State:
    pos: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)
    mass: qd.template()
    inner: Inner
    n: qd.i32


def _vec(n):
    a = qd.Vector.ndarray(3, qd.f32, shape=(n,))
    a.from_numpy(rng.standard_normal((n, 3)).astype(np.float32))
    return a


def _field(n):
    f = qd.field(qd.f32, shape=(n,))
    f.from_numpy(rng.standard_normal(n).astype(np.float32))
    return f


@qd.kernel
def step(s: State, dt: qd.f32):
    for i in range(s.n):
        s.pos[i] += s.inner.vel[i] * (dt * s.inner.gain * s.mass[i])


def _expected(pos, vel, mass, dt, gain):
    return pos + vel * (np.float32(dt) * np.float32(gain) * mass)[:, None]


def test_repeat_calls_launch_from_c(slow_calls):
    n = 33
    s = State(_vec(n), _field(n), Inner(_vec(n), 0.5), n)
    want = s.pos.to_numpy()
    for k in range(5):
        dt = float(rng.uniform(0.1, 1.0))
        want = _expected(want, s.inner.vel.to_numpy(), s.mass.to_numpy(), dt, s.inner.gain)
        step(s, dt)
    np.testing.assert_allclose(s.pos.to_numpy(), want, rtol=1e-5, atol=1e-6)
    assert len(slow_calls) == 1 and step._dispatch_size() == 1


def test_rebound_members(slow_calls):
    """Other arrays and scalars in the same members: still the fast path, with the new values;
    another field (a compile-time member): the Python path, another specialization."""
    n = 20
    s = State(_vec(n), _field(n), Inner(_vec(n), 2.0), n)
    step(s, 0.25)
    s.pos, s.inner.vel, s.inner.gain, s.n = _vec(n), _vec(n), -1.5, 11
    want = s.pos.to_numpy()
    want[:11] = _expected(want, s.inner.vel.to_numpy(), s.mass.to_numpy(), 0.25, -1.5)[:11]
    step(s, 0.25)
    np.testing.assert_allclose(s.pos.to_numpy(), want, rtol=1e-5, atol=1e-6)
    assert len(slow_calls) == 1
    s.mass = _field(n)
    want = _expected(s.pos.to_numpy(), s.inner.vel.to_numpy(), s.mass.to_numpy(), 0.5, -1.5)
    want[11:] = s.pos.to_numpy()[11:]
    step(s, 0.5)
    np.testing.assert_allclose(s.pos.to_numpy(), want, rtol=1e-5, atol=1e-6)
    assert len(slow_calls) == 2 and len(step._compiled) == 2


def test_a_member_of_another_kind_takes_the_python_path(slow_calls):
    n = 8
    s = State(_vec(n), _field(n), Inner(_vec(n), 1.0), n)
    step(s, 1.0)
    s.pos = rng.standard_normal((n, 3)).astype(np.float32)  # a NumPy array now
    want = _expected(s.pos, s.inner.vel.to_numpy(), s.mass.to_numpy(), 1.0, 1.0)
    step(s, 1.0)
    np.testing.assert_allclose(s.pos, want, rtol=1e-5, atol=1e-6)
    assert len(slow_calls) == 2
    s.inner = Inner(qd.Vector.ndarray(2, qd.f32, shape=(n,)), 1.0)  # vectors of 2
    with pytest.raises(ValueError):
        step(s, 1.0)


def test_tensor_wrappers_and_frozen_dataclasses(slow_calls):
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        a: qd.types.ndarray(dtype=qd.f32, ndim=1)
        f: qd.template()

    @qd.kernel
    def k(d: Frozen, b: qd.types.ndarray(dtype=qd.math.vec2, ndim=1)):
        for i in range(b.shape[0]):
            d.f[i] = d.a[i] + b[i][1]

    n = 9
    a = qd.ndarray(qd.f32, shape=(n,))
    a.from_numpy(rng.standard_normal(n).astype(np.float32))
    b = qd.Vector.ndarray(2, qd.f32, shape=(n,))
    b.from_numpy(rng.standard_normal((n, 2)).astype(np.float32))
    f = qd.field(qd.f32, shape=(n,))
    d = Frozen(qd.Tensor(a), qd.Tensor(f))
    for _ in range(3):
        k(d, qd.Tensor(b))
    np.testing.assert_array_equal(f.to_numpy(), a.to_numpy() + b.to_numpy()[:, 1])
    assert len(slow_calls) == 1 and k._dispatch_size() == 1


def test_types_whose_reads_run_python_code_never_take_the_fast_path(slow_calls):
    @dataclasses.dataclass
    class WithProperty:
        a: qd.types.ndarray(dtype=qd.f32, ndim=1)

    @qd.kernel
    def k(d: WithProperty):
        for i in range(d.a.shape[0]):
            d.a[i] += 1.0

    class Sub(WithProperty):
        reads = 0

        @property
        def a(self):
            Sub.reads += 1
            return self._a

        @a.setter
        def a(self, value):
            self._a = value

    x = np.zeros(4, np.float32)
    d = Sub(x)
    for _ in range(3):
        k(d)
    np.testing.assert_array_equal(x, np.full(4, 3, np.float32))
    assert len(slow_calls) == 3 and k._dispatch_size() == 0


def test_a_type_changed_after_registration_matches_nothing(slow_calls):
    @dataclasses.dataclass
    class D:
        a: qd.types.ndarray(dtype=qd.f32, ndim=1)

    @qd.kernel
    def k(d: D):
        for i in range(d.a.shape[0]):
            d.a[i] += 1.0

    x = np.zeros(5, np.float32)
    d = D(x)
    k(d)
    k(d)
    assert len(slow_calls) == 1
    D.extra = property(lambda self: 0)  # modifies the type: its version tag changes
    k(d)
    assert len(slow_calls) == 2
    np.testing.assert_array_equal(x, np.full(5, 3, np.float32))


def test_members_the_kernel_does_not_read_are_not_packed(slow_calls):
    """Only the members a kernel reads take room in its packed arguments; the others are still
    checked, on the fast path as on the Python path."""
    names = [f"a{i}" for i in range(40)]
    Many = dataclasses.make_dataclass(
        "Many", [(name, qd.types.ndarray(dtype=qd.f32, ndim=1)) for name in names]
    )
    globals()["Many"] = Many  # the kernel's annotation is looked up in this module

    @qd.kernel
    def k(m: Many, n: qd.i32):
        for i in range(n):
            m.a3[i] += m.a17[i]

    arrays = [np.full(6, float(i), np.float32) for i in range(40)]
    m = Many(*arrays)
    k(m, 6)
    k(m, 6)
    np.testing.assert_array_equal(arrays[3], np.full(6, 3 + 2 * 17, np.float32))
    assert len(slow_calls) == 1
    compiled = next(iter(k._compiled.values()))[0]
    assert compiled.args_size <= 48  # two ndarray records and the i32, not 40 records
    m.a20 = "not an array"  # unread, but still an argument of the wrong kind
    with pytest.raises(Exception):
        k(m, 6)


def test_shared_containers_are_read_each_call(slow_calls):
    """Leaves under one container (`s.inner.vel`, `s.inner.gain`) read it once per call: a
    rebound container, or a rebound member of it, is seen by the next call."""
    n = 12
    s = State(_vec(n), _field(n), Inner(_vec(n), 1.0), n)
    step(s, 1.0)
    for gain in (2.0, -0.5):
        s.inner = Inner(_vec(n), gain)  # a new container
        want = _expected(s.pos.to_numpy(), s.inner.vel.to_numpy(), s.mass.to_numpy(), 0.5, gain)
        step(s, 0.5)
        np.testing.assert_allclose(s.pos.to_numpy(), want, rtol=1e-5, atol=1e-6)
        s.inner.vel = _vec(n)  # a new member of the container
        want = _expected(s.pos.to_numpy(), s.inner.vel.to_numpy(), s.mass.to_numpy(), 0.5, gain)
        step(s, 0.5)
        np.testing.assert_allclose(s.pos.to_numpy(), want, rtol=1e-5, atol=1e-6)
    assert len(slow_calls) == 1


def test_frozen_dataclasses(slow_calls):
    """Members of frozen dataclasses cannot be rebound: for the same argument object the fast
    path does not read them again. Another object of the same type is read in full."""

    @dataclasses.dataclass(frozen=True)
    class Part:
        x: qd.types.ndarray(dtype=qd.f32, ndim=1)
        y: qd.types.ndarray(dtype=qd.f32, ndim=1)

    @dataclasses.dataclass(frozen=True)
    class Whole:
        a: Part
        b: Part
        scale: qd.f32

    @qd.kernel
    def k(w: Whole):
        for i in range(w.a.x.shape[0]):
            w.b.y[i] = w.a.x[i] * w.scale + w.a.y[i] + w.b.x[i]

    def make(scale):
        parts = [Part(*(qd.Tensor(_field_free_array()) for _ in range(2))) for _ in range(2)]
        return Whole(parts[0], parts[1], scale)

    def _field_free_array():
        a = qd.ndarray(qd.f32, shape=(10,))
        a.from_numpy(rng.standard_normal(10).astype(np.float32))
        return a

    def check(w):
        k(w)
        ax, ay, bx = (t._unwrap().to_numpy() for t in (w.a.x, w.a.y, w.b.x))
        want = ax * np.float32(w.scale) + ay + bx
        np.testing.assert_allclose(w.b.y._unwrap().to_numpy(), want, rtol=1e-6, atol=1e-6)

    w1, w2 = make(2.0), make(-3.0)
    for w in (w1, w1, w2, w1, w2):
        check(w)
    assert len(slow_calls) == 1
    # What a qd.Tensor wraps cannot be rebound either (so the fast path reads it once).
    with pytest.raises(AttributeError, match="wraps one field or ndarray"):
        w1.a.x._impl = _field_free_array()
    check(w1)
    assert len(slow_calls) == 1
    # A member of a (non-frozen) dataclass holding a wrapper may be rebound: that is seen.
    s = Loose(qd.Tensor(_field_free_array()), qd.Tensor(_field_free_array()))
    k2(s)
    np.testing.assert_allclose(s.y._unwrap().to_numpy(), 2 * s.x._unwrap().to_numpy(), rtol=1e-6)
    s.x = qd.Tensor(_field_free_array())
    k2(s)
    np.testing.assert_allclose(s.y._unwrap().to_numpy(), 2 * s.x._unwrap().to_numpy(), rtol=1e-6)
    assert len(slow_calls) == 2


@dataclasses.dataclass
class Loose:
    x: qd.types.ndarray(dtype=qd.f32, ndim=1)
    y: qd.types.ndarray(dtype=qd.f32, ndim=1)


@qd.kernel
def k2(s: Loose):
    for i in range(s.x.shape[0]):
        s.y[i] = 2 * s.x[i]


def test_classes_declared_frozen_by_their_metaclass(slow_calls):
    """A metaclass marked @dataclass_transform(frozen_default=True) (as Genesis's array classes)
    declares its instances immutable: the fast path takes them like frozen dataclasses."""
    import typing

    @typing.dataclass_transform(frozen_default=True)
    class Immutable(type):
        def __call__(cls, **members):
            obj = super().__call__()
            for name, value in members.items():
                object.__setattr__(obj, name, value)
            return obj

    class Fields(metaclass=Immutable):
        src: qd.template()
        dst: qd.template()

        def __setattr__(self, name, value):
            raise AttributeError("immutable")

    @qd.kernel
    def k(a: qd.template(), scale: qd.f32):
        for i in range(a.src.shape[0]):
            a.dst[i] = a.src[i] * scale

    n = 11
    src = qd.field(qd.f32, shape=(n,))
    src.from_numpy(rng.standard_normal(n).astype(np.float32))
    fields = [Fields(src=qd.Tensor(src), dst=qd.field(qd.f32, shape=(n,))) for _ in range(2)]
    for a in (fields[0], fields[0], fields[1], fields[0], fields[1]):
        scale = float(np.float32(rng.standard_normal()))
        k(a, scale)
        np.testing.assert_array_equal(a.dst.to_numpy(), src.to_numpy() * np.float32(scale))
    assert len(slow_calls) == 2  # one compile per distinct template object
