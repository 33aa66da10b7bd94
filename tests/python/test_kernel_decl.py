"""@qd.kernel / @qd.func / @qd.pyfunc / @qd.data_oriented: decoration-time checks, the captured
AST, argument checking and conversion, the specialisation cache, the exact interface with
quadrants._core.compile_kernel, and how errors surface at the call."""

import ast
import dataclasses
import functools
import inspect
import textwrap

import numpy as np
import pytest
from qd_helpers import requires_compiler

import quadrants as qd
from quadrants import _core, _kernel


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


class FakeCore:
    """Stands in for quadrants._core.compile_kernel (and finds nothing in the offline cache):
    records compilations and launches."""

    def __init__(self, result=None):
        self.compiles = []
        self.launches = []
        self.result = result

    def compile_kernel(self, pyfunc, funcdef, filename, arg_descs, name, options, source_key=None):
        self.compiles.append(
            dict(
                source_key=source_key,
                pyfunc=pyfunc,
                funcdef=funcdef,
                filename=filename,
                arg_descs=arg_descs,
                name=name,
                options=options,
            )
        )

        def compiled(*launch_args):
            self.launches.append(launch_args)
            return self.result

        return compiled


@pytest.fixture
def fake(monkeypatch):
    core = FakeCore()
    monkeypatch.setattr(_core, "compile_kernel", core.compile_kernel)
    monkeypatch.setattr(_core, "load_cached_kernel", lambda *args: None)
    return core


# --- decoration-time checks ---


def test_parameters_must_be_annotated():
    with pytest.raises(qd.QuadrantsSyntaxError, match="must be type annotated"):

        @qd.kernel
        def k(x):
            pass


def test_no_defaults():
    with pytest.raises(qd.QuadrantsSyntaxError, match="do not support default values"):

        @qd.kernel
        def k(x: qd.i32 = 1):
            pass


def test_no_var_positional():
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"\*args"):

        @qd.kernel
        def k(*xs: qd.i32):
            pass


def test_no_var_keyword():
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"\*\*kwargs"):

        @qd.kernel
        def k(**kw: qd.i32):
            pass


def test_no_keyword_only():
    with pytest.raises(qd.QuadrantsSyntaxError, match="keyword parameters"):

        @qd.kernel
        def k(*, x: qd.i32):
            pass


def test_no_positional_only():
    with pytest.raises(qd.QuadrantsSyntaxError, match='"positional or keyword"'):

        @qd.kernel
        def k(x: qd.i32, /):
            pass


def _line_with(marker):
    with open(__file__) as f:
        return [n for n, text in enumerate(f, 1) if text.rstrip().endswith(marker)][0]


def test_signature_errors_name_the_def_line():
    with pytest.raises(qd.QuadrantsSyntaxError) as ei:

        @qd.kernel
        def k_located(x: 5):  # <def-kernel>
            pass

    text = str(ei.value)
    assert f"{__file__}:{_line_with('# <def-kernel>')}:9" in text, text
    assert "def k_located(x: 5):  # <def-kernel>" in text, text
    assert "Invalid type annotation (argument 0)" in text, text
    with pytest.raises(qd.QuadrantsSyntaxError) as ei:

        @qd.func
        def f_located(*xs):  # <def-func>
            pass

    assert f"{__file__}:{_line_with('# <def-func>')}:" in str(ei.value), str(ei.value)


@pytest.mark.parametrize("annotation", [list, "not a type", 3, np.ndarray, qd.field])
def test_invalid_annotation(annotation):
    def k(x):
        pass

    k.__annotations__ = {"x": annotation}
    with pytest.raises(
        qd.QuadrantsSyntaxError, match=r"Invalid type annotation (\(argument 0\)|in `)"
    ):
        qd.kernel(k)


def test_string_annotations_are_evaluated():
    namespace = {"qd": qd}
    exec(
        textwrap.dedent("""
        from __future__ import annotations
        def k(x: qd.i32, a: qd.types.NDArray[qd.f32, 1], t: qd.template()):
            pass
        def bad(x: undefined_name):
            pass
    """),
        namespace,
    )
    kernel = qd.kernel(namespace["k"])
    assert [p.kind for p in kernel._params] == ["scalar", "ndarray", "template"]
    with pytest.raises(qd.QuadrantsSyntaxError, match="Invalid type annotation in `bad`: name .undefined_name. is not defined"):
        qd.kernel(namespace["bad"])


def _kernels_with_local_annotations():
    vec3 = qd.types.vector(3, qd.f32)
    mat2 = qd.types.matrix(2, 2, qd.i32)
    arr = qd.types.ndarray(qd.f32, ndim=1)
    real = qd.f32
    pair = qd.types.struct(a=qd.i32, b=qd.f32)

    @qd.dataclass
    class Particle:
        x: qd.f32
        n: qd.i32

    @qd.kernel
    def scale(v: vec3, s: real) -> vec3:
        return v * s

    @qd.kernel
    def mixed(a: arr, m: mat2, p: pair) -> real:
        return a[0] + m[1, 1] + p.a + p.b

    @qd.kernel
    def step(p: Particle) -> Particle:
        q = p
        q.x = p.x * 2
        q.n = p.n + 1
        return q

    return scale, mixed, step, Particle, pair


@requires_compiler
def test_annotations_name_locals_of_the_enclosing_function():
    scale, mixed, step, Particle, pair = _kernels_with_local_annotations()
    rng = np.random.default_rng()
    v = rng.standard_normal(3).astype(np.float32)
    s = np.float32(rng.standard_normal())
    got = scale(qd.Vector(v.tolist()), float(s))
    assert type(got) is qd.Vector and got.to_numpy().dtype == np.float32
    np.testing.assert_allclose(got.to_numpy(), v * s, rtol=1e-6)
    a = rng.standard_normal(2).astype(np.float32)
    total = mixed(a, qd.Matrix([[1, 2], [3, 4]]), pair(a=5, b=0.5))
    assert total == pytest.approx(float(a[0]) + 4 + 5 + 0.5, rel=1e-6)
    p = step(Particle(x=1.5, n=2))
    assert (p.x, p.n) == (3.0, 3)


def test_checkpoints_require_graph():
    with pytest.raises(qd.QuadrantsSyntaxError, match="graph=True"):
        qd.kernel(checkpoints=True)
    assert qd.kernel(graph=True, checkpoints=True)(lambda_free).checkpoints


def lambda_free():
    pass


def test_kernel_must_be_outermost():
    def other(function):
        @functools.wraps(function)
        def wrapper(*args):
            return function(*args)

        return wrapper

    with pytest.raises(
        qd.QuadrantsSyntaxError, match="Cant put kernel in front of other annotations"
    ):

        @qd.kernel
        @other
        def k():
            pass

    with pytest.raises(
        qd.QuadrantsSyntaxError, match="Cant put kernel in front of other annotations"
    ):

        @qd.kernel
        @qd.func
        def k2():
            pass


def test_pure_is_deprecated():
    with pytest.warns(DeprecationWarning, match="fastcache"):
        k = qd.kernel(pure=True)(lambda_free)
    assert k.fastcache is True


@dataclasses.dataclass(frozen=True)
class Pair:
    a: int
    b: float


def test_allowed_annotations():
    @qd.kernel
    def k(
        a: qd.i8,
        b: qd.u64,
        c: qd.f16,
        d: int,
        e: float,
        f: bool,
        g: qd.template(),
        h: qd.Template,
        i: qd.types.NDArray[qd.f32, 2],
        j: qd.types.NDArray[qd.i32],
        m: qd.types.ndarray(),
        n: qd.types.NDArray,
        o: Pair,
    ):
        pass

    kinds = [p.kind for p in k._params]
    assert kinds == ["scalar"] * 6 + ["template"] * 2 + ["ndarray"] * 4 + ["dataclass"]
    bare = k._params[11].annotation
    assert isinstance(bare, qd.types.NDArray) and bare.dtype is None and bare.ndim is None


def test_kernel_object():
    @qd.kernel
    def documented(x: qd.i32):
        """Adds nothing."""

    assert documented._qd_kernel is True
    assert documented.__name__ == "documented" and documented.__doc__ == "Adds nothing."
    assert "documented" in repr(documented)


def test_kernel_captures_source_at_decoration():
    @qd.kernel
    def k():
        pass

    funcdef = k._parsed()
    assert isinstance(funcdef, ast.FunctionDef) and funcdef.name == "k"
    assert funcdef.decorator_list == []
    assert funcdef.filename == __file__
    lines, first = inspect.getsourcelines(k.__wrapped__)
    assert funcdef.lineno == first + 1  # the line after the decorator
    assert funcdef.col_offset == lines[1].index("def")
    assert k._parsed() is funcdef


# --- qd.func / qd.pyfunc / qd.real_func ---


def test_func_signatures():
    @qd.func
    def f(a, b: qd.f32, c=3, d: qd.template() = None):
        return a

    assert f._qd_func_params == (
        ("a", None, None, False, None),
        ("b", "scalar", qd.f32, False, None),
        ("c", None, None, True, 3),
        ("d", "template", f._qd_func_params[3][2], True, None),
    )
    assert f._qd_requires_top_level is False and f._qd_real_func is False and f._qd_pyfunc is False
    assert qd.func(requires_top_level=True)(lambda_free)._qd_requires_top_level is True
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"\*args"):
        qd.func(lambda *a: None)
    with pytest.raises(qd.QuadrantsSyntaxError, match="keyword parameters"):

        @qd.func
        def g(*, a):
            pass

    with pytest.raises(qd.QuadrantsSyntaxError, match="must be type annotated"):

        @qd.real_func
        def h(a):
            pass


def test_func_in_python_scope():
    @qd.func
    def f(x):
        return x + 1

    with pytest.raises(
        qd.QuadrantsSyntaxError, match="qd.func can only be called from kernel scope"
    ):
        f(1)

    @qd.pyfunc
    def g(x):
        return x + 1

    assert g(1) == 2 and g._qd_pyfunc is True


def test_func_ast():
    @qd.func
    def helper(x):
        text = """
a multi-line string
less indented than the function"""
        return x

    assert helper._qd_func is helper.__wrapped__
    funcdef = helper._qd_func_ast
    assert isinstance(funcdef, ast.FunctionDef) and funcdef.name == "helper"
    assert funcdef.filename == __file__ == helper._qd_filename
    lines, first = inspect.getsourcelines(helper._qd_func)
    assert funcdef.lineno == first + 1
    assert funcdef.col_offset == lines[1].index("def")
    ret = funcdef.body[-1]
    assert isinstance(ret, ast.Return)
    source_line = lines[ret.lineno - first]
    assert source_line[ret.col_offset :].startswith("return x")
    assert source_line[ret.value.col_offset : ret.value.end_col_offset] == "x"
    assert helper._qd_func_ast is funcdef


def test_data_oriented_methods():
    @qd.data_oriented
    class Model:
        @qd.kernel
        def step(self, dt: qd.f32):
            pass

        @qd.func
        def helper(self, x):
            return x

    model = Model()
    assert Model._qd_data_oriented is True and Model._data_oriented is True
    bound = model.step
    assert bound._qd_kernel is True and bound.__self__ is model and Model.step is bound.__func__
    helper = model.helper
    assert helper._qd_bound_self is model and helper._qd_func is Model.helper._qd_func
    assert isinstance(helper._qd_func_ast, ast.FunctionDef)
    assert Model.step._params[0].kind == "template"


def test_kernel_method_needs_data_oriented():
    class Plain:
        @qd.kernel
        def step(self, n: qd.i32):
            pass

    with pytest.raises(
        qd.QuadrantsSyntaxError, match="Please decorate class Plain with @qd.data_oriented"
    ):
        Plain().step(1)


# --- argument checking (raised before anything is compiled) ---


@qd.kernel
def scalars(a: qd.i32, b: qd.f32, c: qd.u8, d: bool):
    pass


@qd.kernel
def arrays(a: qd.types.NDArray[qd.f32, 2], b: qd.types.ndarray()):
    pass


@qd.kernel
def templated(t: qd.template()):
    pass


def test_integer_parameter_rejects_float():
    with pytest.raises(qd.QuadrantsRuntimeTypeError) as info:
        scalars(1.5, 1.0, 1, True)
    assert str(info.value) == (
        "\nArgument (0,) (type=<class 'float'>) cannot be converted into required type i32"
    )
    assert isinstance(info.value, TypeError) and isinstance(info.value, RuntimeError)
    with pytest.raises(qd.QuadrantsRuntimeTypeError, match=r"Argument \(2,\) .*numpy.float32.* u8"):
        scalars(1, 1.0, np.float32(1), True)
    with pytest.raises(
        qd.QuadrantsRuntimeTypeError, match=r"Argument \(1,\) \(type=<class 'str'>\)"
    ):
        scalars(1, "1.0", 1, True)
    with pytest.raises(qd.QuadrantsRuntimeTypeError, match=r"Argument \(0,\)"):
        scalars(qd.ndarray(qd.i32, 1), 1.0, 1, True)


def test_array_parameter_checks():
    good = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="required array has dtype=f32, array with dtype=f64"):
        arrays(np.zeros((2, 3)), good)
    with pytest.raises(ValueError, match="required array has ndim=2, array with 1 dimensions"):
        arrays(np.zeros(3, np.float32), good)
    with pytest.raises(TypeError, match="Expect element type f32 for argument a, but get i32"):
        arrays(qd.ndarray(qd.i32, (2, 3)), good)
    with pytest.raises(ValueError, match="required ndim=2, but 3d ndarray"):
        arrays(qd.ndarray(qd.f32, (2, 3, 4)), good)
    with pytest.raises(ValueError, match="Non contiguous numpy arrays are not supported"):
        arrays(np.zeros((4, 6), np.float32)[::2, ::2], good)
    with pytest.raises(ValueError, match="not supported"):
        arrays(good, np.zeros(3, np.complex64))
    with pytest.raises(qd.QuadrantsRuntimeTypeError, match="argument|Argument"):
        arrays([[1.0]], good)
    with pytest.raises(qd.QuadrantsRuntimeTypeError):
        arrays(qd.field(qd.f32, shape=(2, 3)), good)


def test_ndarray_to_template_parameter():
    with pytest.raises(
        qd.QuadrantsRuntimeTypeError, match="annotate your kernel using `qd.types.ndarray"
    ):
        templated(qd.ndarray(qd.f32, 2))
    with pytest.raises(qd.QuadrantsRuntimeTypeError):
        templated((1, qd.ndarray(qd.f32, 2)))


def test_argument_binding_errors():
    with pytest.raises(qd.QuadrantsSyntaxError, match="Too many arguments"):
        scalars(1, 1.0, 1, True, 5)
    with pytest.raises(qd.QuadrantsSyntaxError, match="Missing argument 'd'"):
        scalars(1, 1.0, 1)
    with pytest.raises(qd.QuadrantsSyntaxError, match="Unexpected argument 'e'"):
        scalars(1, 1.0, 1, True, e=3)
    with pytest.raises(qd.QuadrantsSyntaxError, match="Multiple values for argument 'a'"):
        scalars(1, 1.0, 1, True, a=3)


def test_dataclass_parameter_type_checked():
    @qd.kernel
    def k(p: Pair):
        pass

    with pytest.raises(qd.QuadrantsRuntimeTypeError, match="expects a Pair"):
        k((1, 2.0))


def test_dead_ndarray_argument():
    a = qd.ndarray(qd.f32, (2, 3))
    qd.init()
    with pytest.raises(qd.QuadrantsRuntimeError, match="qd.reset"):
        arrays(a, a)


def test_too_many_parameters():
    names = [f"a{i}" for i in range(_kernel.MAX_ARG_NUM + 1)]
    namespace = {"qd": qd}
    exec(f"def many({', '.join(n + ': qd.i32' for n in names)}):\n    pass\n", namespace)
    many = qd.kernel(namespace["many"])
    with pytest.raises(qd.QuadrantsRuntimeError, match="Do not exceed 512"):
        many(*range(len(names)))


# --- the interface with compile_kernel (a fake core) ---


def test_compile_interface(fake):
    @qd.kernel
    def k(
        a: qd.i32, b: qd.f64, c: qd.u8, d: bool, e: float, arr: qd.types.ndarray(), t: qd.template()
    ):
        pass

    field = qd.field(qd.f32, shape=3)
    nd = qd.ndarray(qd.i16, (2, 2))
    assert k(2**31 + 5, 3, 300, 2, True, nd, field) is None
    (compile_call,) = fake.compiles
    assert compile_call["pyfunc"] is k.__wrapped__
    assert (
        isinstance(compile_call["funcdef"], ast.FunctionDef) and compile_call["funcdef"].name == "k"
    )
    assert compile_call["filename"] == __file__
    assert compile_call["name"] == "k"
    assert compile_call["arg_descs"] == [
        ("scalar", qd.i32._qd_dtype),
        ("scalar", qd.f64._qd_dtype),
        ("scalar", qd.u8._qd_dtype),
        ("scalar", qd.u1._qd_dtype),
        ("scalar", qd.f32._qd_dtype),
        ("ndarray", qd.i16._qd_dtype, 2, ()),
        ("template", field),
    ]
    assert compile_call["options"]["default_fp"] == qd.f32._qd_dtype
    (launch,) = fake.launches
    assert launch[:5] == (-(2**31) + 5, 3.0, 44, True, 1.0)
    assert [type(v) for v in launch[:5]] == [int, float, int, bool, float]
    assert launch[5] is nd._qd_array and launch[6] is None


def test_compiled_once_per_key(fake):
    @qd.kernel
    def k(arr: qd.types.ndarray(), t: qd.template()):
        pass

    a = np.zeros(4, np.float32)
    k(a, 1)
    k(np.ones(9, np.float32), 1)  # a different shape does not recompile
    k(qd.ndarray(qd.f32, 2), 1)
    assert len(fake.compiles) == 1
    k(np.zeros((2, 2), np.float32), 1)  # ndim
    k(np.zeros(4, np.int32), 1)  # dtype
    assert len(fake.compiles) == 3
    k(a, 2)  # template value
    k(a, True)  # bool is not int
    k(a, 1.0)  # float is not int
    k(a, -0.0)
    k(a, 0.0)
    assert len(fake.compiles) == 8
    k(a, 2)
    k(a, 0.0)
    assert len(fake.compiles) == 8
    assert len(fake.launches) == 12


def test_templates_by_identity_and_value(fake):
    @qd.kernel
    def k(t: qd.template()):
        pass

    x, y = qd.field(qd.f32, shape=2), qd.field(qd.f32, shape=2)
    k(x)
    k(x)
    k(y)
    assert len(fake.compiles) == 2
    k((1, x))
    k((1, x))
    k((2, x))
    assert len(fake.compiles) == 4
    k(qd.f32)
    k(qd.f32)
    k(qd.i32)
    assert len(fake.compiles) == 6
    k(Pair(1, 2.0))
    k(Pair(1, 2.0))  # dataclasses: member by member
    k(Pair(1, 3.0))
    assert len(fake.compiles) == 8
    obj = object()
    k(obj)
    k(obj)
    assert len(fake.compiles) == 9
    assert any(pinned is obj for pinned in k._compiled[(("t", ("id", id(obj))),)][1])


def test_templated_floats_can_be_refused(fake):
    qd.init(raise_on_templated_floats=True)
    with pytest.raises(ValueError, match="Floats not allowed"):
        templated(1.5)


def test_keyword_arguments_and_stream(fake):
    @qd.kernel
    def k(a: qd.i32, b: qd.f32):
        pass

    k(b=2.0, a=1)
    k(1, b=2.0, qd_stream=object())
    k(1, 2.0, qd_stream=None)
    assert fake.launches == [(1, 2.0)] * 3


def test_data_oriented_self_is_a_template(fake):
    @qd.data_oriented
    class Model:
        def __init__(self):
            self.x = qd.field(qd.f32, shape=4)

        @qd.kernel
        def step(self, dt: qd.f32):
            pass

    first, second = Model(), Model()
    first.step(0.5)
    first.step(0.25)
    second.step(0.5)
    assert len(fake.compiles) == 2
    assert fake.compiles[0]["arg_descs"][0] == ("template", first)
    assert fake.launches[0] == (None, 0.5)


def test_reset_clears_the_cache(fake):
    @qd.kernel
    def k():
        pass

    k()
    k()
    qd.init()
    k()
    assert len(fake.compiles) == 2


def test_fortran_arrays_copied_in_and_back(monkeypatch):
    core = FakeCore()

    def compile_kernel(*args):
        compiled = core.compile_kernel(*args)

        def run(array):
            assert array.flags.c_contiguous
            array[...] = 7
            return compiled(array)

        return run

    monkeypatch.setattr(_core, "compile_kernel", compile_kernel)

    @qd.kernel
    def k(a: qd.types.ndarray()):
        pass

    fortran = np.zeros((3, 4), np.float32, order="F")
    k(fortran)
    np.testing.assert_array_equal(fortran, np.full((3, 4), 7, np.float32))


def test_results_are_passed_through(monkeypatch):
    core = FakeCore(result=(1, 2.5))
    monkeypatch.setattr(_core, "compile_kernel", core.compile_kernel)

    @qd.kernel
    def k() -> tuple[qd.i32, qd.f32]:
        pass

    assert k() == (1, 2.5)
    assert k.return_types == (qd.i32, qd.f32)


def test_compile_errors_are_restyled(monkeypatch):
    target = inspect.getsourcelines(test_compile_errors_are_restyled)[1] + 1

    def failing(pyfunc, funcdef, filename, arg_descs, name, options, source_key=None):
        error = qd.QuadrantsTypeError(f"{filename}:{target}:5: something is wrong")
        error.filename, error.lineno, error.col = filename, target, 5
        raise error

    monkeypatch.setattr(_core, "compile_kernel", failing)

    @qd.kernel
    def k():
        pass

    with pytest.raises(qd.QuadrantsTypeError) as info:
        k()
    text = str(info.value)
    source = inspect.getsourcelines(test_compile_errors_are_restyled)[0][1].rstrip("\n")
    assert text == f"\n{__file__}:{target}:5\n{source}\n    ^\nsomething is wrong"
    assert info.value.lineno == target and info.value.col == 5
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_full_traceback_keeps_the_original(monkeypatch):
    def failing(*args):
        raise qd.QuadrantsSyntaxError("plain message")

    monkeypatch.setattr(_core, "compile_kernel", failing)
    qd.init(print_full_traceback=True)

    @qd.kernel
    def k():
        pass

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        k()
    assert str(info.value) == "plain message"


def test_other_exceptions_pass_through(monkeypatch):
    def failing(*args):
        raise KeyError("internal")

    monkeypatch.setattr(_core, "compile_kernel", failing)

    @qd.kernel
    def k():
        pass

    with pytest.raises(KeyError, match="internal"):
        k()


# --- with the real compiler ---


@requires_compiler
def test_scalar_arguments_reach_the_kernel():
    @qd.kernel
    def echo_i32(x: qd.i32) -> qd.i32:
        return x

    @qd.kernel
    def echo_u8(x: qd.u8) -> qd.u8:
        return x

    @qd.kernel
    def echo_f32(x: qd.f32) -> qd.f32:
        return x

    @qd.kernel
    def echo_f64(x: float) -> float:
        return x

    assert echo_i32(-5) == -5 and echo_i32(2**31) == -(2**31) and echo_i32(True) == 1
    assert echo_i32(np.int64(7)) == 7
    assert echo_u8(300) == 44
    assert echo_f32(0.1) == float(np.float32(0.1)) and echo_f32(3) == 3.0
    qd.init(default_fp=qd.f64)
    assert echo_f64(0.1) == 0.1


@requires_compiler
def test_real_compile_error_points_at_the_line():
    @qd.kernel
    def broken():
        y = undefined_name + 1  # noqa: F821

    with pytest.raises(qd.QuadrantsNameError) as info:
        broken()
    text = str(info.value)
    assert text.startswith("\n" + __file__ + ":")
    lines = text.split("\n")
    assert lines[2].strip() == "y = undefined_name + 1  # noqa: F821"
    assert lines[3].index("^") == lines[2].index("undefined_name")
    assert "undefined_name" in lines[-1]


@requires_compiler
def test_real_template_specialisation():
    x = qd.field(qd.i32, shape=8)

    @qd.kernel
    def fill(f: qd.template(), value: qd.template()):
        for i in range(8):
            f[i] = value

    fill(x, 3)
    np.testing.assert_array_equal(x.to_numpy(), np.full(8, 3))
    fill(x, 5)
    np.testing.assert_array_equal(x.to_numpy(), np.full(8, 5))
    assert len(fill._compiled) == 2


@requires_compiler
def test_real_data_oriented():
    @qd.data_oriented
    class Counter:
        def __init__(self, n):
            self.n = n
            self.values = qd.field(qd.i32, shape=n)

        @qd.kernel
        def bump(self, by: qd.i32):
            for i in range(self.n):
                self.values[i] += by + i

    counter = Counter(5)
    counter.bump(2)
    counter.bump(1)
    np.testing.assert_array_equal(counter.values.to_numpy(), np.arange(5) * 2 + 3)


def test_ndarray_parameter_given_a_non_array():
    @qd.kernel
    def k(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
        return x[0]

    n = int(np.random.default_rng().integers(1, 100))
    with pytest.raises(qd.QuadrantsRuntimeTypeError, match=f"Invalid type for argument x, got {n}$"):
        k(n)
    f = qd.field(qd.f32, 3)
    with pytest.raises(qd.QuadrantsRuntimeTypeError) as info:
        k(f)
    assert str(info.value).strip().startswith("Argument NdarrayType(dtype=f32, ndim=1")
    assert str(info.value).endswith("cannot be converted into required type [0. 0. 0.]")
