"""The shrinker of generated kernels (shrink.py), with predicates on the source text alone."""

import ast
import random

import kernel_gen
import shrink


def kernel_lines(source):
    text = source[source.index("@qd.kernel"):]
    return [ln for ln in text.splitlines() if ln.strip()]


def test_shrink_keeps_the_predicate_and_reduces():
    for seed in range(20):
        case = kernel_gen.valid_case(random.Random(seed))
        src = ast.unparse(ast.parse(case["source"])) + "\n"  # the predicate below is on this form
        tree = ast.parse(src)
        kern = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "kern")
        loop = next(st for st in kern.body if isinstance(st, ast.For))
        simple = [st for st in loop.body if isinstance(st, (ast.Assign, ast.AugAssign))]
        if not simple:
            continue
        target = ast.unparse(simple[0])  # a statement of the parallel loop must stay

        def pred(text, target=target):
            return target in text

        calls = []
        small = shrink.shrink(src, lambda t: calls.append(t) or pred(t), budget=400)
        assert pred(small)
        assert len(kernel_lines(small)) <= len(kernel_lines(src))
        ast.parse(small)
        # the other statements of the kernel are gone, the module's fields are not
        assert sum(1 for n in ast.walk(ast.parse(small)) if isinstance(n, ast.stmt)) <= \
            sum(1 for n in ast.walk(tree) if isinstance(n, ast.stmt))
        assert "gin_i = qd.field(qd.i32, shape=8)" in small
        assert shrink.shrink(src, pred, budget=400) == small  # deterministic
        assert len(calls) <= 400


def test_shrink_replaces_subexpressions():
    src = ("import quadrants as qd\n\n@qd.kernel\ndef kern() -> qd.i32:\n"
           "    v = (qd.i32(7) * 3 + 2) // -2\n    w = 5\n    return v + w\n")
    small = shrink.shrink(src, lambda t: "// -2" in t and "return" in t)
    body = small[small.index("def kern"):]
    assert "w = 5" not in body
    assert "// -2" in body
    assert "* 3" not in body


def test_shrink_lowers_loop_bounds():
    src = ("import quadrants as qd\n\n@qd.kernel\ndef kern():\n"
           "    for j in range(-2, 3):\n        pass\n")
    small = shrink.shrink(src, lambda t: "for j in range(-2, " in t)
    assert "range(-2, -2)" in small
