"""Structured diagnostics on stderr: JSON lines when stderr is not a TTY, readable otherwise.

stdout belongs to the one JSON document a command prints; everything a person or a log
collector may want besides it (retries, fallbacks, escalations to SIGKILL, reaped sessions)
goes here. structlog is imported on first use: commands that log nothing never pay for it.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any


@cache
def _logger() -> Any:
    import structlog

    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=False)
        if sys.stderr.isatty()
        else structlog.processors.JSONRenderer(sort_keys=True)
    )
    return structlog.wrap_logger(
        structlog.PrintLogger(file=sys.stderr),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
    )


def log_event(event: str, *, level: str = "info", **fields: Any) -> None:
    """Write one structured event to stderr (``event`` plus ``fields``)."""
    getattr(_logger(), level)(event, logger="review-loop", **fields)
