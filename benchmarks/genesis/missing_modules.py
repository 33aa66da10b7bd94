"""Prelude for the Genesis benchmark (plane_box.py --prelude): registers, for the modules of the
reference that this package does not have yet, a module that names what Genesis imports at
import time and raises NotImplementedError when called. The plane-and-box scene calls none of
them; a scene that did would fail with that error, not run something else.

Today: ``quadrants.algorithms`` (``sort``, ``sort_scratch_slots``; Genesis's BVH imports them
in genesis/engine/bvh.py).
"""

import importlib
import sys
import types

import quadrants


def _missing(module, name):
    def call(*args, **kwargs):
        raise NotImplementedError(f"{module}.{name} is not implemented by this package yet")

    call.__name__ = call.__qualname__ = name
    return call


def _register(module, names):
    try:
        importlib.import_module(module)
        return
    except ImportError:
        pass
    placeholder = types.ModuleType(module, "not implemented by this package yet")
    for name in names:
        setattr(placeholder, name, _missing(module, name))
    sys.modules[module] = placeholder
    setattr(quadrants, module.rsplit(".", 1)[1], placeholder)


_register("quadrants.algorithms", ("sort", "sort_scratch_slots"))
