"""The public names of the package stay as recorded in namespace.json: the kernel-scope builtins
are listed from the C core's tables (quadrants._core.BUILTINS, csrc/frontend/builtins.def),
and this pins what those lists produce. After an intended change to the public namespace,
update namespace.json in the same commit."""

import json
import pathlib

import quadrants as qd
from quadrants import _builtins, _core, _hints, _linalg

RECORDED = json.loads((pathlib.Path(__file__).parent / "namespace.json").read_text())


def test_dir_unchanged():
    assert [n for n in dir(qd) if not n.startswith("_")] == RECORDED["dir(quadrants)"]


def test_all_unchanged():
    assert list(qd.__all__) == RECORDED["quadrants.__all__"]
    assert list(_builtins.__all__) == RECORDED["quadrants._builtins.__all__"]
    assert list(_hints.__all__) == RECORDED["quadrants._hints.__all__"]
    assert list(_linalg.__all__) == RECORDED["quadrants._linalg.__all__"]


def test_exported_builtins_are_marked():
    for module in (_builtins, _hints, _linalg):
        for name in module.__all__:
            assert getattr(qd, name) is getattr(module, name)
            assert getattr(module, name)._qd_builtin == name


def test_python_builtins_are_in_the_table():
    """Every function of the builtin modules marked for the C core is a row of builtins.def."""
    rows = {name for name, flags in _core.BUILTINS}
    for module in (_builtins, _hints, _linalg):
        for value in vars(module).values():
            name = getattr(value, "_qd_builtin", None)
            if callable(value) and isinstance(name, str):
                assert name in rows, name


def test_table_flags():
    rows = dict(_core.BUILTINS)
    assert rows["sqrt"] == ("elementwise", "exported")
    assert rows["range"] == ()
    assert "hint" in rows["assume_in_range"] and "linalg" in rows["svd"]


def test_simt_modules_are_the_table():
    """qd.simt.{block,grid,subgroup,warp} define exactly the rows of csrc/frontend/simt.def."""
    from quadrants.simt import _builtin

    for name, kind, ival, deprecated, doc in _core.SIMT_BUILTINS:
        module_name, _, short = name.partition(".")
        fn = getattr(getattr(qd.simt, module_name), short)
        assert fn._qd_builtin == f"simt.{name}"
        assert fn.__doc__.startswith(doc)
        assert (deprecated is None) or ("deprecated" in doc), name
        if kind == "CONST":
            assert fn() == ival
    for module_name in ("block", "grid", "subgroup", "warp"):
        module = getattr(qd.simt, module_name)
        assert set(_builtin.define(module_name, {})) <= set(module.__all__)


def test_matrix_methods_exist_on_the_host():
    """Every method a kernel can call on a vector or matrix (matrix_methods.def) exists on the
    Python-scope Matrix too."""
    assert "norm" in _core.MATRIX_METHODS
    for name in _core.MATRIX_METHODS:
        assert callable(getattr(qd.Matrix, name)), name


def test_builtin_modules_define_only_their_exports():
    """The public names of each builtin module are exactly its __all__. pyright cannot evaluate a
    computed __all__ and reads ``from module import *`` as every public name of the module, so a
    public helper there (an imported module, a class) would shadow a package attribute such as
    ``qd.types`` for it; the helpers are private (``_np``, ``_NDRange``) instead."""
    for module in (_builtins, _hints, _linalg):
        public = sorted(n for n in vars(module) if not n.startswith("_"))
        assert public == sorted(module.__all__), module.__name__


def test_nn_module_is_the_table():
    """qd.nn defines exactly the rows of csrc/frontend/nn.def as kernel-scope builtins, beside
    its host functions."""
    import inspect

    names = []
    for name, signature, doc in _core.NN_BUILTINS:
        fn = getattr(qd.nn, name)
        assert fn._qd_builtin == f"nn.{name}"
        assert fn.__doc__.startswith(doc)
        assert str(inspect.signature(fn)) == f"({signature})"
        names.append(name)
    assert sorted(names + ["MatrixView", "pack", "unpack", "view"]) == qd.nn.__all__
