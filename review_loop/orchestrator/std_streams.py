"""The command line's standard streams as it finds them: open, closed, full or gone.

A daemon, a cron job or a process manager may start ``review-loop`` with descriptor 0, 1
or 2 closed (``2>&-``), with stdout on a full disk (``>/dev/full``) or with a reader that
goes away (``| head -c1``). None of that may cost a record or a reviewer's answer: the
reviewers run, every record is finished, the answer is kept under ``.review-handoff/``, and
what could not be printed is reported by the exit code.

- :func:`reopen_closed`, first thing at start-up: a closed descriptor 0-2 is opened on
  ``/dev/null``, so that no file or pipe opened later takes its number (a reviewer's pipe
  read as "stdin", a record written as "stdout"), and Python's ``None`` stream becomes a
  real one. Which were closed is returned: a closed stdout is still reported.
- :class:`GuardedStderr`: progress and diagnostics are for a person; a write to stderr that
  fails is dropped, never raised into the code that was reporting progress. After the
  first failure descriptor 2 points to ``/dev/null`` (the text already buffered drains
  there, not into the exit code).
- :func:`write_stderr`: one line on stderr, for library code (the dispatcher's default
  progress) whose host may have no stderr at all (``sys.stderr`` is ``None``).

:data:`UNPRINTED_EXIT` (120, the code the interpreter itself gives a flush of stdout that
fails at exit) is the exit code of a command whose JSON document did not reach stdout;
``docs/cli.md`` states it.

Standard library only (``contextlib``, ``os``, ``sys``): every command pays for this
module at start-up.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from review_loop.agents.errors import ReviewLoopError

UNPRINTED_EXIT = 120
"""Exit code when the command's JSON document could not be written to stdout."""

STANDARD_FDS = (0, 1, 2)


class OutputLostError(ReviewLoopError):
    """What a command wrote to stdout did not reach its reader (the MCP server's protocol
    stream, its client gone): the command exits :data:`UNPRINTED_EXIT`."""


def reopen_closed() -> frozenset[int]:
    """Open each closed descriptor 0-2 on ``/dev/null``; returns those that were closed.

    A ``None`` ``sys.stdin``/``sys.stdout``/``sys.stderr`` (what Python makes of a closed
    descriptor) becomes a stream on the reopened descriptor.
    """
    closed = []
    for fd in STANDARD_FDS:
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in closed:  # in order: the lowest free number is the one being reopened
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        os.set_inheritable(fd, True)  # as a standard descriptor is
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's
    if sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(  # noqa: SIM115
            2, "w", encoding="utf-8", errors="backslashreplace", closefd=False
        )
    return frozenset(closed)


def silence(stream: Any) -> None:
    """Point the descriptor under ``stream`` at ``/dev/null`` and drain its buffer there.

    For a standard stream that failed: what it still buffers would fail again at every
    later write and at exit. A stream without a descriptor (a test's capture) is left.
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if fd not in STANDARD_FDS:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
    with contextlib.suppress(OSError, ValueError):  # text that had nowhere to go: dropped
        stream.flush()


class GuardedStderr:
    """``sys.stderr`` for the command line: writes that fail are dropped, not raised.

    Attributes:
        failure: why stderr stopped taking text (``None`` while it works).
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.failure: str | None = None

    def write(self, text: str) -> int:
        """Write ``text``; after a failure (or on one), nothing, without an error."""
        if self.failure is None:
            try:
                written: int = self.stream.write(text)
            except (OSError, ValueError) as error:
                self._failed(error)
            else:
                return written
        return len(text)

    def flush(self) -> None:
        """Flush; a failure is kept in :attr:`failure`, not raised."""
        if self.failure is None:
            try:
                self.stream.flush()
            except (OSError, ValueError) as error:
                self._failed(error)

    def isatty(self) -> bool:
        """Whether stderr is a terminal (``False`` once it failed)."""
        if self.failure is not None:
            return False
        try:
            return bool(self.stream.isatty())
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _failed(self, error: BaseException) -> None:
        self.failure = str(error) or type(error).__name__
        silence(self.stream)


def write_stderr(text: str) -> bool:
    """Write ``text`` and a newline to ``sys.stderr``; whether it was written.

    No stderr (``None``: a host started without descriptor 2) or one that fails is not an
    error of the caller's: the line is dropped.
    """
    stream = sys.stderr
    if stream is None:
        return False
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        return False
    return True
