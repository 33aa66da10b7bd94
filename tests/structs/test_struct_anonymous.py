"""qd.Struct values (anonymous structs made from a dict or keywords), the Struct value methods
(keys, items, entries, methods, to_dict options, printing) and struct arguments converted from
other struct values."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng


def test_struct_from_dict_and_keywords():
    x = float(rng.random())
    s = qd.Struct({"a": x, "b": qd.Vector([1, 2])})
    s2 = qd.Struct(a=2, b=3)
    assert s.a == x and type(s.a) is float  # kept as given, not rounded to f32
    assert list(s.b) == [1, 2]
    assert s2.a + s2.b == 5
    assert isinstance(s, qd.Struct) and isinstance(s2, qd.Struct)
    assert str(s2) == "{'a': 2, 'b': 3}" and repr(s2) == str(s2)
    assert str(s) == f"{{'a': {x!r}, 'b': [1, 2]}}"
    assert qd.Struct().to_dict() == {}


def test_struct_nested_values_and_lists():
    n = qd.Struct(p={"x": 1}, q=[1.5, 2.5], m=[[1, 2], [3, 4]])
    assert isinstance(n.p, qd.Struct) and n.p.x == 1
    assert isinstance(n.q, qd.Vector) and list(n.q) == [1.5, 2.5]
    assert n.m.n == 2 and n.m.m == 2
    assert n.to_dict() == {"p": {"x": 1}, "q": [1.5, 2.5], "m": [[1, 2], [3, 4]]}
    assert n.to_dict(include_ndim=True) == {
        "p": {"x": 1, "__matrix_ndim": {}},
        "q": [1.5, 2.5],
        "m": [[1, 2], [3, 4]],
        "__matrix_ndim": {"q": 1, "m": 2},
    }


def test_struct_from_dict_and_keywords_in_kernel():
    @qd.func
    def twice_a_plus_b(s: qd.template()) -> qd.f32:
        return s.a * 2 + s.b.sum()

    @qd.kernel
    def k(x: qd.f32, y: qd.f32) -> qd.f32:
        s = qd.Struct({"a": x, "b": [y, 2.0], "c": {"d": 3}})
        s.a += 1.0
        s.b[1] = y
        t = qd.Struct(a=y, m=[[1.0, 2.0], [3.0, 4.0]])
        u = t  # a copy
        u.a = 10.0
        return s.a + s.b.sum() * 10 + s.c.d * 100 + twice_a_plus_b(s) * 1000 + t.a + u.a + t.m[1, 0]

    x, y = (float(v) for v in np.float32(rng.integers(-64, 64, 2) / 4))
    a = x + 1
    assert k(x, y) == a + 2 * y * 10 + 300 + (2 * a + 2 * y) * 1000 + y + 10 + 3

    @qd.kernel
    def mixed(x: qd.f32) -> qd.f32:
        s = qd.Struct({"a": x}, b=1)
        return s.a

    with pytest.raises(qd.QuadrantsSyntaxError, match="either dictionary or keyword arguments") as e:
        mixed(1.0)
    assert 's = qd.Struct({"a": x}, b=1)' in str(e.value)


def test_struct_value_methods():
    s = qd.Struct(a=1.0, b=qd.Vector([1, 2]))
    assert s.keys == ["a", "b"]
    assert list(s.entries) == ["a", "b"] and s.entries["a"] == 1.0
    assert [k for k, _ in s.items] == ["a", "b"]
    assert s.methods == {}
    assert s.to_dict(include_methods=True) == {"a": 1.0, "b": [1, 2], "__struct_methods": {}}
    assert len(s) == 2 and s["a"] == 1.0
    s.a = 5
    assert s.a == 5 and type(s.a) is int
    s.c = 3  # a plain attribute, not a member
    assert s.c == 3 and s.keys == ["a", "b"]
    with pytest.raises(AttributeError):
        s.d


def test_typed_struct_value_methods():
    @qd.dataclass
    class Body:
        pos: qd.f32
        vel: qd.types.vector(2, qd.f32)

        def speed(self):
            return abs(self.pos)

    b = Body(1.5, [1.0, 2.0])
    assert isinstance(b, qd.Struct)
    assert str(b) == "{'pos': 1.5, 'vel': [1.0, 2.0]}"
    assert b.keys == ["pos", "vel"]
    assert set(b.methods) == {"speed"}
    assert b.to_dict(include_methods=True)["__struct_methods"]["speed"] is Body.speed
    assert repr(Body).startswith("<qd.StructType pos=f32, vel=")


@pytest.mark.parametrize(
    "args, kwargs",
    [(({"a": 1}, ), {"b": 2}), ((1,), {}), (({"a": 1}, {"b": 2}), {})],
)
def test_struct_bad_construction(args, kwargs):
    with pytest.raises(
        qd.QuadrantsSyntaxError,
        match="Custom structs need to be initialized using either dictionary or keyword arguments",
    ):
        qd.Struct(*args, **kwargs)


def test_struct_value_in_kernel_as_global_and_template():
    a, b = float(rng.integers(1, 100)), int(rng.integers(1, 100))
    g = qd.Struct(a=a, b=b, v=[0.5, 1.5])

    @qd.kernel
    def from_global() -> qd.f32:
        return g.a + g.b + g.v[1]

    @qd.kernel
    def from_template(x: qd.template()) -> qd.f32:
        return x.a * x.b + x.v[0]

    assert from_global() == pytest.approx(a + b + 1.5)
    assert from_template(g) == pytest.approx(a * b + 0.5)


def test_struct_value_as_struct_argument():
    P = qd.types.struct(a=qd.f32, b=qd.i32)

    @qd.kernel
    def k(x: P) -> qd.f32:
        return x.a + x.b

    for _ in range(3):  # launches after the first one take the same path
        a, b = float(np.float32(rng.random())), int(rng.integers(-50, 50))
        assert k(qd.Struct(a=a, b=b)) == pytest.approx(a + b)
        assert k(P(a=a, b=b)) == pytest.approx(a + b)
    expected = "cannot be converted into required type <qd.StructType a=f32, b=i32, struct_methods={}>"
    for bad in (1, {"a": 1.0, "b": 2}, qd.Struct(a=1.0), qd.Struct(a=1.0, b=2, c=3)):
        with pytest.raises(qd.QuadrantsRuntimeTypeError, match="Argument .* " + expected[:20]) as info:
            k(bad)
        assert expected in str(info.value)
        assert str(type(bad)) in str(info.value)


def test_struct_field_of_dict_still_works():
    f = qd.Struct.field({"a": qd.f32, "b": qd.i32}, shape=4)
    f[1].a = 2.5
    assert f.to_numpy()["a"][1] == 2.5
    Body = qd.types.struct(x=qd.f32)
    g = Body.field(shape=3)
    assert g.shape == (3,)
