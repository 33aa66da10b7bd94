"""Subgroup collectives over the shuffle primitives, written once for every operator.

Each operation works on independent tiles of 2**log2_size consecutive lanes (the `_tiled`
forms; the plain forms use the whole subgroup, log2_size = 5):
- reduce: a shuffle_down tree, valid in the first lane of each tile;
- reduce_all: a shuffle_xor butterfly, the result in every lane of the tile;
- inclusive scan: Hillis-Steele with shuffle_up; exclusive: the inclusive result of the lane
  before, the operator's identity in the tile's first lane;
- segmented reduce: a segmented inclusive scan, segments starting at lanes whose head_flag is
  nonzero (and at each tile's first lane);
- bitonic_sort_kv: a bitonic network of shuffle_xor exchanges, ascending on (key, value).
The loops are unrolled at compile time (qd.static), so each operation is straight-line code.
"""

import quadrants as qd
from quadrants.simt import subgroup as _sg

LOG2_W = 5

# identity kinds of subgroup._identity
_ZERO, _ONE, _ONES, _TYPE_MAX, _TYPE_MIN = range(5)


@qd.func
def _op_add(a, b):
    return a + b


@qd.func
def _op_mul(a, b):
    return a * b


@qd.func
def _op_min(a, b):
    return qd.min(a, b)


@qd.func
def _op_max(a, b):
    return qd.max(a, b)


@qd.func
def _op_and(a, b):
    return a & b


@qd.func
def _op_or(a, b):
    return a | b


@qd.func
def _op_xor(a, b):
    return a ^ b


OPS = {
    "add": (_op_add, _ZERO),
    "mul": (_op_mul, _ONE),
    "min": (_op_min, _TYPE_MAX),
    "max": (_op_max, _TYPE_MIN),
    "and": (_op_and, _ONES),
    "or": (_op_or, _ZERO),
    "xor": (_op_xor, _ZERO),
}


def _check_log2(log2_size):
    if not isinstance(log2_size, int) or not 0 <= log2_size <= LOG2_W:
        raise ValueError(f"log2_size must be an int in [0, {LOG2_W}], got {log2_size!r}")
    return log2_size


@qd.func
def reduce_tiled(v, op: qd.template(), log2_size: qd.template()):
    qd.static(_check_log2(log2_size))
    for k in qd.static(range(log2_size)):
        v = op(v, _sg.shuffle_down(v, qd.u32(1 << (log2_size - 1 - k))))
    return v


@qd.func
def reduce_all_tiled(v, op: qd.template(), log2_size: qd.template()):
    qd.static(_check_log2(log2_size))
    for k in qd.static(range(log2_size)):
        v = op(v, _sg.shuffle_xor(v, qd.u32(1 << (log2_size - 1 - k))))
    return v


@qd.func
def inclusive_tiled(v, op: qd.template(), log2_size: qd.template()):
    qd.static(_check_log2(log2_size))
    lane = _sg.invocation_id() & ((1 << log2_size) - 1)
    for k in qd.static(range(log2_size)):
        t = _sg.shuffle_up(v, qd.u32(1 << k))
        if lane >= (1 << k):
            v = op(t, v)
    return v


@qd.func
def exclusive_tiled(v, op: qd.template(), identity_kind: qd.template(), log2_size: qd.template()):
    inc = inclusive_tiled(v, op, log2_size)
    r = _sg.shuffle_up(inc, qd.u32(1))
    lane = _sg.invocation_id() & ((1 << log2_size) - 1)
    if lane == 0:
        r = _sg._identity(v, identity_kind)
    return r


@qd.func
def segmented_tiled(v, head_flag, op: qd.template(), log2_size: qd.template()):
    qd.static(_check_log2(log2_size))
    lane = _sg.invocation_id() & ((1 << log2_size) - 1)
    # f: a segment head lies in (lane - reach, lane]
    f = qd.cast(head_flag != 0, qd.i32)
    if lane == 0:
        f = 1
    for k in qd.static(range(log2_size)):
        t = _sg.shuffle_up(v, qd.u32(1 << k))
        tf = _sg.shuffle_up(f, qd.u32(1 << k))
        if lane >= (1 << k):
            if f == 0:
                v = op(t, v)
            f = f | tf
    return v


@qd.func
def bitonic_sort_kv_tiled(key, value, log2_size: qd.template()):
    qd.static(_check_log2(log2_size))
    lane = _sg.invocation_id() & ((1 << log2_size) - 1)
    for s in qd.static(range(1, log2_size + 1)):
        for t in qd.static(range(s)):
            j = qd.static(1 << (s - 1 - t))
            pk = _sg.shuffle_xor(key, qd.u32(j))
            pv = _sg.shuffle_xor(value, qd.u32(j))
            ascending = 1
            if qd.static(s < log2_size):
                ascending = qd.cast(((lane >> s) & 1) == 0, qd.i32)
            lower = qd.cast((lane & j) == 0, qd.i32)
            other_less = qd.cast((pk < key) or (pk == key and pv < value), qd.i32)
            other_greater = qd.cast((pk > key) or (pk == key and pv > value), qd.i32)
            take = other_greater
            if lower == ascending:
                take = other_less
            if take != 0:
                key = pk
                value = pv
    return key, value


def _make(kind, op_name):
    op, ident = OPS[op_name]
    if kind == "reduce":

        @qd.func
        def full(v):
            return reduce_tiled(v, op, LOG2_W)

        @qd.func
        def tiled(v, log2_size: qd.template()):
            return reduce_tiled(v, op, log2_size)

    elif kind == "reduce_all":

        @qd.func
        def full(v):
            return reduce_all_tiled(v, op, LOG2_W)

        @qd.func
        def tiled(v, log2_size: qd.template()):
            return reduce_all_tiled(v, op, log2_size)

    elif kind == "segmented_reduce":

        @qd.func
        def full(v, head_flag):
            return segmented_tiled(v, head_flag, op, LOG2_W)

        @qd.func
        def tiled(v, head_flag, log2_size: qd.template()):
            return segmented_tiled(v, head_flag, op, log2_size)

    elif kind == "inclusive":

        @qd.func
        def full(v):
            return inclusive_tiled(v, op, LOG2_W)

        @qd.func
        def tiled(v, log2_size: qd.template()):
            return inclusive_tiled(v, op, log2_size)

    else:

        @qd.func
        def full(v):
            return exclusive_tiled(v, op, ident, LOG2_W)

        @qd.func
        def tiled(v, log2_size: qd.template()):
            return exclusive_tiled(v, op, ident, log2_size)

    return full, tiled


def exported():
    """name -> @qd.func of every subgroup collective."""
    table = {}
    for kind, ops in (
        ("reduce", ("add", "min", "max")),
        ("reduce_all", ("add", "min", "max")),
        ("segmented_reduce", ("add", "min", "max")),
        ("inclusive", tuple(OPS)),
        ("exclusive", tuple(OPS)),
    ):
        for op_name in ops:
            full, tiled = _make(kind, op_name)
            table[f"{kind}_{op_name}"] = full
            table[f"{kind}_{op_name}_tiled"] = tiled

    @qd.func
    def bitonic_sort_kv(key, value):
        return bitonic_sort_kv_tiled(key, value, LOG2_W)

    table["bitonic_sort_kv"] = bitonic_sort_kv
    table["bitonic_sort_kv_tiled"] = bitonic_sort_kv_tiled
    return table
