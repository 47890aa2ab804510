"""What a command did not believe under ``.review-handoff/``, and what git tracks there.

Everything under a repository's ``.review-handoff/`` is untrusted input (it can be committed,
copied or forged). The readers of review state (``review_store``, ``converge_store``) call
:func:`note_untrusted` for every document they refused to believe (no valid MAC, wrong
shape) and :func:`note_repo` for the repository they read, which lists the files git tracks
under ``.review-handoff/`` (review-loop never commits them, so a tracked one came from the
repository). Each note is also a warning on stderr.

A command collects the notes with :func:`collecting` and adds them to its result with
:meth:`TrustReport.attach`: ``"untrusted": [{"path", "reason"}]`` and ``"tracked":
[path, ...]`` (relative to the repository), present only when non-empty. Collecting is
re-entrant (an inner ``collecting`` adds to the outer report) and the report is shared by
every task and worker thread of the command (a context variable holding one mutable object).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec

P = ParamSpec("P")

HANDOFF = ".review-handoff"
STOP_NAME = f"{HANDOFF}/STOP"


class TrustReport:
    """The untrusted documents and tracked files one command met."""

    def __init__(self) -> None:
        self.untrusted: list[dict[str, str]] = []
        self.tracked: list[str] = []
        self.repos: set[Path] = set()

    def attach(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """``document`` with ``untrusted`` / ``tracked`` added (only when non-empty)."""
        out = dict(document)
        if self.untrusted:
            out["untrusted"] = [dict(entry) for entry in self.untrusted]
        if self.tracked:
            out["tracked"] = list(self.tracked)
        return out


_current: contextvars.ContextVar[TrustReport | None] = contextvars.ContextVar(
    "review_loop_trust_report", default=None
)


@contextmanager
def collecting() -> Iterator[TrustReport]:
    """Collect the notes made inside the block (joins an enclosing collection)."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    report = TrustReport()
    token = _current.set(report)
    try:
        yield report
    finally:
        _current.reset(token)


def _warn(event: str, **fields: Any) -> None:
    from review_loop.orchestrator.log import log_event

    log_event(event, level="warning", **fields)


def note_untrusted(path: Path, reason: str) -> None:
    """Record (once per path) that the document at ``path`` was not believed, and why."""
    report = _current.get()
    shown = str(path)
    if report is not None:
        if any(entry["path"] == shown for entry in report.untrusted):
            return
        report.untrusted.append({"path": shown, "reason": reason})
    _warn("untrusted_state", path=shown, reason=reason, effect="ignored; the review runs again")


def tracked_handoff_files(repo: Path) -> list[str]:
    """Files git tracks under ``.review-handoff/`` (paths relative to ``repo``)."""
    from review_loop.orchestrator.handoff.git import git

    result = git(repo, "ls-files", "-z", "--", HANDOFF, check=False)
    if result.returncode != 0:
        return []
    return sorted(p for p in result.stdout.decode("utf-8", "replace").split("\0") if p)


def note_repo(repo: Path) -> list[str]:
    """List (once per command and repository) the tracked files under ``.review-handoff/``.

    Each is reported by name; a tracked ``STOP`` gets its own warning, because it stops
    every review of the repository (it is honoured: a stop request is always safe).
    """
    report = _current.get()
    key = repo.resolve()
    if report is not None and key in report.repos:
        return report.tracked
    tracked = tracked_handoff_files(repo)
    if report is not None:
        report.repos.add(key)
        report.tracked.extend(p for p in tracked if p not in report.tracked)
    if tracked:
        _warn(
            "tracked_review_state",
            files=tracked,
            effect="committed review state is never trusted as a verdict, run state or gate",
        )
    if STOP_NAME in tracked:
        _warn(
            "tracked_stop_file",
            path=STOP_NAME,
            effect="honoured: every review of this repository stops before it starts",
            fix=f"git rm --cached {STOP_NAME} && rm {STOP_NAME}",
        )
    return tracked


def reporting(function: Callable[P, Mapping[str, Any]]) -> Callable[P, dict[str, Any]]:
    """Decorate a command function: its result gets the notes made while it ran."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        with collecting() as report:
            return report.attach(function(*args, **kwargs))

    return wrapper


def reporting_async(
    function: Callable[P, Awaitable[Mapping[str, Any]]],
) -> Callable[P, Awaitable[dict[str, Any]]]:
    """:func:`reporting` for a coroutine function."""

    @functools.wraps(function)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        with collecting() as report:
            return report.attach(await function(*args, **kwargs))

    return wrapper


def note_stop(repo: Path) -> None:
    """Name the tracked files of ``repo`` when a ``.review-handoff/STOP`` exists (cheap check).

    For commands that do not read review state but are stopped by the global STOP file
    (``consult``): a committed STOP must not stop them silently.
    """
    if (repo / STOP_NAME).is_file() or (repo / STOP_NAME).is_symlink():
        note_repo(repo)
