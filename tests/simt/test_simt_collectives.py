"""Subgroup and block collectives vs NumPy models, on fresh random data, every element."""

import numpy as np
import pytest

import quadrants as qd

sg = qd.simt.subgroup
blk = qd.simt.block

NP_OPS = {
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def identity(op, np_dtype):
    if op in ("add", "or", "xor"):
        return np_dtype(0)
    if op == "mul":
        return np_dtype(1)
    if op == "and":
        return np_dtype(-1) if np.issubdtype(np_dtype, np.signedinteger) else np.iinfo(np_dtype).max
    if np.issubdtype(np_dtype, np.floating):
        return np_dtype(np.inf if op == "min" else -np.inf)
    info = np.iinfo(np_dtype)
    return np_dtype(info.max if op == "min" else info.min)


def lanes():
    """The subgroup size of the arch under test (32 on CUDA and the CPU; lavapipe's is 8)."""
    return sg.group_size()


def skip_past_subgroup(log2_size):
    if log2_size is not None and 1 << log2_size > lanes():
        pytest.skip(f"tiles of {1 << log2_size} lanes: the subgroups have {lanes()}")


def tiles(x, size):
    return x.reshape(-1, size)


def model(kind, op, x, size, heads=None):
    f = NP_OPS[op]
    t = tiles(x, size)
    if kind == "reduce_all":
        return np.repeat(f.reduce(t, axis=1), size)
    if kind == "inclusive":
        return f.accumulate(t, axis=1).ravel()
    if kind == "exclusive":
        inc = f.accumulate(t, axis=1)
        first = np.full((t.shape[0], 1), identity(op, x.dtype.type), dtype=x.dtype)
        return np.concatenate([first, inc[:, :-1]], axis=1).ravel()
    if kind == "segmented_reduce":
        out = np.empty_like(t)
        h = tiles(heads, size)
        for r in range(t.shape[0]):
            acc = None
            for c in range(size):
                acc = t[r, c] if (c == 0 or h[r, c]) else f(acc, t[r, c])
                out[r, c] = acc
        return out.ravel()
    raise AssertionError(kind)


def make_data(rng, np_dtype, n, op):
    if np.issubdtype(np_dtype, np.floating):
        if op == "mul":
            return (rng.random(n) * 0.5 + 0.75).astype(np_dtype)
        return (rng.integers(-1000, 1000, n) / 8).astype(np_dtype)  # exact sums
    if op == "mul":
        return rng.integers(1, 3, n).astype(np_dtype)
    return rng.integers(0 if np_dtype == np.uint32 else -1000, 1000, n).astype(np_dtype)


SUBGROUP_CASES = [(kind, op) for kind in ("reduce_all", "inclusive", "exclusive")
                  for op in ("add", "min", "max")]
SUBGROUP_CASES += [(kind, op) for kind in ("inclusive", "exclusive")
                   for op in ("mul", "and", "or", "xor")]
SUBGROUP_CASES += [("segmented_reduce", op) for op in ("add", "min", "max")]
SUBGROUP_CASES += [("reduce", op) for op in ("add", "min", "max")]


@pytest.mark.parametrize("log2_size", [None, 1, 3, 4, 5])
@pytest.mark.parametrize("dtype,np_dtype", [(qd.i32, np.int32), (qd.u32, np.uint32),
                                            (qd.f32, np.float32), (qd.f64, np.float64)],
                         ids=["i32", "u32", "f32", "f64"])
@pytest.mark.parametrize("kind,op", SUBGROUP_CASES, ids=[f"{k}_{o}" for k, o in SUBGROUP_CASES])
def test_subgroup_collective(kind, op, dtype, np_dtype, log2_size):
    if op in ("and", "or", "xor") and np.issubdtype(np_dtype, np.floating):
        pytest.skip("bitwise scans are for integers")
    skip_past_subgroup(log2_size)
    n = 128
    name = f"{kind}_{op}" + ("_tiled" if log2_size is not None else "")
    fn = getattr(sg, name)
    size = lanes() if log2_size is None else 1 << log2_size
    rng = np.random.default_rng(abs(hash((kind, op, np_dtype.__name__, log2_size))) % 2**32)
    x_np = make_data(rng, np_dtype, n, op)
    h_np = (rng.random(n) < 0.2).astype(np.int32)

    if kind == "segmented_reduce":
        if log2_size is None:
            @qd.kernel
            def k(x: qd.types.ndarray(dtype, ndim=1), h: qd.types.ndarray(qd.i32, ndim=1),
                  y: qd.types.ndarray(dtype, ndim=1)):
                qd.loop_config(block_dim=64)
                for i in range(n):
                    y[i] = fn(x[i], h[i])
        else:
            @qd.kernel
            def k(x: qd.types.ndarray(dtype, ndim=1), h: qd.types.ndarray(qd.i32, ndim=1),
                  y: qd.types.ndarray(dtype, ndim=1)):
                qd.loop_config(block_dim=64)
                for i in range(n):
                    y[i] = fn(x[i], h[i], log2_size)
    else:
        if log2_size is None:
            @qd.kernel
            def k(x: qd.types.ndarray(dtype, ndim=1), h: qd.types.ndarray(qd.i32, ndim=1),
                  y: qd.types.ndarray(dtype, ndim=1)):
                qd.loop_config(block_dim=64)
                for i in range(n):
                    y[i] = fn(x[i])
        else:
            @qd.kernel
            def k(x: qd.types.ndarray(dtype, ndim=1), h: qd.types.ndarray(qd.i32, ndim=1),
                  y: qd.types.ndarray(dtype, ndim=1)):
                qd.loop_config(block_dim=64)
                for i in range(n):
                    y[i] = fn(x[i], log2_size)

    x, h, y = qd.ndarray(dtype, n), qd.ndarray(qd.i32, n), qd.ndarray(dtype, n)
    x.from_numpy(x_np)
    h.from_numpy(h_np)
    k(x, h, y)
    got = y.to_numpy()
    if kind == "reduce":
        want = model("reduce_all", op, x_np, size)
        lead = np.arange(n) % size == 0
        np.testing.assert_allclose(got[lead], want[lead], rtol=1e-6)
    else:
        want = model(kind, op, x_np, size, h_np)
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("log2_size", [None, 2, 4, 5])
def test_bitonic_sort_kv(log2_size):
    skip_past_subgroup(log2_size)
    n = 256
    size = lanes() if log2_size is None else 1 << log2_size
    rng = np.random.default_rng(99 if log2_size is None else log2_size)
    k_np = rng.integers(0, 10, n).astype(np.int32)  # many equal keys: ties sorted by value
    v_np = rng.random(n).astype(np.float32)

    @qd.kernel
    def k(keys: qd.types.ndarray(qd.i32, ndim=1), vals: qd.types.ndarray(qd.f32, ndim=1)):
        qd.loop_config(block_dim=128)
        for i in range(n):
            if qd.static(log2_size is None):
                a, b = sg.bitonic_sort_kv(keys[i], vals[i])
                keys[i] = a
                vals[i] = b
            else:
                a, b = sg.bitonic_sort_kv_tiled(keys[i], vals[i], log2_size)
                keys[i] = a
                vals[i] = b

    keys, vals = qd.ndarray(qd.i32, n), qd.ndarray(qd.f32, n)
    keys.from_numpy(k_np)
    vals.from_numpy(v_np)
    k(keys, vals)
    want_k, want_v = [], []
    for r in range(n // size):
        seg = slice(r * size, (r + 1) * size)
        order = np.lexsort((v_np[seg], k_np[seg]))
        want_k.append(k_np[seg][order])
        want_v.append(v_np[seg][order])
    np.testing.assert_array_equal(keys.to_numpy(), np.concatenate(want_k))
    np.testing.assert_array_equal(vals.to_numpy(), np.concatenate(want_v))


BLOCK_CASES = [("reduce_all", "add"), ("reduce_all", "min"), ("reduce_all", "max"),
               ("inclusive", "add"), ("inclusive", "min"), ("inclusive", "max"),
               ("exclusive", "add"), ("exclusive", "min"), ("exclusive", "max"),
               ("reduce", "add"), ("reduce", "min"), ("reduce", "max")]


@pytest.mark.parametrize("block_dim", [32, 64, 128, 256])
@pytest.mark.parametrize("dtype,np_dtype", [(qd.i32, np.int32), (qd.f32, np.float32)],
                         ids=["i32", "f32"])
@pytest.mark.parametrize("kind,op", BLOCK_CASES, ids=[f"{k}_{o}" for k, o in BLOCK_CASES])
def test_block_collective(kind, op, dtype, np_dtype, block_dim):
    nblocks = 3
    n = block_dim * nblocks
    fn = getattr(blk, f"{kind}_{op}")
    rng = np.random.default_rng(block_dim * 7 + len(kind) + len(op))
    x_np = make_data(rng, np_dtype, n, op)

    @qd.kernel
    def k(x: qd.types.ndarray(dtype, ndim=1), y: qd.types.ndarray(dtype, ndim=1)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            y[i] = fn(x[i], block_dim, dtype)

    x, y = qd.ndarray(dtype, n), qd.ndarray(dtype, n)
    x.from_numpy(x_np)
    k(x, y)
    got = y.to_numpy()
    if kind == "reduce":
        want = model("reduce_all", op, x_np, block_dim)
        lead = np.arange(n) % block_dim == 0
        np.testing.assert_allclose(got[lead], want[lead], rtol=1e-6)
    else:
        np.testing.assert_allclose(got, model(kind, op, x_np, block_dim), rtol=1e-6)


@qd.func
def _times(a, b):
    return a * b


def test_block_generic_op_and_identity():
    block_dim = 64
    n = block_dim * 2
    rng = np.random.default_rng(12)
    x_np = rng.integers(1, 3, n).astype(np.int64)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i64, ndim=1), y: qd.types.ndarray(qd.i64, ndim=2)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            y[i, 0] = blk.reduce_all(x[i], block_dim, _times, qd.i64)
            y[i, 1] = blk.inclusive_scan(x[i], block_dim, _times, qd.i64)
            y[i, 2] = blk.exclusive_scan(x[i], block_dim, _times, 1, qd.i64)
            y[i, 3] = blk.reduce(x[i], block_dim, _times, qd.i64)

    x, y = qd.ndarray(qd.i64, n), qd.ndarray(qd.i64, (n, 4))
    x.from_numpy(x_np)
    k(x, y)
    got = y.to_numpy()
    np.testing.assert_array_equal(got[:, 0], model("reduce_all", "mul", x_np, block_dim))
    np.testing.assert_array_equal(got[:, 1], model("inclusive", "mul", x_np, block_dim))
    np.testing.assert_array_equal(got[:, 2], model("exclusive", "mul", x_np, block_dim))
    np.testing.assert_array_equal(got[::block_dim, 3], got[::block_dim, 0])


@pytest.mark.parametrize("bit_start,num_bits", [(0, 8), (8, 8), (3, 5), (0, 1)])
def test_radix_rank_match_atomic_or(bit_start, num_bits):
    block_dim = 256
    radix_bits = 8
    nblocks = 3
    n = block_dim * nblocks
    rng = np.random.default_rng(bit_start * 10 + num_bits)
    keys_np = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    keys_np[:block_dim] &= np.uint32(0xFFFF00FF)  # many equal digits in one block

    @qd.kernel
    def k(keys: qd.types.ndarray(qd.u32, ndim=1), rank: qd.types.ndarray(qd.i32, ndim=1),
          counts: qd.types.ndarray(qd.i32, ndim=2), prefix: qd.types.ndarray(qd.i32, ndim=2)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            bins = blk.SharedArray((1 << radix_bits,), qd.i32)
            excl = blk.SharedArray((1 << radix_bits,), qd.i32)
            r = blk.radix_rank_match_atomic_or(keys[i], block_dim, radix_bits, bit_start,
                                               num_bits, bins, excl)
            rank[i] = r
            t = blk.thread_idx()
            counts[i // block_dim, t] = bins[t]
            prefix[i // block_dim, t] = excl[t]

    keys, rank = qd.ndarray(qd.u32, n), qd.ndarray(qd.i32, n)
    counts = qd.ndarray(qd.i32, (nblocks, block_dim))
    prefix = qd.ndarray(qd.i32, (nblocks, block_dim))
    keys.from_numpy(keys_np)
    k(keys, rank, counts, prefix)
    digits = ((keys_np >> np.uint32(bit_start)) & np.uint32((1 << num_bits) - 1)).astype(np.int64)
    for b in range(nblocks):
        d = digits[b * block_dim:(b + 1) * block_dim]
        want_counts = np.bincount(d, minlength=block_dim)
        want_prefix = np.concatenate([[0], np.cumsum(want_counts)[:-1]])
        order = np.argsort(d, kind="stable")
        want_rank = np.empty(block_dim, np.int64)
        want_rank[order] = np.arange(block_dim)
        np.testing.assert_array_equal(counts.to_numpy()[b], want_counts)
        np.testing.assert_array_equal(prefix.to_numpy()[b], want_prefix)
        np.testing.assert_array_equal(rank.to_numpy()[b * block_dim:(b + 1) * block_dim], want_rank)


def test_block_dim_must_be_multiple_of_subgroup():
    bad = lanes() * 3 // 2

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=bad)
        for i in range(bad):
            x[i] = blk.reduce_add(x[i], bad, qd.i32)

    with pytest.raises(qd.QuadrantsCompilationError,
                       match=f"multiple of the subgroup size {lanes()}"):
        k(qd.ndarray(qd.i32, bad))


def _collective_library():
    import pathlib

    root = pathlib.Path(qd.__file__).resolve().parent
    return "".join((root / "templates" / f"simt_{m}.qir").read_text() for m in ("subgroup", "block"))


@pytest.mark.parametrize(
    "call,ty,counts",
    [("sg_reduce<f32, @sg_add<f32>, 5>(%v)", "f32", {"shuffle_down": 5, "add": 5}),
     ("sg_reduce_all<i32, @sg_max<i32>, 3>(%v)", "i32", {"shuffle_xor": 3, "max": 3}),
     ("sg_inclusive<u32, @sg_xor<u32>, 5>(%v)", "u32", {"shuffle_up": 5, "xor": 5, "select": 5}),
     ("sg_exclusive<f64, @sg_min<f64>, 4>(%v, %v)", "f64", {"shuffle_up": 5, "min": 4}),
     ("sg_segmented<i64, @sg_add<i64>, 5>(%v, %h)", "i64", {"shuffle_up": 10}),
     ("blk_reduce_all<f32, @sg_add<f32>, 128, 5>(%v)", "f32",
      {"shuffle_xor": 5, "add": 8, "shared_alloc": 1}),
     ("blk_reduce_all<f32, @sg_add<f32>, 128, 3>(%v)", "f32",
      {"shuffle_xor": 3, "add": 18, "shared_alloc": 1}),
     ("blk_exclusive<i32, @sg_max<i32>, 64, 5>(%v, %v)", "i32",
      {"shuffle_up": 5, "max": 6, "shared_alloc": 2})],
    ids=["reduce", "reduce_all", "inclusive", "exclusive", "segmented", "block_reduce_all",
         "block_reduce_all_8_lanes", "block_exclusive"])
def test_subgroup_templates_are_straight_line(call, ty, counts):
    """The collective templates after instantiate, inline, constfold and dce: one shuffle (and one
    operator) per step of the tree or scan (and per subgroup total of a block), no calls, no
    loops."""
    from quadrants._core import _testing

    kernel = f"""
kernel @k(%x: ndarray<{ty}, 1>, %hs: ndarray<i32, 1>) {{
  task range_for {{
    %zero = const 0 : i32
    %n = shape %x, 0 : i32
    parallel_for %i = %zero to %n {{
      %p = elem_ptr %x, %i : ptr<{ty}, global>
      %v = load %p : {ty}
      %q = elem_ptr %hs, %i : ptr<i32, global>
      %h = load %q : i32
      %r = call @{call} : {ty}
      store %p, %r
    }}
  }}
}}
"""
    out = _testing.run_passes(_collective_library() + kernel, "instantiate,inline,constfold,dce",
                              filename="simt_subgroup.qir", verify=True)
    body = out[out.index("kernel @k"):]
    body = body[:body.index("\n}\n")]
    ops = [line.split("=", 1)[1].split()[0] for line in body.splitlines() if " = " in line]
    for op, n in counts.items():
        assert ops.count(op) == n, (op, ops)
    assert "call" not in ops and "loop" not in body and "unroll" not in body


@pytest.mark.parametrize("log2_size", [None, 3])
def test_subgroup_operator_forms_take_a_func(log2_size):
    """subgroup._reduce_all_op / _inclusive_op (the block collectives' subgroup step) with a
    @qd.func operator: the frontend makes a function of the module from it."""
    n = 128
    rng = np.random.default_rng(5)
    x_np = rng.integers(1, 3, n).astype(np.int64)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i64, ndim=1), y: qd.types.ndarray(qd.i64, ndim=2)):
        qd.loop_config(block_dim=64)
        for i in range(n):
            if qd.static(log2_size is None):
                y[i, 0] = sg._reduce_all_op(x[i], _times)
                y[i, 1] = sg._inclusive_op(x[i], _times)
            else:
                y[i, 0] = sg._reduce_all_op_tiled(x[i], _times, log2_size)
                y[i, 1] = sg._inclusive_op_tiled(x[i], _times, log2_size)

    x, y = qd.ndarray(qd.i64, n), qd.ndarray(qd.i64, (n, 2))
    x.from_numpy(x_np)
    k(x, y)
    got = y.to_numpy()
    size = lanes() if log2_size is None else 1 << log2_size
    np.testing.assert_array_equal(got[:, 0], model("reduce_all", "mul", x_np, size))
    np.testing.assert_array_equal(got[:, 1], model("inclusive", "mul", x_np, size))
