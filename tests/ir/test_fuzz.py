"""Mutation fuzzing of the IR parser, verifier, printer and passes.

For a few seconds, the texts of the IR golden files (plus a built-in module) are mutated at
random -- byte ranges deleted, duplicated or swapped, tokens and junk bytes inserted, numbers
made huge -- and fed to parse_print, verify and run_passes. Whatever the input, the only
exceptions allowed out are Quadrants compilation errors; and whatever the parser accepts must
print to text that parses and prints back to itself.

The fuzzing runs in a child process, so a crash (or a sanitizer report under `make asan`) fails
the test instead of killing pytest; the child writes each input to a file before trying it, so
the failing input is reported along with the seed. Environment:
    QD_FUZZ_SEED      replay one seed (default: a fresh random seed each run)
    QD_FUZZ_SECONDS   fuzzing time (default 3)
"""

import os
import pathlib
import random
import subprocess
import sys
import traceback

IR_DIR = pathlib.Path(__file__).resolve().parent
REPO_ROOT = IR_DIR.parent.parent

# A small module using most of the grammar, so the fuzzer has input before golden files exist.
BUILTIN_TEXT = """\
# Fuzzing seed: fields, a kernel with both task kinds (and a subgroup_sync), a func, a template.
field @acc : i32 []
field @grid : f32 [128, 64]

template @axpy<T: float, N: int>(%a: T, %x: T, %y: T) -> T {
  %m = mul %a, %x : T
  %s = add %m, %y : T
  %n = const N * 2 : i32
  unroll %k = 0 to N {
    %c = const %k + 1 : i32
  }
  ret %s
}

func @clamp(%v: f32, %hi: f32) -> f32 {
  %lt = lt %v, %hi : u1
  %r = select %lt, %v, %hi : f32
  ret %r
}

kernel @saxpy(%a: f32, %x: ndarray<f32, 1>, %y: ndarray<f32, 1>) {
  task range_for "saxpy" block_dim 128 {
    %zero = const 0 : i32
    %n = shape %x, 0 : i32                              @k.py:5:19
    parallel_for %i = %zero to %n {                     @k.py:5:8
      %px = elem_ptr %x, %i : ptr<f32, global>
      %py = elem_ptr %y, %i : ptr<f32, global>
      %vx = load %px : f32
      %vy = load %py : f32
      %s = call @axpy<f32, 4>(%a, %vx, %vy) : f32
      %t = call @clamp(%s, %a) : f32
      store %py, %t                                     @k.py:6:12
      %lanes = const 4294967295 : u32
      subgroup_sync %lanes
    }
  }
  task serial {
    %one = const 1 : i32
    %p = field_ptr @acc : ptr<i32, global>
    %old = atomic_add %p, %one : i32
    %slot = alloca : ptr<i32, local>
    store %slot, %old
    loop {
      %v = load %slot : i32
      %done = ge %v, %one : u1
      if %done {
        break
      } else {
        print "v = %d\\n", %v
      }
      continue
    }
  }
}
"""

MNEMONICS = """
const add sub mul div rem floordiv floormod min max pow atan2 and or xor shl shr lshr neg abs
not popcnt clz sqrt rsqrt exp log sin cos tan tanh asin acos atan floor ceil round eq ne lt le
gt ge select cast bitcast alloca shared_alloc tmp_alloc field_ptr elem_ptr array_ptr shape load
store atomic_add atomic_sub atomic_mul atomic_min atomic_max atomic_and atomic_or atomic_xor
atomic_xchg atomic_cas if for parallel_for loop break continue unroll task call ret kernel_ret
thread_idx block_idx block_dim grid_dim lane_id subgroup_size block_sync block_sync_all
block_sync_any block_sync_count fence_block fence_device fence_system subgroup_sync shuffle
shuffle_xor shuffle_up shuffle_down ballot vote_all vote_any print assert
""".split()

TOKENS = [
    "%", "{", "}", "@", ":", "ptr<", "[", "]", "x", "<", ">", "(", ")", ",", "=", '"', "#", "\n",
    " ", "  ", "-", "+", "*", "/", ".", "^", "->", "0", "1", "7", "-1", "16", "2147483648",
    "99999999999999999999999999999", "18446744073709551616", "-9223372036854775809", "1e999",
    "1.5e-310", "0x1p3", "9" * 400, "nan", "inf", "-inf", "true", "false", "u1", "i8", "i32", "i64",
    "u64", "f16", "bf16", "f32", "f64", "void", "ndarray<", "global", "shared", "local", "kernel",
    "func", "template", "field", "serial", "range_for", "block_dim", "to", "else", "T", "N",
    "type", "int", "float", "integral", "%x", "%0", "%4294967295", "@k", '@"q<f32,1>"', "\\x",
    '\\"', "\\", "@k.py:1:1", "@f:0:0", "@f:99999999999:1", "\t", "\r", "u32",
]


def load_corpus():
    texts = [BUILTIN_TEXT]
    for pattern in ("*.qir", "*.expected"):
        for path in sorted(IR_DIR.rglob(pattern)):
            texts.append(path.read_text(encoding="utf-8"))
    templates = REPO_ROOT / "quadrants" / "templates"
    if templates.is_dir():
        texts += [p.read_text(encoding="utf-8") for p in sorted(templates.glob("*.qir"))]
    return texts


def random_junk(rng):
    """1 to 16 random non-NUL bytes, as the latin-1 characters they decode to."""
    return bytes(rng.randint(1, 255) for _ in range(rng.randint(1, 16))).decode("latin-1")


def random_span(rng, n):
    start = rng.randint(0, n)
    return start, min(n, start + rng.choice((1, 1, 2, 3, 5, 8, 16, 64, 256)))


def mutate(rng, text, vocabulary):
    for _ in range(rng.randint(1, 4)):
        i, j = random_span(rng, len(text))
        kind = rng.randrange(7)
        if kind == 0:  # delete a range
            text = text[:i] + text[j:]
        elif kind == 1:  # duplicate a range
            text = text[:j] + text[i:j] + text[j:]
        elif kind == 2:  # swap two ranges
            k, m = random_span(rng, len(text))
            if m <= i or j <= k:
                (a, b), (c, d) = sorted(((i, j), (k, m)))
                text = text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
        elif kind == 3:  # insert a token
            text = text[:i] + rng.choice(vocabulary) + text[i:]
        elif kind == 4:  # replace a range with a token
            text = text[:i] + rng.choice(vocabulary) + text[j:]
        elif kind == 5:  # insert junk bytes
            text = text[:i] + random_junk(rng) + text[i:]
        else:  # change one line wholesale into another line of the text
            lines = text.split("\n")
            lines[rng.randrange(len(lines))] = rng.choice(lines)
            text = "\n".join(lines)
    return text


def check_reprints(testing, printed):
    """Printed text must parse and print back to itself."""
    again = testing.parse_print(printed)
    if again != printed:
        raise AssertionError(f"printed text does not round-trip:\n{printed}\n---\n{again}")


def exercise(qd, testing, rng, text, pass_names):
    """Feeds one input to the core; only compilation errors may come out."""
    try:
        printed = testing.parse_print(text)
    except qd.QuadrantsCompilationError:
        return
    check_reprints(testing, printed)
    try:
        testing.verify(text)
        testing.verify(text, concrete=True)
    except qd.QuadrantsCompilationError:
        pass
    passes = ",".join(rng.sample(pass_names, rng.randint(1, len(pass_names))))
    try:
        result = testing.run_passes(text, passes)
    except qd.QuadrantsCompilationError:
        return
    check_reprints(testing, result)


def child_main(seed, seconds, last_input_path):
    """Fuzzes until the deadline. Exits 1 (after printing what happened) on a wrong outcome."""
    import time

    import quadrants as qd
    from quadrants._core import _testing

    rng = random.Random(seed)
    corpus = load_corpus()
    pass_names = _testing.pass_names()
    vocabulary = TOKENS + MNEMONICS + pass_names
    deadline = time.monotonic() + seconds
    count = 0
    with open(last_input_path, "wb") as last:
        while time.monotonic() < deadline:
            text = mutate(rng, rng.choice(corpus), vocabulary)
            last.seek(0)
            last.truncate()
            last.write(text.encode("utf-8"))
            last.flush()
            try:
                exercise(qd, _testing, rng, text, pass_names)
            except Exception:
                traceback.print_exc()
                return 1
            count += 1
    print(f"{count} inputs")
    return 0


def test_fuzz(tmp_path):
    seed = int(os.environ.get("QD_FUZZ_SEED") or random.randrange(2**32))
    seconds = float(os.environ.get("QD_FUZZ_SECONDS", "3"))
    last_input = tmp_path / "last_input.qir"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", __file__, str(seed), str(seconds), str(last_input)],
        env=env,
        capture_output=True,
        text=True,
        timeout=seconds + 120,
    )
    if proc.returncode != 0:
        failing = last_input.read_text(encoding="utf-8") if last_input.exists() else "(none)"
        raise AssertionError(
            f"fuzzing failed with seed {seed} (rerun: QD_FUZZ_SEED={seed}), "
            f"exit status {proc.returncode}; input saved in {last_input}\n"
            f"--- input ---\n{failing[:4000]!r}\n"
            f"--- output ---\n{proc.stdout[-4000:]}{proc.stderr[-8000:]}"
        )


if __name__ == "__main__":
    sys.exit(child_main(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]))
