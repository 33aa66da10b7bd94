"""Speed of the IR parser, printer and verifier on a large generated module.

Generates a module of many kernels and funcs (about 50 lines each), then times
parse+print and parse+verify through quadrants._core._testing, reporting the median of 20 runs.

    python benchmarks/ir_parse_bench.py [--funcs N] [--runs R] [--json PATH]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from quadrants._core import _testing  # noqa: E402

KERNEL = """\
kernel @k{n}(%a: f32, %x: ndarray<f32, 1>, %y: ndarray<f32, 2>) {{
  task range_for "k{n}" block_dim 128 {{
    %zero = const 0 : i32
    %n = shape %x, 0 : i32                              @gen.py:{n}:5
    parallel_for %i = %zero to %n {{                     @gen.py:{n}:9
      %px = elem_ptr %x, %i : ptr<f32, global>
      %py = elem_ptr %y, %i, %zero : ptr<f32, global>
      %vx = load %px : f32
      %vy = load %py : f32
      %m = mul %a, %vx : f32
      %s = add %m, %vy : f32
      %c = lt %s, %a : u1
      if %c {{
        %t = call @f{n}(%s, %a) : f32
        store %py, %t
      }} else {{
        store %py, %s                                   @gen.py:{n}:13
      }}
    }}
  }}
  task serial "tail{n}" {{
    %one = const 1 : i32
    %ten = const 10 : i32
    %slot = alloca : ptr<i32, local>
    store %slot, %one
    for %j = %one to %ten {{
      %v = load %slot : i32
      %w = add %v, %j : i32
      store %slot, %w
    }}
  }}
}}

func @f{n}(%u: f32, %v: f32) -> f32 {{
  %p = mul %u, %v : f32
  %q = sub %p, %u : f32
  %r = max %q, %v : f32
  %s = sqrt %r : f32
  ret %s
}}

"""


def generate(count):
    # Lines are numbered from 1 (line 0 means "unknown" and is not printed); the blank line
    # after the last function is dropped, as the printer does.
    return "".join(KERNEL.format(n=n) for n in range(1, count + 1))[:-1]


def median_ms(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--funcs", type=int, default=400, help="kernel/func pairs to generate")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    text = generate(args.funcs)
    lines = text.count("\n")
    printed = _testing.parse_print(text, filename="gen.qir")
    if printed != text:
        sys.exit("error: the generated module does not round-trip; fix the generator")

    rows = {
        "parse+print": median_ms(lambda: _testing.parse_print(text), args.runs),
        "parse+verify": median_ms(lambda: _testing.verify(text), args.runs),
    }
    print(f"module: {lines} lines, {len(text) / 1e6:.2f} MB; median of {args.runs} runs")
    print(f"{'step':<14} {'ms':>9} {'lines/ms':>10}")
    for name, ms in rows.items():
        print(f"{name:<14} {ms:>9.2f} {lines / ms:>10.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"lines": lines, "bytes": len(text), "runs": args.runs,
                       "median_ms": rows}, f, indent=2)


if __name__ == "__main__":
    main()
