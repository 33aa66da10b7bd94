"""Shrinking of a generated kernel module: a greedy, deterministic reduction of its source to a
smaller one on which a predicate still holds.

    shrink(source, still_fails, budget) -> smaller source

`still_fails(text)` runs a candidate and says whether it still shows the behaviour being reduced
(the same category of disagreement, say). Candidates are tried in a fixed order, the coarse ones
first:
    1. delete a statement (of the kernel, of a loop or branch, of a `@qd.func`), or a whole
       `@qd.func`; an emptied block becomes `pass`;
    2. replace an `if` by one of its branches, a `for`/`while` by its body;
    3. shrink loop bounds: `range(a, b)` towards `range(a, a)`, `while w < K` towards `K = 0`,
       the kernel's `range(N)` towards `range(1)`;
    4. replace an expression by one of its operands, then by the literal 0 or 1; a literal by a
       smaller one.
An accepted candidate is kept and the search goes on from the same position; passes repeat until
one changes nothing or `budget` calls of `still_fails` are spent.
"""

import ast

_STMT_FIELDS = ("body", "orelse")


def _nodes(tree):
    return list(ast.walk(tree))


def _stmt_lists(tree):
    """[(owner index, field)] of every statement list inside a function."""
    out = []
    for idx, node in enumerate(_nodes(tree)):
        if isinstance(node, ast.Module):
            continue
        for field in _STMT_FIELDS:
            lst = getattr(node, field, None)
            if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                out.append((idx, field))
    return out


def _is_pass_only(lst):
    return len(lst) == 1 and isinstance(lst[0], ast.Pass)


def _replaceable(tree):
    """[(parent index, field, list position or None, node)] of expressions that may be replaced:
    not assignment targets, called names, annotations, decorators or subscripted containers."""
    out = []
    nodes = _nodes(tree)
    skip = set()  # annotations, decorators and loop bounds (step 3 lowers them) stay as they are
    for node in nodes:
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "range":
            skip.update(id(n) for a in node.args for n in ast.walk(a))
        if isinstance(node, (ast.arg, ast.FunctionDef)):
            for sub in [node.annotation if isinstance(node, ast.arg) else node.returns] + \
                    (node.decorator_list if isinstance(node, ast.FunctionDef) else []):
                if sub is not None:
                    skip.update(id(n) for n in ast.walk(sub))
    inside = set()  # module-level code (fields, constants) stays as it is
    for node in nodes:
        if isinstance(node, ast.FunctionDef):
            for st in node.body:
                inside.update(id(n) for n in ast.walk(st))
    for pidx, parent in enumerate(nodes):
        if id(parent) in skip or id(parent) not in inside or isinstance(parent, (ast.Module, ast.FunctionDef, ast.arguments, ast.arg,
                                                     ast.Attribute)):
            continue
        for field, value in ast.iter_fields(parent):
            if isinstance(parent, ast.Call) and (field != "args" or getattr(parent.func, "id", None) == "range"):
                continue
            if isinstance(parent, ast.Subscript) and field == "value":
                continue
            if isinstance(parent, (ast.Assign, ast.AugAssign)) and field in ("target", "targets"):
                continue
            if isinstance(parent, ast.For) and field in ("target", "iter"):
                continue
            items = value if isinstance(value, list) else [value]
            for pos, child in enumerate(items):
                if isinstance(child, ast.expr) and not isinstance(getattr(child, "ctx", None), ast.Store):
                    out.append((pidx, field, pos if isinstance(value, list) else None, child))
    return out


def _operands(node):
    """Sub-expressions that may stand for `node`."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.Compare):
        return [node.left] + list(node.comparators)
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.Call):
        return [a for a in node.args if not isinstance(a, ast.Attribute)]
    if isinstance(node, (ast.List, ast.Tuple)):
        return list(node.elts)
    return []


def _literal_options(node):
    """Literals simpler than `node`: 0 before 1 before anything else, so that replacements
    never cycle."""
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return []
        return [o for o in (0, 1) if o != v and not (v == 1 and o == 1)][: 1 if v == 1 else 2] if v != 0 else []
    return [0, 1]


def _candidates(tree):
    """Every edit of `tree`, coarse ones first, as tuples that `_apply` understands."""
    out = []
    nodes = _nodes(tree)
    # 1. statements and whole funcs
    for idx, node in enumerate(nodes):
        if isinstance(node, ast.Module):
            for k, st in enumerate(node.body):
                if isinstance(st, ast.FunctionDef) and st.name != "kern":
                    out.append(("del", idx, "body", k))
    for idx, field in _stmt_lists(tree):
        lst = getattr(nodes[idx], field)
        if _is_pass_only(lst):
            continue
        for k in range(len(lst)):
            out.append(("del", idx, field, k))
    # 2. a compound statement by one of its blocks
    for idx, field in _stmt_lists(tree):
        for k, st in enumerate(getattr(nodes[idx], field)):
            if isinstance(st, ast.If):
                out.append(("inline", idx, field, k, "body"))
                if st.orelse:
                    out.append(("inline", idx, field, k, "orelse"))
            elif isinstance(st, (ast.For, ast.While)):
                out.append(("inline", idx, field, k, "body"))
    # 3. loop bounds
    for idx, node in enumerate(nodes):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
                and getattr(node.iter.func, "id", None) == "range":
            out.append(("range", idx))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt) \
                and isinstance(node.comparators[0], ast.Constant) and isinstance(node.comparators[0].value, int) \
                and node.comparators[0].value > 0:
            out.append(("bound", idx))
    # 4. expressions
    for pidx, field, pos, child in _replaceable(tree):
        cidx = next(k for k, n in enumerate(nodes) if n is child)
        for j in range(len(_operands(child))):
            out.append(("operand", pidx, field, pos, cidx, j))
        for v in _literal_options(child):
            out.append(("literal", pidx, field, pos, v))
    return out


def _set_child(parent, field, pos, new):
    if pos is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[pos] = new


def _apply(source, edit):
    """The source after `edit`, or None when the edit does not apply."""
    tree = ast.parse(source)
    nodes = _nodes(tree)
    kind = edit[0]
    if kind == "del":
        _, idx, field, k = edit
        lst = getattr(nodes[idx], field)
        del lst[k]
        if not lst and not isinstance(nodes[idx], ast.Module):
            if field == "orelse":
                pass
            else:
                lst.append(ast.Pass())
    elif kind == "inline":
        _, idx, field, k, which = edit
        lst = getattr(nodes[idx], field)
        lst[k:k + 1] = [s for s in getattr(lst[k], which) if not isinstance(s, ast.Pass)] or [ast.Pass()]
    elif kind == "range":
        call = nodes[edit[1]].iter
        args = call.args
        if len(args) == 1:
            a = args[0]
            if isinstance(a, ast.Name):
                call.args = [ast.Constant(1)]
            elif isinstance(a, ast.Constant) and isinstance(a.value, int) and a.value > 0:
                call.args = [ast.Constant(a.value - 1)]
            else:
                return None
        elif len(args) == 2:
            lo, hi = (ast.literal_eval(x) if _is_literal(x) else None for x in args)
            if lo is None or hi is None or hi <= lo:
                return None
            call.args = [args[0], _num(hi - 1)]
        else:
            return None
    elif kind == "bound":
        c = nodes[edit[1]].comparators[0]
        c.value -= 1
    elif kind == "operand":
        _, pidx, field, pos, cidx, j = edit
        _set_child(nodes[pidx], field, pos, _operands(nodes[cidx])[j])
    elif kind == "literal":
        _, pidx, field, pos, v = edit
        _set_child(nodes[pidx], field, pos, _num(v))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


def _is_literal(node):
    try:
        return isinstance(ast.literal_eval(node), int)
    except ValueError:
        return False


def _num(v):
    return ast.Constant(v) if v >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-v))


def shrink(source, still_fails, budget=200):
    """A smaller source on which `still_fails` holds (the given one when none is found);
    `still_fails(source)` is assumed true. Deterministic for a deterministic `still_fails`."""
    current = ast.unparse(ast.parse(source)) + "\n"
    calls = 0
    if current != source:
        calls += 1
        if not still_fails(current):
            current = source
    pos = 0
    changed = False
    while calls < budget:
        edits = _candidates(ast.parse(current))
        if pos >= len(edits):
            if not changed:
                break
            pos, changed = 0, False
            continue
        try:
            cand = _apply(current, edits[pos])
        except (ValueError, TypeError, AttributeError, IndexError, SyntaxError):
            cand = None
        if cand is None or cand == current or len(cand) > len(current) + 8:
            pos += 1
            continue
        calls += 1
        if still_fails(cand):
            current, changed = cand, True
        else:
            pos += 1
    return current
