"""Spec E / 0.8: the compile-error contract. Each error has its class, its message, and its text
names file:line, shows the offending source line and a caret under the offending node."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import quadrants as qd

NDArray = qd.types.NDArray

THIS_FILE = os.path.abspath(__file__)


def line_of(marker):
    """1-based line number of the unique line of this file that contains `marker`."""
    with open(THIS_FILE) as f:
        hits = [n for n, text in enumerate(f, 1) if marker in text and "check_location(" not in text and "line_of(" not in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def source_line(n):
    with open(THIS_FILE) as f:
        return f.read().splitlines()[n - 1]


def check_location(exc, marker, token):
    """str(exc) names THIS_FILE:line, shows the line and a caret under `token`."""
    text = str(exc)
    n = line_of(marker)
    assert f"{THIS_FILE}:{n}" in text, text
    src = source_line(n)
    lines = text.splitlines()
    idx = [i for i, ln in enumerate(lines) if ln.rstrip() == src.rstrip()]
    assert idx, f"source line {src!r} not shown in:\n{text}"
    caret_line = lines[idx[0] + 1]
    assert caret_line.strip().startswith("^"), text
    col = caret_line.index("^")
    assert src.index(token) == col, f"caret at {col}, expected under {token!r} at {src.index(token)}:\n{text}"


# --- location of errors ---


def test_name_error_location_and_message():
    @qd.kernel
    def k() -> qd.i32:
        return undefined_thing + 1  # <E-name>  # noqa: F821

    with pytest.raises(qd.QuadrantsNameError) as ei:
        k()
    assert 'Name "undefined_thing" is not defined' in str(ei.value)
    check_location(ei.value, "<E-name>", "undefined_thing")


def test_error_str_starts_with_newline():
    @qd.kernel
    def k() -> qd.i32:
        return undefined_thing2  # noqa: F821

    with pytest.raises(qd.QuadrantsNameError) as ei:
        k()
    assert str(ei.value).startswith("\n")


def test_type_error_location():
    @qd.kernel
    def k(a: qd.f32) -> qd.i32:
        return qd.sin(1) + a  # <E-type>

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k(1.0)
    check_location(ei.value, "<E-type>", "qd.sin")


def test_syntax_error_location_kernel_arg_assign():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        x = n
        n = 5  # <E-argassign>
        return x

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k(1)
    check_location(ei.value, "<E-argassign>", "n = 5")


def test_error_in_func_points_at_func_line():
    @qd.func
    def helper(x):
        y = x * 2
        return y + missing_in_func  # <E-func>  # noqa: F821

    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        return helper(a)

    with pytest.raises(qd.QuadrantsNameError) as ei:
        k(1)
    check_location(ei.value, "<E-func>", "missing_in_func")


def test_error_in_nested_func_points_at_inner_line():
    @qd.func
    def inner(x):
        return qd.cos(x)  # <E-inner>

    @qd.func
    def outer(x):
        return inner(x) + 1

    @qd.kernel
    def k(a: qd.i32) -> qd.f32:
        return outer(a)

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k(1)
    check_location(ei.value, "<E-inner>", "qd.cos")


def test_range_three_args_location():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(0, 10, 2):  # <E-range>
            out[i] = 1

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k(np.zeros(10, np.int32))
    check_location(ei.value, "<E-range>", "range(")


def test_literal_range_error_location_and_message():
    @qd.kernel
    def k() -> qd.i64:
        b = 0x80000000  # <E-lit>
        return b

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k()
    assert "exceeded the range of default_ip" in str(ei.value)
    check_location(ei.value, "<E-lit>", "b = 0x80000000")


def test_literal_range_error_when_the_target_is_float():
    # A Python int is a default_ip literal before it is converted to a float target.
    f = qd.field(qd.f64, shape=2)

    @qd.kernel
    def k():
        f[0] = 2**40  # <E-lit-float>

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k()
    assert "Integer literal 1099511627776 exceeded the range of default_ip" in str(ei.value)
    check_location(ei.value, "<E-lit-float>", "f[0] = 2**40")

    @qd.kernel
    def k2() -> qd.f64:
        x = qd.f64(0.5)
        x = -3000000000  # <E-lit-assign>
        return x

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k2()
    check_location(ei.value, "<E-lit-assign>", "x = -3000000000")


# --- unsupported nodes ---


def test_try_unsupported():
    @qd.kernel
    def k() -> qd.i32:
        x = 0
        try:  # <E-try>
            x = 1
        except Exception:
            x = 2
        return x

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "Try"') as ei:
        k()
    check_location(ei.value, "<E-try>", "try")


def test_raise_unsupported():
    @qd.kernel
    def k(a: qd.i32):
        if a > 0:
            raise ValueError("x")

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "Raise"'):
        k(1)


def test_lambda_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        f = lambda v: v + 1  # noqa: E731
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "Lambda"'):
        k(1)


def test_class_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        class C:
            pass

        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "ClassDef"'):
        k(1)


def test_import_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        import math  # noqa: F401

        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "Import"'):
        k(1)


def test_import_from_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        from math import pi  # noqa: F401

        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "ImportFrom"'):
        k(1)


def test_nested_def_rejected():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        def inner(v):
            return v

        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match="Function definition is not allowed"):
        k(1)


def test_set_literal_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        s = {1, 2}
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "Set"'):
        k(1)


def test_set_comprehension_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        s = {v for v in range(3)}
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "SetComp"'):
        k(1)


def test_generator_expression_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        s = sum(v for v in range(3))
        return a + s

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "GeneratorExp"'):
        k(1)


def test_delete_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        x = a
        del x
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "Delete"'):
        k(1)


def test_global_statement_unsupported():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        global THIS_FILE
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match='Unsupported node "Global"'):
        k(1)


def test_is_comparison_rejected():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        r = 0
        if a is 3:  # noqa: F632  <E-is>
            r = 1
        return r

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k(1)
    assert 'Operator "is" in Quadrants scope is not supported.' in str(ei.value)
    check_location(ei.value, "<E-is>", "a is 3")


def test_in_outside_static_rejected():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        r = 0
        if a in [1, 2]:  # <E-in>
            r = 1
        return r

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k(1)
    assert '"In" is only supported inside `qd.static`.' in str(ei.value)
    check_location(ei.value, "<E-in>", "a in [1, 2]")


def test_not_in_outside_static_rejected():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        return a not in (1, 2)  # <E-notin>

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k(1)
    assert '"NotIn" is only supported inside `qd.static`.' in str(ei.value)
    check_location(ei.value, "<E-notin>", "a not in")


@pytest.mark.parametrize("op, name", [("~", "bit_not"), ("not ", "logic_not")])
def test_integral_unary_of_float(op, name):
    src = textwrap.dedent(
        f"""
        import quadrants as qd

        @qd.kernel
        def k(a: qd.f32) -> qd.f32:
            return {op}a
        """
    )
    path = os.path.join(os.path.dirname(THIS_FILE), f"_gen_unary_{name}.py")
    with open(path, "w") as f:
        f.write(src)
    try:
        ns = {}
        exec(compile(src, path, "exec"), ns)
        with pytest.raises(qd.QuadrantsTypeError) as ei:
            ns["k"](1.0)
    finally:
        os.unlink(path)
    text = str(ei.value)
    assert f"'{name}' takes integral inputs only, however 'f32' is provided" in text, text
    assert f"{path}:6" in text, text


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "sin", "cos", "tan", "asin", "acos", "tanh"])
def test_real_unary_of_int(name):
    @qd.kernel
    def k2(a: qd.i32) -> qd.f32:
        return qd.static(getattr(qd, name))(a)  # <E-real-unary2>

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k2(1)
    assert f"'{name}' takes real inputs only, however 'i32' is provided." in str(ei.value)
    check_location(ei.value, "<E-real-unary2>", "qd.static(getattr(qd, name))(a)")


def test_primitive_type_takes_one_expression():
    @qd.kernel
    def k(a: qd.f32) -> qd.f32:
        return qd.f32(a, a)  # <E-prim>

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k(1.0)
    assert "A primitive type can only decorate a single expression." in str(ei.value)
    check_location(ei.value, "<E-prim>", "qd.f32(a, a)")


def test_static_assign_to_element():
    a = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k():
        x = qd.static(a)
        x[0] = qd.static(1)  # <E-static-elem>

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k()
    assert "Static assign cannot be used on elements in arrays" in str(ei.value)
    check_location(ei.value, "<E-static-elem>", "x[0]")


def test_in_inside_static_ok():
    @qd.kernel
    def k(a: qd.template()) -> qd.i32:
        r = 0
        if qd.static(a in [1, 2]):
            r = 1
        return r

    assert k(2) == 1
    assert k(5) == 0


def test_with_unsupported_context():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        with open("x"):
            pass
        return a

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(1)


# --- name errors ---


def test_undefined_function_name():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        return no_such_function(a)  # noqa: F821

    with pytest.raises(qd.QuadrantsNameError, match='"no_such_function" is not defined'):
        k(1)


def test_undefined_name_only_in_untaken_runtime_branch():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        r = 0
        if a > 100:
            r = not_defined_anywhere  # noqa: F821
        return r

    with pytest.raises(qd.QuadrantsNameError):
        k(1)


# --- wrapping of Python exceptions ---


def test_python_exception_in_static_is_compilation_error():
    @qd.kernel
    def k() -> qd.i32:
        return qd.static(1 // 0)

    with pytest.raises(qd.QuadrantsCompilationError, match="ZeroDivisionError") as ei:
        k()
    assert type(ei.value) is qd.QuadrantsCompilationError


def test_python_exception_in_helper_is_compilation_error():
    def helper():
        raise KeyError("boom-key")

    @qd.kernel
    def k() -> qd.i32:
        return qd.static(helper())

    with pytest.raises(qd.QuadrantsCompilationError, match="boom-key") as ei:
        k()
    assert type(ei.value) is qd.QuadrantsCompilationError
    assert "KeyError" in str(ei.value)


def test_static_assert_failure_class():
    @qd.kernel
    def k() -> qd.i32:
        qd.static_assert(1 + 1 == 3, "arith is broken")
        return 0

    with pytest.raises(qd.QuadrantsCompilationError, match="arith is broken"):
        k()


def test_print_full_traceback_reraises_original(arch):
    qd.init(arch=getattr(qd, arch), print_full_traceback=True)

    @qd.kernel
    def k() -> qd.i32:
        return qd.static(1 // 0)

    with pytest.raises(ZeroDivisionError):
        k()


def test_error_does_not_poison_later_kernels():
    @qd.kernel
    def bad() -> qd.i32:
        return nope  # noqa: F821

    @qd.kernel
    def good(a: qd.i32) -> qd.i32:
        return a + 1

    for _ in range(3):
        with pytest.raises(qd.QuadrantsNameError):
            bad()
    assert good(1) == 2


def test_class_hierarchy():
    assert issubclass(qd.QuadrantsSyntaxError, qd.QuadrantsCompilationError)
    assert issubclass(qd.QuadrantsSyntaxError, SyntaxError)
    assert issubclass(qd.QuadrantsNameError, NameError)
    assert issubclass(qd.QuadrantsNameError, qd.QuadrantsCompilationError)
    assert issubclass(qd.QuadrantsTypeError, TypeError)
    assert issubclass(qd.QuadrantsTypeError, qd.QuadrantsCompilationError)
    assert issubclass(qd.QuadrantsAssertionError, qd.QuadrantsRuntimeError)
    assert issubclass(qd.QuadrantsAssertionError, AssertionError)
    assert issubclass(qd.QuadrantsRuntimeTypeError, TypeError)
    assert issubclass(qd.QuadrantsRuntimeError, RuntimeError)


# --- no input crashes the interpreter ---

# Each body is the inside of a kernel `k(a: qd.i32, x: NDArray[qd.f32, 1])` plus a field `f`
# (i32, shape 4); every one must end in a Quadrants compile error (or succeed), never crash.
CRASH_CASES = {
    "empty_range": "for i in range():\n    pass",
    "ndrange_empty": "for i in qd.ndrange():\n    pass",
    "static_no_args": "v = qd.static()",
    "cast_missing": "v = qd.cast(a)",
    "atomic_no_args": "qd.atomic_add()",
    "field_as_value": "v = f + 1",
    "return_field": "v = f\nv2 = v[0] + f",
    "module_as_value": "v = qd + 1",
    "call_int_literal": "v = 3(4)",
    "string_arith": "v = 'a' + a",
    "len_scalar": "v = len(a)",
    "shape_of_scalar": "v = a.shape[0]",
    "too_many_indices": "v = x[0, 1, 2]",
    "too_few_indices_field2": "v = x[()]",
    "index_by_float": "v = x[1.5]",
    "index_by_string": "v = x['s']",
    "attr_missing": "v = qd.no_such_attribute(a)",
    "attr_on_int": "v = a.foo",
    "deep_expression": "v = " + "(" * 200 + "a" + " + 1)" * 200,
    "deep_nesting_if": "v = 0\n" + "".join("    " * d + "if a > %d:\n" % d for d in range(60)) + "    " * 60 + "v = 1",
    "huge_int": "v = 10 ** 400",
    "huge_float": "v = 1e308 * 10",
    "starred_assign": "v, *w = 1, 2, 3",
    "subscript_slice_ndarray": "v = x[1:3]",
    "bitcast_wrong_width": "v = qd.bit_cast(a, qd.f64)",
    "ndrange_bad_axes_type": "for i, j in qd.ndrange(2, 2, axes='ij'):\n    pass",
    "loop_config_bad": "qd.loop_config(block_dim='x')\nfor i in range(3):\n    pass",
    "select_wrong_arity": "v = qd.select(a)",
    "min_no_args": "v = qd.min()",
    "print_sep_expr": "print(a, sep=a)",
    "assign_to_call": "v = 0\nqd.sqrt(v)\n",
    "await_like": "v = [i for i in range(3) if i > a]",
    "dict_runtime_key": "d = {a: 1}",
    "literal_subscript_expr_stmt": "(1, 2)[0]",
    "aug_on_tuple": "t = (a, a)\nt += 1",
    "unpack_mismatch": "p, q = 1, 2, 3",
    "unpack_scalar": "p, q = a",
    "ternary_tuple": "v = (1, 2) if a else (3, 4)",
    "while_float": "while 1.5:\n    break",
    "static_runtime_expr": "v = qd.static(a + 1)",
    "return_in_loop_kernel": "for i in range(3):\n    return",
    "negative_literal_index_ndarray": "v = x[-1]",
    "field_assign_whole": "f = 3",
    "shift_float": "v = 1.5 << 2",
    "mod_by_zero_literal": "v = a % 0",
    "div_by_zero_literal": "v = 1 // 0",
    "static_of_expr": "v = qd.static(x)",
    "grouped_scalar": "for I in qd.grouped(a):\n    pass",
    "struct_for_scalar": "for i in a:\n    pass",
    "for_over_list_runtime": "for i in [a, a]:\n    pass",
    "zip_runtime": "for i, j in zip(range(2), range(2)):\n    pass",
}

_RUNNER = r'''
import json, sys, traceback, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
import quadrants as qd
warnings.simplefilter("ignore")
qd.init(arch=getattr(qd, sys.argv[2]))
cases = json.load(open(sys.argv[3]))
f = qd.field(qd.i32, shape=4)
for name, body in cases.items():
    src = "def k(a: qd.i32, x: qd.types.NDArray[qd.f32, 1]):\n" + "".join("    " + ln + "\n" for ln in body.splitlines())
    path = sys.argv[4] + "/case_" + name + ".py"
    with open(path, "w") as fh:
        fh.write(src)
    g = {"qd": qd, "f": f, "np": np}
    try:
        exec(compile(src, path, "exec"), g)
        kern = qd.kernel(g["k"])
        kern(1, np.zeros(4, np.float32))
        result = "ok"
    except qd.QuadrantsCompilationError as e:
        result = "compile:" + type(e).__name__
    except BaseException as e:
        result = "other:" + type(e).__name__ + ":" + str(e).strip().splitlines()[-1][:200] if str(e).strip() else "other:" + type(e).__name__
    print(json.dumps([name, result]), flush=True)
print(json.dumps(["__done__", "ok"]), flush=True)
'''


@pytest.fixture(scope="module")
def crash_results(tmp_path_factory, request):
    arch = (request.config.getoption("--arch") or ["cpu"])[0]
    d = tmp_path_factory.mktemp("crash")
    cases = d / "cases.json"
    cases.write_text(json.dumps(CRASH_CASES))
    runner = d / "runner.py"
    runner.write_text(_RUNNER)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(THIS_FILE)))
    proc = subprocess.run([sys.executable, str(runner), repo, arch, str(cases), str(d)],
                          capture_output=True, text=True, timeout=600)
    results = {}
    for ln in proc.stdout.splitlines():
        if ln.startswith('["'):
            name, res = json.loads(ln)
            results[name] = res
    results["__returncode__"] = proc.returncode
    results["__stderr__"] = proc.stderr[-2000:]
    return results


# Cases that are valid kernels: they may run successfully.
MAY_SUCCEED = {"assign_to_call", "await_like", "for_over_list_runtime", "zip_runtime", "ternary_tuple",
               "starred_assign", "huge_float", "deep_expression", "deep_nesting_if",
               "literal_subscript_expr_stmt", "field_assign_whole", "mod_by_zero_literal", "print_sep_expr",
               "static_of_expr"}


@pytest.mark.parametrize("case", sorted(CRASH_CASES))
def test_no_crash(case, crash_results):
    assert "__done__" in crash_results, (
        f"interpreter died (rc={crash_results['__returncode__']}) before finishing; last stderr:\n"
        f"{crash_results['__stderr__']}")
    res = crash_results.get(case)
    assert res is not None, f"no result for {case}: the process died while running it"
    if case in MAY_SUCCEED:
        assert res == "ok" or res.startswith("compile:"), res
    else:
        assert res.startswith("compile:"), f"{case}: expected a Quadrants compile error, got {res}"


# --- kernel return rules (spec 0.6) ---


def test_kernel_missing_return_statement():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        b = a + 1

    with pytest.raises(qd.QuadrantsSyntaxError, match="does not have a return statement"):
        k(1)


def test_kernel_return_without_annotation():
    @qd.kernel
    def k(a: qd.i32):
        return a

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(1)


def test_kernel_return_inside_runtime_for():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        for i in range(n):
            return i
        return -1

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(3)


def test_negative_literal_index_on_ndarray():
    @qd.kernel
    def k(x: NDArray[qd.f32, 1]) -> qd.f32:
        return x[-1]

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(np.zeros(4, np.float32))


@pytest.mark.parametrize("shape,index_src,n", [(4, "two", 2), ((), "one", 1), (4, "none", 0)])
def test_field_index_count_is_index_error(shape, index_src, n):
    from quadrants._core import QuadrantsIndexError

    f = qd.field(qd.i32, shape=shape)

    @qd.kernel
    def two():
        f[0, 0] = 1  # <E-index-two>

    @qd.kernel
    def one():
        f[0] = 1  # <E-index-one>

    @qd.kernel
    def none():
        f[None] = 1  # <E-index-none>

    with pytest.raises(QuadrantsIndexError) as ei:
        {"two": two, "one": one, "none": none}[index_src]()
    assert isinstance(ei.value, qd.QuadrantsCompilationError)
    ndim = 0 if shape == () else 1
    assert f"Field with dim {ndim} accessed with indices of dim {n}" in str(ei.value)
    check_location(ei.value, f"<E-index-{index_src}>", "f[")


def test_ndarray_index_count_is_index_error():
    from quadrants._core import QuadrantsIndexError

    @qd.kernel
    def k(a: NDArray[qd.i32, 1]):
        a[0, 1] = 1  # <E-index-nd>

    with pytest.raises(QuadrantsIndexError) as ei:
        k(np.zeros(4, np.int32))
    assert "Array with dim 1 accessed with indices of dim 2" in str(ei.value)
    check_location(ei.value, "<E-index-nd>", "a[")


def test_loop_config_unknown_keyword_is_type_error():
    @qd.kernel
    def k():
        qd.loop_config(no_such_option=1)  # <E-loop-config>
        for i in range(3):
            pass

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k()
    assert ("TypeError when calling `loop_config`: loop_config() got an unexpected keyword argument "
            "'no_such_option'.") in str(ei.value)
    check_location(ei.value, "<E-loop-config>", "qd.loop_config")


def test_fstring_value_outside_print_is_type_error():
    g = qd.field(qd.i32, shape=2)

    @qd.kernel
    def k():
        x = 3
        g[0] = f"{x}"  # <E-fstring>

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k()
    assert "Invalid constant scalar data type: <class 'str'>" in str(ei.value)
    check_location(ei.value, "<E-fstring>", 'f"{x}"')

    @qd.kernel
    def printed():
        x = 3
        print(f"x={x}")
        g[1] = x

    printed()
    assert g[1] == 3


def test_calling_a_runtime_value_is_type_error():
    g = qd.field(qd.i32, shape=2)

    @qd.kernel
    def k():
        x = g[0]
        x()  # <E-call-value>

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k()
    assert "TypeError when calling `Expr`: 'Quadrants Expression' object is not callable." in str(ei.value)
    check_location(ei.value, "<E-call-value>", "x()")


@pytest.mark.parametrize("which", ["param", "ndarray", "local"])
def test_loop_variable_shadowing_an_outer_name(which):
    g = qd.field(qd.i32, shape=4)

    @qd.kernel
    def param(a: qd.i32):
        for a in range(2):  # <E-shadow-param>
            g[a] = 1

    @qd.kernel
    def ndarray(arr: NDArray[qd.i32, 1]):
        for arr in range(2):  # <E-shadow-ndarray>
            g[arr] = 1

    @qd.kernel
    def local():
        x = 1
        for x in range(2):  # <E-shadow-local>
            g[x] = 1

    args = {"param": (1,), "ndarray": (np.zeros(4, np.int32),), "local": ()}[which]
    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        {"param": param, "ndarray": ndarray, "local": local}[which](*args)
    name = {"param": "a", "ndarray": "arr", "local": "x"}[which]
    assert (f"Variable '{name}' is already declared in the outer scope and cannot be used as loop variable"
            in str(ei.value))
    check_location(ei.value, f"<E-shadow-{which}>", name)


def test_sibling_loops_reuse_a_loop_variable():
    g = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k():
        for i in range(2):
            g[i] += 1
        for i in range(4):
            g[i] += 10

    k()
    assert g.to_numpy().tolist() == [11, 11, 10, 10]


def test_annotation_without_value_is_rejected():
    g = qd.field(qd.i32, shape=1)

    @qd.kernel
    def k():
        x_a: qd.i32  # <E-ann-novalue>
        g[0] = 1

    with pytest.raises(qd.QuadrantsSyntaxError) as ei:
        k()
    assert 'Unsupported node "NoneType"' in str(ei.value)
    check_location(ei.value, "<E-ann-novalue>", "x_a")


# --- builtin calls that do not bind (the reference's QuadrantsTypeError and wording) ---


def test_builtin_argument_errors():
    @qd.kernel
    def missing() -> qd.f32:
        return qd.atan2(1.0)  # <E-bind-missing>

    @qd.kernel
    def too_many() -> qd.f32:
        return qd.sqrt(1.0, 2.0)  # <E-bind-many>

    @qd.kernel
    def unknown_keyword() -> qd.f32:
        return qd.exp(1.0, y=2)  # <E-bind-kw>

    @qd.kernel
    def twice() -> qd.f32:
        return qd.pow(2.0, base=3.0)  # <E-bind-twice>

    cases = [
        (missing, "missing", "qd.atan2",
         "TypeError when calling `atan2`: atan2() missing 1 required positional argument: 'x2'."),
        (too_many, "many", "qd.sqrt",
         "TypeError when calling `sqrt`: sqrt() takes 1 positional argument but 2 were given."),
        (unknown_keyword, "kw", "qd.exp",
         "TypeError when calling `exp`: exp() got an unexpected keyword argument 'y'."),
        (twice, "twice", "qd.pow",
         "TypeError when calling `pow`: pow() got multiple values for argument 'base'."),
    ]
    for kernel, suffix, token, message in cases:
        with pytest.raises(qd.QuadrantsTypeError) as ei:
            kernel()
        assert message in str(ei.value)
        check_location(ei.value, "<E-bind-" + suffix + ">", token)


def test_builtin_required_parameters_by_keyword():
    @qd.kernel
    def k(a: qd.f32, b: qd.f32) -> qd.f32:
        return qd.sqrt(x=a) + qd.atan2(x2=b, x1=a) + qd.pow(a, exponent=2.0) + qd.select(cond=a > b, x1=a, x2=b)

    a, b = (float(np.float32(v)) for v in np.random.default_rng().uniform(0.5, 4.0, 2))
    want = np.float32(np.sqrt(a)) + np.float32(np.arctan2(a, b)) + np.float32(a * a) + np.float32(max(a, b))
    assert abs(k(a, b) - want) <= 1e-5 * abs(want)
    # the same parameter names in Python scope, as the reference's
    assert qd.atan2(x1=1.0, x2=0.0) == np.arctan2(1.0, 0.0) and qd.pow(base=2, exponent=3) == 8
