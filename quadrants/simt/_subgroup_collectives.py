"""The operators of the collectives as @qd.funcs, with the identity kind of each.

The subgroup collectives themselves are IR templates (quadrants/templates/simt_subgroup.qir,
rows of csrc/frontend/collectives.def). The block collectives and qd.algorithms pass these
@qd.funcs as the operator of the subgroup collectives' operator forms
(``subgroup._reduce_all_op(v, op)``, ``subgroup._inclusive_op(v, op)``), which make a function
of the module from them; the identity kinds are those of ``subgroup._identity``.
"""

import quadrants as qd

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
