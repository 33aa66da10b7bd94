"""Stand-ins for a kernel's runtime values while ``qd.static(...)`` runs Python at compile time.

The compiler binds each runtime variable that a ``qd.static`` expression names to a ``RuntimeValue``
(csrc/frontend/lower_static.c makes them through the host). It knows what the compiler knows:

- a vector: ``n``, ``get_shape() == (n,)``, ``len()``, ``ndim == 1``, ``dtype``;
- a matrix: ``n``, ``m``, ``get_shape() == (n, m)``, ``len()``, ``ndim == 2``, ``dtype``;
- a scalar: ``dtype``;
- an ndarray: ``shape`` (a tuple of stand-ins of its extents, so ``len(arr.shape)`` works), ``ndim``,
  ``dtype``; it may also be the result (``v = qd.static(state.vel)`` aliases the ndarray);
- a struct or dataclass value: its members, as attributes.

A stand-in may be put in tuples and lists, enumerated, zipped and indexed: when the result of
``qd.static`` comes back to the compiler, each stand-in in it is the runtime value again, so
``for k, x in qd.static(enumerate((a, b)))`` unrolls over ``a`` and ``b``. Arithmetic and
comparisons on stand-ins make a ``RuntimeOp`` that the compiler carries out at run time, so
``qd.static((a, a + 1))`` is a tuple of two runtime values. The value itself exists only at run
time: truth testing and ``int()``/``float()`` raise ``TypeError``.
"""

from quadrants._types import _BY_ID


def _binary(op):
    """The forward and reflected methods of binary operator `op`."""

    def forward(self, other):
        return RuntimeOp(op, (self, other))

    def reflected(self, other):
        return RuntimeOp(op, (other, self))

    return forward, reflected


class RuntimeValue:
    """A runtime value seen from compile-time Python code (see the module docstring)."""

    __slots__ = ("_qd_runtime_index", "_kind", "_dtype_id", "_shape", "_name")

    def __init__(self, index, kind, dtype_id, shape, name):
        self._qd_runtime_index = index  # the compiler's number for the value
        self._kind = kind  # "scalar", "vector", "matrix", "ndarray" or "value"
        self._dtype_id = dtype_id  # element type id, or -1
        self._shape = shape  # vector (n,), matrix (n, m), ndarray: tuple of stand-ins; else None
        self._name = name  # the variable, for messages

    def _what(self):
        return f"runtime {self._kind} '{self._name}'" if self._name else f"a runtime {self._kind}"

    @property
    def dtype(self):
        dtype = _BY_ID.get(self._dtype_id)
        if dtype is None:
            raise AttributeError(f"{self._what()} has no known dtype")
        return dtype

    def get_shape(self):
        if self._kind not in ("vector", "matrix"):
            raise TypeError(f"Getting shape of non-tensor type: {self._what()}")
        return self._shape

    @property
    def n(self):
        if self._kind not in ("vector", "matrix"):
            raise TypeError(f"Getting n of non-tensor type: {self._what()}")
        return self._shape[0]

    @property
    def m(self):
        if self._kind != "matrix":
            raise TypeError(f"Getting m of tensor type < 2D: {self._what()}")
        return self._shape[1]

    @property
    def ndim(self):
        if self._kind not in ("vector", "matrix", "ndarray"):
            raise AttributeError(f"{self._what()} has no ndim")
        return len(self._shape)

    @property
    def shape(self):
        if self._kind not in ("vector", "matrix", "ndarray"):
            raise AttributeError(f"{self._what()} has no shape")
        return self._shape

    def __len__(self):
        if self._kind not in ("vector", "matrix"):
            raise TypeError(f"len() of {self._what()}")
        return self._shape[0]

    def __bool__(self):
        raise TypeError(
            f"{self._what()} has no truth value at compile time; use a runtime `if` instead of qd.static"
        )

    def __repr__(self):
        return f"<{self._what()}>"

    def _no_conversion(self, *_args):
        raise TypeError(f"{self._what()} has no value at compile time: it exists only at run time")

    __int__ = __float__ = __index__ = __complex__ = _no_conversion

    # Arithmetic and comparisons build a RuntimeOp: the operation, done at run time where the
    # result is used (only inside a tuple or list: a runtime result of qd.static is an error).
    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("sub")
    __mul__, __rmul__ = _binary("mul")
    __truediv__, __rtruediv__ = _binary("truediv")
    __floordiv__, __rfloordiv__ = _binary("floordiv")
    __mod__, __rmod__ = _binary("mod")
    __pow__, __rpow__ = _binary("pow")
    __matmul__, __rmatmul__ = _binary("matmul")
    __and__, __rand__ = _binary("and")
    __or__, __ror__ = _binary("or")
    __xor__, __rxor__ = _binary("xor")
    __lshift__, __rlshift__ = _binary("lshift")
    __rshift__, __rrshift__ = _binary("rshift")
    __lt__ = _binary("lt")[0]
    __le__ = _binary("le")[0]
    __gt__ = _binary("gt")[0]
    __ge__ = _binary("ge")[0]
    __eq__ = _binary("eq")[0]
    __ne__ = _binary("ne")[0]

    def __neg__(self):
        return RuntimeOp("neg", (self,))

    def __pos__(self):
        return RuntimeOp("pos", (self,))

    def __invert__(self):
        return RuntimeOp("invert", (self,))

    __hash__ = object.__hash__


class RuntimeOp(RuntimeValue):
    """An operation on runtime values inside qd.static (`a + 1`, `-v`, `a < b`): the compiler does it
    where the result is used, with the kernel's typing rules."""

    __slots__ = ("_op", "_operands")

    def __init__(self, op, operands):
        super().__init__(-1, "expression", -1, None, None)
        self._op = op  # "add", "neg", "lt", ... (csrc/frontend/lower_static.c lists them)
        self._operands = operands  # stand-ins, operations or Python values


class RuntimeStruct(RuntimeValue):
    """A struct or dataclass value: its members are attributes (stand-ins, or Python values of the
    compile-time ones), so ``qd.static(state.vel)`` is the ndarray member itself."""

    __slots__ = ("_members",)

    def __init__(self, index, members, name):
        super().__init__(index, "struct", -1, None, name)
        self._members = members

    def __getattribute__(self, attr):
        members = object.__getattribute__(self, "_members")
        if attr in members:
            return members[attr]
        return object.__getattribute__(self, attr)

    def __dir__(self):
        return list(self._members)


def _make(index, kind, dtype_id, n, m, shape, members, name):
    """Called by the compiler's host (csrc/python/host.c): `shape` is an ndarray's tuple of extents,
    `members` a struct's members by name."""
    if kind == "struct":
        return RuntimeStruct(index, members, name)
    if kind == "vector":
        shape = (n,)
    elif kind == "matrix":
        shape = (n, m)
    return RuntimeValue(index, kind, dtype_id, shape, name)
