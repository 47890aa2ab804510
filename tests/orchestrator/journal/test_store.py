"""Unit tests of one stream's durable log (RunLog): order, keys, sealing, torn tails, snapshots.

Kind: unit tests over real files in ``tmp_path``; no processes, no event loop.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.journal.store import (
    Appended,
    Existing,
    JournalCorruptError,
    JournalMissingError,
    JournalSealedError,
    Mutation,
    Refused,
    RunLog,
    Schema,
    conforms,
    utc_timestamp,
)
from tests.orchestrator.journal.snapshots import read_snapshot, write_snapshot


def count_fold(view: dict[str, Any], event: Mapping[str, Any]) -> None:
    view["n"] = view.get("n", 0) + 1
    data = event.get("data")
    if isinstance(data, dict) and "value" in data:
        view.setdefault("values", []).append(data["value"])


COUNTING = Schema("count/1", dict, count_fold, frozenset({"end"}))


@pytest.fixture
def log(tmp_path: Path) -> RunLog:
    run = RunLog(tmp_path / "runs" / "run-x.jsonl", schema=COUNTING, snapshot_every=4)
    run.create()
    return run


def put(key: str, value: Any = None, type: str = "item") -> Mutation:
    return Mutation(type=type, id=key, key=key, data={"value": value})


def seqs(log: RunLog) -> list[int]:
    return [event["seq"] for event in log.read_events()]


def test_sequence_starts_at_one_and_is_contiguous(log: RunLog) -> None:
    outcomes = log.commit([put("a"), put("b")]) + log.commit([put("c")])
    assert [o.sequence for o in outcomes if isinstance(o, Appended)] == [1, 2, 3]
    assert seqs(log) == [1, 2, 3]


def test_events_are_cloudevents_lines(log: RunLog) -> None:
    log.commit([put("a", 7)])
    lines = log.path.read_bytes().splitlines()
    assert len(lines) == 1
    event = json.loads(lines[0])
    assert list(event) == [
        "id",
        "source",
        "type",
        "specversion",
        "time",
        "streamid",
        "seq",
        "runid",
        "attempt",
        "data",
    ]
    assert conforms(event)
    assert event["streamid"] == event["runid"] == "run-x.jsonl"
    assert event["data"] == {"idempotencyKey": "a", "value": 7}
    assert event["time"].endswith("Z") and len(event["time"]) == 24


def test_repeated_key_returns_original_sequence_and_changes_nothing(log: RunLog) -> None:
    log.commit([put("a", 1), put("b", 2)])
    size = log.path.stat().st_size
    again = log.commit([put("a", 99)])
    assert again == [Existing(1)]
    assert log.path.stat().st_size == size


def test_keys_are_scoped_per_event_type(log: RunLog) -> None:
    first = log.commit([put("k", type="scope"), put("k", type="finding")])
    assert [o.sequence for o in first if isinstance(o, Appended)] == [1, 2]


def test_repeat_within_one_batch_is_recorded_once(log: RunLog) -> None:
    outcomes = log.commit([put("a"), put("a"), put("b")])
    assert isinstance(outcomes[0], Appended)
    assert outcomes[1] == Existing(1)
    assert isinstance(outcomes[2], Appended) and outcomes[2].sequence == 2


def test_decide_sees_earlier_mutations_of_the_same_batch(log: RunLog) -> None:
    seen: list[int] = []

    def decide(view: Mapping[str, Any]) -> Any:
        seen.append(view.get("n", 0))
        return {"value": "d"}

    log.commit([put("a"), Mutation(type="item", id="d", decide=decide), put("b")])
    assert seen == [1]


def test_refusal_by_decide_affects_only_that_mutation(log: RunLog) -> None:
    def refuse(view: Mapping[str, Any]) -> Any:
        raise ValueError("nope")

    outcomes = log.commit([put("a"), Mutation(type="item", id="r", key="r", decide=refuse)])
    assert isinstance(outcomes[0], Appended)
    assert isinstance(outcomes[1], Refused) and str(outcomes[1].error) == "nope"
    assert seqs(log) == [1]
    assert log.state().lookup("item", "r") is None


def test_sealing_refuses_everything_after_and_repeats_return_the_seal(log: RunLog) -> None:
    log.commit([put("a")])
    sealed = log.commit([Mutation(type="end", id="end")])
    assert isinstance(sealed[0], Appended) and sealed[0].sequence == 2
    assert log.sealed_path.exists()
    after = log.commit([put("b"), Mutation(type="end", id="end-again"), put("a")])
    assert isinstance(after[0], Refused) and isinstance(after[0].error, JournalSealedError)
    assert after[1] == Existing(2)
    assert isinstance(after[2], Refused)
    assert seqs(log) == [1, 2]


def test_missing_seal_marker_is_recreated(log: RunLog) -> None:
    log.commit([Mutation(type="end", id="end")])
    log.sealed_path.unlink()
    assert log.ensure_seal_marker() is True
    assert log.sealed_path.exists()


def test_unsealed_stream_gets_no_marker(log: RunLog) -> None:
    log.commit([put("a")])
    assert log.ensure_seal_marker() is False
    assert not log.sealed_path.exists()


def test_commit_on_a_missing_log_is_refused(tmp_path: Path) -> None:
    tmp_path.joinpath("runs").mkdir()
    missing = RunLog(tmp_path / "runs" / "run-none.jsonl")
    with pytest.raises(JournalMissingError):
        missing.commit([put("a")])
    assert not missing.path.exists()


def test_create_is_exclusive(log: RunLog) -> None:
    with pytest.raises(FileExistsError):
        log.create()


def test_torn_tail_is_ignored_by_readers_and_truncated_by_the_next_writer(log: RunLog) -> None:
    log.commit([put("a"), put("b")])
    good = log.path.read_bytes()
    torn = b'{"id":"c","source":"/x","type":"item","specversion":"1.0","ti'
    with log.path.open("ab") as handle:
        handle.write(torn)
    assert seqs(log) == [1, 2]
    assert log.state().seq == 2
    outcomes = log.commit([put("c")])
    assert isinstance(outcomes[0], Appended) and outcomes[0].sequence == 3
    data = log.path.read_bytes()
    assert data.startswith(good) and torn not in data
    assert seqs(log) == [1, 2, 3]


def test_complete_line_without_newline_counts_as_torn(log: RunLog) -> None:
    log.commit([put("a")])
    event = log.read_events()[0]
    with log.path.open("ab") as handle:
        handle.write(json.dumps({**event, "seq": 2, "id": "x"}).encode())  # no newline
    assert seqs(log) == [1]
    log.commit([put("b")])
    assert [e["id"] for e in log.read_events()] == ["a", "b"]


def test_snapshot_makes_state_match_a_full_fold(log: RunLog) -> None:
    for index in range(10):
        log.commit([put(f"k{index}", index)])
    assert log.snapshot_path.exists()
    fresh = RunLog(log.path, schema=COUNTING)
    state = fresh.state()
    assert state.seq == 10
    assert state.view["values"] == list(range(10))
    assert state.lookup("item", "k9") == 10


def test_corrupt_snapshot_is_rebuilt_from_the_log(log: RunLog) -> None:
    for index in range(6):
        log.commit([put(f"k{index}", index)])
    log.snapshot_path.write_text("{not json")
    state = RunLog(log.path, schema=COUNTING).state()
    assert state.seq == 6 and state.view["n"] == 6


def test_a_snapshot_nested_too_deep_is_rebuilt_from_the_log(log: RunLog) -> None:
    # json.loads raises RecursionError (not a ValueError) on deep nesting: still "corrupt"
    for index in range(6):
        log.commit([put(f"k{index}", index)])
    log.snapshot_path.write_text("[" * 200_000)
    state = RunLog(log.path, schema=COUNTING).state()
    assert state.seq == 6 and state.view["n"] == 6


def test_snapshot_of_another_log_is_not_trusted(log: RunLog, tmp_path: Path) -> None:
    for index in range(5):
        log.commit([put(f"k{index}", index)])
    doc = read_snapshot(log)
    doc["seq"] = 2  # lies about the position: the tail no longer starts at seq 3
    write_snapshot(log, doc)  # signed with the user's own key: only the position lies
    state = RunLog(log.path, schema=COUNTING).state()
    assert state.seq == 5 and state.view["n"] == 5


def test_snapshot_of_another_schema_is_rebuilt(log: RunLog) -> None:
    for index in range(5):
        log.commit([put(f"k{index}", index)])
    other = Schema("other/1", lambda: {"other": True}, lambda view, event: None)
    assert RunLog(log.path, schema=other).state().view == {"other": True}


# json.loads raises RecursionError (not a ValueError) on a line nested too deep: not an
# event either, as any garbage line, never a crash of every command on this log
@pytest.mark.parametrize("bad", [b"garbage", b"[" * 200_000], ids=["garbage", "too-deep"])
def test_a_corrupt_line_in_the_middle_is_refused(log: RunLog, bad: bytes) -> None:
    log.commit([put("a"), put("b")])
    lines = log.path.read_bytes().splitlines(keepends=True)
    log.path.write_bytes(lines[0] + bad + b"\n" + lines[1])
    log.snapshot_path.unlink(missing_ok=True)
    fresh = RunLog(log.path, schema=COUNTING)
    with pytest.raises(JournalCorruptError):
        fresh.commit([put("c")])
    assert [e["id"] for e in fresh.read_events()] == ["a", "b"]


def test_a_failed_write_leaves_the_log_as_it_was(
    log: RunLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    log.commit([put("a")])
    before = log.path.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdatasync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        log.commit([put("b"), put("c")])
    monkeypatch.undo()
    assert log.path.read_bytes() == before
    outcome = log.commit([put("b")])
    assert isinstance(outcome[0], Appended) and outcome[0].sequence == 2


def test_keyed_mutation_needs_object_data(log: RunLog) -> None:
    outcome = log.commit([Mutation(type="item", id="a", key="a", data=[1, 2])])
    assert isinstance(outcome[0], Refused)
    assert seqs(log) == []


def test_unkeyed_mutation_without_data_has_no_data_attribute(log: RunLog) -> None:
    log.commit([Mutation(type="ping", id="p")])
    assert "data" not in log.read_events()[0]


def test_timestamp_is_javascript_iso() -> None:
    assert utc_timestamp(0.5) == "1970-01-01T00:00:00.500Z"
    assert utc_timestamp(86400.0) == "1970-01-02T00:00:00.000Z"


@pytest.mark.parametrize(
    "event",
    [
        [],
        {"id": "x"},
        {
            "id": "x",
            "source": "s",
            "type": "t",
            "specversion": "0.3",
            "time": "t",
            "streamid": "s",
            "seq": 1,
            "runid": "r",
            "attempt": 1,
        },
        {
            "id": "x",
            "source": "s",
            "type": "t",
            "specversion": "1.0",
            "time": "t",
            "streamid": "s",
            "seq": True,
            "runid": "r",
            "attempt": 1,
        },
        {
            "id": "x",
            "source": "s",
            "type": "t",
            "specversion": "1.0",
            "time": "t",
            "streamid": "s",
            "seq": 1,
            "runid": "r",
            "attempt": 1,
            "extra": 1,
        },
    ],
)
def test_nonconforming_events_are_recognised(event: Any) -> None:
    assert not conforms(event)
