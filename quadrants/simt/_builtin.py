"""Kernel-scope SIMT builtins: Python functions marked ``_qd_builtin = "simt.<module>.<name>"``
that the C core lowers (csrc/frontend/lower_simt.c). Their names, docstrings and compile-time
constants come from the C table (csrc/frontend/simt.def, exported as
``quadrants._core.SIMT_BUILTINS``). Called in Python scope they raise QuadrantsSyntaxError, like
every kernel-only builtin; the compile-time constants (``subgroup.group_size()``) also work on the
host."""

from quadrants import _core
from quadrants._builtins import _kernel_only


def _subgroup_size(full_name, log2, doc):
    """group_size() / log2_group_size() on the host: the arch's subgroup size (the kernels get
    the same value from the core)."""

    def constant():
        from quadrants import _runtime

        size = _runtime.subgroup_size()
        return size.bit_length() - 1 if log2 else size

    constant.__name__ = constant.__qualname__ = full_name.rsplit(".", 1)[1]
    constant.__doc__ = doc
    constant._qd_builtin = f"simt.{full_name}"
    return constant


def define(module, namespace):
    """Defines the builtins of qd.simt.<module> in namespace; returns their public names."""
    public = []
    for name, kind, ival, _deprecated, doc in _core.SIMT_BUILTINS:
        owner, _, short = name.partition(".")
        if owner != module:
            continue
        if kind == "SUBGROUP_SIZE":
            namespace[short] = _subgroup_size(name, ival, doc)
        else:
            namespace[short] = _kernel_only(f"simt.{name}", doc)
        if not short.startswith("_"):
            public.append(short)
    return public
