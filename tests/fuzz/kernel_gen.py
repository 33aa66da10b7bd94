"""Random kernel sources for the source fuzzer, with a model of their results.

`make_case(seed)` returns one case: the text of a Python module defining a `@qd.kernel` (and maybe
`@qd.func` helpers and global fields), the arguments to call it with, and -- for a well-typed
kernel whose semantics the model below covers exactly -- the expected results. A case is either
valid (generated inside the supported subset) or a mutant (one deliberate defect: an unsupported
statement, a bad expression, a bad signature or bad call arguments), which the compiler must reject
cleanly or, where the defect is harmless, run.

The generator builds a small typed tree (expressions and statements), renders it to source and
evaluates it with `Model`, an interpreter with the kernel language's semantics (spec/api.md 0.4):
literals are i32/f32, binary operators promote (a real type wins, more bits win, unsigned wins at
equal bits), integers wrap, `//` and `%` floor, float-to-int casts truncate. Where the model is not
exact -- a float comparison or truncation close to a tie, a value overflowing its type -- it raises
`Unchecked` and the case is run without a result check. Floats are compared with a tolerance
relative to the largest float magnitude seen while evaluating (fast-math may reassociate).

The parallel loop is modelled serially: each iteration writes only its own index of the output
arrays and fields, and the only shared writes are atomic adds, whose order does not change an
integer sum.
"""

import math
import random
import struct

N = 8  # length of every array and of the parallel loop

INT_TYPES = {"i32": (32, True), "i64": (64, True), "u32": (32, False)}
FLOAT_TYPES = ("f32", "f64")
SCALAR_TYPES = ("i32", "i64", "u32", "f32", "f64")
TOL = {"f32": 1e-4, "f64": 1e-9}
NP_DTYPE = {"i32": "int32", "i64": "int64", "u32": "uint32", "f32": "float32", "f64": "float64"}


class Unchecked(Exception):
    """The model cannot predict this case exactly; run it without checking results."""


def bits(ty):
    return INT_TYPES[ty][0] if ty in INT_TYPES else (32 if ty == "f32" else 64)


def promote(a, b):
    """Binary-operator result type (spec 0.4 promoted_type)."""
    if a == b:
        return a
    fa, fb = a in FLOAT_TYPES, b in FLOAT_TYPES
    if fa != fb:
        return a if fa else b
    if fa:
        return a if bits(a) > bits(b) else b
    if bits(a) != bits(b):
        return a if bits(a) > bits(b) else b
    return a if not INT_TYPES[a][1] else b


def wrap(v, ty):
    n, signed = INT_TYPES[ty]
    v &= (1 << n) - 1
    if signed and v >= 1 << (n - 1):
        v -= 1 << n
    return v


def to_f32(x):
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        raise Unchecked("f32 overflow")


# --- the typed tree --------------------------------------------------------------------------
# Expressions are tuples whose first item is the kind and whose last item is the type:
#   ("lit", text, value, ty)      ("var", name, ty)          ("bin", op, a, b, ty)
#   ("un", op, a, ty)             ("cmp", op, a, b, "u1")    ("cast", a, ty)
#   ("math", name, [args], ty)    ("call", func, [args], ty) ("ifexp", c, a, b, ty)
#   ("select", c, a, b, ty)       ("load", array, index, ty) ("vlit", [elems], vty)
#   ("vidx", v, k, ty)            ("vdot", v, w, ty)         ("vsum", v, ty)
#   ("vbin", op, v, w, vty)       ("raw", text, ty)   -- a mutation's text, not modelled
# Vector types are ("vec", element type, length).


def ety(e):
    return e[-1]


def is_plain(e):
    return e[0] == "lit" and not e[1].startswith("qd.")


def unpure(e, *children):
    """`e` with its first child typed (qd.i32(3)) when every child is a plain literal: Python
    itself would fold an operation on plain literals, with unbounded ints and f64 floats."""
    if not children or not all(is_plain(c) for c in children):
        return e
    c = children[0]
    typed = ("lit", f"qd.{c[3]}({c[2]!r})", c[2], c[3])
    return tuple(typed if x is c else x for x in e)


def render(e):
    k = e[0]
    if k == "lit":
        return e[1]
    if k == "var":
        return e[1]
    if k == "raw":
        return e[1]
    if k == "bin":
        return f"({render(e[2])} {e[1]} {render(e[3])})"
    if k == "un":
        if e[1] == "abs":
            return f"abs({render(e[2])})"
        return f"({e[1]}{render(e[2])})"
    if k == "cmp":
        return f"({render(e[2])} {e[1]} {render(e[3])})"
    if k == "cast":
        return f"qd.cast({render(e[1])}, qd.{e[2]})"
    if k == "math":
        return f"qd.{e[1]}({', '.join(render(a) for a in e[2])})"
    if k == "call":
        return f"{e[1].name}({', '.join(render(a) for a in e[2])})"
    if k == "ifexp":
        return f"({render(e[2])} if {render(e[1])} else {render(e[3])})"
    if k == "select":
        return f"qd.select({render(e[1])}, {render(e[2])}, {render(e[3])})"
    if k == "load":
        return f"{e[1]}[{render(e[2])}]"
    if k == "vlit":
        return f"qd.Vector([{', '.join(render(a) for a in e[1])}])"
    if k == "vidx":
        return f"{render(e[1])}[{e[2]}]"
    if k == "vdot":
        return f"{render(e[1])}.dot({render(e[2])})"
    if k == "vsum":
        return f"{render(e[1])}.sum()"
    if k == "vbin":
        return f"({render(e[2])} {e[1]} {render(e[3])})"
    raise ValueError(k)


class Func:
    """A generated @qd.func: typed parameters, a body and a returned expression."""

    def __init__(self, name, params, ret_ty):
        self.name, self.params, self.ret_ty = name, params, ret_ty
        self.body, self.ret = [], None


# Statements: ("new", name, e) ("set", name, e) ("aug", name, op, e) ("if", c, body, orelse)
# ("for", var, lo, hi, body) ("while", counter, limit, body) ("break",) ("continue",)
# ("store", array, index, e) ("atomic", array, e) ("rawstmt", [lines]).


# --- the model -------------------------------------------------------------------------------


class Break(Exception):
    pass


class Continue(Exception):
    pass


class Model:
    """Evaluates the typed tree with the kernel language's semantics."""

    def __init__(self, arrays, lenient=False):
        self.arrays = arrays  # name -> (element type, list of values)
        # lenient: float comparisons and truncations near a tie go the way double arithmetic
        # says instead of stopping the model (used only to find undefined behaviour on the path)
        self.lenient = lenient
        self.scale = 1.0
        self.steps = 0
        self.notes = set()  # undefined behaviour met on the way (float_to_int_out_of_range)

    def fl(self, v, ty):
        if ty == "f32":
            v = to_f32(v)
        if not math.isfinite(v) or abs(v) > (1e30 if ty == "f32" else 1e200):
            raise Unchecked("float overflow")
        if abs(v) > self.scale:
            self.scale = abs(v)
        return v

    def conv(self, v, src, dst):
        """Value conversion of a cast, an assignment or a parameter pass."""
        if isinstance(dst, tuple):
            return [self.conv(x, src[1], dst[1]) for x in v]
        if dst == "u1":
            return 1 if v != 0 else 0
        if dst in FLOAT_TYPES:
            return self.fl(float(v), dst)
        if src in FLOAT_TYPES:
            n, signed = INT_TYPES[dst]
            t = math.trunc(v)
            lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
            if not lo <= t <= hi:
                self.notes.add("float_to_int_out_of_range")
                raise Unchecked("float to int overflow")
            near = round(v)
            if near != v and abs(v - near) <= TOL[src] * self.scale and not self.lenient:
                raise Unchecked("truncation near a tie")
            return t
        return wrap(v, dst)

    def tie(self, a, b, ty):
        if ty in FLOAT_TYPES and a != b and abs(a - b) <= TOL[ty] * self.scale and not self.lenient:
            raise Unchecked("float comparison near a tie")

    def ev(self, e, env):
        k = e[0]
        ty = e[-1]
        if k == "lit":
            return e[2]
        if k == "var":
            return env[e[1]]
        if k == "raw":
            raise Unchecked("raw expression")
        if k == "bin":
            op, a, b = e[1], e[2], e[3]
            av = self.conv(self.ev(a, env), ety(a), ty)
            bv = self.conv(self.ev(b, env), ety(b), ty)
            if ty in FLOAT_TYPES:
                r = {"+": lambda: av + bv, "-": lambda: av - bv, "*": lambda: av * bv,
                     "/": lambda: av / bv}[op]()
                return self.fl(r, ty)
            if op in ("<<", ">>"):
                bv = self.ev(b, env)
                av = self.ev(a, env)
                return wrap(av << bv, ty) if op == "<<" else wrap(av >> bv, ty)
            r = {"+": lambda: av + bv, "-": lambda: av - bv, "*": lambda: av * bv,
                 "//": lambda: av // bv, "%": lambda: av % bv, "&": lambda: av & bv,
                 "|": lambda: av | bv, "^": lambda: av ^ bv}[op]()
            return wrap(r, ty)
        if k == "un":
            v = self.ev(e[2], env)
            if ty in FLOAT_TYPES:
                return self.fl(-v if e[1] == "-" else abs(v), ty)
            return wrap({"-": -v, "~": ~v, "abs": abs(v)}[e[1]], ty)
        if k == "cmp":
            a, b = e[2], e[3]
            t = promote(ety(a), ety(b))
            av = self.conv(self.ev(a, env), ety(a), t)
            bv = self.conv(self.ev(b, env), ety(b), t)
            self.tie(av, bv, t)
            return int({"<": av < bv, "<=": av <= bv, ">": av > bv, ">=": av >= bv,
                        "==": av == bv, "!=": av != bv}[e[1]])
        if k == "cast":
            return self.conv(self.ev(e[1], env), ety(e[1]), ty)
        if k == "math":
            name, args = e[1], e[2]
            vals = [self.conv(self.ev(a, env), ety(a), ty) for a in args]
            if name in ("min", "max"):
                if ty in FLOAT_TYPES:
                    self.tie(vals[0], vals[1], ty)
                return min(vals) if name == "min" else max(vals)
            f = {"sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "exp": math.exp}[name]
            return self.fl(f(vals[0]), ty)
        if k == "call":
            fn = e[1]
            local = {}
            for (pname, pty), a in zip(fn.params, e[2]):
                local[pname] = self.conv(self.ev(a, env), ety(a), pty)
            self.run(fn.body, local)
            return self.conv(self.ev(fn.ret, local), ety(fn.ret), fn.ret_ty)
        if k in ("ifexp", "select"):
            c = self.ev(e[1], env)
            if k == "select":
                a = self.conv(self.ev(e[2], env), ety(e[2]), ty)
                b = self.conv(self.ev(e[3], env), ety(e[3]), ty)
                return a if c else b
            branch = e[2] if c else e[3]
            return self.conv(self.ev(branch, env), ety(branch), ty)
        if k == "load":
            return self.arrays[e[1]][1][self.ev(e[2], env)]
        if k == "vlit":
            return [self.conv(self.ev(a, env), ety(a), ty[1]) for a in e[1]]
        if k == "vidx":
            return self.ev(e[1], env)[e[2]]
        if k == "vdot":
            v, w = self.ev(e[1], env), self.ev(e[2], env)
            if ty in FLOAT_TYPES:
                return self.fl(sum(x * y for x, y in zip(v, w)), ty)
            return wrap(sum(x * y for x, y in zip(v, w)), ty)
        if k == "vsum":
            v = self.ev(e[1], env)
            return self.fl(sum(v), ty) if ty in FLOAT_TYPES else wrap(sum(v), ty)
        if k == "vbin":
            v, w = self.ev(e[2], env), self.ev(e[3], env)
            out = [x + y if e[1] == "+" else x * y for x, y in zip(v, w)]
            return [self.fl(x, ty[1]) if ty[1] in FLOAT_TYPES else wrap(x, ty[1]) for x in out]
        raise ValueError(k)

    def run(self, body, env):
        for s in body:
            self.steps += 1
            if self.steps > 200000:
                raise Unchecked("model ran too long")
            k = s[0]
            if k == "new":
                env[s[1]] = self.ev(s[2], env)
            elif k == "set":
                env[s[1]] = self.conv(self.ev(s[2], env), ety(s[2]), s[3])
            elif k == "aug":
                name, op, e, vty = s[1], s[2], s[3], s[4]
                r = self.ev(("bin", op, ("var", name, vty), e, promote(vty, ety(e))), env)
                env[name] = self.conv(r, promote(vty, ety(e)), vty)
            elif k == "if":
                inner = dict(env)
                self.run(s[2] if self.ev(s[1], env) else s[3], inner)
                for name in env:
                    env[name] = inner[name]
            elif k == "for":
                inner = dict(env)
                try:
                    for j in range(s[2], s[3]):
                        inner[s[1]] = j
                        try:
                            self.run(s[4], inner)
                        except Continue:
                            pass
                except Break:
                    pass
                for name in env:
                    env[name] = inner[name]
            elif k == "while":
                inner = dict(env)
                inner[s[1]] = 0
                try:
                    while inner[s[1]] < s[2]:
                        inner[s[1]] += 1
                        try:
                            self.run(s[3], inner)
                        except Continue:
                            pass
                except Break:
                    pass
                for name in env:
                    env[name] = inner[name]
            elif k == "break":
                raise Break()
            elif k == "continue":
                raise Continue()
            elif k == "store":
                aty, vals = self.arrays[s[1]]
                vals[self.ev(s[2], env)] = self.conv(self.ev(s[3], env), ety(s[3]), aty)
            elif k == "atomic":
                aty, vals = self.arrays[s[1]]
                v = self.conv(self.ev(s[2], env), ety(s[2]), aty)
                vals[0] = self.fl(vals[0] + v, aty) if aty in FLOAT_TYPES else wrap(vals[0] + v, aty)
            elif k == "rawstmt":
                raise Unchecked("raw statement")
            else:
                raise ValueError(k)


# --- rendering statements ---------------------------------------------------------------------


def render_body(body, indent, out):
    pad = " " * indent
    if not body:
        out.append(pad + "pass")
    for s in body:
        k = s[0]
        if k == "new" or k == "set":
            out.append(f"{pad}{s[1]} = {render(s[2])}")
        elif k == "aug":
            out.append(f"{pad}{s[1]} {s[2]}= {render(s[3])}")
        elif k == "if":
            out.append(f"{pad}if {render(s[1])}:")
            render_body(s[2], indent + 4, out)
            if s[3]:
                out.append(f"{pad}else:")
                render_body(s[3], indent + 4, out)
        elif k == "for":
            out.append(f"{pad}for {s[1]} in range({s[2]}, {s[3]}):")
            render_body(s[4], indent + 4, out)
        elif k == "while":
            out.append(f"{pad}{s[1]} = 0")
            out.append(f"{pad}while {s[1]} < {s[2]}:")
            out.append(f"{pad}    {s[1]} += 1")
            render_body(s[3], indent + 4, out)
        elif k in ("break", "continue"):
            out.append(pad + k)
        elif k == "store":
            out.append(f"{pad}{s[1]}[{render(s[2])}] = {render(s[3])}")
        elif k == "atomic":
            if s[3]:
                out.append(f"{pad}qd.atomic_add({s[1]}[0], {render(s[2])})")
            else:
                out.append(f"{pad}{s[1]}[0] += {render(s[2])}")
        elif k == "rawstmt":
            for line in s[1]:
                out.append(pad + line)
        else:
            raise ValueError(k)


# --- the generator -----------------------------------------------------------------------------

# Arrays every case has. Kernel parameters: inp_i/inp_f (read), out_i/out_f (written at the loop
# index). Global fields: gin_i/gin_f (read, filled before the call), fld_i/fld_f (written at the
# loop index), acc_i/acc_f (one element, atomic adds).
ARRAYS = {
    "inp_i": "i32", "inp_f": "f64", "out_i": "i32", "out_f": "f64",
    "gin_i": "i32", "gin_f": "f64", "fld_i": "i32", "fld_f": "f64", "acc_i": "i32", "acc_f": "f64",
}
PARAM_ARRAYS = ("inp_i", "inp_f", "out_i", "out_f")
FIELD_ARRAYS = ("gin_i", "gin_f", "fld_i", "fld_f", "acc_i", "acc_f")


class Scope:
    def __init__(self, parent=None, writable=True):
        self.parent, self.vars, self.writable = parent, [], writable

    def visible(self):
        """[(name, ty, assignable)] of every visible variable."""
        out = []
        s, writable = self, True
        while s is not None:
            for name, ty, assignable in s.vars:
                out.append((name, ty, assignable and writable))
            writable = writable and s.writable
            s = s.parent
        return out


class Gen:
    def __init__(self, rng, poison=None):
        self.rng = rng
        self.n = 0
        self.funcs = []
        self.poison = poison  # a function returning a bad expression, used once
        self.poison_line = None
        self.in_func = False
        self.parallel = False  # inside the top-level parallel loop (index variable `i`)

    def fresh(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    # expressions
    def lit(self, ty):
        r = self.rng
        if ty == "i32":
            v = r.choice([0, 1, 2, 3, 7, -1, -5, 100, 12345, 2147483647, -2147483648, r.randint(-1000, 1000)])
            return ("lit", str(v) if v >= 0 else f"({v})", v, "i32")
        if ty == "f32":
            v = r.randint(-40, 40) / 4
            return ("lit", repr(v) if v >= 0 else f"({v!r})", v, "f32")
        if ty == "f64":
            v = r.randint(-80, 80) / 8
            return ("lit", f"qd.f64({v!r})", v, "f64")
        if ty == "i64":
            v = r.choice([0, 1, 5, -3, 1 << 40, -(1 << 62), r.randint(-10**12, 10**12)])
            return ("lit", f"qd.i64({v})", v, "i64")
        v = r.choice([0, 1, 9, 4294967295, 2147483648, r.randint(0, 10**9)])
        return ("lit", f"qd.u32({v})", v, "u32")

    def expr(self, ty, depth, scope):
        e = self.expr1(ty, depth, scope)
        k = e[0]
        if k in ("bin", "cmp"):
            return unpure(e, e[2], e[3])
        if k == "un":
            return unpure(e, e[2])
        if k == "math":
            args = e[2]
            if args and all(is_plain(a) for a in args):
                a = args[0]
                args = [("lit", f"qd.{a[3]}({a[2]!r})", a[2], a[3])] + args[1:]
            return ("math", e[1], args, e[3])
        return e

    def expr1(self, ty, depth, scope):
        if self.poison is not None and self.rng.random() < 0.08:
            bad, self.poison = self.poison, None
            return ("raw", bad(self, scope), ty)
        r = self.rng
        if isinstance(ty, tuple):
            return self.vexpr(ty, depth, scope)
        vars_ = [v for v in scope.visible() if v[1] == ty]
        if depth <= 0 or r.random() < 0.25:
            if vars_ and r.random() < 0.7:
                return ("var", r.choice(vars_)[0], ty)
            return self.lit(ty)
        d = depth - 1
        is_int = ty in INT_TYPES
        kinds = ["bin", "bin", "bin", "cast", "var", "minmax", "ifexp", "load", "un", "call", "vec"]
        if is_int:
            kinds += ["divmod", "bitwise", "shift"]
        else:
            kinds += ["math", "fdiv"]
        kind = r.choice(kinds)
        if kind == "var":
            return ("var", r.choice(vars_)[0], ty) if vars_ else self.lit(ty)
        if kind == "bin":
            op = r.choice("+-*")
            a, b = self.operand_types(ty)
            return ("bin", op, self.expr(a, d, scope), self.expr(b, d, scope), ty)
        if kind == "cast":
            src = r.choice(SCALAR_TYPES)
            return ("cast", self.expr(src, d, scope), ty)
        if kind == "minmax":
            a, b = self.operand_types(ty)
            return ("math", r.choice(["min", "max"]), [self.expr(a, d, scope), self.expr(b, d, scope)], ty)
        if kind == "ifexp":
            c = self.cond(d, scope)
            if r.random() < 0.5:
                return ("ifexp", c, self.expr(ty, d, scope), self.expr(ty, d, scope), ty)
            return ("select", c, self.expr(ty, d, scope), self.expr(ty, d, scope), ty)
        if kind == "load":
            names = [n for n, t in ARRAYS.items() if t == ty and self.readable(n)]
            if not names:
                return self.lit(ty)
            name = r.choice(names)
            return ("load", name, self.index(name, d, scope), ty)
        if kind == "un":
            if is_int and not INT_TYPES[ty][1]:
                return ("un", r.choice(["-", "~"]), self.expr(ty, d, scope), ty)
            ops = ["-", "abs"] + (["~"] if is_int else [])
            return ("un", r.choice(ops), self.expr(ty, d, scope), ty)
        if kind == "call":
            return self.call(ty, d, scope)
        if kind == "vec":
            if ty not in ("i32", "f64"):
                return self.expr(ty, d, scope)
            vty = ("vec", ty, r.choice([2, 3]))
            v = self.vexpr(vty, d, scope)
            c = r.random()
            if c < 0.4:
                return ("vidx", v, r.randrange(vty[2]), ty)
            if c < 0.7:
                return ("vdot", v, self.vexpr(vty, d, scope), ty)
            return ("vsum", v, ty)
        if kind == "divmod":
            a, _ = self.operand_types(ty)
            div = r.choice([2, 3, 5, 7, 9, -2, -3, -7, 1])
            dl = ("lit", str(div) if div > 0 else f"({div})", div, "i32")
            if promote(a, "i32") != ty:
                a = ty
            return ("bin", r.choice(["//", "%"]), self.expr(a, d, scope), dl, ty)
        if kind == "bitwise":
            a, b = self.operand_types(ty)
            return ("bin", r.choice("&|^"), self.expr(a, d, scope), self.expr(b, d, scope), ty)
        if kind == "shift":
            k = r.randrange(bits(ty))
            return ("bin", r.choice(["<<", ">>"]), self.expr(ty, d, scope), ("lit", str(k), k, "i32"), ty)
        if kind == "math":
            name = r.choice(["sqrt", "sin", "cos", "exp"])
            a = self.expr(ty, d, scope)
            if name == "sqrt":
                a = ("bin", "+", ("un", "abs", a, ty), self.flit(1.0, ty), ty)
            elif name == "exp":
                a = ("math", "min", [a, self.flit(4.0, ty)], ty)
            return ("math", name, [a], ty)
        if kind == "fdiv":
            dv = r.choice([2.0, 4.0, 0.5, -2.0, 8.0])
            return ("bin", "/", self.expr(ty, d, scope), self.flit(dv, ty), ty)
        raise ValueError(kind)

    def flit(self, v, ty):
        return ("lit", repr(v) if ty == "f32" else f"qd.f64({v!r})", v, ty)

    def operand_types(self, ty):
        """A pair of operand types whose promotion is `ty`."""
        pairs = [(ty, ty)]
        for a in SCALAR_TYPES:
            for b in SCALAR_TYPES:
                if promote(a, b) == ty and (a, b) != (ty, ty):
                    pairs.append((a, b))
        if self.rng.random() < 0.5:
            return (ty, ty)
        return self.rng.choice(pairs)

    def cond(self, depth, scope):
        t = self.rng.choice(SCALAR_TYPES)
        if self.rng.random() < 0.15 and t in INT_TYPES:
            return self.expr(t, depth, scope)
        op = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
        a, b = self.operand_types(t)
        e = ("cmp", op, self.expr(a, depth, scope), self.expr(b, depth, scope), "u1")
        return unpure(e, e[2], e[3])

    def readable(self, name):
        if self.in_func:
            return name in ("gin_i", "gin_f")
        if name in ("inp_i", "inp_f", "gin_i", "gin_f"):
            return True
        if self.parallel:
            return name in ("out_i", "out_f")  # at the own index only
        return True

    def index(self, name, depth, scope):
        if self.parallel and not self.in_func and (name.startswith("out") or self.rng.random() < 0.5):
            return ("var", "i", "i32")
        if name.startswith("acc"):
            return ("lit", "0", 0, "i32")
        if self.rng.random() < 0.5:
            k = self.rng.randrange(N)
            return ("lit", str(k), k, "i32")
        return ("bin", "%", self.expr("i32", min(depth, 1), scope), ("lit", str(N), N, "i32"), "i32")

    def vexpr(self, vty, depth, scope):
        r = self.rng
        vars_ = [v for v in scope.visible() if v[1] == vty]
        if vars_ and r.random() < 0.5:
            return ("var", r.choice(vars_)[0], vty)
        if depth > 0 and r.random() < 0.3:
            return ("vbin", r.choice("+*"), self.vexpr(vty, depth - 1, scope), self.vexpr(vty, depth - 1, scope), vty)
        elems = [self.expr(vty[1], max(depth - 1, 0), scope) for _ in range(vty[2])]
        # a vector of plain literals is a Python-side constant whose arithmetic Python folds
        elems = [("lit", f"qd.{a[3]}({a[2]!r})", a[2], a[3]) if is_plain(a) else a for a in elems]
        return ("vlit", elems, vty)

    def call(self, ty, depth, scope):
        fns = [f for f in self.funcs if f.ret_ty == ty]
        if not fns or self.in_func:
            return self.expr(ty, depth, scope)
        fn = self.rng.choice(fns)
        args = [self.expr(self.rng.choice([pty, pty, "i32", "f64"]), depth, scope) for _, pty in fn.params]
        return ("call", fn, args, ty)

    # statements
    def block(self, scope, size, depth, loop, top=False):
        body = []
        for _ in range(size):
            body.append(self.stmt(scope, depth, loop, top))
        return body

    def stmt(self, scope, depth, loop, top=False):
        r = self.rng
        assignable = [v for v in scope.visible() if v[2]]
        kinds = ["new", "new", "set", "aug", "if", "for", "while"]
        if loop:
            kinds += ["jump"]
        if not self.in_func:
            kinds += ["store", "store"]
            if self.parallel:
                kinds += ["atomic"]
        if depth <= 0:
            kinds = [k for k in kinds if k not in ("if", "for", "while")]
        if top:  # a `for` at the top of a kernel (or of an inlined func) would run in parallel
            kinds = [k for k in kinds if k != "for"]
        kind = r.choice(kinds)
        ed = r.choice([1, 2, 3])
        if kind == "new" or (kind in ("set", "aug") and not assignable):
            ty = r.choice(SCALAR_TYPES + (("vec", "f64", 3), ("vec", "i32", 2)))
            name = self.fresh("v")
            e = self.expr(ty, ed, scope)
            scope.vars.append((name, ty, True))
            return ("new", name, e)
        if kind == "set":
            name, ty, _ = r.choice(assignable)
            if isinstance(ty, tuple):
                return ("set", name, self.vexpr(ty, ed, scope), ty)
            return ("set", name, self.expr(r.choice([ty, ty, "i32", "f64"]), ed, scope), ty)
        if kind == "aug":
            cands = [v for v in assignable if not isinstance(v[1], tuple)]
            if not cands:
                return self.stmt(scope, depth, loop, top)
            name, ty, _ = r.choice(cands)
            if ty in INT_TYPES and r.random() < 0.3:
                op = r.choice(["//", "%"])
                div = r.choice([2, 3, -5, 7])
                return ("aug", name, op, ("lit", str(div) if div > 0 else f"({div})", div, "i32"), ty)
            op = r.choice("+-*")
            et = r.choice([ty, "i32"] if ty in INT_TYPES else [ty, "i32", "f32", "f64"])
            return ("aug", name, op, self.expr(et, ed, scope), ty)
        if kind == "if":
            c = self.cond(ed, scope)
            then = self.block(Scope(scope), r.randint(1, 3), depth - 1, loop)
            orelse = self.block(Scope(scope), r.randint(0, 2), depth - 1, loop) if r.random() < 0.5 else []
            return ("if", c, then, orelse)
        if kind == "for":
            var = self.fresh("j")
            inner = Scope(scope)
            inner.vars.append((var, "i32", False))
            lo = r.randint(-2, 2)
            hi = lo + r.randint(0, 5)
            return ("for", var, lo, hi, self.block(inner, r.randint(1, 3), depth - 1, True))
        if kind == "while":
            var = self.fresh("w")
            inner = Scope(scope)
            inner.vars.append((var, "i32", False))
            return ("while", var, r.randint(0, 4), self.block(inner, r.randint(1, 3), depth - 1, True))
        if kind == "jump":
            c = self.cond(1, scope)
            return ("if", c, [(r.choice(["break", "continue"]),)], [])
        if kind == "store":
            names = ["fld_i", "fld_f", "out_i", "out_f"] if self.parallel else ["out_i", "out_f", "fld_i", "fld_f"]
            name = r.choice(names)
            if self.parallel:
                idx = ("var", "i", "i32")
            else:
                k = r.randrange(N)
                idx = ("lit", str(k), k, "i32")
            return ("store", name, idx, self.expr(r.choice([ARRAYS[name], "i32", "f64"]), ed, scope))
        if kind == "atomic":
            name = r.choice(["acc_i", "acc_i", "acc_f"])
            return ("atomic", name, self.expr(r.choice([ARRAYS[name], "i32"]), ed, scope), r.random() < 0.5)
        raise ValueError(kind)

    def func(self, idx):
        r = self.rng
        params = [(f"p{k}", r.choice(SCALAR_TYPES)) for k in range(r.randint(0, 3))]
        fn = Func(f"fn{idx}", params, r.choice(SCALAR_TYPES))
        scope = Scope()
        for name, ty in params:
            scope.vars.append((name, ty, False))
        self.in_func = True
        fn.body = self.block(scope, r.randint(0, 3), 2, False, top=True)
        fn.ret = self.expr(fn.ret_ty, 2, scope)
        self.in_func = False
        return fn


def ann(ty):
    return f"qd.{ty}"


def build_valid(rng, poison=None):
    """A generated kernel: (Gen, funcs, params, pre, loop body, post, return type, return expr)."""
    g = Gen(rng, poison)
    for k in range(rng.randint(0, 2)):
        g.funcs.append(g.func(k))
    params = [(f"a{k}", rng.choice(SCALAR_TYPES)) for k in range(rng.randint(0, 3))]
    top = Scope()
    for name, ty in params:
        top.vars.append((name, ty, False))
    pre = g.block(top, rng.randint(0, 3), 2, False, top=True)
    loop_scope = Scope(top, writable=False)
    loop_scope.vars.append(("i", "i32", False))
    g.parallel = True
    body = g.block(loop_scope, rng.randint(1, 5), 2, False)
    g.parallel = False
    post = g.block(top, rng.randint(0, 3), 2, False, top=True)
    ret_ty = rng.choice([None] + list(SCALAR_TYPES))
    ret = g.expr(ret_ty, 2, top) if ret_ty else None
    return g, params, pre, body, post, ret_ty, ret


def arg_value(rng, ty):
    if ty == "i32":
        return rng.choice([0, 1, -3, 17, 2147483647, -2147483648, rng.randint(-10**6, 10**6)])
    if ty == "i64":
        return rng.choice([0, 5, -(1 << 40), rng.randint(-10**15, 10**15)])
    if ty == "u32":
        return rng.choice([0, 3, 4294967295, rng.randint(0, 4294967295)])
    return rng.randint(-100, 100) / 8


def input_arrays(rng):
    return {
        "inp_i": [rng.randint(-1000, 1000) for _ in range(N)],
        "inp_f": [rng.randint(-400, 400) / 16 for _ in range(N)],
        "gin_i": [rng.choice([0, 1, -1, 2147483647, rng.randint(-10**6, 10**6)]) for _ in range(N)],
        "gin_f": [rng.randint(-400, 400) / 16 for _ in range(N)],
    }


def render_module(g, params, pre, body, post, ret_ty, ret, sig=None, extra_stmt=None, loop_head=None):
    """The module text; `sig`/`extra_stmt`/`loop_head` are mutation hooks. Returns (text, line of
    the mutation or None)."""
    out = ["import quadrants as qd", "", f"N = {N}"]
    for name in FIELD_ARRAYS:
        size = 1 if name.startswith("acc") else N
        out.append(f"{name} = qd.field(qd.{ARRAYS[name]}, shape={size})")
    out.append("")
    for fn in g.funcs:
        out.append("")
        out.append("@qd.func")
        ps = ", ".join(f"{n}: {ann(t)}" for n, t in fn.params)
        out.append(f"def {fn.name}({ps}) -> {ann(fn.ret_ty)}:")
        render_body(fn.body, 4, out)
        out.append(f"    return {render(fn.ret)}")
    out.append("")
    out.append("")
    out.append("@qd.kernel")
    if sig is None:
        ps = [f"{n}: {ann(t)}" for n, t in params]
        ps += [f"{n}: qd.types.NDArray[qd.{ARRAYS[n]}, 1]" for n in PARAM_ARRAYS]
        rt = f" -> {ann(ret_ty)}" if ret_ty else ""
        sig = f"def kern({', '.join(ps)}){rt}:"
    out.append(sig)
    mark = None
    sections = [pre, body, post]
    insert_at = None
    if extra_stmt is not None:
        where, lines = extra_stmt
        insert_at = where
    for si, section in enumerate(sections):
        indent = 8 if si == 1 else 4
        if si == 1:
            out.append(loop_head or "    for i in range(N):")
        if insert_at == si:
            mark = len(out) + 1
            for line in lines:
                out.append(" " * indent + line)
        render_body(section, indent, out)
    if ret is not None:
        out.append(f"    return {render(ret)}")
    text = "\n".join(out) + "\n"
    if mark is None and g.poison_line is not None:
        mark = g.poison_line
    return text, mark


def run_model(params, args, inputs, pre, body, post, ret_ty, ret, lenient=False):
    """(expected results or None, notes on undefined behaviour met) of a generated kernel."""
    arrays = {name: (ty, list(inputs.get(name, [0] * (1 if name.startswith("acc") else N))))
              for name, ty in ARRAYS.items()}
    m = Model(arrays, lenient)
    try:
        env = {name: v for (name, _), (_, v) in zip(params, args)}
        m.run(pre, env)
        for i in range(N):
            inner = dict(env)
            inner["i"] = i
            m.run(body, inner)
        m.run(post, env)
        rv = m.conv(m.ev(ret, env), ety(ret), ret_ty) if ret is not None else None
        expected = {
            "arrays": {name: vals for name, (ty, vals) in arrays.items()},
            "ret": rv,
            "ret_ty": ret_ty,
            "scale": m.scale,
        }
    except (Unchecked, ZeroDivisionError, OverflowError, ValueError, IndexError):
        expected = None
    return expected, sorted(m.notes)


def valid_case(rng):
    g, params, pre, body, post, ret_ty, ret = build_valid(rng)
    text, _ = render_module(g, params, pre, body, post, ret_ty, ret)
    args = [(ty, arg_value(rng, ty)) for _, ty in params]
    inputs = input_arrays(rng)
    expected, notes = run_model(params, args, inputs, pre, body, post, ret_ty, ret)
    if expected is None and not notes:
        notes = run_model(params, args, inputs, pre, body, post, ret_ty, ret, lenient=True)[1]
    return {"source": text, "args": args, "inputs": inputs, "expected": expected, "kind": "valid",
            "mutation": None, "line": None, "notes": notes}


# --- mutations -------------------------------------------------------------------------------
# Each bad expression is a function (gen, scope) -> source text, substituted for one generated
# expression; each bad statement is a list of lines inserted into the kernel body.


def _some_var(g, scope, want=None):
    vs = [v for v in scope.visible() if not isinstance(v[1], tuple) and (want is None or v[1] in want)]
    return g.rng.choice(vs)[0] if vs else "1"


def _deep_sum(g, scope):
    return " + ".join([_some_var(g, scope)] * g.rng.choice([50, 400, 2000]))


def _deep_parens(g, scope):
    n = g.rng.choice([20, 90])
    return "(" * n + _some_var(g, scope) + " + 1" + ")" * n


def _deep_unary(g, scope):
    return "-" * g.rng.choice([10, 300]) + _some_var(g, scope)


BAD_EXPRS = [
    lambda g, s: '"text"',
    lambda g, s: f'{_some_var(g, s)} + "text"',
    lambda g, s: "b'bytes'",
    lambda g, s: "undefined_name_x",
    lambda g, s: f"{_some_var(g, s)} + undefined_name_y",
    lambda g, s: "None",
    lambda g, s: f"{_some_var(g, s)} * None",
    lambda g, s: "[1, 2]",
    lambda g, s: "(1, 2)",
    lambda g, s: "{1: 2}",
    lambda g, s: "{1, 2}",
    lambda g, s: "(lambda: 1)()",
    lambda g, s: "lambda x: x",
    lambda g, s: "sum(k for k in range(3))",
    lambda g, s: "[k for k in range(3)][1]",
    lambda g, s: "qd.sqrt()",
    lambda g, s: f"qd.sqrt({_some_var(g, s)}, 2.0)",
    lambda g, s: f"qd.cast({_some_var(g, s)})",
    lambda g, s: f"qd.cast({_some_var(g, s)}, 5)",
    lambda g, s: f"qd.cast({_some_var(g, s)}, qd.Vector)",
    lambda g, s: "qd.min()",
    lambda g, s: f"qd.max({_some_var(g, s)})",
    lambda g, s: f"qd.no_such_function({_some_var(g, s)})",
    lambda g, s: f"{_some_var(g, s)}.no_such_attribute",
    lambda g, s: f"{_some_var(g, s)}.shape",
    lambda g, s: f"{_some_var(g, s)}[0]",
    lambda g, s: f"{_some_var(g, s)}[0][1]",
    lambda g, s: "inp_i[0, 0]",
    lambda g, s: "inp_i[0.5]",
    lambda g, s: "inp_i[qd.f64(1.5)]",
    lambda g, s: "inp_i",
    lambda g, s: "inp_i + 1",
    lambda g, s: "gin_f[1][0]",
    lambda g, s: "gin_f[1, 2]",
    lambda g, s: "gin_f[()]",
    lambda g, s: "gin_i[-1]",
    lambda g, s: "gin_i[100]",
    lambda g, s: "qd.Vector([1, 2]) + qd.Vector([1, 2, 3])",
    lambda g, s: "qd.Vector([1, 2])",
    lambda g, s: "qd.Vector([])",
    lambda g, s: "qd.Vector([qd.Vector([1]), 2])",
    lambda g, s: "qd.Vector([1, 2])[5]",
    lambda g, s: f"qd.Vector([1, 2])[{_some_var(g, s)}]",
    lambda g, s: "1 // 0",
    lambda g, s: f"{_some_var(g, s, ('i32', 'i64', 'u32'))} // 0",
    lambda g, s: f"{_some_var(g, s, ('i32', 'i64', 'u32'))} % 0",
    lambda g, s: f"{_some_var(g, s)} / 0",
    lambda g, s: f"{_some_var(g, s)} / 0.0",
    lambda g, s: "qd.f64(1.0) / qd.f64(0.0)",
    lambda g, s: "qd.raw_div(7, 0)",
    lambda g, s: f"qd.raw_mod({_some_var(g, s)}, 0)",
    lambda g, s: "2 ** 40",
    lambda g, s: "99999999999999999999999999",
    lambda g, s: "-99999999999999999999999999",
    lambda g, s: "qd.i32(1 << 40)",
    lambda g, s: "qd.u32(-1)",
    lambda g, s: "qd.i64(1 << 70)",
    lambda g, s: "qd.f32(0)",
    lambda g, s: "qd.i32(0.5)",
    lambda g, s: "qd.i32(1, 2)",
    lambda g, s: "qd.f64(1e400)",
    lambda g, s: "1e400",
    lambda g, s: "float('nan')",
    lambda g, s: f"{_some_var(g, s)} ** -2",
    lambda g, s: f"{_some_var(g, s)} ** {_some_var(g, s)}",
    lambda g, s: f"{_some_var(g, s)} ** 100",
    lambda g, s: f"qd.sin({_some_var(g, s, ('i32', 'i64', 'u32'))})",
    lambda g, s: f"qd.floor({_some_var(g, s, ('i32', 'u32'))})",
    lambda g, s: f"~{_some_var(g, s, ('f32', 'f64'))}",
    lambda g, s: f"{_some_var(g, s, ('f32', 'f64'))} & 1",
    lambda g, s: f"{_some_var(g, s, ('f32', 'f64'))} << 2",
    lambda g, s: f"{_some_var(g, s)} << -1",
    lambda g, s: f"{_some_var(g, s)} >> 99",
    lambda g, s: f"not {_some_var(g, s, ('f32', 'f64'))}",
    lambda g, s: f"{_some_var(g, s)} is {_some_var(g, s)}",
    lambda g, s: f"{_some_var(g, s)} in {_some_var(g, s)}",
    lambda g, s: f"{_some_var(g, s)} @ {_some_var(g, s)}",
    lambda g, s: f"{_some_var(g, s)} and {_some_var(g, s)}",
    lambda g, s: f"{_some_var(g, s)} or {_some_var(g, s, ('f32', 'f64'))}",
    lambda g, s: f"(1 if qd.Vector([1, 2]) else 2)",
    lambda g, s: f"qd.select(qd.f64(1.5), 1, 2)",
    lambda g, s: f"qd.static({_some_var(g, s)} > 0)",
    lambda g, s: "qd.static(1, 2)",
    lambda g, s: "qd.static(qd.static(1))",
    lambda g, s: f"len({_some_var(g, s)})",
    lambda g, s: "range(3)",
    lambda g, s: "qd.ndrange(2)",
    lambda g, s: "qd.field(qd.i32, 3)",
    lambda g, s: "kern",
    lambda g, s: "kern()",
    lambda g, s: "fn0",
    lambda g, s: "fn0(1, 2, 3, 4, 5)",
    lambda g, s: "fn1()",
    lambda g, s: "fn0(no_such_kw=1)",
    lambda g, s: "qd.atomic_add(1, 1)",
    lambda g, s: f"qd.atomic_add({_some_var(g, s)}, 1)",
    lambda g, s: "qd.atomic_cas(acc_f[0], 1.0, 2.0)",
    lambda g, s: "qd.atomic_add(gin_i, 1)",
    lambda g, s: "qd.bit_cast(qd.f64(1.0), qd.i32)",
    lambda g, s: "qd.bit_cast(1, qd.f32)",
    lambda g, s: "qd.random(qd.i8)",
    lambda g, s: "print",
    lambda g, s: "qd",
    lambda g, s: "qd.i32",
    lambda g, s: "qd.math",
    lambda g, s: "int",
    lambda g, s: "int(1, 2)",
    lambda g, s: f"int({_some_var(g, s)})",
    lambda g, s: f"float({_some_var(g, s)})",
    lambda g, s: "max()",
    lambda g, s: "abs()",
    lambda g, s: f"pow({_some_var(g, s)}, 2, 3)",
    lambda g, s: f'f"{{{_some_var(g, s)}}}"',
    lambda g, s: "*inp_i",
    lambda g, s: f"({_some_var(g, s)} := 3)",
    lambda g, s: "1 < 2 < 3 < undefined_z",
    lambda g, s: "...",
    lambda g, s: "1j",
    lambda g, s: "[1, 2][5]",
    lambda g, s: "(1, 2)[qd.i32(0)]",
    lambda g, s: "qd.math.no_such",
    lambda g, s: "qd.types.NDArray[qd.i32, 1]",
    lambda g, s: "__import__('os').getpid()",
    _deep_sum,
    _deep_parens,
    _deep_unary,
]

BAD_STMTS = [
    ["try:", "    pass", "except Exception:", "    pass"],
    ["try:", "    x_t = 1", "finally:", "    pass"],
    ['with open("/dev/null") as fh:', "    pass"],
    ["with qd.stream_parallel():", "    pass"],
    ["global gx"],
    ["nonlocal_probe = 1", "del nonlocal_probe"],
    ["import math"],
    ["from math import sin"],
    ["class C:", "    pass"],
    ["def inner():", "    return 1"],
    ["@qd.kernel", "def inner_kernel():", "    pass"],
    ["raise ValueError('x')"],
    ["raise"],
    ["lambda x: x"],
    ["yield 1"],
    ["(yield)"],
    ["assert 1.5"],
    ["assert undefined_q"],
    ["a0 = 1"],
    ["a0 += 1"],
    ["inp_i = 3"],
    ["inp_i[0] = qd.Vector([1, 2])"],
    ["gin_i[0] = qd.Vector([1, 2])"],
    ["gin_i[0, 0] = 1"],
    ["gin_i[None] = 1"],
    ["gin_i[0][0] = 1"],
    ["gin_i = 1"],
    ["gin_i[0] = 'x'"],
    ["gin_i[0:2] = 1"],
    ["inp_f[0.5] = 1.0"],
    ["qd.atomic_add(1, 1)"],
    ["qd.atomic_add(inp_i, 1)"],
    ["for q in range(1, 5, 2):", "    pass"],
    ["for q in range(3):", "    pass", "else:", "    pass"],
    ["while False:", "    pass", "else:", "    pass"],
    ["for q in range(1.5):", "    pass"],
    ["for q in range(qd.f64(2.0), 4):", "    pass"],
    ["for q in range(qd.i64(3)):", "    pass"],
    ["for q in inp_f[0]:", "    pass"],
    ["for q in 5:", "    pass"],
    ["for q, r in range(3):", "    pass"],
    ["for q in qd.ndrange(2, 3):", "    pass"],
    ["for q in qd.ndrange(2.5):", "    pass"],
    ["for q in qd.grouped(qd.grouped(inp_i)):", "    pass"],
    ["for inp_i in range(2):", "    pass"],
    ["while 1.5:", "    break"],
    ["if qd.f64(1.5):", "    pass"],
    ["if qd.Vector([1, 2]):", "    pass"],
    ["x_r: qd.f32 = 1.0", "x_r: qd.i32 = 2"],
    ["x_a: 5 = 1"],
    ["x_a: qd.NoSuch = 1"],
    ["x_a: qd.i32"],
    ["x_u, y_u = 1"],
    ["x_u, y_u = qd.Vector([1, 2, 3])"],
    ["x_u, y_u = 1, 2, 3"],
    ["x_u = y_u = 3"],
    ["x_v = qd.Vector([1, 2])", "x_v[5] = 1"],
    ["x_v = qd.Vector([1, 2])", "x_v[0] = qd.Vector([1, 2])"],
    ["x_v = qd.Vector([1, 2])", "x_v = 3"],
    ["x_s = 1", "x_s = qd.Vector([1, 2])"],
    ["x_s = 1", "x_s.field = 2"],
    ["x_s = 1", "x_s[0] = 2"],
    ["qd.static_assert(False)"],
    ["qd.static_assert(gin_i[0] > 0)"],
    ["qd.loop_config(block_dim=0)"],
    ["qd.loop_config(no_such_option=1)"],
    ["qd.static_print(1)"],
    ["print(1, 'two', qd.f64(3.0))"],
    ["print(undefined_p)"],
    ["x_w = 0", "while True:", "    x_w += 1", "    if x_w > 3:", "        break"],
    ["fn0 = 3"],
    ["qd = 3"],
    ["N = 4"],
    ["x_l = [1, 2]", "x_l.append(3)"],
    ["x_l = [1, 2]", "x_l[gin_i[0]] = 3"],
    ["x_l = [1, 2]", "x_m = x_l[gin_i[0]]"],
    ["x_d = {'a': 1}", "x_m = x_d['b']"],
    ["x_m = undefined_n[0]"],
    ["undefined_n[0] = 1"],
    ["undefined_n.attr = 1"],
    ["kern()"],
    ["return"],
    ["return 1"],
    ["return 1, 2"],
    ["if gin_i[0] > 0:", "    return 1"],
    ["async def af():", "    pass"],
    ["match gin_i[0]:", "    case 1:", "        pass"],
    ["x_f = f'{gin_i[0]}'"],
    ["x_z = 1", "del x_z"],
    ["pass; pass"],
    ["x_e = 1", "x_e @= 2"],
    ["x_e = 1", "x_e **= 2"],
    ["x_e = 1", "x_e //= 0"],
    ["x_e = 1", "x_e %= 0"],
    ["x_e = 1.5", "x_e <<= 1"],
    ["x_e = qd.Vector([1, 2])", "x_e += qd.Vector([1, 2, 3])"],
    ["x_big = " + " + ".join(["1"] * 3000)],
    ["x_c = 0"] + ["x_c += 1"] * 3000,
    ["if 1:"] + ["    " * k + "    if 1:" for k in range(1, 60)] + ["    " * 60 + "    pass"],
]

BAD_SIGS = [
    "def kern(a0):",
    "def kern(a0: qd.i32 = 1):",
    "def kern(*args):",
    "def kern(**kw):",
    "def kern(*, a0: qd.i32):",
    "def kern(a0: 5):",
    "def kern(a0: 'qd.i32'):",
    "def kern(a0: qd.NoSuch):",
    "def kern(a0: qd.Vector):",
    "def kern(a0: undefined_type):",
    "def kern(a0: qd.types.NDArray[qd.i32, 1]):",
    "def kern(a0: qd.types.NDArray[qd.i32, 0]):",
    "def kern(a0: qd.types.NDArray[5, 1]):",
    "def kern(a0: qd.template()):",
    "def kern() -> 5:",
    "def kern() -> qd.Vector:",
    "def kern() -> qd.types.NDArray[qd.i32, 1]:",
    "def kern() -> qd.i32:",
    "def kern() -> (qd.i32, qd.f32):",
    "def kern() -> undefined_ret:",
    "def kern(a0: qd.i32, a0b: qd.i32, a0c: qd.i32) -> qd.i32:",
    "def kern(a0: qd.types.vector(3, qd.f32)):",
    "def kern(a0: qd.types.vector(0, qd.f32)):",
    "def kern(a0: qd.types.matrix(2, 2, qd.i32)) -> qd.i32:",
]

BAD_CALLS = ["float_for_int", "string", "none", "missing", "extra", "list", "wrong_dtype", "wrong_ndim",
             "noncontiguous", "bad_keyword", "huge_int", "qd_ndarray"]


def make_case(seed):
    """One case from `seed` (deterministic): valid ~55% of the time, otherwise one mutation."""
    rng = random.Random(seed)
    r = rng.random()
    if r < 0.55:
        case = valid_case(rng)
        case["seed"] = seed
        return case
    if r < 0.75:
        kind = "expr"
        bad = rng.choice(BAD_EXPRS)
        g, params, pre, body, post, ret_ty, ret = build_valid(rng, poison=bad)
        if g.poison is not None:  # never used: force it into the return or a store
            ret_ty = ret_ty or "i32"
            ret = ("raw", bad(g, Scope()), ret_ty)
        text, _ = render_module(g, params, pre, body, post, ret_ty, ret)
        name = bad.__name__ if bad.__name__ != "<lambda>" else BAD_EXPRS.index(bad)
    elif r < 0.9:
        kind = "stmt"
        lines = rng.choice(BAD_STMTS)
        g, params, pre, body, post, ret_ty, ret = build_valid(rng)
        text, _ = render_module(g, params, pre, body, post, ret_ty, ret,
                                extra_stmt=(rng.randrange(3), lines))
        name = BAD_STMTS.index(lines)
    else:
        g, params, pre, body, post, ret_ty, ret = build_valid(rng)
        if rng.random() < 0.5:
            kind = "sig"
            sig = rng.choice(BAD_SIGS)
            name = BAD_SIGS.index(sig)
            text, _ = render_module(g, [], pre, body, post, ret_ty, ret, sig=sig)
            params = []
        else:
            kind = "call"
            name = rng.choice(BAD_CALLS)
            text, _ = render_module(g, params, pre, body, post, ret_ty, ret)
    args = [(ty, arg_value(rng, ty)) for _, ty in params]
    case = {"source": text, "args": args, "inputs": input_arrays(rng), "expected": None, "kind": kind,
            "mutation": f"{kind}:{name}", "seed": seed}
    if kind == "sig":
        case["args"] = "sig"
    if kind == "call":
        case["call_mutation"] = name
    return case
