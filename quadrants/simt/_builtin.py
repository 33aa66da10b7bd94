"""Kernel-scope SIMT builtins: Python functions marked ``_qd_builtin = "simt.<module>.<name>"``
that the C core lowers (csrc/frontend/lower_simt.c). Called in Python scope they raise
QuadrantsSyntaxError, like every kernel-only builtin."""

from quadrants._builtins import _kernel_only


def kernel_only(module, name, doc):
    return _kernel_only(f"simt.{module}.{name}", doc)
