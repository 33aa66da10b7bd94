"""The offline cache with structs: a kernel using a struct type, a struct field and a struct
instance starts warm in a second process (no frontend run), and misses when a member's type or
a constant instance changes."""

import json
import os
import subprocess
import sys
import textwrap

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
import json, os
import numpy as np
import quadrants as qd
from quadrants import _core

FRONTEND = [0]
_compile = _core.compile_kernel
def counting(*args):
    FRONTEND[0] += 1
    return _compile(*args)
_core.compile_kernel = counting

qd.init(arch=qd.cpu)
MEMBER = qd.i32 if os.environ.get("MEMBER") == "i32" else qd.f32
OFFSET = float(os.environ.get("OFFSET", "0.5"))

@qd.dataclass
class P:
    a: MEMBER
    b: qd.f64

    @qd.func
    def total(self):
        return self.a + self.b

CONST = P(1, OFFSET)
f = P.field(shape=4)

@qd.kernel
def k(p: P) -> qd.f64:
    for i in f:
        f[i].a = i
        f[i].b = 0.25
    return p.total() + CONST.total()

result = k(P(2.75, 0.5))
print(json.dumps({"result": result, "frontend": FRONTEND[0], "a": f.to_numpy()["a"].tolist()}))
"""


def run(tmp_path, **env):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(PROGRAM))
    environ = dict(os.environ)
    environ["QD_OFFLINE_CACHE_FILE_PATH"] = str(tmp_path / "cache")
    environ["PYTHONPATH"] = REPO_ROOT
    environ.update(env)
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=environ, cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])


def test_struct_kernels_start_warm_and_miss_on_changes(tmp_path):
    cold = run(tmp_path)
    assert cold["frontend"] == 1 and cold["result"] == 2.75 + 0.5 + 1 + 0.5
    warm = run(tmp_path)
    assert warm["frontend"] == 0 and warm["result"] == cold["result"]
    assert warm["a"] == [0.0, 1.0, 2.0, 3.0]
    retyped = run(tmp_path, MEMBER="i32")
    assert retyped["frontend"] == 1 and retyped["result"] == 2 + 0.5 + 1 + 0.5
    constant = run(tmp_path, OFFSET="4.0")
    assert constant["frontend"] == 1 and constant["result"] == 2.75 + 0.5 + 1 + 4.0
