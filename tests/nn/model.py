"""NumPy models of qd.nn for the tests: values rounded the way the kernels round them, float64
references, and the tolerances a check may allow (one unit in the last place of the vector's
type, plus the f32 accumulation error of a product)."""

import numpy as np

import quadrants as qd

NP = {"f16": np.float16, "f32": np.float32}
QD = {"f16": qd.f16, "f32": qd.f32}


def rounded(a, dt):
    """a rounded to dtype name dt ('f16' / 'f32'), as float64."""
    return np.asarray(a, dtype=np.float64).astype(NP[dt]).astype(np.float64)


def eps(dt):
    """The unit roundoff of dtype name dt (half an ulp at 1)."""
    return {"f16": 2.0**-11, "f32": 2.0**-24}[dt]


def ulp(ref, dt):
    """One unit in the last place of dt at each element of ref (float64)."""
    r = np.abs(np.asarray(ref, dtype=np.float64)).astype(NP[dt])
    return np.spacing(r).astype(np.float64)


def matvec_ref(w, x, b=None):
    """The float64 product of the rounded operands, and the bound of the f32 accumulation
    error: (reference, |w| |x| + |b| scaled by the number of terms and f32's epsilon)."""
    ref = w @ x + (0.0 if b is None else b)
    mag = np.abs(w) @ np.abs(x) + (0.0 if b is None else np.abs(b))
    return ref, (w.shape[-1] + 1) * 2.0**-23 * mag


def check(got, ref, tol, what=""):
    """Every element of got within tol of ref (arrays of one shape)."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(got - ref)
    bad = ~(err <= tol)
    if bad.any():
        i = np.argwhere(bad)[0]
        raise AssertionError(
            f"{what}: {bad.sum()} of {bad.size} elements off; first at {tuple(i)}: got "
            f"{got[tuple(i)]!r}, expected {ref[tuple(i)]!r} (tolerance {np.broadcast_to(tol, ref.shape)[tuple(i)]!r})"
        )


def line_of(path, text):
    """The 1-based line of the first line of file `path` that contains `text`."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError(f"{text!r} not in {path}")
