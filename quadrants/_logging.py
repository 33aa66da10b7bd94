"""``qd._logging``: Quadrants' log levels and logger functions, under the reference's names.

Programs written against the reference reach into this module (``qd._logging.warn(...)``,
``qd._logging._get_logging(qd._logging.WARN)``, the level constants) to redirect or restore
Quadrants' messages, so it keeps the reference's names and behaviour:

- levels, least severe first: ``trace``, ``debug``, ``info``, ``warn``, ``error``,
  ``critical`` (and ``off`` for ``set_logging_level``); the default is ``info``, and
  ``qd.init(log_level=...)`` sets it;
- a logger formats ``msg.format(*args, **kwargs)`` and writes one line to stderr,
  ``[W file.py:function@line] message`` (the first letter of the level, then the caller);
- ``error`` and ``critical`` raise RuntimeError with the message after writing it, as the
  reference does;
- an unknown level name raises RuntimeError.
"""

import inspect
import os
import sys

TRACE = "trace"
DEBUG = "debug"
INFO = "info"
WARN = "warn"
ERROR = "error"
CRITICAL = "critical"

supported_log_levels = [DEBUG, TRACE, INFO, WARN, ERROR, CRITICAL]

# Severity of every level name; a message is written when its level is at least the current one.
_SEVERITY = {TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4, CRITICAL: 5, "off": 6}
_RAISING = (ERROR, CRITICAL)
_current = _SEVERITY[INFO]


def _severity(level):
    try:
        return _SEVERITY[level]
    except (KeyError, TypeError):
        raise RuntimeError(
            f"Unknown logging level [{level}]. Levels = trace, debug, info, warn, error, "
            "critical, off"
        ) from None


def set_logging_level(level):
    """Makes `level` and every more severe level effective ("off": none)."""
    global _current
    _current = _severity(level)


def is_logging_effective(level):
    """Whether messages of `level` are written at the current level."""
    return _severity(level) >= _current


def _get_logging(name):
    """The logger function of level `name`: ``logger(msg, *args, **kwargs)``."""
    severity = _severity(name)
    letter = name[0].upper()

    def logger(msg, *args, **kwargs):
        if severity < _current:
            return
        text = msg.format(*args, **kwargs)
        caller = inspect.currentframe().f_back
        where = (
            f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_code.co_name}"
            f"@{caller.f_lineno}"
        )
        line = f"[{where}] {text}"
        sys.stderr.write(f"[{letter}] {line}\n")
        if name in _RAISING:
            raise RuntimeError(line)

    logger.__name__ = name
    return logger


trace = _get_logging(TRACE)
debug = _get_logging(DEBUG)
info = _get_logging(INFO)
warn = _get_logging(WARN)
error = _get_logging(ERROR)
critical = _get_logging(CRITICAL)

__all__ = [
    "DEBUG",
    "TRACE",
    "INFO",
    "WARN",
    "ERROR",
    "CRITICAL",
    "set_logging_level",
    "is_logging_effective",
]
