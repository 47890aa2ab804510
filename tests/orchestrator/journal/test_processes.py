"""Process tests: several processes on one journal: contiguous sequences, one event per key,
kill -9 safety.

Real processes (``appender.py``) append to one log at once; the
autouse fixture in tests/conftest.py fails any test that leaves one behind.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from review_loop.orchestrator.journal.store import Appended, Mutation, RunLog
from tests.orchestrator.journal.mounts import tmpfs

APPENDER = str(Path(__file__).with_name("appender.py"))


@pytest.fixture
def log(tmp_path: Path) -> RunLog:
    run = RunLog(tmp_path / "run-p.jsonl")
    run.create()
    return run


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, APPENDER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def acks(output: str) -> dict[str, tuple[int, str]]:
    found = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "ack":
            found[parts[1]] = (int(parts[2]), parts[3])
    return found


def check_contiguous(log: RunLog) -> list[dict[str, object]]:
    events = log.read_events()
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    return events


def test_twenty_processes_append_at_once_and_every_append_succeeds(
    log: RunLog, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    procs = [spawn("sync", str(log.path), f"p{n}", "25", str(go)) for n in range(20)]
    time.sleep(0.3)
    go.touch()
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), [err for _, err in outputs]
    acked: dict[str, tuple[int, str]] = {}
    for out, _ in outputs:
        acked.update(acks(out))
    assert len(acked) == 500  # nobody was refused
    events = check_contiguous(log)
    assert len(events) == 500
    assert {e["id"]: e["seq"] for e in events} == {k: s for k, (s, _) in acked.items()}


def test_five_processes_racing_one_key_leave_exactly_one_event(log: RunLog, tmp_path: Path) -> None:
    for attempt in range(10):
        go = tmp_path / f"go-{attempt}"
        procs = [spawn("sync", str(log.path), f"same-{attempt}", "1", str(go)) for _ in range(5)]
        time.sleep(0.2)
        go.touch()
        outputs = [proc.communicate(timeout=60)[0] for proc in procs]
        answers = [acks(out)[f"same-{attempt}"] for out in outputs]
        assert len({seq for seq, _ in answers}) == 1, answers
        assert sorted(kind for _, kind in answers) == ["appended"] + ["existing"] * 4
    events = check_contiguous(log)
    assert [e["id"] for e in events] == [f"same-{n}" for n in range(10)]


def test_kill_9_at_random_points_never_loses_an_acknowledged_event(log: RunLog) -> None:
    rng = random.Random(os.getpid())
    acknowledged: dict[str, int] = {}
    torn_tails = 0
    for round_ in range(20):
        proc = spawn("async", str(log.path), f"r{round_}", "400", "8", "3000")
        assert proc.stdout is not None
        first = proc.stdout.readline()  # appends are under way
        assert first.startswith("ack"), proc.stderr.read() if proc.stderr else ""
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        acknowledged.update({k: s for k, (s, _) in acks(first + rest).items()})
        data = log.path.read_bytes()
        torn_tails += not data.endswith(b"\n") and bool(data)
        events = check_contiguous(log)  # the journal always reads, with no gap
        recorded = {event["id"]: event["seq"] for event in events}
        lost = {k: s for k, s in acknowledged.items() if recorded.get(k) != s}
        assert not lost, f"round {round_}: acknowledged events lost: {list(lost)[:5]}"
    # The next writer repairs whatever tail the last kill left, and the sequence goes on.
    fresh = RunLog(log.path)
    outcome = fresh.commit([Mutation(type="item", id="final", key="final")])[0]
    assert isinstance(outcome, Appended)
    events = check_contiguous(log)
    assert events[-1]["id"] == "final"
    assert log.path.read_bytes().endswith(b"\n")
    print(f"rounds=20 acknowledged={len(acknowledged)} torn_tails_seen={torn_tails}")


def test_death_in_the_middle_of_a_write_leaves_a_readable_journal(log: RunLog) -> None:
    rng = random.Random(os.getpid() + 1)
    acknowledged: dict[str, int] = {}
    torn = 0
    for round_ in range(8):
        after = str(rng.randint(1, 6))
        proc = spawn(
            "async", str(log.path), f"t{round_}", "50", "8", "500", env={"TORN_AFTER": after}
        )
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, err
        torn += not log.path.read_bytes().endswith(b"\n")  # half a batch is on disk
        acknowledged.update({k: s for k, (s, _) in acks(out).items()})
        events = check_contiguous(log)
        recorded = {event["id"]: event["seq"] for event in events}
        assert all(recorded.get(k) == s for k, s in acknowledged.items())
    assert torn >= 6
    outcome = RunLog(log.path).commit([Mutation(type="item", id="last", key="last")])[0]
    assert isinstance(outcome, Appended)
    assert check_contiguous(log)[-1]["id"] == "last"


def test_processes_filling_a_small_disk_lose_no_acknowledged_event(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "256k") as small:
        log = RunLog(small / "run-full.jsonl")
        log.create()
        go = tmp_path / "go"
        procs = [
            spawn("async", str(log.path), f"p{n}", "10", "2", "20000", str(go)) for n in range(4)
        ]
        time.sleep(0.3)
        go.touch()
        outputs = [proc.communicate(timeout=120) for proc in procs]
        errors = "".join(err for _, err in outputs)
        assert "No space left on device" in errors  # the disk did fill up
        acked: dict[str, int] = {}
        for out, _ in outputs:
            acked.update({k: s for k, (s, _) in acks(out).items()})
        events = check_contiguous(log)
        assert acked and {e["id"]: e["seq"] for e in events} == acked  # none lost, none extra
        assert log.path.read_bytes().endswith(b"\n")
        assert not [p.name for p in small.iterdir() if p.name.endswith(".tmp")]


def test_ten_processes_meeting_one_garbage_tail_move_it_aside_once(
    log: RunLog, tmp_path: Path
) -> None:
    log.commit([Mutation(type="item", id="first", key="first")])
    with log.path.open("ab") as handle:
        handle.write(b'GARBAGE LINE not json\n{"torn')
    go = tmp_path / "go"
    procs = [spawn("sync", str(log.path), f"h{n}", "5", str(go)) for n in range(10)]
    time.sleep(0.3)
    go.touch()
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), [err for _, err in outputs]
    acked: dict[str, int] = {}
    for out, _ in outputs:
        acked.update({k: s for k, (s, _) in acks(out).items()})
    events = check_contiguous(log)
    assert len(events) == 51 and {e["id"]: e["seq"] for e in events[1:]} == acked
    sides = sorted(log.path.parent.glob(log.path.name + ".corrupt-*"))
    assert [p.read_bytes() for p in sides] == [b'GARBAGE LINE not json\n{"torn']
