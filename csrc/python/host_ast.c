/* python/host_ast.c -- converting a Python `ast` tree into the frontend's C AST.
 *
 * The frontend never sees a PyObject: this file walks an `ast.FunctionDef` once and copies what
 * the frontend needs (kinds, names, operators, constants, positions) into arena nodes. Each node
 * also gets a handle to its Python node (`pynode`) so that `qd.static(...)` can later be
 * evaluated by Python itself, with exact Python semantics. Node kinds come from
 * frontend/ast.def, matched by the Python class name; anything else becomes UNSUPPORTED with
 * its class name, which the frontend reports as `Unsupported node "<Name>"` at its line.
 */
#include "host.h"

#include <string.h>

#define MAX_AST_DEPTH 1000

typedef struct Converter {
    QdPyHost *host;       /* handles for pynode */
    QdCtx *ctx;           /* errors */
    QdArena *arena;       /* node storage */
    const char *filename; /* interned in the arena */
    int depth;            /* recursion guard */
} Converter;

static const char *const kind_pynames[] = {
#define QD_AST(name, pyname) pyname,
#include "../frontend/ast.def"
#undef QD_AST
};

/* Operator class names in QdAstOp order. */
static const char *const op_pynames[] = {
    "Add", "Sub", "Mult", "MatMult", "Div", "Mod", "Pow", "LShift", "RShift", "BitOr", "BitXor",
    "BitAnd", "FloorDiv", "Invert", "Not", "UAdd", "USub", "And", "Or", "Eq", "NotEq", "Lt",
    "LtE", "Gt", "GtE", "Is", "IsNot", "In", "NotIn",
};

static int
conv_error(Converter *c, QdErrKind kind, const char *msg)
{
    QdLoc loc = {c->filename, 0, 0};
    return qd_error(c->ctx, loc, kind, "%s", msg);
}

static int
py_error(Converter *c)
{
    return qd_py_host_error_from_exception(c->host, c->ctx);
}

/* Python class name of a node: tp_name without its module prefix ("ast.Name" -> "Name"). */
static const char *
class_name(PyObject *node)
{
    const char *full = Py_TYPE(node)->tp_name;
    const char *dot = strrchr(full, '.');
    return dot ? dot + 1 : full;
}

static int
node_op(PyObject *opnode)
{
    const char *name = class_name(opnode);
    for (size_t i = 0; i < QD_ARRAY_LEN(op_pynames); i++) {
        if (strcmp(op_pynames[i], name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static uint32_t
int_attr(PyObject *node, const char *name)
{
    PyObject *v = PyObject_GetAttrString(node, name);
    uint32_t r = 0;
    if (!v) {
        PyErr_Clear();
        return 0;
    }
    if (PyLong_Check(v)) {
        long x = PyLong_AsLong(v);
        r = x > 0 ? (uint32_t)x : 0;
    }
    Py_DECREF(v);
    PyErr_Clear();
    return r;
}

static const char *
copy_utf8(Converter *c, PyObject *s)
{
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(s, &len);
    if (!u) {
        return NULL;
    }
    if (memchr(u, '\0', (size_t)len)) {
        PyErr_SetString(PyExc_ValueError, "strings in kernels cannot contain NUL characters");
        return NULL;
    }
    return qd_arena_strndup(c->arena, u, (size_t)len);
}

static int convert(Converter *c, PyObject *node, QdAst **out);

/* A child attribute that may be None: *out = NULL then. */
static int
convert_attr(Converter *c, PyObject *node, const char *name, QdAst **out)
{
    PyObject *child = PyObject_GetAttrString(node, name);
    int rc = 0;
    *out = NULL;
    if (!child) {
        return py_error(c);
    }
    if (child != Py_None) {
        rc = convert(c, child, out);
    }
    Py_DECREF(child);
    return rc;
}

/* A child list attribute; None entries (Dict's `**` keys) stay NULL. */
static int
convert_list(Converter *c, PyObject *node, const char *name, QdAstList *out)
{
    PyObject *list = PyObject_GetAttrString(node, name);
    out->items = NULL;
    out->len = 0;
    if (!list) {
        return py_error(c);
    }
    if (!PyList_Check(list)) {
        Py_DECREF(list);
        return conv_error(c, QD_ERR_INTERNAL, "ast field is not a list");
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    out->items = QD_NEW_ARRAY(c->arena, QdAst *, n ? n : 1);
    if (!out->items) {
        Py_DECREF(list);
        return conv_error(c, QD_ERR_NOMEM, "out of memory");
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (item != Py_None && convert(c, item, &out->items[i]) < 0) {
            Py_DECREF(list);
            return -1;
        }
    }
    out->len = (uint32_t)n;
    Py_DECREF(list);
    return 0;
}

static int
convert_op(Converter *c, PyObject *node, const char *name, int *op)
{
    PyObject *o = PyObject_GetAttrString(node, name);
    if (!o) {
        return py_error(c);
    }
    *op = node_op(o);
    Py_DECREF(o);
    return *op < 0 ? conv_error(c, QD_ERR_SYNTAX, "unsupported operator") : 0;
}

static int
convert_name(Converter *c, PyObject *node, const char *attr, const char **out)
{
    PyObject *s = PyObject_GetAttrString(node, attr);
    *out = NULL;
    if (!s) {
        return py_error(c);
    }
    if (s != Py_None) {
        *out = copy_utf8(c, s);
        if (!*out) {
            Py_DECREF(s);
            return py_error(c);
        }
    }
    Py_DECREF(s);
    return 0;
}

static int
convert_constant(Converter *c, PyObject *node, QdAst *a)
{
    PyObject *v = PyObject_GetAttrString(node, "value");
    if (!v) {
        return py_error(c);
    }
    int rc = 0;
    if (v == Py_None) {
        a->cst.kind = QD_CONST_NONE;
    } else if (PyBool_Check(v)) {
        a->cst.kind = QD_CONST_BOOL;
        a->cst.ival = v == Py_True;
    } else if (PyLong_Check(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        a->cst.kind = QD_CONST_INT;
        a->cst.ival = x;
        a->cst.is_big = overflow != 0;
        if (a->cst.is_big) { /* kept as its decimal text; lowering makes the Python int again */
            PyObject *text = PyObject_Str(v);
            a->cst.sval = text ? copy_utf8(c, text) : NULL;
            Py_XDECREF(text);
            if (!a->cst.sval) {
                rc = py_error(c);
            }
        }
    } else if (PyFloat_Check(v)) {
        a->cst.kind = QD_CONST_FLOAT;
        a->cst.fval = PyFloat_AS_DOUBLE(v);
    } else if (PyUnicode_Check(v)) {
        a->cst.kind = QD_CONST_STR;
        a->cst.sval = copy_utf8(c, v);
        if (!a->cst.sval) {
            rc = py_error(c);
        }
    } else if (v == Py_Ellipsis) {
        a->cst.kind = QD_CONST_ELLIPSIS;
    } else {
        a->cst.kind = QD_CONST_OTHER;
    }
    Py_DECREF(v);
    return rc;
}

static int
convert_compare(Converter *c, PyObject *node, QdAst *a)
{
    RETURN_IF_ERROR(convert_attr(c, node, "left", &a->x));
    RETURN_IF_ERROR(convert_list(c, node, "comparators", &a->b));
    PyObject *ops = PyObject_GetAttrString(node, "ops");
    if (!ops) {
        return py_error(c);
    }
    Py_ssize_t n = PyList_Check(ops) ? PyList_GET_SIZE(ops) : 0;
    a->ops = QD_NEW_ARRAY(c->arena, QdAstOp, n ? n : 1);
    int rc = a->ops ? 0 : conv_error(c, QD_ERR_NOMEM, "out of memory");
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        int op = node_op(PyList_GET_ITEM(ops, i));
        if (op < QD_CMP_EQ) {
            rc = conv_error(c, QD_ERR_SYNTAX, "unsupported comparison");
        } else {
            a->ops[i] = (QdAstOp)op;
        }
    }
    Py_DECREF(ops);
    if (rc == 0 && (uint32_t)n != a->b.len) {
        rc = conv_error(c, QD_ERR_INTERNAL, "Compare with mismatched operators");
    }
    return rc;
}

/* FunctionDef parameters: ARG nodes with annotation (x) and default (y). */
static int
convert_params(Converter *c, PyObject *node, QdAst *a)
{
    PyObject *args = PyObject_GetAttrString(node, "args");
    if (!args) {
        return py_error(c);
    }
    int rc = 0;
    PyObject *vararg = PyObject_GetAttrString(args, "vararg");
    PyObject *kwarg = PyObject_GetAttrString(args, "kwarg");
    PyObject *kwonly = PyObject_GetAttrString(args, "kwonlyargs");
    PyObject *posonly = PyObject_GetAttrString(args, "posonlyargs");
    PyObject *defaults = PyObject_GetAttrString(args, "defaults");
    if (!vararg || !kwarg || !kwonly || !posonly || !defaults) {
        rc = py_error(c);
    } else if (vararg != Py_None || kwarg != Py_None ||
               (PyList_Check(kwonly) && PyList_GET_SIZE(kwonly)) ||
               (PyList_Check(posonly) && PyList_GET_SIZE(posonly))) {
        rc = conv_error(c, QD_ERR_SYNTAX,
                        "*args, **kwargs, keyword-only and positional-only parameters are not supported");
    } else {
        rc = convert_list(c, args, "args", &a->a);
        Py_ssize_t nd = PyList_Check(defaults) ? PyList_GET_SIZE(defaults) : 0;
        for (Py_ssize_t i = 0; rc == 0 && i < nd && (uint32_t)nd <= a->a.len; i++) {
            QdAst *param = a->a.items[a->a.len - (uint32_t)nd + (uint32_t)i];
            rc = convert(c, PyList_GET_ITEM(defaults, i), &param->y);
        }
    }
    Py_XDECREF(vararg);
    Py_XDECREF(kwarg);
    Py_XDECREF(kwonly);
    Py_XDECREF(posonly);
    Py_XDECREF(defaults);
    Py_DECREF(args);
    return rc;
}

static int
convert_fields(Converter *c, PyObject *node, QdAst *a)
{
    switch (a->kind) {
    case QD_AST_FUNCTION_DEF:
        RETURN_IF_ERROR(convert_name(c, node, "name", &a->name));
        RETURN_IF_ERROR(convert_params(c, node, a));
        RETURN_IF_ERROR(convert_list(c, node, "body", &a->b));
        a->cst.sval = c->filename;
        return convert_attr(c, node, "returns", &a->x);
    case QD_AST_ARG:
        RETURN_IF_ERROR(convert_name(c, node, "arg", &a->name));
        return convert_attr(c, node, "annotation", &a->x);
    case QD_AST_RETURN:
    case QD_AST_EXPR_STMT:
    case QD_AST_STARRED:
        return convert_attr(c, node, "value", &a->x);
    case QD_AST_ASSIGN:
        RETURN_IF_ERROR(convert_list(c, node, "targets", &a->a));
        return convert_attr(c, node, "value", &a->x);
    case QD_AST_AUG_ASSIGN:
        RETURN_IF_ERROR(convert_attr(c, node, "target", &a->x));
        RETURN_IF_ERROR(convert_op(c, node, "op", &a->op));
        return convert_attr(c, node, "value", &a->y);
    case QD_AST_ANN_ASSIGN:
        RETURN_IF_ERROR(convert_attr(c, node, "target", &a->x));
        RETURN_IF_ERROR(convert_attr(c, node, "annotation", &a->y));
        return convert_attr(c, node, "value", &a->z);
    case QD_AST_FOR:
        RETURN_IF_ERROR(convert_attr(c, node, "target", &a->x));
        RETURN_IF_ERROR(convert_attr(c, node, "iter", &a->y));
        RETURN_IF_ERROR(convert_list(c, node, "body", &a->a));
        return convert_list(c, node, "orelse", &a->b);
    case QD_AST_WHILE:
    case QD_AST_IF:
        RETURN_IF_ERROR(convert_attr(c, node, "test", &a->x));
        RETURN_IF_ERROR(convert_list(c, node, "body", &a->a));
        return convert_list(c, node, "orelse", &a->b);
    case QD_AST_WITH:
        RETURN_IF_ERROR(convert_list(c, node, "items", &a->a));
        return convert_list(c, node, "body", &a->b);
    case QD_AST_WITH_ITEM:
        RETURN_IF_ERROR(convert_attr(c, node, "context_expr", &a->x));
        return convert_attr(c, node, "optional_vars", &a->y);
    case QD_AST_ASSERT:
        RETURN_IF_ERROR(convert_attr(c, node, "test", &a->x));
        return convert_attr(c, node, "msg", &a->y);
    case QD_AST_BOOL_OP:
        RETURN_IF_ERROR(convert_op(c, node, "op", &a->op));
        return convert_list(c, node, "values", &a->a);
    case QD_AST_NAMED_EXPR:
        RETURN_IF_ERROR(convert_attr(c, node, "target", &a->x));
        return convert_attr(c, node, "value", &a->y);
    case QD_AST_BIN_OP:
        RETURN_IF_ERROR(convert_attr(c, node, "left", &a->x));
        RETURN_IF_ERROR(convert_op(c, node, "op", &a->op));
        return convert_attr(c, node, "right", &a->y);
    case QD_AST_UNARY_OP:
        RETURN_IF_ERROR(convert_op(c, node, "op", &a->op));
        return convert_attr(c, node, "operand", &a->x);
    case QD_AST_IF_EXP:
        RETURN_IF_ERROR(convert_attr(c, node, "test", &a->x));
        RETURN_IF_ERROR(convert_attr(c, node, "body", &a->y));
        return convert_attr(c, node, "orelse", &a->z);
    case QD_AST_DICT:
        RETURN_IF_ERROR(convert_list(c, node, "keys", &a->a));
        return convert_list(c, node, "values", &a->b);
    case QD_AST_LIST_COMP:
        RETURN_IF_ERROR(convert_attr(c, node, "elt", &a->x));
        return convert_list(c, node, "generators", &a->a);
    case QD_AST_DICT_COMP:
        RETURN_IF_ERROR(convert_attr(c, node, "key", &a->x));
        RETURN_IF_ERROR(convert_attr(c, node, "value", &a->y));
        return convert_list(c, node, "generators", &a->a);
    case QD_AST_COMPREHENSION:
        RETURN_IF_ERROR(convert_attr(c, node, "target", &a->x));
        RETURN_IF_ERROR(convert_attr(c, node, "iter", &a->y));
        return convert_list(c, node, "ifs", &a->a);
    case QD_AST_COMPARE:
        return convert_compare(c, node, a);
    case QD_AST_CALL:
        RETURN_IF_ERROR(convert_attr(c, node, "func", &a->x));
        RETURN_IF_ERROR(convert_list(c, node, "args", &a->a));
        return convert_list(c, node, "keywords", &a->b);
    case QD_AST_KEYWORD:
        RETURN_IF_ERROR(convert_name(c, node, "arg", &a->name));
        return convert_attr(c, node, "value", &a->x);
    case QD_AST_JOINED_STR:
        return convert_list(c, node, "values", &a->a);
    case QD_AST_FORMATTED_VALUE:
        RETURN_IF_ERROR(convert_attr(c, node, "value", &a->x));
        a->op = (int)int_attr(node, "conversion");
        return convert_attr(c, node, "format_spec", &a->y);
    case QD_AST_CONSTANT:
        return convert_constant(c, node, a);
    case QD_AST_ATTRIBUTE:
        RETURN_IF_ERROR(convert_attr(c, node, "value", &a->x));
        return convert_name(c, node, "attr", &a->name);
    case QD_AST_SUBSCRIPT:
        RETURN_IF_ERROR(convert_attr(c, node, "value", &a->x));
        return convert_attr(c, node, "slice", &a->y);
    case QD_AST_NAME:
        return convert_name(c, node, "id", &a->name);
    case QD_AST_LIST:
    case QD_AST_TUPLE:
        return convert_list(c, node, "elts", &a->a);
    case QD_AST_SLICE:
        RETURN_IF_ERROR(convert_attr(c, node, "lower", &a->x));
        RETURN_IF_ERROR(convert_attr(c, node, "upper", &a->y));
        return convert_attr(c, node, "step", &a->z);
    default:
        return 0; /* PASS, BREAK, CONTINUE, UNSUPPORTED: no children */
    }
}

static int
convert(Converter *c, PyObject *node, QdAst **out)
{
    if (++c->depth > MAX_AST_DEPTH) {
        return conv_error(c, QD_ERR_SYNTAX, "expression nested too deeply");
    }
    QdAst *a = QD_NEW(c->arena, QdAst);
    if (!a) {
        return conv_error(c, QD_ERR_NOMEM, "out of memory");
    }
    const char *name = class_name(node);
    a->kind = QD_AST_UNSUPPORTED;
    for (int k = 0; k < QD_AST_UNSUPPORTED; k++) {
        if (strcmp(kind_pynames[k], name) == 0) {
            a->kind = (QdAstKind)k;
            break;
        }
    }
    a->line = int_attr(node, "lineno");
    a->col = int_attr(node, "col_offset") + (a->line ? 1 : 0);
    a->end_line = int_attr(node, "end_lineno");
    a->end_col = int_attr(node, "end_col_offset") + (a->end_line ? 1 : 0);
    a->pynode = qd_py_host_add(c->host, node);
    if (!a->pynode) {
        return py_error(c);
    }
    if (a->kind == QD_AST_UNSUPPORTED) {
        a->name = qd_arena_strdup(c->arena, name);
    } else {
        RETURN_IF_ERROR(convert_fields(c, node, a));
    }
    c->depth--;
    *out = a;
    return 0;
}

int
qd_py_host_convert_function(QdPyHost *h, QdCtx *ctx, PyObject *funcdef, const char *filename,
                            QdAst **out)
{
    Converter c = {h, ctx, h->arena, qd_arena_strdup(h->arena, filename ? filename : "<unknown>"), 0};
    if (strcmp(class_name(funcdef), "FunctionDef") != 0) {
        return conv_error(&c, QD_ERR_SYNTAX, "a kernel must be a plain function definition");
    }
    return convert(&c, funcdef, out);
}
