"""Structured diagnostics through the standard ``logging`` module (logger ``review_loop``).

stdout belongs to the one JSON document a command prints; everything a person or a log
collector may want besides it (retries, fallbacks, escalations to SIGKILL, reaped sessions)
is a structlog event rendered to one line — JSON when stderr is not a TTY, readable
otherwise — and handed to ``logging.getLogger("review_loop")``.

Who prints it is the host's choice, as for any library: an embedding program routes it with
its own ``logging`` configuration (handlers, levels, formatters); with none, nothing is
printed (a ``NullHandler``). The ``review-loop`` command attaches a stderr handler
(:func:`to_stderr`). Nothing is configured globally: no ``structlog.configure``, no root
logger change, nothing at import. structlog is imported on first use.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

LOGGER_NAME = "review_loop"
# ``to_stderr`` was called: the stderr handler is attached with the logger itself, so a
# command that logs nothing never imports logging (docs/performance.md).
_cli_stderr = False


def _stdlib_logger() -> logging.Logger:
    import logging

    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())  # silent unless the host configures it
    if _cli_stderr:
        _attach_stderr(logger)
    return logger


@cache
def _logger() -> Any:
    import structlog

    isatty = getattr(sys.stderr, "isatty", None)  # no stderr at all: ``None``
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=False)
        if isatty is not None and isatty()
        else structlog.processors.JSONRenderer(sort_keys=True)
    )

    def render(logger: Any, name: str, event_dict: Any) -> Any:
        # The stdlib record carries whether a progress line says the same (see log_event).
        echoed = bool(event_dict.pop(_ECHOED, False))
        return (renderer(logger, name, event_dict),), {"extra": {_ECHOED: echoed}}

    return structlog.wrap_logger(
        _stdlib_logger(),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            render,
        ],
    )


# The record attribute (and event key, never rendered) of an event a progress line says too.
_ECHOED = "review_loop_echoed"


def log_event(event: str, *, level: str = "info", echoed: bool = False, **fields: Any) -> None:
    """Log one structured event (``event`` plus ``fields``) to the ``review_loop`` logger.

    ``echoed``: a progress line says the same to the person watching (a fallback's
    ``status=fallback`` line). The command line's stderr then prints it once, as that
    line; a host's own handlers still get every event.
    """
    getattr(_logger(), level)(event, logger="review-loop", **{_ECHOED: echoed}, **fields)


def to_stderr() -> None:
    """The command line's choice: every event, one line each, on stderr.

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

    handler = _StderrHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the command owns its stderr; nothing printed twice
