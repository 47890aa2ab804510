"""The start-up reaper: sessions whose recorded process is gone or orphaned.

A record that still says ``starting``/``running`` while its owner (the ``review-loop``
process that wrote it) is dead tells of a crash. If the session's process still runs, it
is an orphan: we end its process group (we started it; its pid and start time match the
record) and mark the record ``orphaned``. If it is gone, the record becomes ``lost``.
Either way the delivery state is ``DELIVERY_UNKNOWN``: nobody saw the answer.
"""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import suppress
from pathlib import Path

import anyio
import psutil

from review_loop.agents.models import DeliveryState
from review_loop.agents.records import SessionRecord
from review_loop.orchestrator.files import atomic_write_json, read_bytes, utc_now

SESSION_FILE = "reviewer-session.json"


def _alive(pid: int | None, started: float | None) -> bool:
    if pid is None:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - started) < 0.01
    except psutil.Error:
        return False


def find_records(repo: Path) -> list[tuple[Path, SessionRecord]]:
    """Every readable ``reviewer-session.json`` under ``.review-handoff/runtime/*/*/``."""
    runtime = repo / ".review-handoff" / "runtime"
    found: list[tuple[Path, SessionRecord]] = []
    for path in runtime.glob(f"*/*/{SESSION_FILE}"):
        try:
            found.append((path, SessionRecord.model_validate(json.loads(read_bytes(path)))))
        except (OSError, ValueError):  # a link under .review-handoff/ too (not followed)
            continue  # unreadable or foreign: skipped, as the original tool does
    return found


def _end_group(pgid: int, grace: float) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def reap_sync(repo: Path, grace: float) -> list[SessionRecord]:
    """Mark (and end) the sessions of ``repo`` whose owner died; returns them."""
    reaped: list[SessionRecord] = []
    for path, record in find_records(repo):
        if record.status not in ("starting", "running"):
            continue
        if _alive(record.ownerPid, record.ownerStart):
            continue  # another review-loop process is still watching it
        if _alive(record.pid, record.procStart) and record.pgid is not None:
            _end_group(record.pgid, grace)
            status, reason = "orphaned", "owner died; session process ended by the reaper"
        else:
            status, reason = "lost", "owner died before recording a result"
        updated = record.model_copy(
            update={
                "status": status,
                "state": DeliveryState.DELIVERY_UNKNOWN,
                "reason": reason,
                "updated": utc_now(),
                "finishedAt": utc_now(),
            }
        )
        atomic_write_json(path, updated.model_dump(mode="json"))
        reaped.append(updated)
    return reaped


async def reap_sessions(repo: Path, *, grace: float) -> list[SessionRecord]:
    """Async wrapper of :func:`reap_sync` (runs in a worker thread)."""
    return await anyio.to_thread.run_sync(reap_sync, repo, grace)
