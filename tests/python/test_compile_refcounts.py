"""Compiling kernels leaves the reference counts of Python objects as they were: a stray decref
of None in the compile-time evaluator (one per `qd.static(expr)`) once ended processes that
compiled many kernels ("deallocating None")."""

import sys

import numpy as np

import quadrants as qd

EVALS = 3000


def test_compile_time_evaluation_keeps_none_alive():
    qd.init(arch=qd.cpu, offline_cache=False)
    try:

        @qd.kernel
        def k(a: qd.types.ndarray(qd.i32, 1)):
            for _ in range(1):
                for j in qd.static(range(EVALS)):
                    a[0] += qd.static(j % 3)

        before = sys.getrefcount(None)
        a = np.zeros(1, np.int32)
        k(a)
        assert a[0] == sum(j % 3 for j in range(EVALS))
        assert sys.getrefcount(None) > before - EVALS // 3
    finally:
        qd.reset()
