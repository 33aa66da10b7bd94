"""The slice syntax of register tiles, turned into calls of the tile methods (``_tile.py``) when
the source of a kernel or func is read.

Only functions whose source names a tile (``Tile16x16``, ``Tile32x32``, ``qd.outer``,
``cholesky_``, ``solve_triangular_``) are rewritten -- slices of arrays mean nothing elsewhere,
and vectors and matrices keep their own slice syntax. The statements rewritten:

    t[:] = a[r0:r1, c0:c1]        t._qd_tile_load(a, r0, r1, c0, c1)
    t[:] = a[b, r0:r1, c0:c1]     t._qd_tile_load3(a, b, r0, r1, c0, c1)
    a[r0:r1, c0:c1] = t           t._qd_tile_store(a, r0, r1, c0, c1)
    a[b, r0:r1, c0:c1] = t        t._qd_tile_store3(a, b, r0, r1, c0, c1)
    v = a[r0:r1, col]             v = qd.simt._tile_ops.column(a, r0, r1, col)
    v = a[b, r0:r1, col]          v = qd.simt._tile_ops.column3(a, b, r0, r1, col)
    t -= qd.outer(u, w)           t._qd_tile_sub_outer(u, w)
    L.solve_triangular_(B)        B._qd_tile_solve_lower(L)

A column slice becomes each lane's element of the column right away (the reference defers the
load to the outer product; the values are the same); as in the reference, a name bound to one
may only be passed to ``qd.outer``. Misuses raise at that point: QuadrantsSyntaxError for a
slice without start or stop, TypeError for a column slice used as a value, other operators
with ``qd.outer`` or ``lower=False``.
"""

import ast

from quadrants._core import QuadrantsSyntaxError

_MARKERS = ("Tile16x16", "Tile32x32", "outer(", "cholesky_", "solve_triangular_")


def mentions_tiles(text):
    return any(marker in text for marker in _MARKERS)


def _where(node, filename):
    return f"{filename}:{getattr(node, 'lineno', 0)}:{getattr(node, 'col_offset', 0) + 1}"


def _is_outer(node):
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "outer") or (
        isinstance(f, ast.Name) and f.id == "outer")


def _ops_call(name, args, like):
    """qd.simt._tile_ops.<name>(*args)."""
    func = ast.Attribute(
        value=ast.Attribute(
            value=ast.Attribute(value=ast.Name(id="qd", ctx=ast.Load()), attr="simt",
                                ctx=ast.Load()),
            attr="_tile_ops", ctx=ast.Load()),
        attr=name, ctx=ast.Load())
    return ast.copy_location(ast.Call(func=func, args=args, keywords=[]), like)


def _method_stmt(obj, name, args, like):
    call = ast.Call(func=ast.Attribute(value=obj, attr=name, ctx=ast.Load()), args=args,
                    keywords=[])
    return ast.copy_location(ast.Expr(value=ast.copy_location(call, like)), like)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, filename):
        self.filename = filename

    def _slices(self, sub):
        """(batch or None, [(lo, hi) or index expr ...]) of a subscript with >= 2 indices and at
        least one slice; None for other subscripts."""
        index = sub.slice
        if not isinstance(index, ast.Tuple) or len(index.elts) not in (2, 3):
            return None
        if not any(isinstance(e, ast.Slice) for e in index.elts):
            return None
        parts = []
        for e in index.elts:
            if isinstance(e, ast.Slice):
                if e.lower is None or e.upper is None:
                    raise QuadrantsSyntaxError(
                        f"{_where(sub, self.filename)}: tile slices: both start and stop indices "
                        "are required")
                if e.step is not None:
                    raise QuadrantsSyntaxError(
                        f"{_where(sub, self.filename)}: tile slices take no step")
                parts.append((e.lower, e.upper))
            else:
                parts.append(e)
        return parts

    def visit_Assign(self, node):
        self.generic_visit(node)
        if len(node.targets) != 1:
            return node
        target, value = node.targets[0], node.value
        # t[:] = a[...]
        if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice)
                and target.slice.lower is None and target.slice.upper is None
                and isinstance(value, ast.Subscript)):
            parts = self._slices(value)
            if parts is not None:
                return self._transfer(target.value, value.value, parts, "load", node)
        # a[...] = t
        if isinstance(target, ast.Subscript):
            parts = self._slices(target)
            if parts is not None:
                return self._transfer(value, target.value, parts, "store", node)
        # v = a[r0:r1, col]
        if isinstance(value, ast.Subscript):
            parts = self._slices(value)
            if parts is not None and not isinstance(parts[-1], tuple):
                batch = parts[:-2] if len(parts) == 3 else []
                lo, hi = parts[-2] if isinstance(parts[-2], tuple) else (None, None)
                if lo is None:
                    raise QuadrantsSyntaxError(
                        f"{_where(value, self.filename)}: a column slice is a[r0:r1, col]")
                name = "column3" if batch else "column"
                node.value = _ops_call(name, [value.value] + batch + [lo, hi, parts[-1]], value)
                return node
        return node

    def _transfer(self, tile, array, parts, kind, like):
        if len(parts) == 2:
            (r0, r1), (c0, c1) = self._pair(parts, like)
            return _method_stmt(tile, f"_qd_tile_{kind}", [array, r0, r1, c0, c1], like)
        if isinstance(parts[0], tuple):
            raise QuadrantsSyntaxError(
                f"{_where(like, self.filename)}: a 3-D tile slice is a[b, r0:r1, c0:c1]")
        (r0, r1), (c0, c1) = self._pair(parts[1:], like)
        return _method_stmt(tile, f"_qd_tile_{kind}3", [array, parts[0], r0, r1, c0, c1], like)

    def _pair(self, parts, like):
        if not all(isinstance(p, tuple) for p in parts):
            raise QuadrantsSyntaxError(
                f"{_where(like, self.filename)}: a tile is loaded from or stored to "
                "a[r0:r1, c0:c1] (both dimensions sliced)")
        return parts

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if _is_outer(node.value):
            if not isinstance(node.op, ast.Sub):
                raise TypeError(
                    f"{_where(node, self.filename)}: a tile takes qd.outer(...) only with -=")
            if len(node.value.args) != 2 or node.value.keywords:
                raise TypeError(f"{_where(node, self.filename)}: qd.outer(a, b) takes two vectors")
            target = ast.copy_location(
                ast.Name(id=node.target.id, ctx=ast.Load()) if isinstance(node.target, ast.Name)
                else node.target, node.target)
            return _method_stmt(target, "_qd_tile_sub_outer", list(node.value.args), node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if _is_outer(node.left) or _is_outer(node.right):
            raise TypeError(
                f"{_where(node, self.filename)}: qd.outer does not support composition; use "
                "tile -= qd.outer(a, b) once per product")
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "solve_triangular_":
            if len(node.args) != 1:
                raise TypeError(
                    f"{_where(node, self.filename)}: L.solve_triangular_(B, lower=True)")
            for kw in node.keywords:
                if kw.arg != "lower" or not (isinstance(kw.value, ast.Constant)
                                             and kw.value.value is True):
                    raise TypeError(
                        f"{_where(node, self.filename)}: solve_triangular_ supports lower=True "
                        "only")
            call = ast.Call(func=ast.Attribute(value=node.args[0], attr="_qd_tile_solve_lower",
                                               ctx=ast.Load()), args=[f.value], keywords=[])
            return ast.copy_location(call, node)
        return node


def _is_column_slice(rewriter, value):
    if not isinstance(value, ast.Subscript):
        return False
    parts = rewriter._slices(value)
    return parts is not None and not isinstance(parts[-1], tuple)


def _check_column_uses(funcdef, rewriter):
    """A name bound only to column slices may appear only as an argument of qd.outer: the
    reference's column slice is a deferred proxy that raises TypeError when used as a value."""
    columns, others = set(), set()
    for node in ast.walk(funcdef):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) else [])
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    column = (isinstance(node, ast.Assign) and target is name
                              and _is_column_slice(rewriter, node.value))
                    (columns if column else others).add(name.id)
    columns -= others
    if not columns:
        return
    allowed = set()
    for node in ast.walk(funcdef):
        if _is_outer(node):
            allowed.update(id(a) for a in node.args if isinstance(a, ast.Name))
    for node in ast.walk(funcdef):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                and node.id in columns and id(node) not in allowed):
            raise TypeError(
                f"{_where(node, rewriter.filename)}: column slice '{node.id}' can only be used "
                "as an argument of qd.outer(...)")


def rewrite(funcdef, filename):
    """The function definition with tile syntax turned into tile method calls."""
    rewriter = _Rewriter(filename)
    _check_column_uses(funcdef, rewriter)
    return ast.fix_missing_locations(rewriter.visit(funcdef))
