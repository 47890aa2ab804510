"""Contract tests: the journal heals, and believes nothing it cannot prove (RunLog, real files).

A torn or garbage tail moves into a side file and the log goes on;
an event after garbage fails closed; a sealed stream reads as sealed whatever its file
modes; a read-only run reads; the snapshot cache is believed only with this user's MAC and
only for the log as it is; no journal file is opened through a link; a full disk loses no
acknowledged event. Read-only and full disks are real mounts (skipped where mounting is
impossible).
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.journal.dirs import UnsafePathError
from review_loop.orchestrator.journal.store import (
    SNAPSHOT_PURPOSE,
    Appended,
    Existing,
    JournalCorruptError,
    Mutation,
    RunLog,
    Schema,
)
from review_loop.orchestrator.journal.writer import open_journal
from tests.orchestrator.journal.mounts import read_only, tmpfs
from tests.orchestrator.journal.snapshots import read_snapshot, write_snapshot

GARBAGE = b"GARBAGE LINE not json\n"
TORN = b'{"id":"c","source":"/x","type":"item","specversion":"1.0","ti'


def fold(view: dict[str, Any], event: Mapping[str, Any]) -> None:
    view["n"] = view.get("n", 0) + 1


SCHEMA = Schema("heal/1", dict, fold, frozenset({"end"}))


@pytest.fixture
def log(tmp_path: Path) -> RunLog:
    run = RunLog(tmp_path / "runs" / "run-h.jsonl", schema=SCHEMA, snapshot_every=4)
    run.create()
    return run


def put(key: str, **data: Any) -> Mutation:
    return Mutation(type="item", id=key, key=key, data=data)


def fresh(log: RunLog) -> RunLog:
    return RunLog(log.path, schema=SCHEMA, snapshot_every=4, anchor=log.anchor)


def side_files(log: RunLog) -> list[Path]:
    return sorted(log.path.parent.glob(log.path.name + ".corrupt-*"))


def seqs(log: RunLog) -> list[int]:
    return [event["seq"] for event in log.read_events()]


def append_raw(log: RunLog, data: bytes) -> None:
    with log.path.open("ab") as handle:
        handle.write(data)


# --- a tail after the last event ------------------------------------------------------------


@pytest.mark.parametrize(
    "tail", [GARBAGE, TORN, GARBAGE + TORN, GARBAGE * 3], ids=["garbage", "torn", "both", "lines"]
)
def test_a_tail_moves_aside_and_the_run_goes_on(log: RunLog, tail: bytes) -> None:
    log.commit([put("a"), put("b")])
    good = log.path.read_bytes()
    append_raw(log, tail)
    state = fresh(log).state()  # a reader heals too
    assert state.seq == 2 and state.tail is None
    assert log.path.read_bytes() == good  # only the bytes after the last event moved
    [side] = side_files(log)
    assert side.name == "run-h.jsonl.corrupt-1" and side.read_bytes() == tail
    [entry] = fresh(log).quarantined()
    assert entry["path"] == str(side) and entry["bytes"] == len(tail)
    assert entry["at"].endswith("Z")
    outcome = fresh(log).commit([put("c")])[0]
    assert isinstance(outcome, Appended) and outcome.sequence == 3
    assert seqs(log) == [1, 2, 3]


def test_a_writer_heals_before_it_appends(log: RunLog) -> None:
    log.commit([put("a")])
    append_raw(log, GARBAGE)
    outcome = fresh(log).commit([put("b")])[0]
    assert isinstance(outcome, Appended) and outcome.sequence == 2
    assert seqs(log) == [1, 2]
    assert [p.read_bytes() for p in side_files(log)] == [GARBAGE]


def test_side_files_never_overwrite_an_earlier_one(log: RunLog) -> None:
    log.commit([put("a")])
    planted = log.path.with_name(log.path.name + ".corrupt-1")
    planted.write_bytes(b"earlier\n")
    for index, garbage in enumerate((b"one\n", b"two\n")):
        append_raw(log, garbage)
        fresh(log).commit([put(f"k{index}")])
    assert planted.read_bytes() == b"earlier\n"
    assert [p.read_bytes() for p in side_files(log)] == [b"earlier\n", b"one\n", b"two\n"]
    assert seqs(log) == [1, 2, 3]


def test_a_tail_after_a_snapshot_is_healed_too(log: RunLog) -> None:
    for index in range(6):
        log.commit([put(f"k{index}")])
    assert log.snapshot_path.exists()
    append_raw(log, GARBAGE)
    state = fresh(log).state()
    assert state.seq == 6 and state.view["n"] == 6
    assert len(side_files(log)) == 1


# --- corruption in the middle fails closed ---------------------------------------------------


def test_an_event_after_garbage_fails_closed_and_nothing_moves(log: RunLog) -> None:
    log.commit([put("a"), put("b")])
    lines = log.path.read_bytes().splitlines(keepends=True)
    corrupt = lines[0] + GARBAGE + lines[1]
    log.path.write_bytes(corrupt)
    log.snapshot_path.unlink(missing_ok=True)
    for action in (lambda: fresh(log).state(), lambda: fresh(log).commit([put("c")])):
        with pytest.raises(JournalCorruptError, match="not the next event of this stream"):
            action()
    assert log.path.read_bytes() == corrupt
    assert side_files(log) == []


def test_an_event_with_the_wrong_sequence_is_never_moved_aside(log: RunLog) -> None:
    log.commit([put("a"), put("b")])
    duplicate = log.path.read_bytes().splitlines(keepends=True)[1]  # seq 2 again
    append_raw(log, duplicate)
    before = log.path.read_bytes()
    with pytest.raises(JournalCorruptError):
        fresh(log).state()
    assert log.path.read_bytes() == before and side_files(log) == []


# --- the seal is the terminal event ----------------------------------------------------------


def test_a_seal_marker_that_cannot_be_written_is_not_a_failure(log: RunLog) -> None:
    log.commit([put("a")])
    log.sealed_path.mkdir()  # opening it for writing fails (EISDIR), like a read-only dir
    outcome = log.commit([Mutation(type="end", id="end")])[0]
    assert isinstance(outcome, Appended) and outcome.sequence == 2
    assert isinstance(log.seal_marker_error, OSError)
    reader = fresh(log)
    assert reader.state().sealed_seq == 2
    assert reader.commit([Mutation(type="end", id="again")]) == [Existing(2)]


def test_a_marker_without_a_terminal_event_seals_nothing(log: RunLog) -> None:
    log.commit([put("a")])
    log.sealed_path.touch()
    outcome = fresh(log).commit([put("b")])[0]
    assert isinstance(outcome, Appended) and fresh(log).state().sealed_seq is None


# --- read-only runs read ---------------------------------------------------------------------


@pytest.mark.parametrize("lock", ["present", "absent"])
def test_a_read_only_run_reads(log: RunLog, lock: str) -> None:
    log.commit([put("a"), Mutation(type="end", id="end")])
    append_raw(log, GARBAGE)  # a tail nobody can move in a read-only archive
    if lock == "absent":
        log.lock_path.unlink()
    with read_only(log.path.parent):
        state = fresh(log).state()
        assert state.seq == 2 and state.sealed_seq == 2
        assert state.tail is not None and state.tail.size == len(GARBAGE)
        assert seqs(log) == [1, 2]
        assert fresh(log).quarantined() == []
    assert not log.lock_path.exists() if lock == "absent" else log.lock_path.exists()
    assert side_files(log) == []


# --- the snapshot is believed only with proof ------------------------------------------------


def forge(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "keys": {"item": {"fresh-key": 77}}, "sealedSeq": 3}


@pytest.mark.parametrize("mac", ["none", "wrong", "other-user"])
def test_a_forged_snapshot_is_rebuilt_not_trusted(
    log: RunLog, mac: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(4):
        log.commit([put(f"k{index}")])
    doc = forge(read_snapshot(log))
    body = json.dumps(doc, separators=(",", ":")).encode()
    if mac == "other-user":
        monkeypatch.setenv("REVIEW_LOOP_HOME", str(tmp_path / "someone-else"))
        claimed = state_auth.mac_bytes(SNAPSHOT_PURPOSE, body)
        monkeypatch.undo()
        assert claimed != state_auth.mac_bytes(SNAPSHOT_PURPOSE, body)
    else:
        claimed = "" if mac == "none" else "0" * 64
    write_snapshot(log, doc, mac=claimed)
    state = fresh(log).state()
    assert state.lookup("item", "fresh-key") is None and state.sealed_seq is None
    assert state.seq == 4 and state.view["n"] == 4
    outcome = fresh(log).commit([put("fresh-key")])[0]
    assert isinstance(outcome, Appended) and outcome.sequence == 5


def test_a_snapshot_of_other_log_content_is_rebuilt(log: RunLog) -> None:
    for index in range(4):
        log.commit([put(f"k{index}")])
    snapshot = log.snapshot_path.read_bytes()
    # Same file (same inode), different events of the same length: the cache's digest of
    # the bytes at its offset no longer matches.
    data = log.path.read_bytes().replace(b'"k', b'"z')
    with log.path.open("r+b") as handle:
        handle.write(data)
    assert log.snapshot_path.read_bytes() == snapshot
    state = fresh(log).state()
    assert state.lookup("item", "k0") is None and state.lookup("item", "z0") == 1


def test_the_snapshot_written_is_signed_and_trusted(log: RunLog) -> None:
    for index in range(5):
        log.commit([put(f"k{index}")])
    doc = read_snapshot(log)
    assert doc["seq"] == 4 and doc["stream"] == "run-h.jsonl"


def test_without_a_usable_secret_the_journal_still_works(
    log: RunLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    monkeypatch.setenv("REVIEW_LOOP_HOME", str(home))
    for index in range(6):
        log.commit([put(f"k{index}")])
    assert not log.snapshot_path.exists()
    assert fresh(log).state().seq == 6


# --- never through a link --------------------------------------------------------------------


@pytest.mark.parametrize("which", ["log", "lock"])
def test_a_linked_log_or_lock_is_refused(log: RunLog, tmp_path: Path, which: str) -> None:
    log.commit([put("a")])
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim\n")
    target = log.path if which == "log" else log.lock_path
    target.unlink()
    target.symlink_to(victim)
    for action in (lambda: fresh(log).state(), lambda: fresh(log).commit([put("b")])):
        with pytest.raises(UnsafePathError, match="is a symbolic link"):
            action()
    assert victim.read_bytes() == b"victim\n"


def test_a_linked_snapshot_is_neither_read_nor_written_through(log: RunLog, tmp_path: Path) -> None:
    for index in range(4):
        log.commit([put(f"k{index}")])
    victim = tmp_path / "victim.state"
    victim.write_bytes(log.snapshot_path.read_bytes().replace(b'"k0":1', b'"fresh-key":1'))
    log.snapshot_path.unlink()
    log.snapshot_path.symlink_to(victim)
    before = victim.read_bytes()
    assert fresh(log).state().lookup("item", "fresh-key") is None
    for index in range(4, 9):
        fresh(log).commit([put(f"k{index}")])
    assert victim.read_bytes() == before
    assert not log.snapshot_path.is_symlink()  # replaced by a real (signed) cache


def test_linked_seal_marker_and_side_file_names_are_not_written_through(
    log: RunLog, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim\n")
    log.commit([put("a")])
    log.path.with_name(log.path.name + ".corrupt-1").symlink_to(victim)
    append_raw(log, GARBAGE)
    log.sealed_path.symlink_to(victim)
    fresh_log = fresh(log)
    outcome = fresh_log.commit([Mutation(type="end", id="end")])[0]
    assert isinstance(outcome, Appended) and outcome.sequence == 2
    assert isinstance(fresh_log.seal_marker_error, UnsafePathError)
    assert victim.read_bytes() == b"victim\n"
    assert log.path.with_name(log.path.name + ".corrupt-2").read_bytes() == GARBAGE


def test_a_linked_directory_below_the_anchor_is_refused(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / ".review-handoff").symlink_to(outside)
    log = RunLog(repo / ".review-handoff" / "verification" / "runs" / "run-l.jsonl", anchor=repo)
    with pytest.raises(UnsafePathError, match=r"\.review-handoff is a symbolic link"):
        log.create()
    with pytest.raises(UnsafePathError):
        log.exists()
    assert list(outside.iterdir()) == []


# --- a full disk -----------------------------------------------------------------------------


def test_a_full_disk_loses_no_acknowledged_event(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "256k") as small:
        log = RunLog(small / "run-f.jsonl", snapshot_every=1 << 30)
        log.create()
        acknowledged: dict[str, int] = {}
        errnos: set[int | None] = set()
        for index in range(80):
            key = f"k{index}"
            try:
                outcome = fresh_plain(log).commit([put(key, fill="x" * 20_000)])[0]
            except OSError as error:
                errnos.add(error.errno)  # reported; nothing of it was acknowledged
                continue
            assert isinstance(outcome, Appended)
            acknowledged[key] = outcome.sequence
        events = log.read_events()
        assert errnos == {errno.ENOSPC} and len(acknowledged) > 5
        assert {e["id"]: e["seq"] for e in events} == acknowledged  # none lost, none extra
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert log.path.read_bytes().endswith(b"\n")  # no torn tail
        assert sorted(p.name for p in small.iterdir()) == ["run-f.jsonl", "run-f.jsonl.lock"]


def fill(path: Path) -> None:
    """Write to ``path`` until the disk is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (4096, 1):
            try:
                while True:
                    os.write(fd, b"f" * size)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)


def fresh_plain(log: RunLog) -> RunLog:
    return RunLog(log.path, snapshot_every=log.snapshot_every)


def test_on_a_full_disk_garbage_is_kept_and_a_torn_write_dropped(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "64k") as small:
        log = RunLog(small / "run-g.jsonl", snapshot_every=1 << 30)
        log.create()
        log.commit([put("a")])
        filler = small / "filler"
        fill(filler)
        os.truncate(filler, filler.stat().st_size - 8192)  # room for the tail...
        append_raw(log, GARBAGE)
        fill(filler)  # ...and then none at all
        with pytest.raises(JournalCorruptError, match="could not be moved aside"):
            fresh_plain(log).commit([put("b")])
        state = fresh_plain(log).state()  # readers ignore what they cannot move
        assert state.seq == 1 and state.tail is not None and state.tail.garbage
        assert log.path.read_bytes().endswith(GARBAGE)
        # A torn write alone was never acknowledged: it is dropped when it cannot be copied.
        data = log.path.read_bytes()
        log.path.write_bytes(data[: -len(GARBAGE)] + TORN[:10])
        outcome = fresh_plain(log).commit([put("b")])[0]
        assert isinstance(outcome, Appended) and outcome.sequence == 2
        assert [e["id"] for e in log.read_events()] == ["a", "b"]


# --- through the async single writer, on asyncio and trio ------------------------------------


@pytest.mark.anyio
async def test_the_single_writer_heals_a_tail_before_its_first_batch(log: RunLog) -> None:
    log.commit([put("a")])
    append_raw(log, GARBAGE + TORN)
    async with open_journal(fresh(log)) as journal, anyio.create_task_group() as group:
        for index in range(20):
            group.start_soon(journal.record, put(f"t{index}"))
    assert seqs(log) == list(range(1, 22))
    assert [p.read_bytes() for p in side_files(log)] == [GARBAGE + TORN]


@pytest.mark.anyio
async def test_the_single_writer_on_a_full_disk_loses_no_acknowledged_event(
    tmp_path: Path,
) -> None:
    with tmpfs(tmp_path / "small", "256k") as small:
        log = RunLog(small / "run-a.jsonl")
        log.create()
        acknowledged: dict[str, int] = {}
        failures: list[int | None] = []

        async def producer(task: int) -> None:
            for index in range(10):
                key = f"t{task}-{index}"
                try:
                    outcome = await journal.record(put(key, fill="x" * 20_000))
                except OSError as error:
                    failures.append(error.errno)
                    continue
                assert isinstance(outcome, Appended)
                acknowledged[key] = outcome.sequence

        async with open_journal(log) as journal, anyio.create_task_group() as group:
            for task in range(4):
                group.start_soon(producer, task)
        assert failures and set(failures) == {errno.ENOSPC} and acknowledged
        events = log.read_events()
        assert {e["id"]: e["seq"] for e in events} == acknowledged
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert log.path.read_bytes().endswith(b"\n")


def test_a_log_with_another_hard_link_is_not_appended_to(log: RunLog, tmp_path: Path) -> None:
    log.commit([put("a")])
    other = tmp_path / "elsewhere.jsonl"
    os.link(log.path, other)
    before = other.read_bytes()
    with pytest.raises(UnsafePathError, match="has other hard links"):
        fresh(log).commit([put("b")])
    assert other.read_bytes() == before
