"""qd.types.is_integral / is_signed / is_real / is_tensor and qd.types.primitive_types."""

import numpy as np
import pytest

import quadrants as qd

INTEGRAL = ["u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
REAL = ["f16", "f32", "f64"]


@pytest.mark.parametrize("name", INTEGRAL + REAL)
def test_predicates_agree_with_numpy(name):
    dt = getattr(qd, name)
    np_dtype = dt.np_dtype
    assert qd.types.is_integral(dt) is (name in INTEGRAL)
    assert qd.types.is_real(dt) is bool(np.issubdtype(np_dtype, np.floating))
    assert qd.types.is_tensor(dt) is False
    if name in INTEGRAL:
        assert qd.types.is_signed(dt) is bool(np.issubdtype(np_dtype, np.signedinteger))
    else:
        with pytest.raises(RuntimeError):
            qd.types.is_signed(dt)


@pytest.mark.parametrize(
    "value", [int, float, bool, None, 3, "i32", qd.types.vector(3, qd.f32), np.float32]
)
@pytest.mark.parametrize("name", ["is_integral", "is_signed", "is_real", "is_tensor"])
def test_predicates_reject_non_primitive_types(name, value):
    with pytest.raises(TypeError):
        getattr(qd.types, name)(value)


def test_predicates_are_not_top_level():
    for name in ["is_integral", "is_signed", "is_real", "is_tensor"]:
        assert not hasattr(qd, name)


def test_primitive_types_module():
    pt = qd.types.primitive_types
    assert pt.f32 is qd.f32 and pt.u1 is qd.u1
    assert set(pt.real_types) == {qd.f16, qd.f32, qd.f64, float}
    assert {qd.i8, qd.u64, int, bool} <= set(pt.integer_types)
    assert all(qd.types.is_real(t) for t in pt.real_types if t is not float)
    assert all(qd.types.is_integral(t) for t in pt.integer_types if t not in (int, bool))


def test_predicates_in_static_branches():
    qd.init(arch=qd.cpu)
    try:
        rng = np.random.default_rng()

        @qd.kernel
        def halve(a: qd.types.ndarray()):
            for i in range(a.shape[0]):
                if qd.static(qd.types.is_real(a.dtype)):
                    a[i] = a[i] / 2
                else:
                    a[i] = a[i] // 2

        f = rng.standard_normal(64).astype(np.float32)
        i = rng.integers(-1000, 1000, 64).astype(np.int32)
        f0, i0 = f.copy(), i.copy()
        halve(f)
        halve(i)
        np.testing.assert_allclose(f, f0 / 2, rtol=1e-6)
        np.testing.assert_array_equal(i, i0 // 2)
    finally:
        qd.reset()
