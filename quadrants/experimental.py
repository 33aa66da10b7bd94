"""``qd.experimental``: names kept for programs written when they were experimental.

``qd.experimental.real_func`` is ``qd.real_func`` with a DeprecationWarning (it is no longer
experimental).
"""

import warnings

from quadrants._kernel import real_func as _real_func


def real_func(fn):
    """Deprecated spelling of ``qd.real_func``."""
    warnings.warn(
        "qd.experimental.real_func is deprecated because it is no longer experimental. Use "
        "qd.real_func instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return _real_func(fn)


__all__ = ["real_func"]
