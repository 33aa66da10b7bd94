"""What the Vulkan backend cannot express fails at code generation with QuadrantsSyntaxError,
naming the construct or the device feature it lacks."""

import pytest

import quadrants as qd
from quadrants._core import _testing

F64 = """
kernel @k(%x: ndarray<f64, 1>) {
  task serial {
    %z = const 0 : i32
    %p = elem_ptr %x, %z : ptr<f64, global>
    %v = load %p : f64
    %s = sin %v : f64
    store %p, %s
  }
}
"""

ATOMIC64 = """
field @c : i64 []
kernel @k(%v: i64) {
  task range_for {
    %z = const 0 : i32
    %n = const 64 : i32
    parallel_for %i = %z to %n {
      %p = field_ptr @c : ptr<i64, global>
      %o = atomic_add %p, %v : i64
    }
  }
}
"""

INT8 = """
kernel @k(%x: ndarray<i8, 1>) {
  task serial {
    %z = const 0 : i32
    %p = elem_ptr %x, %z : ptr<i8, global>
    %v = load %p : i8
    %w = add %v, %v : i8
    store %p, %w
  }
}
"""

BF16 = """
kernel @k(%x: ndarray<bf16, 1>) {
  task serial {
    %z = const 0 : i32
    %p = elem_ptr %x, %z : ptr<bf16, global>
    %v = load %p : bf16
    store %p, %v
  }
}
"""

PRINT = """
kernel @k(%a: i32) {
  task serial {
    print "a = %d\\n", %a
  }
}
"""

RECURSION = """
func @f(%n: i32) -> i32 {
  %r = call @f(%n) : i32
  ret %r
}
kernel @k(%a: i32) {
  task serial {
    %r = call @f(%a) : i32
  }
}
"""

SHARED_NARROW = """
kernel @k() {
  task range_for block_dim 32 {
    %z = const 0 : i32
    %n = const 64 : i32
    parallel_for %i = %z to %n {
      %s = shared_alloc : ptr<i16, shared>
      %one = const 1 : i16
      %o = atomic_add %s, %one : i16
    }
  }
}
"""


@pytest.mark.parametrize(
    "text, options, message",
    [
        (F64, {"float64": False}, "f64 is not supported on the Vulkan backend: the device lacks "
                                  "64-bit floats (shaderFloat64)"),
        (ATOMIC64, {"atomic_int64": False}, "the device lacks 64-bit atomics"),
        (INT8, {"int8": False}, "8-bit integers (shaderInt8)"),
        (BF16, None, "bf16 is not supported on the Vulkan backend"),
        (RECURSION, None, "the recursive function @f is not supported on the Vulkan backend"),
        (SHARED_NARROW, None, "`atomic_add` on i16 in shared memory is not supported"),
    ],
    ids=["f64", "atomic64", "int8", "bf16", "recursion", "shared_narrow"],
)
def test_unsupported(text, options, message):
    with pytest.raises(qd.QuadrantsSyntaxError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _testing.qir_to_glsl(text, "k", options)


def test_print_records_its_format_and_value_kinds():
    result = _testing.qir_to_glsl(PRINT, "k")
    source = result["tasks"][0]["source"]
    assert "atomicAdd" in source and "qd_print" in source


def test_the_same_kernels_compile_on_devices_with_the_features():
    for text in (F64, ATOMIC64, INT8):
        result = _testing.qir_to_glsl(text, "k")
        assert len(result["tasks"]) == 1
