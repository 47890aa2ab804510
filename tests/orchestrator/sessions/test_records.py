"""Contract tests of the session-record reader of ``sessions``.

Records come from the repository: untrusted. ``sessions`` reads ours by the one check of a
record (``agents/record_fields.checked``, which the reaper and the dispatcher read through
``SessionRecord.read`` too), else the original tool's (three strings); anything else is
skipped. It reads the records review-loop and the original write, and never imports
pydantic to do so.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.models import DeliveryState
from review_loop.agents.outcomes import SessionRecord
from review_loop.agents.record_fields import FIELDS as _FIELDS
from review_loop.orchestrator.sessions.records import Record, read_record
from tests.test_startup_imports import imported_modules

REPO = "/work/repo"


def written(**changes: Any) -> dict[str, Any]:
    """A record exactly as the dispatcher writes one (its own JSON form)."""
    record = SessionRecord(
        product="codex",
        sessionId="0c6f1a52-1f5e-4c1e-9d55-000000000001",
        updated="2026-11-29T10:00:00.000Z",
        cwd=REPO,
        peer="codex002",
        command=["codex", "--profile", "b"],
        status="finished",
        state=DeliveryState.DELIVERED,
        pid=4242,
        pgid=4242,
        marker="rl-1",
        procStart=1234.5,
        ownerPid=4000,
        ownerStart=1200.25,
        startedAt="2026-11-29T09:59:00.000Z",
        finishedAt="2026-11-29T10:00:00.000Z",
    )
    return {**record.document(), **changes}


ORIGINAL = {"product": "claude", "sessionId": "s-1", "updated": "2026-11-29T10:00:00.000Z"}


def test_contract_our_records_are_read_with_their_delivery() -> None:
    assert read_record("main/p1", written(), REPO) == Record(
        "main/p1",
        "codex",
        "0c6f1a52-1f5e-4c1e-9d55-000000000001",
        "2026-11-29T10:00:00.000Z",
        REPO,
        ("codex", "--profile", "b"),
        "finished",
        True,
    )
    running = written(status="running", state=None, pid=None, finishedAt=None)
    read = read_record("p", running, REPO)
    assert read is not None and (read.status, read.delivered) == ("running", False)
    bare = {k: v for k, v in written().items() if k not in {"sessionId", "command", "status"}}
    assert read_record("p", {**bare, "title": 3}, REPO) == Record(
        "p", "codex", None, "2026-11-29T10:00:00.000Z", REPO, (), "starting", True
    )


@pytest.mark.parametrize(
    "raw", [ORIGINAL, {**ORIGINAL, "cwd": 3, "peer": None}, {**ORIGINAL, "extra": True}]
)
def test_contract_the_original_tools_records_are_read_as_resumable(raw: dict[str, Any]) -> None:
    assert read_record("p", raw, REPO) == Record(
        "p", "claude", "s-1", "2026-11-29T10:00:00.000Z", REPO, (), None, True
    )


@pytest.mark.parametrize(
    "raw",
    [
        written(ownerPid="12", sessionId=None),
        {**ORIGINAL, "sessionId": None},
        {**ORIGINAL, "updated": 3},
        {"foreign": 1},
        [written()],
        "record",
    ],
    ids=range(6),
)
def test_contract_anything_else_is_skipped(raw: Any) -> None:
    assert read_record("p", raw, REPO) is None


# Values of every JSON kind, valid and near-valid, for every field.
POOL: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -7,
    2**53,
    2**53 + 1,
    2**64,
    10**400,
    1.0,
    2.5,
    math.nan,
    math.inf,
    "",
    "1",
    "2.5",
    "codex",
    "\ud800",
    "running",
    "Running",
    "lost",
    "DELIVERED",
    "delivered",
    "NOT_SUBMITTED",
    [],
    ["codex"],
    ["codex", 1],
    [None],
    {},
    {"a": 1},
]


def record(rng: random.Random) -> Any:
    """A random record: ours or the original's with fields dropped, changed, added."""
    if rng.random() < 0.03:
        return rng.choice([[], "record", 3, None, [written()]])
    raw = dict(written() if rng.random() < 0.7 else ORIGINAL)
    for key in list(raw):
        if rng.random() < 0.08:
            del raw[key]
    for _ in range(rng.randrange(4)):
        key = rng.choice([*_FIELDS, "extra", "title"])
        raw[key] = rng.choice(POOL)
    return raw


@pytest.mark.parametrize("seed", range(10))
def test_contract_sessions_reads_ours_exactly_as_the_reaper_does(seed: int) -> None:
    rng = random.Random(seed)
    ours = theirs = skipped = 0
    for _ in range(400):
        raw = record(rng)
        read = read_record("b/p", raw, REPO)
        record_ = SessionRecord.read(raw)
        if record_ is not None:
            ours += 1
            assert read is not None and read.cwd == record_.cwd, json.dumps(raw, default=str)
            assert read.delivered is (record_.state is DeliveryState.DELIVERED)
            assert read.command == tuple(record_.command) and read.status == record_.status
        elif read is not None:
            theirs += 1
            assert (read.status, read.command, read.cwd) == (None, (), REPO)
        else:
            skipped += 1
    assert ours > 50 and theirs > 10 and skipped > 10  # every side was exercised


def test_contract_a_record_is_what_sessions_uses() -> None:
    assert Record._fields == (
        "packet_id",
        "product",
        "session_id",
        "updated",
        "cwd",
        "command",
        "status",
        "delivered",
    )


def runtime_with(repo: Path, records: dict[str, Any]) -> None:
    for packet, raw in records.items():
        path = repo / ".review-handoff" / "runtime" / "main" / packet / "reviewer-session.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(raw))


def test_process_records_are_listed_without_pydantic(tmp_path: Path) -> None:
    from tests.gitrepo import committed_repo

    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    runtime_with(repo, {"p1": written(cwd=str(repo)), "p2": ORIGINAL})
    runtime_with(repo, {"p3": written(cwd=str(repo), ownerPid="12"), "p4": {"foreign": 1}})
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    imported = imported_modules(["sessions", "--repo", str(repo)], repo, env)
    assert "review_loop.orchestrator.sessions.records" in imported
    assert not {"pydantic", "review_loop.agents.outcomes"} & imported
