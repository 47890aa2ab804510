"""Contract tests of the plain session-record reader (``sessions`` without pydantic).

Records come from the repository: untrusted. The models (``SessionRecord``, else
``OriginalRecord``) decide what one is. The plain reader may only be stricter: whatever it
reads, the models read the same (same product, session, time, cwd, command, status,
delivery); whatever the models refuse, it refuses, so ``read_record`` always answers as
the models do. And it does read the records review-loop and the original write, or it
would spare nothing.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, get_args

import pytest

from review_loop.agents import constants, records
from review_loop.agents.models import DeliveryState
from review_loop.agents.record_fields import FIELDS as _FIELDS
from review_loop.agents.record_fields import REQUIRED, STATES, STATUSES
from review_loop.agents.records import SessionRecord, SessionStatus
from review_loop.orchestrator.original_record import OriginalRecord
from review_loop.orchestrator.session_read import (
    Record,
    model_record,
    plain_record,
    read_record,
)
from tests.test_startup_imports import imported_modules

REPO = "/work/repo"


def written(**changes: Any) -> dict[str, Any]:
    """A record exactly as the dispatcher writes one (the model's own JSON form)."""
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
    return {**record.model_dump(mode="json"), **changes}


ORIGINAL = {"product": "claude", "sessionId": "s-1", "updated": "2026-11-29T10:00:00.000Z"}
PLAIN: list[dict[str, Any]] = [
    written(),
    written(status="running", state=None, pid=None, finishedAt=None, procStart=None),
    written(status="interrupted", state="DELIVERY_UNKNOWN", reason="interrupted"),
    written(sessionId=None, status="starting", state=None),
    written(procStart=12, ownerStart=-3, attempt=2, command=[]),
    {k: v for k, v in written().items() if k not in {"sessionId", "command", "status", "state"}},
    {**written(), "unknown": {"any": [1, None]}, "title": 3},  # ignored, as the model does
    ORIGINAL,
    {**ORIGINAL, "cwd": 3, "peer": None},  # ours lacks ownerPid/startedAt: the original's
    {**ORIGINAL, "extra": True},
]


@pytest.mark.parametrize("raw", PLAIN, ids=range(len(PLAIN)))
def test_contract_ordinary_records_are_read_plainly_as_the_models_read_them(
    raw: dict[str, Any],
) -> None:
    plain = plain_record("main/p1", raw, REPO)
    assert plain is not None
    assert plain == model_record("main/p1", raw, REPO)


def test_contract_the_plain_reader_knows_the_models_fields() -> None:
    fields = SessionRecord.model_fields
    assert set(_FIELDS) == set(fields)
    assert {name for name, field in fields.items() if field.is_required()} == REQUIRED
    assert set(get_args(SessionStatus)) == STATUSES
    assert {state.value for state in DeliveryState} == STATES
    assert fields["status"].default == "starting" and fields["state"].default is None
    assert fields["sessionId"].default is None and fields["command"].default_factory is list
    original = OriginalRecord.model_fields
    assert set(original) == {"product", "sessionId", "updated"}
    assert all(field.is_required() and field.annotation is str for field in original.values())
    assert {"product", "updated"} <= REQUIRED  # a record lacking those is no record of ours
    assert constants.SESSION_FILE == records.SESSION_FILE  # sessions reads the plain one


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
def test_contract_whatever_the_plain_reader_reads_the_models_read_the_same(seed: int) -> None:
    rng = random.Random(seed)
    plain_read = refused = 0
    for _ in range(400):
        raw = record(rng)
        plain = plain_record("b/p", raw, REPO)
        model = model_record("b/p", raw, REPO)
        if plain is not None:
            plain_read += 1
            assert plain == model, json.dumps(raw, default=str)
        refused += model is None
        assert read_record("b/p", raw, REPO) == model
    assert plain_read > 50 and refused > 10  # both sides were exercised


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


def test_process_plainly_valid_records_are_listed_without_pydantic(tmp_path: Path) -> None:
    from tests.gitrepo import committed_repo

    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    runtime_with(repo, {"p1": written(cwd=str(repo)), "p2": ORIGINAL})
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    imported = imported_modules(["sessions", "--repo", str(repo)], repo, env)
    assert "review_loop.orchestrator.session_read" in imported
    assert not {"pydantic", "review_loop.agents.records"} & imported
    for unusual in (written(cwd=str(repo), ownerPid="12"), {"foreign": 1}):
        runtime_with(repo, {"p3": unusual})  # only the models can say what it is
        imported = imported_modules(["sessions", "--repo", str(repo)], repo, env)
        assert {"pydantic", "review_loop.agents.records"} <= imported
        (repo / ".review-handoff" / "runtime" / "main" / "p3" / "reviewer-session.json").unlink()
        (repo / ".review-handoff" / "runtime" / "main" / "p3").rmdir()
