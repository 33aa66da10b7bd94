"""Primitive types, cook_dtype, Python-scope value conversion, and the annotation objects of
qd.types (ndarray/NDArray, template) and the enums."""

import copy
import pickle

import numpy as np
import pytest

import quadrants as qd
from quadrants import _core, _types

NAMES = ["u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"]
LONG_NAMES = {
    "uint1": "u1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
}
NUMPY = {
    "u1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
}


@pytest.fixture(autouse=True)
def reset_after():
    yield
    qd.reset()


@pytest.mark.parametrize("name", NAMES)
def test_primitive_type(name):
    dtype = getattr(qd, name)
    assert isinstance(dtype, _types.DataType)
    assert dtype.name == name and str(dtype) == name and repr(dtype) == name
    assert dtype.to_string() == name
    assert dtype._qd_dtype == _core.dtype_ids()[name]
    assert dtype.np_dtype == np.dtype(NUMPY[name])
    assert getattr(qd.types, name) is dtype
    assert _types.dtype_from_id(dtype._qd_dtype) is dtype


def test_ids_are_distinct():
    assert len({getattr(qd, name)._qd_dtype for name in NAMES}) == len(NAMES)


@pytest.mark.parametrize("long, short", sorted(LONG_NAMES.items()))
def test_long_names(long, short):
    assert getattr(qd, long) is getattr(qd, short)


def test_properties():
    assert qd.f16.is_real and qd.f32.is_real and qd.f64.is_real
    assert not qd.i32.is_real and qd.i32.is_integral and qd.u1.is_integral
    assert qd.i8.is_signed and not qd.u8.is_signed and not qd.u1.is_signed
    assert [getattr(qd, n).bits for n in NAMES] == [1, 8, 16, 32, 64, 8, 16, 32, 64, 16, 32, 64]


def test_real_and_integer_types():
    assert _types.real_types == [qd.f16, qd.f32, qd.f64, float]
    assert set(_types.integer_types) == {
        qd.i8,
        qd.i16,
        qd.i32,
        qd.i64,
        qd.u1,
        qd.u8,
        qd.u16,
        qd.u32,
        qd.u64,
        int,
        bool,
    }


def test_calling_a_type_in_python_scope():
    with pytest.raises(
        qd.QuadrantsSyntaxError,
        match="Quadrants data types cannot be called outside Quadrants kernels",
    ):
        qd.f32(1.0)
    with pytest.raises(qd.QuadrantsSyntaxError):
        qd.i32()


def test_copies_and_pickles_are_the_same_object():
    for name in NAMES:
        dtype = getattr(qd, name)
        assert copy.copy(dtype) is dtype and copy.deepcopy(dtype) is dtype
        assert pickle.loads(pickle.dumps(dtype)) is dtype
    assert copy.deepcopy({"fp": qd.f64})["fp"] is qd.f64


def test_cook_dtype():
    for name in NAMES:
        dtype = getattr(qd, name)
        assert _types.cook_dtype(dtype) is dtype
        assert _types.cook_dtype(NUMPY[name]) is dtype
        assert _types.cook_dtype(np.dtype(NUMPY[name])) is dtype
        assert _types.from_numpy_dtype(NUMPY[name]) is dtype
        assert _types.to_numpy_type(dtype) == np.dtype(NUMPY[name])
    assert _types.cook_dtype(bool) is qd.u1
    assert _types.cook_dtype(int) is qd.i32 and _types.cook_dtype(float) is qd.f32
    qd.init(default_fp=qd.f64, default_ip=qd.i64)
    assert _types.cook_dtype(int) is qd.i64 and _types.cook_dtype(float) is qd.f64


@pytest.mark.parametrize(
    "bad", [None, "f32", "float32", complex, np.complex64, object, [qd.f32], np.dtype(">f4")]
)
def test_cook_dtype_rejects(bad):
    with pytest.raises(ValueError, match="Invalid data type"):
        _types.cook_dtype(bad)


def test_from_numpy_dtype_unknown():
    assert _types.from_numpy_dtype(np.complex128) is None
    assert _types.from_numpy_dtype(np.dtype(">i4")) is None


@pytest.mark.parametrize(
    "value, dtype, expected",
    [
        (-1.7, "i32", -1),
        (1.7, "i32", 1),
        (-0.5, "i8", 0),
        (300, "u8", 44),
        (-1, "u16", 65535),
        (2**31, "i32", -(2**31)),
        (2**64 + 5, "u64", 5),
        (-1, "u64", 2**64 - 1),
        (np.int64(-3), "i16", -3),
        (True, "i32", 1),
        (2, "u1", True),
        (0.0, "u1", False),
        (-0.25, "u1", True),
        (3, "f32", 3.0),
        (0.1, "f32", float(np.float32(0.1))),
        (0.1, "f16", float(np.float16(0.1))),
        (1e10, "f16", float("inf")),
        (2**1100, "f64", float("inf")),
        (np.float32(1.5), "f64", 1.5),
    ],
)
def test_to_dtype_value(value, dtype, expected):
    result = _types.to_dtype_value(value, getattr(qd, dtype))
    assert result.dtype == getattr(qd, dtype).np_dtype
    assert result.item() == expected


def test_to_dtype_value_rejects():
    with pytest.raises(TypeError):
        _types.to_dtype_value("1", qd.i32)
    with pytest.raises(TypeError):
        _types.to_dtype_value([1], qd.f32)
    with pytest.raises(ValueError):
        _types.to_dtype_value(float("nan"), qd.i32)
    with pytest.raises(ValueError):
        _types.to_dtype_value(float("inf"), qd.u8)


def test_template():
    assert qd.template is qd.Template
    assert qd.types.template is qd.Template
    assert qd.Template._qd_template is True
    assert qd.template()._qd_template is True
    assert isinstance(qd.template(), qd.Template)


def test_ndarray_annotations():
    assert qd.types.ndarray is qd.types.NDArray
    full = qd.types.NDArray[qd.f32, 2]
    assert isinstance(full, qd.types.ndarray)
    assert full._qd_ndarray_annotation is True
    assert full.dtype is qd.f32 and full.ndim == 2
    assert full.boundary == "unsafe" and full.needs_grad is None
    only_dtype = qd.types.NDArray[qd.i64]
    assert only_dtype.dtype is qd.i64 and only_dtype.ndim is None
    free = qd.types.ndarray()
    assert free.dtype is None and free.ndim is None
    keywords = qd.types.ndarray(dtype=qd.u8, ndim=0, needs_grad=False, boundary="clamp")
    assert keywords.dtype is qd.u8 and keywords.ndim == 0 and keywords.boundary == "clamp"
    assert qd.types.ndarray(np.float64, 1).dtype is qd.f64


def test_ndarray_annotation_python_types_resolve_at_use():
    annotation = qd.types.NDArray[float, 1]
    assert annotation.dtype is qd.f32
    qd.init(default_fp=qd.f64)
    assert annotation.dtype is qd.f64
    assert qd.types.NDArray[bool].dtype is qd.u1


def test_ndarray_annotation_errors():
    with pytest.raises(TypeError):
        qd.types.ndarray(dtype="f32")
    with pytest.raises(TypeError):
        qd.types.ndarray(ndim=-1)
    with pytest.raises(TypeError):
        qd.types.ndarray(ndim=1.0)
    with pytest.raises(ValueError):
        qd.types.ndarray(boundary="wrap")
    with pytest.raises(ValueError, match="deprecated"):
        qd.types.ndarray(field_dim=1)
    assert qd.types.ndarray(qd.f32, element_dim=1).element_ndim == 1  # size from each argument


def test_quant_types_not_supported_yet():
    assert qd.types.vector(3, qd.f32).n == 3
    assert qd.types.matrix(3, 2, qd.f32).m == 2
    with pytest.raises(NotImplementedError):
        qd.types.quant.int(bits=4)


def test_enums():
    assert {member.name for member in qd.Layout} == {"AOS", "SOA"}
    assert {member.name for member in qd.Backend} == {"FIELD", "NDARRAY"}
