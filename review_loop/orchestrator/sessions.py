"""Every resumable session of a repository: our records and each CLI's own store.

Read-only. The orchestrator does the reading; each adapter says where its CLI keeps
sessions and how to parse one file, so this module never names a product.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from review_loop.adapters import Adapter, SessionFile, get_adapter, product_names
from review_loop.agents.models import (
    DeliveryState,
    ReadOnlyResume,
    ResumeCommands,
    StoredSession,
)
from review_loop.agents.records import SESSION_FILE, SessionRecord
from review_loop.orchestrator.files import read_each

NOTE = (
    "Resume a session with the same product from its cwd (Claude looks sessions up per "
    "directory). Sessions under consult-sessions/ are advisory consults."
)


@dataclass(frozen=True, slots=True)
class Listed:
    """One session ready for output."""

    session: StoredSession
    packet_id: str | None
    command: tuple[str, ...]
    status: str | None


class OriginalRecord(BaseModel):
    """``reviewer-session.json`` as the original ``review-loop`` writes it.

    The original writes a record only after a call succeeded, so one is resumable.
    """

    model_config = ConfigDict(extra="ignore", defer_build=True)

    product: str
    sessionId: str
    updated: str


@dataclass(frozen=True, slots=True)
class _Record:
    """A session record of the repository: ours (with its delivery) or the original's."""

    packet_id: str
    product: str
    session_id: str | None
    updated: str
    cwd: str | None
    command: tuple[str, ...]
    status: str | None
    delivered: bool


def _records(repo: Path) -> list[_Record]:
    """Every readable session record under ``.review-handoff/runtime/*/*/``.

    A record git tracks came from the repository, not from this user's reviewer: it is
    skipped, so a committed record cannot put a program of its choosing in a resume command.
    """
    runtime = repo / ".review-handoff" / "runtime"
    found: list[_Record] = []
    listed = [path.relative_to(runtime).as_posix() for path in runtime.glob(f"*/*/{SESSION_FILE}")]
    if listed:
        from review_loop.orchestrator.trust import tracked_handoff_files

        tracked = set(tracked_handoff_files(repo))
        prefix = runtime.relative_to(repo).as_posix()
        listed = [rel for rel in listed if f"{prefix}/{rel}" not in tracked]
    # read_each: the no-follow walk to runtime/ done once, not once per record
    for relative, data in read_each(runtime, listed) if listed else ():
        packet_id = relative.rsplit("/", 1)[0]
        if data is None:  # unreadable, a link under .review-handoff/ too (not followed)
            continue  # skipped, as the original tool does
        try:
            raw = json.loads(data)
        except ValueError:
            continue  # not JSON: skipped too
        try:
            ours = SessionRecord.model_validate(raw)
        except ValidationError:
            try:
                theirs = OriginalRecord.model_validate(raw)
            except ValidationError:
                continue  # foreign: skipped
            found.append(
                _Record(
                    packet_id,
                    theirs.product,
                    theirs.sessionId,
                    theirs.updated,
                    str(repo),
                    (),
                    None,
                    True,
                )
            )
            continue
        found.append(
            _Record(
                packet_id,
                ours.product,
                ours.sessionId,
                ours.updated,
                ours.cwd,
                tuple(ours.command),
                ours.status,
                ours.state is DeliveryState.DELIVERED,
            )
        )
    return found


def _read_head(path: Path, size: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def _store_sessions(adapter: Adapter, env: Mapping[str, str], repo: Path) -> list[StoredSession]:
    home = Path(env.get("HOME") or Path.home())
    found: list[StoredSession] = []
    for store in adapter.session_stores(env, home, repo):
        if not store.root.is_dir():
            continue
        for path in store.root.glob(store.pattern):
            try:
                stat = path.stat()
                sidecars = {}
                for name in store.sidecars:
                    side = (path.parent / name).resolve()
                    if side.is_file():
                        sidecars[name] = side.read_bytes()
                file = SessionFile(
                    path=path,
                    head=_read_head(path, store.head_bytes),
                    mtime=stat.st_mtime,
                    sidecars=sidecars,
                )
                session = adapter.parse_session(file, repo)
            except (OSError, ValueError):
                continue  # unreadable files are skipped, never fatal
            if session is not None:
                found.append(session)
    return found


def list_sessions(
    repo: Path, product: str | None = None, env: Mapping[str, str] | None = None
) -> list[Listed]:
    """Sessions of ``repo`` (optionally one product's), newest first, one per session id."""
    env = os.environ if env is None else env
    products = [product] if product else list(product_names())
    best: dict[tuple[str, str], Listed] = {}

    def offer(item: Listed) -> None:
        key = (item.session.product, item.session.session_id)
        current = best.get(key)
        if current is None:
            best[key] = item
            return
        # Keep our record's packet id and command, and the newest activity time.
        newest = max(current.session.updated, item.session.updated)
        keep = current if current.packet_id is not None else item
        best[key] = Listed(
            dataclasses.replace(keep.session, updated=newest),
            keep.packet_id,
            keep.command,
            keep.status,
        )

    def listed(record: _Record, session_id: str) -> Listed:
        return Listed(
            StoredSession(
                product=record.product,
                session_id=session_id,
                cwd=record.cwd,
                updated=record.updated,
                source="review-loop",
            ),
            record.packet_id,
            record.command,
            record.status,
        )

    # A call that was not answered (not logged in, garbage output, timeout) may name a
    # session id that has no conversation behind it: its record is listed only when the
    # CLI's own store holds that session.
    unproven: list[tuple[_Record, str]] = []
    for record in _records(repo):
        if record.session_id is None or (product and record.product != product):
            continue
        if record.delivered:
            offer(listed(record, record.session_id))
        else:
            unproven.append((record, record.session_id))
    for name in products:
        adapter = get_adapter(name, field="--product")
        for session in _store_sessions(adapter, env, repo):
            offer(Listed(session, None, (adapter.default_executable,), None))
    for record, session_id in unproven:
        if (record.product, session_id) in best:
            offer(listed(record, session_id))
    return sorted(best.values(), key=lambda item: item.session.updated, reverse=True)


def read_only_resume(product: str, commands: ResumeCommands) -> dict[str, str | None]:
    """``resumeReadOnly``: the resume commands with the adapter's read-only flags.

    ``{interactive, headless, unavailable}``; when the adapter gives none (the CLI has no
    read-only mode, or a third-party adapter does not say), both commands are ``None`` and
    ``unavailable`` says why: never a writable command in their place.
    """
    read_only = commands.read_only
    if read_only is None:
        read_only = ReadOnlyResume(
            interactive=None,
            headless=None,
            unavailable=f"the {product} adapter gives no read-only resume command; "
            "the commands under resume run without review-loop's read-only flags",
        )
    return dataclasses.asdict(read_only)


def session_document(item: Listed) -> dict[str, Any]:
    """One entry of ``sessions``' output, with resume commands.

    ``resume.interactive`` / ``resume.headless`` are the commands alone, as the original
    prints them (a client may split them into an argv); run them in ``cwd``. They carry
    none of the read-only flags review-loop ran the session with: ``resumeReadOnly``
    (:func:`read_only_resume`) does. ``resumeInShell`` and ``resumeReadOnlyInShell`` are
    copy-ready shell lines of each that change to ``cwd`` first.
    """
    adapter = get_adapter(item.session.product)
    commands = adapter.resume_commands(item.session.session_id, item.command)
    read_only = read_only_resume(item.session.product, commands)
    cwd = item.session.cwd
    prefix = f"cd {shlex.quote(cwd)} && " if cwd else ""

    def in_shell(command: str | None) -> str | None:
        return prefix + command if command else None

    return {
        "packetId": item.packet_id,
        "product": item.session.product,
        "sessionId": item.session.session_id,
        "cwd": cwd,
        "updated": item.session.updated,
        "source": item.session.source,
        "title": item.session.title,
        "status": item.status,
        "resume": {
            "interactive": commands.interactive,
            "headless": commands.headless,
        },
        "resumeInShell": {
            "interactive": in_shell(commands.interactive),
            "headless": in_shell(commands.headless),
        },
        "resumeReadOnly": read_only,
        "resumeReadOnlyInShell": {
            "interactive": in_shell(read_only["interactive"]),
            "headless": in_shell(read_only["headless"]),
        },
    }
