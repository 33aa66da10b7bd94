"""qd.FieldsBuilder: a field tree built apart from qd.root, finalized and destroyed."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()


@pytest.fixture(autouse=True)
def cpu():
    qd.init(arch=qd.cpu)
    yield
    qd.reset()


def test_build_use_and_destroy():
    n, m = (int(s) for s in rng.integers(2, 20, 2))
    fb = qd.FieldsBuilder()
    x = qd.field(qd.f32)
    y = qd.field(qd.i32)
    v = qd.Vector.field(2, qd.f64)
    fb.dense(qd.ij, (n, m)).place(x, y, v)
    assert not fb.finalized
    tree = fb.finalize()
    assert fb.finalized and not tree.destroyed and isinstance(tree.id, int)
    assert x.shape == (n, m) and v.shape == (n, m)

    data = rng.standard_normal((n, m)).astype(np.float32)
    x.from_numpy(data)

    @qd.kernel
    def k():
        for i, j in x:
            y[i, j] = i * 100 + j
            v[i, j] = qd.Vector([x[i, j] * 2, 1.0])

    k()
    ii, jj = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    np.testing.assert_array_equal(y.to_numpy(), ii * 100 + jj)
    np.testing.assert_allclose(v.to_numpy()[..., 0], data.astype(np.float64) * 2, rtol=1e-6)

    other = qd.field(qd.f32, 4)  # a qd.root field is not part of the tree
    tree.destroy()
    assert tree.destroyed
    with pytest.raises(qd.QuadrantsRuntimeError, match="destroyed"):
        x.to_numpy()
    with pytest.raises(qd.QuadrantsRuntimeError, match="destroyed"):
        tree.destroy()
    other.fill(1.0)
    assert other.to_numpy().sum() == 4


def test_nested_levels_and_separate_builders():
    a, b = (int(s) for s in rng.integers(2, 8, 2))
    fb1, fb2 = qd.FieldsBuilder(), qd.FieldsBuilder()
    x = qd.field(qd.i32)
    y = qd.field(qd.i32)
    fb1.dense(qd.i, a).dense(qd.j, b).place(x)
    fb2.dense(qd.i, a * 2).place(y)
    t1, t2 = fb1.finalize(), fb2.finalize()
    assert t1.id != t2.id
    assert x.shape == (a, b) and y.shape == (a * 2,)
    t1.destroy()
    y.fill(3)
    assert y.to_numpy().sum() == 3 * a * 2


def test_finalized_builder_rejects_changes():
    fb = qd.FieldsBuilder()
    fb.dense(qd.i, 4).place(qd.field(qd.f32))
    fb.finalize()
    for action in (fb.finalize, lambda: fb.dense(qd.i, 3), lambda: fb.place(qd.field(qd.f32))):
        with pytest.raises(qd.QuadrantsRuntimeError, match="FieldsBuilder finalized"):
            action()


def test_unsupported_parts():
    fb = qd.FieldsBuilder()
    with pytest.raises(NotImplementedError):
        fb.pointer(qd.i, 4)
    with pytest.raises(NotImplementedError):
        fb.lazy_grad()
    with pytest.raises(NotImplementedError):
        fb.quant_array(qd.i, 4, 32)


def test_needs_init():
    qd.reset()
    with pytest.raises(qd.QuadrantsRuntimeError):
        qd.FieldsBuilder()
