"""The exception classes: names, hierarchy and module as in the reference, and how the core's
errors reach Python (message with file:line:col, location attributes)."""

import builtins
import sys

import pytest

import quadrants as qd
from quadrants import _core
from quadrants._core import _testing

# class name -> (its first base, its other bases), as spec E lists them.
HIERARCHY = {
    "QuadrantsCompilationError": ("Exception", []),
    "QuadrantsSyntaxError": ("QuadrantsCompilationError", [SyntaxError]),
    "QuadrantsNameError": ("QuadrantsCompilationError", [NameError]),
    "QuadrantsIndexError": ("QuadrantsCompilationError", [IndexError]),
    "QuadrantsTypeError": ("QuadrantsCompilationError", [TypeError]),
    "QuadrantsRuntimeError": ("RuntimeError", []),
    "QuadrantsAssertionError": ("QuadrantsRuntimeError", [AssertionError]),
    "QuadrantsRuntimeTypeError": ("QuadrantsRuntimeError", [TypeError]),
}


@pytest.mark.parametrize("name", sorted(HIERARCHY))
def test_hierarchy(name):
    cls = getattr(_core, name)
    first, others = HIERARCHY[name]
    first_cls = getattr(_core, first, None) or getattr(builtins, first)
    assert cls.__name__ == name
    assert cls.__module__ == "quadrants"
    assert cls.__bases__ == (first_cls, *others)
    assert issubclass(cls, Exception)


def test_compilation_errors_are_not_runtime_errors():
    for name in ("QuadrantsSyntaxError", "QuadrantsNameError", "QuadrantsTypeError"):
        assert not issubclass(getattr(_core, name), RuntimeError)
    assert not issubclass(qd.QuadrantsRuntimeError, qd.QuadrantsCompilationError)
    assert not issubclass(qd.QuadrantsCompilationError, qd.QuadrantsRuntimeError)


def test_exported_on_qd():
    for name in HIERARCHY:
        if name == "QuadrantsIndexError":
            assert not hasattr(qd, name)
        else:
            assert getattr(qd, name) is getattr(_core, name)


def test_testing_module_registered():
    assert sys.modules["quadrants._core._testing"] is _testing
    for name in ("parse_print", "verify", "run_passes", "pass_names"):
        assert callable(getattr(_testing, name))


def test_syntax_error_location():
    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        _testing.parse_print("kernel @k( {\n")
    err = info.value
    assert isinstance(err, qd.QuadrantsCompilationError)
    assert isinstance(err, SyntaxError)
    assert "<qir>:1:" in str(err)
    assert err.lineno == 1
    assert err.filename == "<qir>"
    assert isinstance(err.col, int) and err.col >= 1


def test_syntax_error_line_and_filename():
    text = "kernel @k() {\n  task serial {\n    %x = nonsense_op : i32\n  }\n}\n"
    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        _testing.parse_print(text, filename="dir/case.qir")
    assert str(info.value).startswith("dir/case.qir:3:")
    assert info.value.lineno == 3


def test_bad_arguments_are_type_errors():
    with pytest.raises(TypeError):
        _testing.parse_print(b"kernel")
    with pytest.raises(TypeError):
        _testing.parse_print()
    with pytest.raises(TypeError):
        _testing.parse_print("", filename="a", bogus=1)
    with pytest.raises(TypeError):
        _testing.run_passes("")
    with pytest.raises(ValueError):
        _testing.run_passes("", "dce\0")


def test_unknown_pass():
    with pytest.raises(qd.QuadrantsCompilationError, match="no_such_pass"):
        _testing.run_passes("", "no_such_pass")


def test_pass_names():
    names = _testing.pass_names()
    assert all(isinstance(name, str) for name in names)
    assert {"instantiate", "inline", "constfold", "dce"} <= set(names)
