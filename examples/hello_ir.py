"""A look inside the compiler core: QIR, the IR that kernels are compiled through.

This one is for people working on the compiler; to see the kernel language first, run
examples/saxpy.py (`make run`).

A @qd.kernel written in Python is lowered to QIR, optimised by a few passes and handed to a
code generator. QIR also has a textual form, so it can be written by hand: the library code
behind qd.simt and qd.algorithms ships as QIR *templates*, compiled for whatever data type a
kernel needs.

This example writes a saxpy kernel (y[i] = a * x[i] + y[i]) in QIR that calls a small template,
and runs the passes that make it ready for code generation:

    instantiate  makes a concrete copy of the template for the types it is called with
    inline       replaces every call with the body of the callee
    constfold    evaluates instructions whose operands are constants
    dce          removes instructions whose results are never used

Run it with `.venv/bin/python examples/hello_ir.py`. docs/ir.md describes the textual form.
"""

from quadrants._core import _testing

SOURCE = """\
# a * x + y for any floating-point type T, written once.
template @axpy<T: float>(%a: T, %x: T, %y: T) -> T {
  %m = mul %a, %x : T
  %s = add %m, %y : T
  ret %s
}

# y[i] = a * x[i] + y[i] for every i, in parallel.
kernel @saxpy(%a: f32, %x: ndarray<f32, 1>, %y: ndarray<f32, 1>) {
  task range_for "saxpy" block_dim 128 {
    %zero = const 0 : i32
    %n = shape %x, 0 : i32
    parallel_for %i = %zero to %n {
      %px = elem_ptr %x, %i : ptr<f32, global>
      %py = elem_ptr %y, %i : ptr<f32, global>
      %vx = load %px : f32
      %vy = load %py : f32
      %two = const 2 : i32
      %four = mul %two, %two : i32
      %s = call @axpy<f32>(%a, %vx, %vy) : f32
      store %py, %s
    }
  }
}
"""

PASSES = "instantiate,inline,constfold,dce"


def show(title, text):
    print(f"===== {title} =====")
    print(text)


def main():
    # The parser checks the text; the verifier checks types and structure. Both raise
    # qd.QuadrantsSyntaxError or another compilation error naming the line on a mistake.
    _testing.verify(SOURCE, filename="hello.qir")
    show("before", _testing.parse_print(SOURCE, filename="hello.qir"))
    show(f"after {PASSES}", _testing.run_passes(SOURCE, PASSES, filename="hello.qir"))


if __name__ == "__main__":
    main()
