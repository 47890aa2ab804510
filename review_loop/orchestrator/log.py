"""Structured diagnostics through the standard ``logging`` module (logger ``review_loop``).

stdout belongs to the one JSON document a command prints; everything a person or a log
collector may want besides it (retries, fallbacks, escalations to SIGKILL, reaped sessions)
is an event: a name (``retry``) and fields (``peer="codex"``, ``reason=...``).

Each event is one stdlib :class:`logging.LogRecord` of the ``review_loop`` logger, never a
pre-rendered string: its message is the event and its fields as ``key=value`` (what a plain
``%(message)s`` formatter shows), and ``extra`` carries them as data: ``record.event`` is the
name, every field is an attribute of its own (``record.peer``), and ``record.fields`` is all
of them as a dict. The host's formatter renders it (a JSON formatter gets the fields as
keys; structlog's ``ProcessorFormatter`` with ``structlog.stdlib.ExtraAdder()`` turns it into
a native event dict). A host that configured structlog itself (``structlog.configure``) gets
each event as a native structlog event instead, through ``structlog.get_logger("review_loop")``
and its own processors.

Who prints it is the host's choice, as for any library: with no configuration nothing is
printed (a ``NullHandler``). The ``review-loop`` command attaches a stderr handler
(:func:`to_stderr`) that renders one JSON object per line. Nothing is configured globally:
no ``structlog.configure``, no root logger change, nothing at import. Neither ``logging`` nor
structlog is imported before the first event.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

LOGGER_NAME = "review_loop"
# ``to_stderr`` was called: the stderr handler is attached with the logger itself, so a
# command that logs nothing never imports logging (docs/performance.md).
_cli_stderr = False
# The record attribute of an event a progress line says too (see log_event).
_ECHOED = "review_loop_echoed"
# The attributes every LogRecord has: a field of that name would overwrite one (logging
# refuses it with KeyError), so it is passed as ``field_<name>`` instead.
_RECORD_NAMES = frozenset(
    [
        "name",
        "msg",
        "args",
        "levelname",
        "levelno",
        "pathname",
        "filename",
        "module",
        "exc_info",
        "exc_text",
        "stack_info",
        "lineno",
        "funcName",
        "created",
        "msecs",
        "relativeCreated",
        "thread",
        "threadName",
        "processName",
        "process",
        "taskName",
        "message",
        "asctime",
        "event",
        "fields",
    ]
)


def _stdlib_logger() -> logging.Logger:
    import logging

    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())  # silent unless the host configures it
    if _cli_stderr:
        _attach_stderr(logger)
    return logger


def _structlog_configured() -> Any:
    """structlog, when the host configured it (it is then imported already), else ``None``."""
    structlog = sys.modules.get("structlog")
    if structlog is None or not structlog.is_configured():
        return None
    return structlog


def message(event: str, fields: dict[str, Any]) -> str:
    """``event key=value ...``: the record's message (a string value quoted when needed)."""
    import json

    def shown(value: Any) -> str:
        if isinstance(value, str) and value and not any(c in value for c in ' "=\n\t\\'):
            return value
        return json.dumps(value, ensure_ascii=False, default=str)

    return " ".join([event, *(f"{key}={shown(value)}" for key, value in fields.items())])


def log_event(event: str, *, level: str = "info", echoed: bool = False, **fields: Any) -> None:
    """Log one structured event (``event`` plus ``fields``) to the ``review_loop`` logger.

    ``echoed``: a progress line says the same to the person watching (a fallback's
    ``status=fallback`` line). The command line's stderr then prints it once, as that
    line; a host's own handlers still get every event.
    """
    structlog = _structlog_configured()
    if structlog is not None:
        getattr(structlog.get_logger(LOGGER_NAME), level)(event, **fields)
        return
    import logging

    logger = _stdlib_logger()
    number = logging.getLevelName(level.upper())
    if not logger.isEnabledFor(number):
        return
    extra = {("field_" + k if k in _RECORD_NAMES else k): v for k, v in fields.items()}
    extra.update(event=event, fields=dict(fields), **{_ECHOED: echoed})
    logger.log(number, "%s", message(event, fields), extra=extra)


def to_stderr() -> None:
    """The command line's choice: every event, one JSON object per line, on stderr.

    Idempotent. The handler writes to whatever ``sys.stderr`` is when a line is logged.
    Until something is logged, logging is not even imported (unless it already is).
    """
    global _cli_stderr
    _cli_stderr = True
    if "logging" in sys.modules:  # the logger may exist already: attach now
        _stdlib_logger()


def _attach_stderr(logger: logging.Logger) -> None:
    import logging

    if any(getattr(h, "review_loop_cli", False) for h in logger.handlers):
        return

    class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
        """A stream handler bound to the current ``sys.stderr`` (tests replace it)."""

        review_loop_cli = True

        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, _ECHOED, False):  # its progress line said it on stderr
                return
            self.stream = sys.stderr
            super().emit(record)

    class _JSONLines(logging.Formatter):
        """One JSON object per event (the command line's stderr format)."""

        def format(self, record: logging.LogRecord) -> str:
            return _json_line(record)

    handler = _StderrHandler(sys.stderr)
    handler.setFormatter(_JSONLines())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the command owns its stderr; nothing printed twice


def _json_line(record: logging.LogRecord) -> str:
    """The record as one JSON object: its fields, ``event``, ``level``, ``logger``,
    ``timestamp``."""
    import json
    from datetime import UTC, datetime

    fields = getattr(record, "fields", None)
    document = {
        **(fields if isinstance(fields, dict) else {}),
        "event": getattr(record, "event", record.getMessage()),
        "level": record.levelname.lower(),
        "logger": record.name,
        "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
    }
    return json.dumps(document, sort_keys=True, default=str)
