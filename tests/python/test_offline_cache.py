"""The offline cache across processes: what hits, what misses, damaged entries, concurrency,
eviction, dumps, and ``python -m quadrants cache``.

Each test writes a small program into its tmp_path and runs it in fresh Python processes that
share one cache directory. The program prints one JSON line: the results of its kernels, how
many kernels went through the frontend (calls of ``_core.compile_kernel``: zero on a warm
start) and whether each kernel's machine code came from the cache.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The common head of every program: counts frontend runs, then defines what the test adds.
HEAD = """
import json, os, sys
import numpy as np
import quadrants as qd
from quadrants import _core

FRONTEND = [0]
_compile = _core.compile_kernel
def counting(*args):
    FRONTEND[0] += 1
    return _compile(*args)
_core.compile_kernel = counting

def report(results, kernels):
    cached = [all(entry[0].from_cache for entry in k._compiled.values()) for k in kernels]
    print(json.dumps({"results": results, "frontend": FRONTEND[0], "cached": cached,
                      "counters": _core.cache_counters()}))
"""


def run(tmp_path, body, *, cache, env=None, check=True):
    """Runs HEAD + body as a program; returns its JSON report."""
    path = tmp_path / "prog.py"
    path.write_text(HEAD + textwrap.dedent(body))
    environ = dict(os.environ)
    environ["QD_OFFLINE_CACHE_FILE_PATH"] = str(cache)
    environ["PYTHONPATH"] = REPO_ROOT
    environ.update(env or {})
    proc = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        timeout=120,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


PROGRAM = """
SCALE = float(os.environ.get("SCALE", "2.0"))
N = 64

@qd.func
def helper(x):
    return x * SCALE

@qd.kernel
def scale(a: qd.types.ndarray(dtype=qd.f32, ndim=1), k: qd.template()):
    for i in range(N):
        a[i] = helper(a[i]) + k

@qd.kernel
def total(a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    s = 0.0
    for i in range(N):
        s += a[i]
    return s

qd.init(arch=getattr(qd, os.environ.get("ARCH", "cpu")), default_fp=getattr(qd, os.environ.get("FP", "f32")))
a = np.arange(N, dtype=np.float32)
scale(a, int(os.environ.get("K", "1")))
report([a.tolist(), float(total(a))], [scale, total])
"""


def expected(scale=2.0, k=1):
    a = np.arange(64, dtype=np.float64) * scale + k
    return a.tolist(), float(a.sum())


def test_second_process_skips_the_frontend(tmp_path, arch):
    cache = tmp_path / "cache"
    env = {"ARCH": arch}
    cold = run(tmp_path, PROGRAM, cache=cache, env=env)
    assert cold["frontend"] == 2 and cold["cached"] == [False, False]
    warm = run(tmp_path, PROGRAM, cache=cache, env=env)
    assert warm["frontend"] == 0 and warm["cached"] == [True, True]
    for report in (cold, warm):
        values, total = expected()
        np.testing.assert_array_equal(report["results"][0], values)
        assert report["results"][1] == pytest.approx(total)


@pytest.mark.parametrize(
    "change, scale, k",
    [
        ({"SCALE": "3.0"}, 3.0, 1),  # a global read by a called func
        ({"K": "5"}, 2.0, 5),  # a template argument
        ({"FP": "f64"}, 2.0, 1),  # an option
    ],
)
def test_each_input_of_the_key_misses(tmp_path, change, scale, k, arch):
    cache = tmp_path / "cache"
    env = {"ARCH": arch}
    run(tmp_path, PROGRAM, cache=cache, env=env)
    changed = run(tmp_path, PROGRAM, cache=cache, env=dict(env, **change))
    # The kernel whose inputs changed is lowered again; `total` is untouched by SCALE and K.
    assert changed["cached"][0] is False
    if "FP" not in change:
        assert changed["cached"][1] is True
    values, total = expected(scale, k)
    np.testing.assert_array_equal(changed["results"][0], values)
    assert changed["results"][1] == pytest.approx(total)
    # Back to the first inputs: both kernels come from the cache again, without the frontend.
    again = run(tmp_path, PROGRAM, cache=cache, env=env)
    assert again["frontend"] == 0 and again["cached"] == [True, True]


def test_a_warm_start_on_another_target_misses(tmp_path, arch):
    """The source key covers what the frontend reads, not the machine the code is for (the CPU's
    features, the GPU's sm, a Vulkan device's subgroup size, features and shared memory): a
    warm start follows its source key only to code of the same target identity. Here
    fast_math, a part of every target's identity, is left out of the source key to stand for
    such a property: the second start, on the "other" target, compiles again; each then finds
    its own code."""
    cache = tmp_path / "cache"
    program = PROGRAM.replace(
        "qd.init(arch=getattr(qd, os.environ.get(\"ARCH\", \"cpu\")), ",
        "from quadrants import _cache\n"
        "_cache._CODE_OPTIONS = tuple(o for o in _cache._CODE_OPTIONS if o != \"fast_math\")\n"
        "qd.init(fast_math=os.environ[\"FAST\"] == \"1\", "
        "arch=getattr(qd, os.environ.get(\"ARCH\", \"cpu\")), ")
    assert program != PROGRAM
    one = {"ARCH": arch, "FAST": "1"}
    other = {"ARCH": arch, "FAST": "0"}
    run(tmp_path, program, cache=cache, env=one)
    moved = run(tmp_path, program, cache=cache, env=other)
    assert moved["frontend"] == 2 and moved["cached"] == [False, False]
    for env in (one, other):
        back = run(tmp_path, program, cache=cache, env=env)
        assert back["frontend"] == 0 and back["cached"] == [True, True]
        values, total = expected()
        np.testing.assert_array_equal(back["results"][0], values)
        assert back["results"][1] == pytest.approx(total)


def test_editing_a_called_func_misses(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, PROGRAM, cache=cache)
    edited = run(tmp_path, PROGRAM.replace("return x * SCALE", "return x * SCALE - 1"), cache=cache)
    assert edited["cached"] == [False, True]
    np.testing.assert_array_equal(edited["results"][0], np.arange(64) * 2.0 + 1 - 1)


def test_unrelated_edits_still_hit(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, PROGRAM, cache=cache)
    edited = run(tmp_path, PROGRAM + "\n# a comment after the kernels\nUNUSED = 3\n", cache=cache)
    assert edited["frontend"] == 0 and edited["cached"] == [True, True]


def test_same_code_from_other_inputs_reuses_machine_code(tmp_path):
    # A global the source key cannot describe (an arbitrary object) turns the warm path off for
    # this kernel, but equal lowered code still reuses the machine code.
    body = """
    class Config:
        def __init__(self, n):
            self.n = n
    CFG = Config(int(os.environ.get("N", "8")))

    @qd.kernel
    def fill(a: qd.types.ndarray(dtype=qd.i32, ndim=1)):
        for i in range(qd.static(CFG).n):
            a[i] = i * 3

    qd.init(arch=qd.cpu)
    a = np.zeros(16, dtype=np.int32)
    fill(a)
    report([a.tolist()], [fill])
    """
    cache = tmp_path / "cache"
    first = run(tmp_path, body, cache=cache)
    second = run(tmp_path, body, cache=cache)
    assert second["frontend"] == 1 and second["cached"] == [True]
    changed = run(tmp_path, body, cache=cache, env={"N": "12"})
    assert changed["cached"] == [False]
    for report, n in ((first, 8), (second, 8), (changed, 12)):
        want = [i * 3 if i < n else 0 for i in range(16)]
        assert report["results"][0] == want


def entry_files(cache):
    return sorted(p for p in cache.iterdir() if p.suffix == ".qdk")


@pytest.mark.parametrize("damage", ["truncate", "flip", "version", "empty"])
def test_damaged_entries_are_rewritten_not_loaded(tmp_path, damage, arch):
    cache = tmp_path / "cache"
    env = {"ARCH": arch}
    run(tmp_path, PROGRAM, cache=cache, env=env)
    files = entry_files(cache)
    assert files
    for path in files:
        data = bytearray(path.read_bytes())
        if damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "flip":
            data[-1] ^= 0xFF
        elif damage == "version":
            data[8] += 1
        else:
            data = bytearray()
        path.write_bytes(bytes(data))
    report = run(tmp_path, PROGRAM, cache=cache, env=env)
    assert report["cached"] == [False, False]
    assert report["counters"]["rejected"] >= 1
    values, total = expected()
    np.testing.assert_array_equal(report["results"][0], values)
    # The entries were written again and load.
    warm = run(tmp_path, PROGRAM, cache=cache, env=env)
    assert warm["frontend"] == 0 and warm["cached"] == [True, True]


def test_concurrent_processes_share_the_directory(tmp_path):
    cache = tmp_path / "cache"
    reports = [None] * 4

    def worker(i):
        sub = tmp_path / f"p{i}"
        sub.mkdir()
        reports[i] = run(sub, PROGRAM, cache=cache)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    values, total = expected()
    for report in reports:
        np.testing.assert_array_equal(report["results"][0], values)
    assert not [p for p in cache.iterdir() if ".tmp." in p.name]
    # The source key names the program's file: a fifth run of one of them starts warm.
    warm = run(tmp_path / "p0", PROGRAM, cache=cache)
    assert warm["frontend"] == 0 and warm["cached"] == [True, True]


def test_eviction_keeps_the_bound(tmp_path):
    body = """
    qd.init(arch=qd.cpu, offline_cache_max_size_of_files=int(os.environ["MAX"]),
            offline_cache_cleaning_factor=0.5)
    kernels = []
    for c in range(12):
        @qd.kernel
        def add(a: qd.types.ndarray(dtype=qd.i32, ndim=1), c: qd.template()):
            for i in range(4):
                a[i] += c
        a = np.zeros(4, dtype=np.int32)
        add(a, c)
        assert a.tolist() == [c] * 4
        kernels.append(add)
    report([], kernels)
    """
    cache = tmp_path / "cache"
    unbounded = run(tmp_path / "", body, cache=tmp_path / "all", env={"MAX": str(1 << 30)})
    assert unbounded["counters"]["writes"] == 24  # 12 code entries + 12 links
    total = sum(p.stat().st_size for p in entry_files(tmp_path / "all"))
    bound = total // 3
    run(tmp_path, body, cache=cache, env={"MAX": str(bound)})
    assert sum(p.stat().st_size for p in entry_files(cache)) <= bound


def test_dumps_only_on_a_real_compile(tmp_path):
    body = """
    qd.init(arch=qd.cpu, print_kernel_asm=True)
    @qd.kernel
    def one(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(4):
            a[i] = 1.0
    a = np.zeros(4, dtype=np.float32)
    one(a)
    report([a.tolist()], [one])
    """
    cache = tmp_path / "cache"
    run(tmp_path, body, cache=cache)
    dumps = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".s")
    assert dumps
    for name in dumps:
        (tmp_path / name).unlink()
    warm = run(tmp_path, body, cache=cache)
    assert warm["cached"] == [True]
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".s"]


def test_offline_cache_false_writes_nothing(tmp_path):
    body = PROGRAM.replace("qd.init(", "qd.init(offline_cache=False, ")
    cache = tmp_path / "cache"
    report = run(tmp_path, body, cache=cache)
    assert report["cached"] == [False, False]
    assert not cache.exists() or not entry_files(cache)


def test_cache_command(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, PROGRAM, cache=cache)
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    info = subprocess.run(
        [sys.executable, "-m", "quadrants", "cache", "info", "--path", str(cache)],
        capture_output=True, text=True, env=env, check=True,
    ).stdout
    assert f"entries: {len(entry_files(cache))}" in info
    env["QD_OFFLINE_CACHE_FILE_PATH"] = str(cache)
    cleared = subprocess.run(
        [sys.executable, "-m", "quadrants", "cache", "clear"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout
    assert "removed 4 entries" in cleared
    assert not entry_files(cache)
    bad = subprocess.run(
        [sys.executable, "-m", "quadrants", "nothing"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_fields_objects_random_and_print_from_the_cache(tmp_path):
    body = """
    qd.init(arch=qd.cpu, random_seed=7)
    F = qd.field(qd.f32, shape=8)

    @qd.data_oriented
    class Sim:
        def __init__(self):
            self.x = qd.field(qd.i32, shape=4)
            self.gain = 3

        @qd.func
        def bump(self, i):
            self.x[i] += self.gain

        @qd.kernel
        def step(self):
            for i in range(4):
                self.bump(i)

    @qd.kernel
    def noisy():
        for i in range(8):
            F[i] = qd.random(qd.f32) + i
        print("done", F[0] >= 0.0)

    sim = Sim()
    sim.step()
    sim.step()
    noisy()
    qd.sync()
    report([sim.x.to_numpy().tolist(), F.to_numpy().tolist()], [Sim.step, noisy])
    """
    cache = tmp_path / "cache"
    cold = run(tmp_path, body, cache=cache)
    warm = run(tmp_path, body, cache=cache)
    assert warm["frontend"] == 0
    assert warm["results"] == cold["results"]  # same seed, same numbers
    assert warm["results"][0] == [6, 6, 6, 6]
    values = np.array(warm["results"][1])
    assert np.all((values >= np.arange(8)) & (values < np.arange(8) + 1))


def test_enum_members_ufuncs_and_tile_kinds_are_keyed():
    """Values programs name in kernels that the source key describes (so that such kernels load
    from the cache instead of being lowered again): enum members by class, name and value, NumPy
    ufuncs by name, qd.simt tile kinds by size."""
    import enum

    from quadrants import _cache
    from quadrants.simt import _tile

    class Backend(enum.IntEnum):
        CPU = 0
        GPU = 1

    def digest(value):
        keyer = _cache._Keyer()
        keyer.value(value)
        return keyer.h.digest()

    assert digest(Backend.CPU) == digest(Backend.CPU)
    assert len({digest(Backend.CPU), digest(Backend.GPU), digest(0)}) == 3
    assert digest(np.sqrt) != digest(np.exp)
    assert digest(_tile.TileKind(16)) != digest(_tile.TileKind(32))


def test_free_names_are_kept_for_the_next_process(tmp_path):
    """The names a kernel's source uses (part of its source key) are kept in the cache directory
    per source text: a new process reads them instead of parsing the source; a damaged file is
    recomputed."""
    from quadrants import _cache, _source

    class Source:
        def __init__(self, function):
            self._source = _source.capture(function)

        def _parsed(self):
            return _source.parse(self._source, "f")

    def f(x):
        return helper_value.a.b + x.y  # noqa: F821 (names only)

    _cache._analysis.clear()
    first = _cache._analyze(Source(f), f, str(tmp_path))
    assert first == ((), (("helper_value", "a", "b"),))
    files = list((tmp_path / "names").rglob("*.json"))
    assert len(files) == 1
    _cache._analysis.clear()
    assert _cache._analyze(Source(f), f, str(tmp_path)) == first
    files[0].write_text("{not json")
    _cache._analysis.clear()
    assert _cache._analyze(Source(f), f, str(tmp_path)) == first


RUNTIME_AND_GENERIC_ANNOTATIONS = """
import quadrants.lang.impl as impl

@qd.func
def split(v: qd.types.vector(3, qd.f32)) -> tuple[qd.types.vector(2, qd.f32), qd.f32]:
    return qd.Vector([v[0], v[1]]), v[2]

@qd.kernel
def k(a: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
    # a compile-time value read from the runtime object, as Genesis does
    eps = qd.static(1e-3 if impl.get_runtime().default_fp == qd.f32 else 1e-9)
    xy, z = split(qd.Vector([a[0], a[1], a[2]]))
    return xy.sum() + z + eps

qd.init(arch=getattr(qd, os.environ.get("ARCH", "cpu")), default_fp=getattr(qd, os.environ.get("FP", "f32")))
a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
report([float(k(a))], [k])
"""


def test_runtime_object_and_generic_annotations_are_keyed(tmp_path, arch):
    """A kernel whose funcs return `tuple[...]` and whose source reads
    `quadrants.lang.impl.get_runtime().default_fp` at compile time has a source key: a second
    process loads it without the frontend, and another default_fp is another key."""
    cache = tmp_path / "cache"
    env = {"ARCH": arch}
    cold = run(tmp_path, RUNTIME_AND_GENERIC_ANNOTATIONS, cache=cache, env=env)
    warm = run(tmp_path, RUNTIME_AND_GENERIC_ANNOTATIONS, cache=cache, env=env)
    assert cold["cached"] == [False] and warm["cached"] == [True] and warm["frontend"] == 0
    assert warm["results"][0] == pytest.approx(6.001)
    f64 = run(tmp_path, RUNTIME_AND_GENERIC_ANNOTATIONS, cache=cache, env=dict(env, FP="f64"))
    assert f64["cached"] == [False]
    assert f64["results"][0] == pytest.approx(6.0, abs=1e-7)
