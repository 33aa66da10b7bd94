"""Builds the kernel-scope functions of the qd.simt modules."""

from quadrants._builtins import _kernel_only


def primitives(group, docs):
    """{name: kernel-only builtin "simt.<group>.<name>"} for a {name: doc} table."""
    made = {}
    for name, doc in docs.items():
        function = _kernel_only(f"simt.{group}.{name}", doc)
        function.__qualname__ = function.__name__ = name
        made[name] = function
    return made
