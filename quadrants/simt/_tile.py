"""``qd.simt.Tile16x16`` / ``Tile32x32``: an N x N matrix held in registers by the N lanes of a
subgroup, lane ``tid`` holding row ``tid`` as N scalars (``docs/tiles.md``).

A tile is a ``@qd.dataclass`` with one member ``r: qd.types.vector(N, dtype, unpacked=True)``,
one class per (N, dtype). Its operations are ``@qd.func`` methods written once here, unrolled
over the N registers with ``qd.static`` and exchanging values between lanes with
``qd.simt.subgroup.shuffle``: no shared memory. The slice syntax (``t[:] = a[r0:r1, c0:c1]``,
``a[...] = t``, column slices, ``t -= qd.outer(u, v)``, ``L.solve_triangular_(B)``) is turned
into calls of these methods when the kernel's source is read (``_tile_syntax.py``).
"""

from quadrants import _runtime
from quadrants._core import QuadrantsSyntaxError

_classes = {}


def _dtype_of(dtype):
    # None, or the placeholder a func gets for a template parameter left at its default
    if dtype is None or type(dtype) is object:
        cfg = _runtime.current_cfg()
        return cfg.default_fp if cfg is not None else None
    return dtype


def tile_class(n, dtype=None):
    """The tile dataclass of n x n elements of `dtype` (None: the default float type)."""
    import quadrants as qd

    dtype = _dtype_of(dtype)
    cfg = _runtime.current_cfg()
    if cfg is not None and cfg.arch is _runtime.cpu and not getattr(cfg, "cpu_simt", False):
        raise QuadrantsSyntaxError(
            f"Tile{n}x{n} requires a GPU backend (or qd.init(arch=qd.cpu, cpu_simt=True))"
        )
    lanes = _runtime.subgroup_size()
    if lanes < n:
        raise QuadrantsSyntaxError(
            f"Tile{n}x{n} holds one row per lane of a subgroup and needs subgroups of at least "
            f"{n} lanes; this device's subgroups have {lanes}"
        )
    key = (n, dtype)
    if key in _classes:
        return _classes[key]
    sg = qd.simt.subgroup
    one, zero = 1, 0  # converted to dtype when stored

    @qd.dataclass
    class Tile:
        r: qd.types.vector(n, dtype, unpacked=True)

        @qd.func
        def eye_(self):
            tid = sg.invocation_id()
            for j in qd.static(range(n)):
                self.r[j] = one if tid == j else zero

        @qd.func
        def _qd_tile_load(self, a: qd.template(), r0, r1, c0, c1):
            row = r0 + sg.invocation_id()
            if row < qd.min(r1, a.shape[0]):
                # one bound for the row (not one column index per element, which the
                # optimizer would hoist out of the caller's loops and keep live)
                ncols = qd.min(c1, a.shape[1]) - c0
                for j in qd.static(range(n)):
                    if j < ncols:
                        self.r[j] = dtype(a[row, c0 + j])

        @qd.func
        def _qd_tile_load3(self, a: qd.template(), b, r0, r1, c0, c1):
            row = r0 + sg.invocation_id()
            if row < qd.min(r1, a.shape[1]):
                # one bound for the row (not one column index per element, which the
                # optimizer would hoist out of the caller's loops and keep live)
                ncols = qd.min(c1, a.shape[2]) - c0
                for j in qd.static(range(n)):
                    if j < ncols:
                        self.r[j] = dtype(a[b, row, c0 + j])

        @qd.func
        def _qd_tile_store(self, a: qd.template(), r0, r1, c0, c1):
            row = r0 + sg.invocation_id()
            # the columns this lane stores, 0 past the last row: no branch around the stores,
            # so the code generator cannot sink the computation of the tile's last values
            # into one and keep the shuffles feeding them live across it
            ncols = qd.min(c1, a.shape[1]) - c0
            if row >= qd.min(r1, a.shape[0]):
                ncols = 0
            for j in qd.static(range(n)):
                if j < ncols:
                    a[row, c0 + j] = self.r[j]

        @qd.func
        def _qd_tile_store3(self, a: qd.template(), b, r0, r1, c0, c1):
            row = r0 + sg.invocation_id()
            # the columns this lane stores, 0 past the last row: no branch around the stores,
            # so the code generator cannot sink the computation of the tile's last values
            # into one and keep the shuffles feeding them live across it
            ncols = qd.min(c1, a.shape[2]) - c0
            if row >= qd.min(r1, a.shape[1]):
                ncols = 0
            for j in qd.static(range(n)):
                if j < ncols:
                    a[b, row, c0 + j] = self.r[j]

        @qd.func
        def _qd_tile_sub_outer(self, u, v):
            """r[j] -= u * v(lane j): minus the outer product of two per-lane column vectors."""
            uu = dtype(u)
            vv = dtype(v)
            for j in qd.static(range(n)):
                self.r[j] -= uu * sg.shuffle(vv, qd.u32(j))

        @qd.func
        def cholesky_(self, eps):
            """In place: the lower Cholesky factor, pivots sqrt(max(d - sum, eps)); eps is read
            on lane k for pivot k. The upper triangle is left as it was."""
            tid = sg.invocation_id()
            e = dtype(eps)
            for k in qd.static(range(n)):
                d = sg.shuffle(self.r[k], qd.u32(k))
                piv = qd.sqrt(qd.max(d, sg.shuffle(e, qd.u32(k))))
                lk = self.r[k] / piv
                if tid == k:
                    self.r[k] = piv
                elif tid > k:
                    self.r[k] = lk
                lik = self.r[k]
                for j in qd.static(range(k + 1, n)):
                    ljk = sg.shuffle(lik, qd.u32(j))
                    if tid >= j:
                        self.r[j] -= lik * ljk

        @qd.func
        def _qd_tile_solve_lower(self, lower_factor):
            """In place on this tile B: X with X @ L^T = B, L = lower_factor (one row per lane)."""
            for j in qd.static(range(n)):
                acc = self.r[j]
                for k in qd.static(range(j)):
                    acc -= sg.shuffle(lower_factor.r[k], qd.u32(j)) * self.r[k]
                self.r[j] = acc / sg.shuffle(lower_factor.r[j], qd.u32(j))

    Tile.__qualname__ = Tile.__name__ = f"Tile{n}x{n}_{dtype}"
    _classes[key] = Tile
    return Tile


class TileKind:
    """``qd.simt.Tile16x16`` / ``Tile32x32``: ``SIZE``, and in kernels ``zeros(dtype=None)``
    and ``eye(dtype=None)`` (keyword-only dtype)."""

    def __init__(self, n):
        self.SIZE = n
        import quadrants as qd

        size = n

        @qd.func
        def zeros(dtype: qd.template() = None):
            cls = qd.static(tile_class(size, dtype))
            return cls()

        @qd.func
        def eye(dtype: qd.template() = None):
            cls = qd.static(tile_class(size, dtype))
            t = cls()
            t.eye_()
            return t

        self.zeros = zeros
        self.eye = eye

    def _qd_cache_key(self):
        """What the offline cache keys a kernel that names this tile kind by: its size (the
        rest is library code)."""
        return self.SIZE

    def __repr__(self):
        return f"qd.simt.Tile{self.SIZE}x{self.SIZE}"


Tile16x16 = TileKind(16)
Tile32x32 = TileKind(32)
