"""Source capture for ``@qd.kernel`` / ``@qd.func`` and the source excerpt of errors.

``capture`` reads a function's source lines when it is decorated (so later edits of the file do
not change what compiles). ``parse`` turns them into the ``ast.FunctionDef`` the C core lowers,
with line and column numbers of the real file: lines shifted by the function's first line, and
columns unchanged. Instead of dedenting the text (which would shift every column and break on
less-indented lines inside multi-line strings), indented source is parsed inside an ``if 1:``
block, so every node keeps the column it has in the file. The FunctionDef gets the attribute
``filename``; its decorator list is emptied.

``restyle`` rebuilds a compilation/runtime error raised at a kernel call in the reference's
shape: a leading newline, ``file:line:col``, the source line, a caret under the column, and the
message.
"""

import ast
import inspect
import linecache


class SourceInfo:
    """The source of one function: its lines, the file and the line number of the first one."""

    __slots__ = ("lines", "filename", "first_lineno")

    def __init__(self, lines, filename, first_lineno):
        self.lines = lines
        self.filename = filename
        self.first_lineno = first_lineno


def capture(func):
    """SourceInfo of `func`, or the OSError/TypeError that says why there is none."""
    try:
        lines, first_lineno = inspect.getsourcelines(func)
        filename = inspect.getsourcefile(func) or inspect.getfile(func)
    except (OSError, TypeError) as exc:
        return exc
    return SourceInfo(list(lines), filename, first_lineno)


def parse(info, func_name):
    """The ast.FunctionDef of a captured function, with the file's line and column numbers."""
    text = "".join(info.lines)
    first = next((line for line in info.lines if line.strip()), "")
    indented = first[:1] in (" ", "\t")
    if indented:
        module = ast.parse("if 1:\n" + text)
        node = module.body[0].body[0]
        ast.increment_lineno(node, info.first_lineno - 2)
    else:
        module = ast.parse(text)
        node = module.body[0]
        ast.increment_lineno(node, info.first_lineno - 1)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise TypeError(f"the source of {func_name} is not a function definition")
    node.decorator_list = []
    node.filename = info.filename
    return node


def caret_line(line, col):
    """Spaces (tabs kept) up to 1-based byte column `col` of `line`, then a caret."""
    prefix = line.encode("utf-8")[: max(col - 1, 0)].decode("utf-8", errors="ignore")
    return "".join(ch if ch == "\t" else " " for ch in prefix) + "^"


def _location_prefix(filename, lineno, col):
    """The "file:line:col: " prefix the core puts in front of its messages."""
    if filename and lineno and col:
        return f"{filename}:{lineno}:{col}: "
    if filename and lineno:
        return f"{filename}:{lineno}: "
    return None


def excerpt_message(exc):
    """The text of a restyled error: newline, location, source line, caret, message."""
    message = str(exc)
    filename = getattr(exc, "filename", None)
    lineno = getattr(exc, "lineno", None)
    col = getattr(exc, "col", None)
    if not isinstance(filename, str) or not isinstance(lineno, int) or lineno <= 0:
        return message if message.startswith("\n") else "\n" + message
    col = col if isinstance(col, int) and col > 0 else None
    prefix = _location_prefix(filename, lineno, col)
    if prefix and message.startswith(prefix):
        message = message[len(prefix) :]
    parts = [f"{filename}:{lineno}:{col}" if col else f"{filename}:{lineno}"]
    source_line = linecache.getline(filename, lineno).rstrip("\r\n")
    if source_line:
        parts.append(source_line)
        if col:
            parts.append(caret_line(source_line, col))
    parts.append(message)
    return "\n" + "\n".join(parts)


def locate_def(exc, function):
    """`exc` with the location of the ``def`` line of `function` (decorators come before it),
    when the exception has none yet and the source can be read."""
    if getattr(exc, "lineno", None) or getattr(exc, "_qd_restyled", False):
        return exc
    code = getattr(function, "__code__", None)
    if code is None:
        return exc
    filename, lineno = code.co_filename, code.co_firstlineno
    for k in range(lineno, lineno + 50):
        text = linecache.getline(filename, k)
        if not text:
            return exc
        stripped = text.lstrip()
        if stripped.startswith(("def ", "async def ")):
            exc.filename, exc.lineno, exc.col = filename, k, len(text) - len(stripped) + 1
            return exc
    return exc


def restyle(exc):
    """A new exception of the same class as `exc` with the excerpt message; the location
    attributes are copied. Returns `exc` itself when it is already restyled."""
    if getattr(exc, "_qd_restyled", False):
        return exc
    try:
        new = type(exc)(excerpt_message(exc))
    except Exception:  # a class whose constructor wants more arguments: keep the original
        return exc
    for name in ("filename", "lineno", "col"):
        if hasattr(exc, name):
            try:
                setattr(new, name, getattr(exc, name))
            except AttributeError:
                pass
    new._qd_restyled = True
    return new
