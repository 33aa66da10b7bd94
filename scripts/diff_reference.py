"""Differential check against the reference implementation: the same generated kernels run under
the reference package's Python and under ours, results compared.

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install quadrants==1.3.3
    .venv/bin/python scripts/diff_reference.py --ref-python /tmp/refvenv/bin/python \\
        --cases 500 --seed 1 [--mutants] [--out diff_failures]

Cases come from tests/fuzz/kernel_gen.py: well-typed kernels by default, with --mutants also its
mutated ones (then only whether each side rejects, and with which class, is compared). Each side
runs in its own worker process (restarted after a crash or a timeout) and answers per case with
the return value and the contents of every array and field, or the exception class and message.
The reference never becomes a dependency: it is only ever run through --ref-python.

Categories: agree (both ran, same results), agree-reject (both rejected with the same class),
agree-reject-other-class, differ-value, ours-rejects (reference ran), ref-rejects (ours ran),
crash/hang on either side, and documented:NAME for a disagreement that tests/fuzz/documented.py
recognises as a documented difference from the reference (docs/language.md, "Differences from
the reference"). Documented differences are counted and printed but are not disagreements.
Differing cases are saved to --out/<category>/SEED.py with both answers (SEED.txt), then shrunk
(tests/fuzz/shrink.py: statements dropped, expressions replaced by operands or literals, loop
bounds lowered, as long as the case differs in the same category and at the same place) into
SEED.shrunk.py and SEED.shrunk.txt (documented differences are saved, not shrunk);
--shrink-budget bounds the runs spent on each, 0 turns shrinking off. `--replay SEED ...` runs
and shrinks only the given seeds. The exit status is 1 when any case disagrees.
"""

import argparse
import collections
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ_DIR = os.path.join(REPO_ROOT, "tests", "fuzz")
sys.path.insert(0, FUZZ_DIR)

import documented  # noqa: E402
import kernel_gen  # noqa: E402
import shrink  # noqa: E402


def make_case(seed, mutants):
    if mutants:
        return kernel_gen.make_case(seed)
    import random

    case = kernel_gen.valid_case(random.Random(seed))
    case["seed"] = seed
    return case


# --- worker ----------------------------------------------------------------------------------


def case_for(request, mutants):
    """The case of a request: a seed, or {"seed", "source"} (the seed's case with its source
    replaced, as the shrinker sends)."""
    if isinstance(request, dict):
        case = dict(make_case(request["seed"], mutants))
        case["source"] = request["source"]
        return case
    return make_case(request, mutants)


def run_one(case, workdir):
    import warnings

    import numpy as np

    import quadrants as qd
    from source_fuzz import case_call, import_case, write_case

    name, path = write_case(qd, case, workdir, "diffcase")
    try:
        module = import_case(name, path)
        args, kwargs, arrays = case_call(qd, np, case, module)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ret = module.kern(*args, **kwargs)
        out = {}
        for aname in kernel_gen.ARRAYS:
            if aname in arrays:
                out[aname] = np.asarray(arrays[aname]).tolist() if hasattr(arrays[aname], "tolist") else None
            else:
                out[aname] = getattr(module, aname).to_numpy().tolist()
        if isinstance(ret, (np.integer, np.floating)):
            ret = ret.item()
        return {"status": "ok", "ret": ret if isinstance(ret, (int, float, type(None))) else repr(ret),
                "arrays": out}
    except Exception as exc:  # noqa: BLE001
        msg = str(exc).strip().splitlines()
        return {"status": "error", "cls": type(exc).__name__, "msg": msg[-1] if msg else ""}
    finally:
        sys.modules.pop(name, None)


def worker_main(workdir, mutants):
    from source_fuzz import serve

    serve(lambda request: run_one(case_for(request, mutants), workdir))


# --- parent ----------------------------------------------------------------------------------


class Side:
    def __init__(self, python, workdir, mutants, ours):
        self.cmd = [python, os.path.abspath(__file__), "--worker", workdir] + (["--mutants"] if mutants else [])
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        if ours:
            env["PYTHONPATH"] = REPO_ROOT
        else:
            # a sanitizer runtime preloaded for our extension (make asan) is not the reference's
            env.pop("LD_PRELOAD", None)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), FUZZ_DIR) if p)
        self.env = env
        self.start()

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=self.env, text=True, bufsize=1)

    def send(self, request):
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            return True
        except OSError:
            return False

    def receive(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.restart()
            return {"status": "hang"}
        line = self.proc.stdout.readline()
        if not line:
            self.restart()
            return {"status": "crash"}
        return json.loads(line)

    def restart(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.start()

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def ask_both(ours, ref, request, timeout):
    """Both sides work on the request at once; (our answer, the reference's answer)."""
    sent = [side.send(request) for side in (ref, ours)]
    answers = []
    for side, ok in zip((ref, ours), sent):
        if not ok:
            side.restart()
            answers.append({"status": "crash"})
        else:
            answers.append(side.receive(timeout))
    return answers[1], answers[0]


def close(a, b, ty):
    if a is None or b is None:
        return a == b
    if ty in kernel_gen.FLOAT_TYPES:
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= (1e-4 if ty == "f32" else 1e-9) * max(1.0, abs(a), abs(b))
    return int(a) == int(b)


def compare(case, ours, ref):
    """(category, where, detail): `where` names what differs (the return value or an array)."""
    so, sr = ours["status"], ref["status"]
    if so in ("crash", "hang") or sr in ("crash", "hang"):
        return (f"ours-{so}" if so in ("crash", "hang") else f"ref-{sr}"), "", ""
    if so == "error" and sr == "error":
        return ("agree-reject" if ours["cls"] == ref["cls"] else "agree-reject-other-class", ours["cls"],
                f"ours {ours['cls']}: {ours['msg']} | ref {ref['cls']}: {ref['msg']}")
    if so == "error":
        return "ours-rejects", ours["cls"], f"{ours['cls']}: {ours['msg']}"
    if sr == "error":
        return "ref-rejects", ref["cls"], f"{ref['cls']}: {ref['msg']}"
    ret_ty = None
    if case["kind"] == "valid":
        # the return type is in the kernel's signature
        sig = [ln for ln in case["source"].splitlines() if ln.startswith("def kern(")][0]
        ret_ty = sig.split("-> qd.")[1].rstrip(":") if "-> qd." in sig else None
    if not close(ours["ret"], ref["ret"], ret_ty or ("f64" if isinstance(ref["ret"], float) else "i64")):
        return "differ-value", "return", f"return value: ours {ours['ret']!r}, ref {ref['ret']!r}"
    for name, ty in kernel_gen.ARRAYS.items():
        a, b = ours["arrays"].get(name), ref["arrays"].get(name)
        if a is None or b is None:
            continue
        for k, (x, y) in enumerate(zip(a, b)):
            if not close(x, y, ty):
                return "differ-value", name, f"{name}[{k}]: ours {x!r}, ref {y!r}"
    return "agree", "", ""


AGREE = ("agree", "agree-reject")


def judge(case, ours, ref, rerun=None):
    """(category, where, detail), a documented difference (tests/fuzz/documented.py) becoming
    `documented:<name>`; `rerun(source)` runs a variant of the case on both sides."""
    cat, where, detail = compare(case, ours, ref)
    if cat not in AGREE and rerun is not None:
        name = documented.classify(case, ours, ref, rerun,
                                   lambda o, r: compare(case, o, r)[0] == "agree")
        if name is not None:
            cat = f"documented:{name}"
    return cat, where, detail


def rerun_both(ours, ref, seed, timeout):
    return lambda source: ask_both(ours, ref, {"seed": seed, "source": source}, timeout)


def shrink_case(ours, ref, case, seed, key, timeout, budget):
    """The case's source reduced while it keeps the (category, where) `key`. The model's notes on
    the original do not hold for the smaller sources: those are judged without them."""

    def still_fails(source):
        c = dict(case, source=source, notes=())
        ro, rr = ask_both(ours, ref, {"seed": seed, "source": source}, timeout)
        return judge(c, ro, rr, rerun_both(ours, ref, seed, timeout))[:2] == key

    return shrink.shrink(case["source"], still_fails, budget)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref-python", default="/tmp/refvenv/bin/python")
    ap.add_argument("--ours-python", default=sys.executable)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutants", action="store_true")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out", default="diff_failures")
    ap.add_argument("--shrink-budget", type=int, default=150,
                    help="runs spent shrinking each differing case (0: no shrinking)")
    ap.add_argument("--replay", type=int, nargs="+", metavar="SEED",
                    help="run (and shrink) only these case seeds")
    ap.add_argument("--worker")
    a = ap.parse_args()
    if a.worker:
        worker_main(a.worker, a.mutants)
        return
    seeds = a.replay or [a.seed * 1000003 + k for k in range(a.cases)]
    counts = run(a.ref_python, a.ours_python, seeds, a.mutants,
                 a.timeout, a.out, a.shrink_budget, progress=True)
    print(summary(counts))
    sys.exit(1 if undocumented(counts) else 0)


def undocumented(counts):
    """The number of disagreements that are not documented differences."""
    return sum(n for cat, n in counts.items() if cat not in AGREE and not cat.startswith("documented:"))


def summary(counts):
    total = sum(counts.values())
    bad = undocumented(counts)
    doc = sum(n for cat, n in counts.items() if cat.startswith("documented:"))
    lines = [f"cases {total}"]
    for cat, n in sorted(counts.items()):
        lines.append(f"{cat} {n}")
    lines.append(f"documented differences {doc} (excluded); undocumented disagreements {bad} "
                 f"({100.0 * bad / max(total, 1):.2f}%)")
    return "\n".join(lines)


def run(ref_python, ours_python, seeds, mutants=False, timeout=60.0, out=None, shrink_budget=0,
        progress=False):
    """Runs the cases of `seeds` on both sides; a Counter of categories. Disagreements (documented
    ones included) are saved under `out` with both answers, and shrunk when `shrink_budget`."""
    counts = collections.Counter()
    t = time.time()
    with tempfile.TemporaryDirectory(prefix="qd_diff_ours_") as d1, \
            tempfile.TemporaryDirectory(prefix="qd_diff_ref_") as d2:
        ours = Side(ours_python, d1, mutants, True)
        ref = Side(ref_python, d2, mutants, False)
        try:
            for k, seed in enumerate(seeds):
                case = make_case(seed, mutants)
                ro, rr = ask_both(ours, ref, seed, timeout)
                cat, where, detail = judge(case, ro, rr, rerun_both(ours, ref, seed, timeout))
                counts[cat] += 1
                if cat not in AGREE and out:
                    d = os.path.join(out, cat.replace(":", "_"))
                    os.makedirs(d, exist_ok=True)
                    with open(os.path.join(d, f"{seed}.py"), "w") as f:
                        f.write(case["source"])
                    with open(os.path.join(d, f"{seed}.txt"), "w") as f:
                        f.write(f"seed {seed} args {case['args']}\n{detail}\nours: {json.dumps(ro)}\n"
                                f"ref: {json.dumps(rr)}\n")
                    if shrink_budget and not cat.startswith(("agree-reject", "documented:")):
                        small = shrink_case(ours, ref, case, seed, (cat, where), timeout, shrink_budget)
                        ro2, rr2 = ask_both(ours, ref, {"seed": seed, "source": small}, timeout)
                        with open(os.path.join(d, f"{seed}.shrunk.py"), "w") as f:
                            f.write(small)
                        with open(os.path.join(d, f"{seed}.shrunk.txt"), "w") as f:
                            f.write(f"{compare(dict(case, source=small), ro2, rr2)[2]}\n"
                                    f"ours: {json.dumps(ro2)}\nref: {json.dumps(rr2)}\n")
                if progress and (k + 1) % 100 == 0:
                    print(f"  {k + 1} cases: {dict(counts)} ({time.time() - t:.0f}s)", file=sys.stderr, flush=True)
        finally:
            ours.stop()
            ref.stop()
    return counts


if __name__ == "__main__":
    main()
