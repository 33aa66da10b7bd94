"""qd.nn.pack / view / unpack on the host: round trips for both layouts and both dtypes, the
structure of the inputs kept, offsets aligned, the attributes and repr of MatrixView, and the
errors."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from . import model

rng = np.random.default_rng()


@pytest.fixture(autouse=True)
def qd_arch(arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=getattr(qd, arch))
    yield arch
    qd.reset()


@pytest.mark.parametrize("dt", ["f16", "f32"])
@pytest.mark.parametrize("layout", ["inference", "training"])
def test_round_trip(layout, dt):
    shapes = [(3, 16), (17, 33), (64, 64), (5,), (128,), (1, 1)]
    arrays = [rng.standard_normal(s) for s in shapes]
    buf, *views = qd.nn.pack(*arrays, layout=layout, dtype=model.QD[dt])
    assert isinstance(buf, qd.Ndarray) and buf.dtype == model.QD[dt] and len(buf.shape) == 1
    back = qd.nn.unpack(*views)
    assert isinstance(back, tuple) and len(back) == len(arrays)
    itemsize = np.dtype(model.NP[dt]).itemsize
    end = 0
    for a, v, b in zip(arrays, views, back):
        assert v.shape == a.shape and v.dtype == model.QD[dt] and v.layout == layout
        assert v.buffer is buf
        assert (v.offset * itemsize) % 64 == 0, v.offset
        assert v.offset >= end  # no overlap
        end = v.offset + v.size
        np.testing.assert_array_equal(b, a.astype(model.NP[dt]))
        assert b.dtype == model.NP[dt]
    assert end <= buf.shape[0]
    # the padding is zero: the buffer holds exactly the packed values
    data = buf.to_numpy().astype(np.float64)
    total = sum(np.abs(a.astype(model.NP[dt]).astype(np.float64)).sum() for a in arrays)
    assert np.isclose(np.abs(data).sum(), total)


def test_structure_is_kept():
    Ws = [rng.standard_normal((4, 3)), rng.standard_normal((2, 4))]
    bs = {"first": rng.standard_normal(4), "second": rng.standard_normal(2)}
    buf, wv, bv = qd.nn.pack(Ws, bs)
    assert isinstance(wv, list) and len(wv) == 2
    assert isinstance(bv, dict) and set(bv) == {"first", "second"}
    back_w, back_b = qd.nn.unpack(wv, bv)
    np.testing.assert_array_equal(back_w[1], Ws[1].astype(np.float16))
    np.testing.assert_array_equal(back_b["second"], bs["second"].astype(np.float16))


def test_pack_inputs_of_every_kind():
    """NumPy arrays, qd.ndarrays and views (repacked) are all accepted."""
    a = rng.standard_normal((6, 5)).astype(np.float32)
    nd = qd.ndarray(qd.f32, shape=(6, 5))
    nd.from_numpy(a)
    _, v1, v2 = qd.nn.pack(a, nd, dtype=qd.f32)
    _, v3 = qd.nn.pack(v1.T, dtype=qd.f32)
    np.testing.assert_array_equal(qd.nn.unpack(v2), a)
    np.testing.assert_array_equal(qd.nn.unpack(v3), a.T)


def test_view_attributes_and_transpose(arch):
    A = rng.standard_normal((5, 7))
    buf, Av = qd.nn.pack(A)
    if arch == "cuda":  # the tensor cores' fragment order
        assert Av.shape == (5, 7) and Av.order == "mma_fragments" and Av.stride == 16
        assert Av.size == 16 * 16
    else:
        assert Av.shape == (5, 7) and Av.order == "col_major" and Av.stride == 8
        assert Av.size == 6 * 8 + 5
    At = Av.T
    assert At.shape == (7, 5) and At.transpose and not Av.transpose and At.T.shape == (5, 7)
    np.testing.assert_array_equal(qd.nn.unpack(At), A.astype(np.float16).T)
    text = repr(At)
    assert text.startswith(f"MatrixView[dtype=f16, layout=inference, order={Av.order}, "
                           f"shape=(7, 5)")
    assert "transpose" in text
    with pytest.raises(TypeError, match="not indexable"):
        Av[0]


@pytest.mark.parametrize("source", ["ndarray", "numpy"])
def test_row_major_view(source):
    A = rng.standard_normal((4, 6)).astype(np.float32)
    if source == "ndarray":
        arr = qd.ndarray(qd.f32, shape=(4, 6))
        arr.from_numpy(A)
    else:
        arr = A
    v = qd.nn.view(arr)
    assert v.buffer is arr and v.layout == "row_major" and v.order == "row_major"
    assert v.shape == (4, 6) and v.stride == 6 and v.offset == 0 and v.dtype == qd.f32
    np.testing.assert_array_equal(qd.nn.unpack(v), A)
    np.testing.assert_array_equal(qd.nn.unpack(v.T), A.T)
    vec = qd.nn.view(np.arange(5, dtype=np.float16))
    assert vec.shape == (5,) and vec.dtype == qd.f16


def test_numpy_view_in_a_kernel():
    """A view of a NumPy array is used in place as the kernel's buffer."""
    A = model.rounded(rng.standard_normal((3, 5)), "f16").astype(np.float16)
    Av = qd.nn.view(A)

    @qd.kernel
    def k(W: qd.nn.MatrixView, Y: qd.types.ndarray(qd.types.vector(3, qd.f32), 1)):
        for i in range(Y.shape[0]):
            Y[i] = qd.Vector(W @ qd.nn.CoopVec(1.0, 2.0, 3.0, 4.0, 5.0, dtype=qd.f16))

    y = np.zeros((2, 3), dtype=np.float32)
    k(Av, y)
    ref = A.astype(np.float64) @ np.arange(1.0, 6.0)
    model.check(y, np.broadcast_to(ref, (2, 3)), model.ulp(ref, "f16") + 1e-6 * np.abs(ref), "view")


def test_views_are_immutable():
    _, Av = qd.nn.pack(rng.standard_normal((3, 4)))
    with pytest.raises(AttributeError, match="immutable: cannot set 'offset'"):
        Av.offset = 8
    with pytest.raises(AttributeError, match="immutable: cannot delete 'buffer'"):
        del Av.buffer


@pytest.mark.parametrize("source", ["ndarray", "numpy"])
def test_repeat_launches_with_views_take_the_fast_path(source):
    """A launch with views is registered with the C dispatcher (identity of the view, the
    buffer's launch value): repeats skip the Python launch path, and other views, of the same
    or another shape, still get their own results."""
    mats = [model.rounded(rng.standard_normal(s), "f16") for s in [(3, 5), (3, 5), (2, 5)]]
    if source == "ndarray":
        views = [qd.nn.pack(m)[1] for m in mats]
    else:
        views = [qd.nn.view(m.astype(np.float16)) for m in mats]
    x = np.arange(1.0, 6.0)

    @qd.kernel
    def k(W: qd.nn.MatrixView, Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            y = W @ qd.nn.CoopVec(1.0, 2.0, 3.0, 4.0, 5.0, dtype=qd.f16)
            v = qd.Vector(y)
            for j in qd.static(range(len(y))):
                Y[j] = v[j]

    for round_ in range(3):
        for m, v in zip(mats, views):
            y = np.zeros(m.shape[0], dtype=np.float32)
            k(v, y)
            ref = m @ x
            model.check(y, ref, model.ulp(ref, "f16") + 1e-6 * np.abs(ref), f"view {round_}")
    assert k._dispatch_size() == len(views)


def test_errors():
    with pytest.raises(ValueError, match="layout must be 'inference' or 'training'"):
        qd.nn.pack(np.ones((2, 2)), layout="optimal")
    with pytest.raises(ValueError, match="2-D matrices and 1-D vectors"):
        qd.nn.pack(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="f16 or f32"):
        qd.nn.pack(np.ones((2, 2)), dtype=qd.f64)
    with pytest.raises(TypeError, match="float16 or float32"):
        qd.nn.view(np.ones((2, 2)))
    with pytest.raises(TypeError, match="MatrixViews"):
        qd.nn.unpack(np.ones(2))


def test_fragment_order(arch):
    """Under cpu_simt (as on CUDA) pack writes the mma_fragments order: lane l = (r % 8) * 4 +
    c % 8 // 2 of tile (r // 16, c // 16) holds its 8 elements consecutively, element
    c % 2 + 2 * (c % 16 // 8) + 4 * (r % 16 // 8); the padding is zero; unpack inverts it."""
    if arch != "cpu":
        pytest.skip("the order is checked once, under the CPU's SIMT emulation")
    qd.reset()
    qd.init(arch=qd.cpu, cpu_simt=True)
    for shape in [(16, 16), (5, 7), (33, 17), (64, 128)]:
        A = rng.standard_normal(shape)
        buf, b, Av = qd.nn.pack(rng.standard_normal(3), A)
        rows, cols = shape
        assert Av.order == "mma_fragments" and Av.stride == (cols + 15) // 16 * 16
        assert (Av.offset * 2) % 64 == 0 and Av.size == (rows + 15) // 16 * 16 * Av.stride
        flat = buf.to_numpy()
        h = A.astype(np.float16)
        for r in range(rows):
            for c in range(cols):
                tile = r // 16 * (Av.stride // 16) + c // 16
                lane = r % 8 * 4 + c % 8 // 2
                j = c % 2 + 2 * (c % 16 // 8) + 4 * (r % 16 // 8)
                assert flat[Av.offset + (tile * 32 + lane) * 8 + j] == h[r, c]
        assert np.count_nonzero(flat[Av.offset:Av.offset + Av.size]) == np.count_nonzero(h)
        np.testing.assert_array_equal(qd.nn.unpack(Av), h)
        np.testing.assert_array_equal(qd.nn.unpack(Av.T), h.T)
