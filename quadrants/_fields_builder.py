"""``qd.FieldsBuilder``: a field tree of its own, built like ``qd.root`` and finalized.

    fb = qd.FieldsBuilder()
    fb.dense(qd.ij, (n, m)).place(x, y)
    tree = fb.finalize()   # an SNodeTree
    ...
    tree.destroy()         # the fields of the tree are released

The builder is a root level (quadrants/_field.py ``SNode``): ``dense`` and ``place`` work as on
``qd.root`` and give fields their memory at once, so they are usable before ``finalize``, which
closes the builder (later ``dense``/``place``/``finalize`` raise QuadrantsRuntimeError).
``SNodeTree.destroy()`` releases every field placed under the builder; using one afterwards
raises QuadrantsRuntimeError. Sparse levels raise NotImplementedError, as under ``qd.root``.
"""

import itertools

from quadrants import _field, _runtime
from quadrants._core import QuadrantsRuntimeError

_tree_ids = itertools.count(0)


class SNodeTree:
    """A finalized field tree: ``id`` and ``destroy()``."""

    def __init__(self, builder):
        self.id = next(_tree_ids)
        self._builder = builder
        self._destroyed = False

    @property
    def destroyed(self):
        return self._destroyed

    def destroy(self):
        """Releases the memory of every field of the tree."""
        if self._destroyed:
            raise QuadrantsRuntimeError("SNode tree has been destroyed")
        self._destroyed = True
        root = self._builder.root
        for live in list(_field._live_fields):
            node = getattr(live, "_snode", None)
            while node is not None and node is not root:
                node = node._parent
            if node is root and live._snode is not None:
                live._release()
                live._snode = None
                live._tree_destroyed = True


class FieldsBuilder:
    """Builds a field tree apart from ``qd.root`` (see the module docstring)."""

    def __init__(self):
        _runtime.require_init()
        self.root = _field.SNode(None, (), ())
        self._finalized = False

    @property
    def finalized(self):
        return self._finalized

    def _check_open(self):
        if self._finalized:
            raise QuadrantsRuntimeError("FieldsBuilder finalized")

    def dense(self, axes, dimensions):
        """A dense level under the builder's root (as ``qd.root.dense``)."""
        self._check_open()
        return self.root.dense(axes, dimensions)

    def place(self, *fields, offset=None):
        """Places `fields` directly under the root (0-d fields). Returns the builder."""
        self._check_open()
        self.root.place(*fields, offset=offset)
        return self

    def _sparse(kind):  # noqa: N805 (class-body helper)
        def method(self, *args, **kwargs):
            self._check_open()
            return getattr(self.root, kind)(*args, **kwargs)

        method.__name__ = kind
        return method

    pointer = _sparse("pointer")
    bitmasked = _sparse("bitmasked")
    dynamic = _sparse("dynamic")
    hash = _sparse("hash")
    del _sparse

    def lazy_grad(self):
        raise NotImplementedError(
            "FieldsBuilder.lazy_grad is not provided: create fields with needs_grad=True"
        )

    def lazy_dual(self):
        raise NotImplementedError(
            "FieldsBuilder.lazy_dual is not provided: create fields with needs_dual=True"
        )

    def quant_array(self, *args, **kwargs):
        raise NotImplementedError("FieldsBuilder.quant_array: quantized types are not supported")

    def deactivate_all(self):
        """Deactivates sparse cells: nothing to do, every level here is dense."""
        self._check_open()

    def finalize(self, raise_warning=True):
        """Closes the builder; returns its SNodeTree."""
        self._check_open()
        self._finalized = True
        return SNodeTree(self)


__all__ = ["FieldsBuilder", "SNodeTree"]
