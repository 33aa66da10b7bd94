"""Shared helpers of the struct tests: fresh random inputs (no fixed seed), error locations."""

import numpy as np

rng = np.random.default_rng()


def line_of(path, marker):
    """1-based line number of the unique line of file `path` that contains `marker`."""
    with open(path) as f:
        hits = [n for n, text in enumerate(f, 1) if marker in text and "check_line(" not in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def check_line(exc, path, marker):
    """The error's text names path:line of the line holding `marker`, and shows that line."""
    text = str(exc)
    n = line_of(path, marker)
    assert f"{path}:{n}" in text, text
    with open(path) as f:
        source = f.read().splitlines()[n - 1]
    assert source.strip() in text, text
