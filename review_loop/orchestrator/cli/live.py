"""A live status of the running reviewers on a terminal, for the person watching.

When stderr is a terminal that this command has to itself, the progress lines of the
dispatcher (``[review-loop] reviewer=P status=S ...``, :mod:`review_loop.orchestrator.explain`)
are shown as one table redrawn in place — a row per reviewer with its state and a running
clock — instead of a scroll of lines. Everything else written to stderr meanwhile
(diagnostics, other progress) is printed above the table.

The table never covers what it did not draw:

- it is drawn only when no other program of the command line can write to the same
  terminal while it runs: stdout and stdin are not pipes or sockets (``review-loop ... | jq``
  and ``cat q | review-loop ...`` get the plain, append-only lines) and the command is the
  terminal's foreground job (a job started with ``&`` gets the plain lines);
- it is finished — its last frame drawn and the cursor put below it — before the JSON
  document is written to stdout (:meth:`LiveStatus.stop`, called by the command line's
  document writer), and never redrawn after: the document starts on a line of its own
  and stays on screen whole.

Off when stderr is not a terminal (a log file gets the plain lines), with ``TERM=dumb``,
or with ``REVIEW_LOOP_PLAIN=1``. rich is imported only when the first reviewer starts.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# A pattern, compiled by ``re`` on first use (its cache): off a terminal it is never used.
_LINE = r"^\[review-loop\] reviewer=(\S+) status=(\S+)\s*(.*)$"
_DONE = frozenset({"answered", "timeout", "failed", "not-started", "fallback"})


class LiveStatus:
    """The table of reviewers, started on the first progress line, stopped at exit."""

    def __init__(self) -> None:
        self._rows: dict[str, list[Any]] = {}  # reviewer -> [status, detail, started, ended]
        self._live: Any = None

    def line(self, text: str) -> None:
        """Take one progress line: a reviewer's state, or any other line to print above."""
        match = re.match(_LINE, text)
        if match is None:
            self._start().console.print(text, markup=False, highlight=False)
            return
        name, status, detail = match.groups()
        row = self._rows.setdefault(name, [status, detail, time.monotonic(), None])
        if status == "active":
            # The liveness line repeats every livenessMs; the table keeps its own clock.
            detail = detail.split("timeout=")[-1]
            row[1] = f"deadline {detail}" if detail else ""
        else:  # the table has its own elapsed column
            row[1] = re.sub(r"\belapsed=\S+\s*", "", detail).strip()
        row[0] = status
        row[3] = time.monotonic() if status in _DONE else None
        self._start().update(self._table(), refresh=True)

    def stop(self) -> None:
        """Draw the final table and give the terminal back."""
        if self._live is not None:
            self._live.update(self._table(), refresh=True)
            self._live.stop()
            self._live = None

    def _start(self) -> Any:
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=sys.stderr, stderr=True)
            self._live = Live(
                get_renderable=self._table,
                console=console,
                refresh_per_second=2,
                redirect_stdout=False,  # stdout is the JSON document: never redrawn over
                redirect_stderr=True,  # other stderr lines print above the table
                transient=False,
            )
            self._live.start()
        return self._live

    def _table(self) -> Any:
        from rich.table import Table

        table = Table(title="review-loop", title_justify="left", expand=False)
        for column in ("reviewer", "status", "elapsed", "detail"):
            table.add_column(column)
        now = time.monotonic()
        for name, (status, detail, started, ended) in self._rows.items():
            seconds = int((ended or now) - started)
            table.add_row(name, status, f"{seconds // 60:02d}:{seconds % 60:02d}", detail)
        return table


def wanted(stream: Any = None) -> bool:
    """Whether the live table is on for ``stream`` (default stderr): a terminal that no
    other program of this command line can write to while the table is drawn."""
    stream = sys.stderr if stream is None else stream
    if os.environ.get("REVIEW_LOOP_PLAIN") == "1" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        return False
    try:
        return _alone_on(stream.fileno())
    except (AttributeError, OSError, ValueError):  # no descriptor to ask: plain lines
        return False


def _alone_on(fd: int) -> bool:
    """Whether this process can redraw lines on terminal ``fd`` without covering another
    program's output: it is the terminal's foreground process group, and neither stdin nor
    stdout is a pipe or socket to a program that shares the terminal (a reader such as
    ``jq`` prints whenever it likes; a writer upstream may print its own diagnostics)."""
    if os.tcgetpgrp(fd) != os.getpgrp():  # a background job, or not our terminal
        return False
    for other in (0, 1):
        try:
            mode = os.fstat(other).st_mode
        except OSError:  # closed: nothing shares the terminal through it
            continue
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            return False
    return True


@contextmanager
def terminal_status() -> Iterator[Callable[[], None]]:
    """Show reviewers' progress as a live table while the command runs, on a terminal.

    Yields the function that finishes the table (idempotent): the command line calls it
    before it writes the JSON document, so the document is never drawn over. Off a
    terminal it does nothing.
    """
    if not wanted():
        yield _nothing
        return
    from review_loop.orchestrator import explain

    status = LiveStatus()
    explain.set_progress_sink(status.line)

    def finish() -> None:
        explain.set_progress_sink(None)  # later lines (if any) print plainly, below
        status.stop()

    try:
        yield finish
    finally:
        finish()


def _nothing() -> None:
    """No live table to finish."""
