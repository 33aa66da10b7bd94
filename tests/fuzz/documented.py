"""Documented differences from the reference implementation: disagreements where the reference's
result is wrong or the behaviour is undefined, Quadrants keeps its own, and docs/language.md
("Differences from the reference") says so. The differential fuzzer (scripts/diff_reference.py)
counts them apart from real disagreements.

    classify(case, ours, ref, rerun, agree) -> name of the difference, or None

`rerun(source)` runs a variant of the case's source on both sides and returns (our answer, the
reference's answer); `agree(a, b)` says whether two answers agree. Each predicate is narrow, names
its subsection of the docs, and holds only where Quadrants is consistent with the reference's own
behaviour elsewhere, so that none can cover a Quadrants bug.
"""

import ast
import re

OPAQUE_ZERO = "_qd_opaque_zero"


def _hide_left_operands(source, ops):
    """The source with the left operand of every binary operator in `ops` (and of its augmented
    assignment) plus a field element that holds 0: `(a + _qd_opaque_zero[0])`. This changes no
    value or type (the generated integer types are i32, u32 and i64, and `x + 0` of an `i32`
    keeps each of them), but no constant folder or peephole rewrite can see through it."""
    tree = ast.parse(source)

    def zero_plus(e):
        zero = ast.Subscript(ast.Name(OPAQUE_ZERO, ast.Load()), ast.Constant(0), ast.Load())
        return ast.BinOp(e, ast.Add(), zero)

    class Hide(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if isinstance(node.op, ops):
                node.left = zero_plus(node.left)
            return node

        def visit_AugAssign(self, node):
            self.generic_visit(node)
            if isinstance(node.op, ops) and isinstance(node.target, ast.Name):
                value = ast.BinOp(zero_plus(ast.Name(node.target.id, ast.Load())), node.op, node.value)
                return ast.Assign([ast.Name(node.target.id, ast.Store())], value)
            return node

    tree = Hide().visit(tree)
    decl = ast.parse(f"{OPAQUE_ZERO} = qd.field(qd.i32, shape=1)").body[0]
    first_import = next(k for k, st in enumerate(tree.body) if isinstance(st, ast.Import))
    tree.body.insert(first_import + 1, decl)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


def constant_floor_division(case, ours, ref, rerun, agree):
    """docs/language.md, "Differences from the reference", integer `//` and `%` of constants:
    the reference's constant folder truncates toward zero where its run-time code (and
    Quadrants) floors. Holds when the reference, with the dividends hidden from its folder,
    gives exactly Quadrants' results, and Quadrants gives the same results either way."""
    src = case["source"]
    if "//" not in src and "%" not in src:
        return False
    ours2, ref2 = rerun(_hide_left_operands(src, (ast.FloorDiv, ast.Mod)))
    return agree(ours, ref2) and agree(ours, ours2)


def chained_shifts(case, ours, ref, rerun, agree):
    """docs/language.md, "Differences from the reference", chained shifts: the reference merges
    `(x << a) << b` into one shift by `a + b`, which is undefined from the bit width on and then
    spoils the whole expression (`(z << 3 << 29) - 9` is 0 for z = 0). Holds when the reference,
    with the operands of shifts hidden from that rewrite, gives exactly Quadrants' results, and
    Quadrants gives the same results either way."""
    src = case["source"]
    if "<<" not in src and ">>" not in src:
        return False
    ours2, ref2 = rerun(_hide_left_operands(src, (ast.LShift, ast.RShift)))
    return agree(ours, ref2) and agree(ours, ours2)


def float_to_int_out_of_range(case, ours, ref, rerun, agree):
    """docs/language.md, "Differences from the reference", float to integer conversion out of
    range: undefined in both (the reference gives 0 or the type's bounds, Quadrants the
    processor's answer). Holds when the model of the kernel's semantics (kernel_gen.Model) met
    such a conversion on the way to the results."""
    return "float_to_int_out_of_range" in case.get("notes", ())


# Quadrants' own compile-error classes: all subclasses of QuadrantsCompilationError.
COMPILATION_SUBCLASSES = ("QuadrantsSyntaxError", "QuadrantsTypeError", "QuadrantsNameError", "QuadrantsIndexError")


def wrapped_python_error(case, ours, ref, rerun, agree):
    """docs/language.md, "Differences from the reference", errors: where the reference's own
    Python code fails on a bad program and it reports that failure wrapped in a plain
    QuadrantsCompilationError ("AttributeError: module 'quadrants.lang.matrix_ops' has no
    attribute 'i64'"), Quadrants rejects the program with one of its subclasses of
    QuadrantsCompilationError and a message about the program. Both reject; only the class
    named differs."""
    return (ours.get("status") == "error" and ref.get("status") == "error"
            and ref["cls"] == "QuadrantsCompilationError" and ours["cls"] in COMPILATION_SUBCLASSES
            and re.match(r"[A-Za-z]*(Error|Exception): ", ref["msg"]) is not None)


PREDICATES = [
    ("constant-floor-division", constant_floor_division),
    ("chained-shifts", chained_shifts),
    ("float-to-int-out-of-range", float_to_int_out_of_range),
]

def reference_aborts(case, ours, ref, rerun, agree):
    """docs/language.md, "Differences from the reference", errors: some bad programs abort the
    reference's process (a constant index past the end of a vector, `qd.Vector([1, 2])[5]`);
    Quadrants rejects them with an exception. Holds when the reference's worker died and
    Quadrants raised one of its own compile-error classes."""
    return (ref.get("status") == "crash" and ours.get("status") == "error"
            and ours["cls"] in COMPILATION_SUBCLASSES + ("QuadrantsCompilationError",))


SCALAR_EXPECTED = ("a tuple or list is not a scalar value", "this expression has no scalar value",
                   "cannot assign a matrix to the scalar variable")


def _assigns_a_sequence(source):
    """Whether some assignment of the source stores a list, a tuple or a qd.Vector / qd.Matrix."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            v = node.value
            if isinstance(v, (ast.List, ast.Tuple)) and not isinstance(node.targets[0], ast.Tuple):
                return True
            if (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                    and v.func.attr in ("Vector", "Matrix")):
                return True
    return False


def sequence_into_scalar(case, ours, ref, rerun, agree):
    """docs/language.md, "Differences from the reference", errors: a vector, list or tuple
    assigned to a scalar variable or stored into a scalar element (`x = [0, 0]` after `x = 0`,
    `a[0] = qd.Vector([1, 2])`) is accepted by the reference, which keeps part of it or writes it
    over the elements that follow; Quadrants rejects it with QuadrantsTypeError. Holds when ours
    raised that for a scalar expected and the source makes such an assignment."""
    return (ours.get("status") == "error" and ref.get("status") == "ok"
            and ours["cls"] == "QuadrantsTypeError"
            and any(m in ours["msg"] for m in SCALAR_EXPECTED)
            and _assigns_a_sequence(case["source"]))


ACCEPTED_BY_REFERENCE = [
    ("sequence-into-scalar", sequence_into_scalar),
]


# Predicates over a rejection on our side (the differences above are between two results).
REJECT_PREDICATES = [
    ("wrapped-python-error", wrapped_python_error),
    ("reference-aborts", reference_aborts),
]


def classify(case, ours, ref, rerun, agree):
    if ours.get("status") == "error" and ref.get("status") == "ok":
        for name, pred in ACCEPTED_BY_REFERENCE:
            if pred(case, ours, ref, rerun, agree):
                return name
        return None
    if ours.get("status") == "error" and ref.get("status") in ("error", "crash"):
        for name, pred in REJECT_PREDICATES:
            if pred(case, ours, ref, rerun, agree):
                return name
        return None
    if ours.get("status") != "ok" or ref.get("status") != "ok":
        return None
    for name, pred in PREDICATES:
        if pred(case, ours, ref, rerun, agree):
            return name
    return None
