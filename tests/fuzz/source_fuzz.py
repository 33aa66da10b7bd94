"""Source fuzzer: random kernels (kernel_gen.py) compiled and run in a pool of worker processes.

    python tests/fuzz/source_fuzz.py --cases 10000 --seed 1 --jobs 2 [--out DIR]

Each case is written to a module file (so that inspect.getsource works), imported and its kernel
called; the outcome is one of
    ran            the kernel ran (and, where the model predicts them, its results matched)
    rejected:CLS   a clean rejection: a Quadrants compile error naming file:line, a Quadrants
                   runtime error at the call, or a plain TypeError/ValueError for bad call
                   arguments; Python's own SyntaxError at import is `python:SyntaxError`
and the failures, each saved to DIR/<category>/<seed>.py with the exception text:
    crash          the worker died (a signal: segfault, abort)
    hang           no answer within --timeout seconds
    internal:CLS   an internal error: SystemError, AssertionError, KeyError, AttributeError, ...,
                   or a message saying "internal"
    noline:CLS     a Quadrants compile error whose message names no line of the source
    leak:CLS       a plain Python exception where a Quadrants error belongs
    valid:CLS      a kernel generated inside the supported subset was rejected
    mismatch       results differ from the model's

Workers are restarted after a crash or a hang; the seed of case k is `seed * 1000003 + k`, so
`--replay SEED` runs one case again in this process (printing its source and outcome).
"""

import argparse
import collections
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import kernel_gen  # noqa: E402

FAILURES = ("crash", "hang", "internal", "noline", "leak", "valid", "mismatch")


def case_seed(seed, k):
    return seed * 1000003 + k


# --- worker side -----------------------------------------------------------------------------


def _call_args(qd, np, case):
    """(args, kwargs) for the kernel call, after the case's call mutation if it has one."""
    args = []
    for ty, v in case["args"]:
        args.append(float(v) if ty in kernel_gen.FLOAT_TYPES else int(v))
    arrays = {}
    for name in kernel_gen.PARAM_ARRAYS:
        dt = kernel_gen.NP_DTYPE[kernel_gen.ARRAYS[name]]
        arrays[name] = np.array(case["inputs"].get(name, [0] * kernel_gen.N), dtype=dt)
    kwargs = {}
    mut = case.get("call_mutation")
    if mut == "float_for_int":
        ints = [k for k, (ty, _) in enumerate(case["args"]) if ty not in kernel_gen.FLOAT_TYPES]
        if ints:
            args[ints[0]] = 1.5
        else:
            arrays["inp_i"] = 1.5
    elif mut in ("string", "none"):
        bad = "text" if mut == "string" else None
        if args:
            args[0] = bad
        else:
            arrays["inp_i"] = bad
    elif mut == "list":
        arrays["inp_i"] = list(range(kernel_gen.N))
    elif mut == "wrong_dtype":
        arrays["inp_i"] = arrays["inp_i"].astype(np.float32)
    elif mut == "wrong_ndim":
        arrays["inp_f"] = np.zeros((2, kernel_gen.N))
    elif mut == "noncontiguous":
        arrays["inp_f"] = np.zeros(2 * kernel_gen.N)[::2]
    elif mut == "huge_int":
        ints = [k for k, (ty, _) in enumerate(case["args"]) if ty not in kernel_gen.FLOAT_TYPES]
        if ints:
            args[ints[0]] = 1 << 70
    elif mut == "qd_ndarray":
        a = qd.ndarray(qd.i32, shape=kernel_gen.N)
        a.from_numpy(arrays["inp_i"])
        arrays["inp_i"] = a
    elif mut == "bad_keyword":
        kwargs["no_such_argument"] = 1
    full = args + [arrays[name] for name in kernel_gen.PARAM_ARRAYS]
    if mut == "missing":
        full = full[:-1]
    elif mut == "extra":
        full.append(1)
    return full, kwargs, arrays


def _close(a, b, ty, scale):
    if ty in kernel_gen.FLOAT_TYPES:
        return abs(float(a) - float(b)) <= kernel_gen.TOL[ty] * 10 * max(scale, 1.0)
    return int(a) == int(b)


def _check(case, ret, arrays, module):
    """A description of the first difference from the model's results, or None."""
    exp = case["expected"]
    if exp is None:
        return None
    scale = exp["scale"]
    if exp["ret_ty"] is not None and not _close(ret, exp["ret"], exp["ret_ty"], scale):
        return f"return value {ret!r}, expected {exp['ret']!r}"
    for name, want in exp["arrays"].items():
        if name in kernel_gen.PARAM_ARRAYS:
            got = arrays[name].tolist()
        else:
            got = getattr(module, name).to_numpy().tolist()
        ty = kernel_gen.ARRAYS[name]
        for k, (g, w) in enumerate(zip(got, want)):
            if not _close(g, w, ty, scale):
                return f"{name}[{k}] = {g!r}, expected {w!r}"
    return None


def classify_exception(qd, case, exc, path):
    """(category, text) for an exception raised while importing or calling a case."""
    text = f"{type(exc).__name__}: {exc}"
    name = type(exc).__name__
    tb, last, in_case = exc.__traceback__, None, None
    while tb is not None:
        last = tb
        if tb.tb_frame.f_code.co_filename == path:
            in_case = tb
        tb = tb.tb_next
    if last is not None and last.tb_frame.f_code.co_filename == path:
        # raised by the case's own Python code (an annotation evaluated at definition time)
        return f"python:{name}", text
    if in_case is not None and in_case.tb_frame.f_code.co_name == "<module>":
        import linecache

        line = linecache.getline(path, in_case.tb_lineno).strip()
        if not line.startswith("@") and not isinstance(exc, qd.QuadrantsCompilationError):
            # Python-scope code of the module (`qd.NoSuch`, `qd.types.NDArray[5, 1]` in an
            # annotation): an ordinary Python error, not the compiler's
            return f"python:{name}", text
    if case["kind"] in ("call", "sig") and isinstance(exc, qd.QuadrantsCompilationError) and "Traceback" not in str(exc):
        if f"{path}:" not in str(exc) and "argument" in str(exc).lower():
            return f"rejected:{name}", text  # argument checking at the call
    if isinstance(exc, (qd.QuadrantsCompilationError, qd.QuadrantsRuntimeError)):
        if "internal" in str(exc).lower():
            return f"internal:{name}", text
        if isinstance(exc, qd.QuadrantsCompilationError) and f"{path}:" not in str(exc):
            return f"noline:{name}", text
        if case["kind"] == "valid":
            return f"valid:{name}", text
        return f"rejected:{name}", text
    if isinstance(exc, (SystemError, AssertionError, KeyError, AttributeError, IndexError,
                        NameError, RecursionError, UnboundLocalError, MemoryError)):
        return f"internal:{name}", text
    if isinstance(exc, RuntimeError) and "internal" in str(exc).lower():
        return f"internal:{name}", text
    if isinstance(exc, (TypeError, ValueError, OverflowError)) and case["kind"] == "call":
        return f"rejected:{name}", text
    return f"leak:{name}", text


def write_case(qd, case, workdir, prefix):
    """Starts a fresh CPU runtime and writes the case's source to `workdir` (kernels need their
    source in a file); returns (module name, path)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.reset()
        qd.init(arch=qd.cpu, offline_cache=False)
    name = f"{prefix}_{case['seed']}"
    path = os.path.join(workdir, name + ".py")
    with open(path, "w") as f:
        f.write(case["source"])
    return name, path


def import_case(name, path):
    """Imports the module written by write_case (decorating its kernels), warnings silenced."""
    import importlib.util
    import warnings

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec.loader.exec_module(module)
    return module


def case_call(qd, np, case, module):
    """Fills the case's input fields and returns (args, kwargs, arrays) for calling `kern`."""
    for fname in ("gin_i", "gin_f"):
        getattr(module, fname).from_numpy(
            np.array(case["inputs"][fname], dtype=kernel_gen.NP_DTYPE[kernel_gen.ARRAYS[fname]]))
    if case["args"] == "sig":
        return [], {}, {}
    return _call_args(qd, np, case)


def serve(run):
    """A worker's loop: reads requests (one JSON value a line: a case seed, or an object) on
    stdin and answers `run(request)` as one JSON line on the original stdout; whatever kernels
    print goes to stderr."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        proto.write(json.dumps(run(json.loads(line))) + "\n")
        proto.flush()


def run_case(case, workdir):
    """Runs one case in this process; returns {"category", "text"}."""
    import warnings

    import numpy as np

    import quadrants as qd

    name, path = write_case(qd, case, workdir, "fuzzcase")
    try:
        try:
            module = import_case(name, path)
        except SyntaxError as exc:
            if type(exc) is SyntaxError:
                return {"category": "python:SyntaxError", "text": str(exc)}
            raise
        except RecursionError as exc:
            if not isinstance(exc, qd.QuadrantsCompilationError) and "compil" in str(exc):
                return {"category": "python:RecursionError", "text": str(exc)}
            raise
        args, kwargs, arrays = case_call(qd, np, case, module)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ret = module.kern(*args, **kwargs)
        diff = _check(case, ret, arrays, module)
        if diff is not None:
            return {"category": "mismatch", "text": diff}
        return {"category": "ran" if case["expected"] is None else "ran:checked", "text": ""}
    except Exception as exc:  # noqa: BLE001 -- every exception is classified
        cat, text = classify_exception(qd, case, exc, path)
        if cat.split(":")[0] in FAILURES:
            text += "\n" + traceback.format_exc()
        return {"category": cat, "text": text}
    finally:
        sys.modules.pop(name, None)
        try:
            os.unlink(path)
        except OSError:
            pass


def worker_main(workdir):
    """The worker process: runs the cases the parent sends (see serve)."""
    sys.setrecursionlimit(3000)
    serve(lambda seed: run_case(kernel_gen.make_case(seed), workdir))


# --- parent side ------------------------------------------------------------------------------


class Worker:
    def __init__(self, workdir):
        self.workdir = workdir
        self.proc = None
        self.start()

    def start(self):
        env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", self.workdir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            text=True, bufsize=1)

    def send(self, seed):
        self.proc.stdin.write(f"{seed}\n")
        self.proc.stdin.flush()
        self.sent = time.monotonic()

    def restart(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.start()

    def stop(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_pool(seeds, jobs=2, timeout=30.0, out_dir=None, progress=False):
    """Runs the cases of `seeds`; returns (Counter of categories, [(seed, category, text)] of
    failures). Failing sources are saved under out_dir when given."""
    counts = collections.Counter()
    failures = []
    pending = list(reversed(seeds))
    with tempfile.TemporaryDirectory(prefix="qd_fuzz_") as workdir:
        workers = [Worker(workdir) for _ in range(max(1, jobs))]
        busy = {}  # worker -> seed
        try:
            while pending or busy:
                for w in workers:
                    if w not in busy and pending:
                        seed = pending.pop()
                        try:
                            w.send(seed)
                        except (BrokenPipeError, OSError):
                            w.restart()
                            w.send(seed)
                        busy[w] = seed
                fds = {w.proc.stdout.fileno(): w for w in busy}
                ready, _, _ = select.select(list(fds), [], [], 0.5)
                now = time.monotonic()
                for fd in ready:
                    w = fds[fd]
                    line = w.proc.stdout.readline()
                    seed = busy.pop(w)
                    if not line:
                        rc = w.proc.wait()
                        res = {"category": "crash", "text": f"worker exited with {rc}"}
                        w.start()
                    else:
                        res = json.loads(line)
                    _record(seed, res, counts, failures, out_dir)
                for w in list(busy):
                    if w.proc.stdout.fileno() not in ready and now - w.sent > timeout:
                        seed = busy.pop(w)
                        w.restart()
                        _record(seed, {"category": "hang", "text": f"no answer in {timeout}s"},
                                counts, failures, out_dir)
                done = sum(counts.values())
                if progress and ready and done % 500 == 0:
                    print(f"  {done} cases", file=sys.stderr, flush=True)
        finally:
            for w in workers:
                w.stop()
    return counts, failures


def _record(seed, res, counts, failures, out_dir):
    cat = res["category"]
    counts[cat] += 1
    if cat.split(":")[0] not in FAILURES:
        return
    failures.append((seed, cat, res["text"]))
    if out_dir:
        d = os.path.join(out_dir, cat.replace(":", "_"))
        os.makedirs(d, exist_ok=True)
        case = kernel_gen.make_case(seed)
        with open(os.path.join(d, f"{seed}.py"), "w") as f:
            f.write(case["source"])
        with open(os.path.join(d, f"{seed}.txt"), "w") as f:
            f.write(f"seed {seed} mutation {case['mutation']} args {case['args']}\n{res['text']}\n")


def summary(counts):
    total = sum(counts.values())
    ran = sum(v for k, v in counts.items() if k.startswith("ran"))
    lines = [f"total {total}", f"ran {ran} (checked against the model: {counts.get('ran:checked', 0)})"]
    for k in sorted(counts):
        if k.startswith("rejected") or k.startswith("python"):
            lines.append(f"{k} {counts[k]}")
    for f in FAILURES:
        n = sum(v for k, v in counts.items() if k.split(":")[0] == f)
        detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k.split(":")[0] == f and ":" in k)
        lines.append(f"{f} {n}" + (f" ({detail})" if detail else ""))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--out", default="fuzz_failures")
    ap.add_argument("--replay", type=int)
    ap.add_argument("--worker")
    a = ap.parse_args()
    if a.worker:
        worker_main(a.worker)
        return
    if a.replay is not None:
        case = kernel_gen.make_case(a.replay)
        print(case["source"])
        print("mutation", case["mutation"], "args", case["args"])
        with tempfile.TemporaryDirectory() as d:
            res = run_case(case, d)
        print(res["category"])
        print(res["text"])
        return
    t = time.time()
    seeds = [case_seed(a.seed, k) for k in range(a.cases)]
    counts, failures = run_pool(seeds, a.jobs, a.timeout, a.out, progress=True)
    print(summary(counts))
    print(f"time {time.time() - t:.0f}s; failures saved under {a.out}/" if failures else
          f"time {time.time() - t:.0f}s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
