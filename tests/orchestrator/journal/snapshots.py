"""Reading and writing a stream's snapshot cache the way a test (or a forger) would.

Not a test module. The cache is ``{"v": 2, "mac": ...}`` on its first line, then the body.
"""

from __future__ import annotations

import json
from typing import Any

from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.journal.store import SNAPSHOT_PURPOSE, RunLog


def read_snapshot(log: RunLog) -> dict[str, Any]:
    """The snapshot's body, after checking that this user's key signed it."""
    header, _, body = log.snapshot_path.read_bytes().partition(b"\n")
    claimed = json.loads(header)
    assert set(claimed) == {"v", "mac"}
    assert state_auth.verify_bytes(SNAPSHOT_PURPOSE, body, claimed["mac"])
    document: dict[str, Any] = json.loads(body)
    return document


def write_snapshot(log: RunLog, doc: dict[str, Any], *, mac: str | None = None) -> None:
    """Write a snapshot; signed with this user's key unless ``mac`` is given."""
    body = json.dumps(doc, separators=(",", ":")).encode()
    claimed = state_auth.mac_bytes(SNAPSHOT_PURPOSE, body) if mac is None else mac
    log.snapshot_path.write_bytes(json.dumps({"v": 2, "mac": claimed}).encode() + b"\n" + body)
