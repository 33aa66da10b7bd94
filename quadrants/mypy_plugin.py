"""mypy plugin for quadrants: ``x: qd.types.NDArray[qd.f32, 1]`` is accepted as an ndarray.

Enable it in the configuration of mypy::

    [mypy]
    plugins = quadrants.mypy_plugin

(``[tool.mypy] plugins = ["quadrants.mypy_plugin"]`` in pyproject.toml). mypy takes a subscript
of a class as generic type arguments and rejects a dtype value and an integer there; the plugin
reads ``NDArray[dtype, ndim]`` (and ``qd.Ndarray[...]``) as the ndarray class, which is what
the parameter holds. Only mypy imports this module (docs/typing.md).
"""

from mypy.plugin import AnalyzeTypeContext, Plugin
from mypy.types import Type

_NDARRAY = "quadrants._ndarray.Ndarray"


def _ndarray_type(ctx: AnalyzeTypeContext) -> Type:
    # The subscript (dtype, ndim) is checked by quadrants when the kernel is compiled.
    return ctx.api.named_type(_NDARRAY, [])


class QuadrantsPlugin(Plugin):
    def get_type_analyze_hook(self, fullname: str):  # type: ignore[no-untyped-def]
        if fullname == _NDARRAY:
            return _ndarray_type
        return None


def plugin(version: str) -> type[Plugin]:
    return QuadrantsPlugin
