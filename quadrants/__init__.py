"""quadrants: GPU and CPU kernels written in Python, compiled by a C core.

    import quadrants as qd

The compiler and runtime live in the extension module ``quadrants._core``; this package is the
thin Python layer in front of it. Importing it stays cheap: no compilation happens until a
kernel is first called.
"""

from quadrants._version import __version__
from quadrants import _core

# Exception classes (the reference's names and hierarchy). QuadrantsIndexError is not exported
# here, as in the reference; it stays reachable as quadrants._core.QuadrantsIndexError.
from quadrants._core import (
    QuadrantsAssertionError,
    QuadrantsCompilationError,
    QuadrantsNameError,
    QuadrantsRuntimeError,
    QuadrantsRuntimeTypeError,
    QuadrantsSyntaxError,
    QuadrantsTypeError,
)

__all__ = [
    "__version__",
    "QuadrantsAssertionError",
    "QuadrantsCompilationError",
    "QuadrantsNameError",
    "QuadrantsRuntimeError",
    "QuadrantsRuntimeTypeError",
    "QuadrantsSyntaxError",
    "QuadrantsTypeError",
]
