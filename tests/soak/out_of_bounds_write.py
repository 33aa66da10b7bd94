"""A kernel that writes one element past the end of a NumPy array, on purpose.

`make valgrind` runs this first and expects Memcheck to report the invalid write inside the
generated code: it proves that the machine code the JIT emits is instrumented, so that a clean
run of the tests means something. Natively the stray 4 bytes land in malloc padding and the
program prints "ran".
"""

import os
import sys

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

import quadrants as qd  # noqa: E402

qd.init(arch=qd.cpu, offline_cache=False)


@qd.kernel
def fill(a: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i32):
    for i in range(n):
        a[i] = 1.0


a = np.zeros(8, dtype=np.float32)
fill(a, a.shape[0] + 1)
print("ran")
