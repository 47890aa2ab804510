"""Every resumable session of a repository: our records and each CLI's own store.

Read-only. The orchestrator does the reading; each adapter says where its CLI keeps
sessions and how to parse one file, so this module never names a product.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from review_loop.adapters import Adapter, SessionFile, get_adapter, product_names
from review_loop.agents.models import StoredSession
from review_loop.orchestrator.reaper import find_records

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
            keep.session.model_copy(update={"updated": newest}),
            keep.packet_id,
            keep.command,
            keep.status,
        )

    runtime = repo / ".review-handoff" / "runtime"
    for path, record in find_records(repo):
        if record.sessionId is None or (product and record.product != product):
            continue
        packet_id = path.parent.relative_to(runtime).as_posix()
        offer(
            Listed(
                StoredSession(
                    product=record.product,
                    session_id=record.sessionId,
                    cwd=record.cwd,
                    updated=record.updated,
                    source="review-loop",
                ),
                packet_id,
                tuple(record.command),
                record.status,
            )
        )
    for name in products:
        adapter = get_adapter(name, field="--product")
        for session in _store_sessions(adapter, env, repo):
            offer(Listed(session, None, (adapter.default_executable,), None))
    return sorted(best.values(), key=lambda item: item.session.updated, reverse=True)


def session_document(item: Listed) -> dict[str, Any]:
    """One entry of ``sessions``' output, with copy-ready resume commands."""
    adapter = get_adapter(item.session.product)
    commands = adapter.resume_commands(item.session.session_id, item.command)
    cwd = item.session.cwd
    prefix = f"cd {shlex.quote(cwd)} && " if cwd else ""
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
            "interactive": prefix + commands.interactive if commands.interactive else None,
            "headless": prefix + commands.headless if commands.headless else None,
        },
    }
