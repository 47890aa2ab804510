"""The listing vocabulary: the sessions an adapter finds and the commands that resume them.

Built by an adapter, read by ``sessions``, never changed: ``typing.NamedTuple``s, unpacked
where they are read. A module of their own, so that ``sessions`` reads them without
:mod:`review_loop.agents.models` (the run vocabulary, dataclasses) loaded.
"""

from __future__ import annotations

from typing import NamedTuple


class StoredSession(NamedTuple):
    """A resumable session found in a CLI's own store or in our records.

    Built with keywords; a change is ``session._replace(updated=...)``.
    """

    product: str
    session_id: str
    cwd: str | None
    updated: str
    """ISO-8601 UTC time of the last activity."""
    source: str
    title: str | None = None


class ReadOnlyResume(NamedTuple):
    """Resume commands that keep the read-only flags review-loop ran the session with.

    ``unavailable`` says why there is none (the CLI has no read-only mode, or the adapter
    does not say how); both commands are then ``None``, never a writable stand-in.
    """

    interactive: str | None
    headless: str | None
    unavailable: str | None = None


class ResumeCommands(NamedTuple):
    """Copy-ready commands that resume a session: interactively and headless.

    ``interactive``/``headless`` are the bare commands the original tool printed (no
    read-only flags); ``read_only`` the same with the adapter's read-only flags, ``None``
    from an adapter that does not give them.
    """

    interactive: str | None
    headless: str | None
    read_only: ReadOnlyResume | None = None
