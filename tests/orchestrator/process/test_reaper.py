"""Process tests of the start-up reaper: it signals only what it can prove review-loop started.

Forged session records (as a reviewed repository could commit them) name processes of the
test's own: they survive, and so does the caller. After ``kill -9`` of a real owner (a
``sys.executable`` script running a dispatcher and a consult), the next dispatcher ends
every process carrying the dead run's marker, setsid'd ones included, and its record says
truthfully what it ended. Each async test runs on asyncio and trio.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from review_loop.agents.outcomes import SessionRecord
from review_loop.orchestrator.dispatcher import open_dispatcher
from review_loop.orchestrator.process import procfs, reaper, subreaper
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import empty_repo
from tests.orchestrator.process import ownership
from tests.orchestrator.process.ownership import (
    kill_all,
    kill_owner_mid_session,
    noted,
    wait_until,
    with_marker,
)

pytestmark = pytest.mark.anyio

PREFS = Prefs.validate({"graceMs": 300, "livenessMs": 60_000})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return empty_repo(tmp_path / "repo")


@pytest.fixture
def fakes(fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """The shared fake CLIs (tests/conftest.py), with the ownership tag passed through."""
    monkeypatch.setenv("REVIEW_LOOP_ENV_PASSTHROUGH", ownership.PASSTHROUGH)
    return fakes


def dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def forge(repo: Path, name: str, **fields: Any) -> Path:
    """A ``running`` record of a dead owner, as a hostile repository would commit it."""
    record = {
        "product": "codex",
        "peer": "codex",
        "updated": "2026-01-01T00:00:00.000Z",
        "cwd": "/",
        "status": "running",
        "ownerPid": dead_pid(),
        "ownerStart": 1.0,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "marker": uuid.uuid4().hex,
    }
    record.update(fields)
    path = repo / ".review-handoff" / "runtime" / "forged" / name / "reviewer-session.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    return path


async def reap(repo: Path) -> list[SessionRecord]:
    async with open_dispatcher(repo=repo, prefs=PREFS, progress=lambda _: None) as d:
        return d.reaped


FORGERIES: dict[str, Callable[[subprocess.Popen[bytes]], dict[str, Any]]] = {
    "procStart null": lambda v: {"pid": v.pid, "pgid": v.pid, "procStart": None},
    "original F2 (pid 1, victim group)": lambda v: {
        "pid": 1,
        "pgid": v.pid,
        "procStart": None,
        "ownerPid": 999_999,
        "ownerStart": None,
    },
    "pgid 0": lambda v: {"pid": v.pid, "pgid": 0, "procStart": start(v.pid)},
    "pgid 1": lambda v: {"pid": v.pid, "pgid": 1, "procStart": start(v.pid)},
    "pgid not the pid": lambda v: {"pid": dead_pid(), "pgid": v.pid, "procStart": 1.0},
    "victim's own group, no marker in its environment": lambda v: {
        "pid": v.pid,
        "pgid": v.pid,
        "procStart": start(v.pid),
    },
    "short marker": lambda v: {
        "pid": v.pid,
        "pgid": v.pid,
        "procStart": start(v.pid),
        "marker": "abc",
    },
    "marker not hex": lambda v: {
        "pid": v.pid,
        "pgid": v.pid,
        "procStart": start(v.pid),
        "marker": "z" * 32,
    },
    "no marker": lambda v: {"pid": v.pid, "pgid": v.pid, "procStart": start(v.pid), "marker": None},
    "ownerStart null": lambda v: {
        "pid": v.pid,
        "pgid": v.pid,
        "procStart": start(v.pid),
        "ownerStart": None,
    },
    "the caller itself": lambda v: {
        "pid": os.getpid(),
        "pgid": os.getpgrp(),
        "procStart": start(os.getpid()),
    },
}


def start(pid: int) -> float:
    return psutil.Process(pid).create_time()


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
async def test_a_forged_record_signals_nothing(repo: Path, forgery: str) -> None:
    """The victim (a ``setsid`` process group of the test's own) and the caller survive;
    the record is marked lost as untrusted, saying why."""
    victim = ownership.victim(new_session=True)
    try:
        path = forge(repo, "evil", **FORGERIES[forgery](victim))
        reaped = await reap(repo)
        assert victim.poll() is None, f"{forgery}: the victim was signalled"
        assert [r.status for r in reaped] == ["lost"]
        assert reaped[0].reason is not None
        assert reaped[0].reason.startswith("untrusted record (")
        assert reaped[0].reason.endswith("nothing was signalled")
        assert json.loads(path.read_text())["status"] == "lost"
    finally:
        victim.kill()
        victim.wait()


async def test_many_forged_records_signal_no_group(repo: Path) -> None:
    """Records naming every small pgid (and the caller's group) end nothing at all."""
    victim = ownership.victim(new_session=True)
    try:
        for pgid in (0, 1, os.getpgrp(), victim.pid):
            forge(repo, f"g{pgid}", pid=victim.pid, pgid=pgid, procStart=None)
        reaped = await reap(repo)
        assert victim.poll() is None
        assert {r.status for r in reaped} == {"lost"}
    finally:
        victim.kill()
        victim.wait()


def ended_pids(reason: str) -> set[int]:
    """The pids a reason says the reaper ended (``... ended N process(es) ...: pids 1, 2``)."""
    match = re.search(r"ended \d+ process\(es\) of the session: pids ([\d, ]+)", reason)
    assert match, reason
    return {int(word) for word in match.group(1).split(", ")}


async def test_kill_9_of_the_owner_the_next_dispatcher_ends_every_marker_process(
    repo: Path, fakes: FakeCLIs
) -> None:
    """The owner's long grace keeps its supervisor from finishing the SIGTERM-ignoring
    setsid'd grandchild in time: the next dispatcher's reaper ends it, and the supervisor."""
    fakes.script(claude=[{"mode": "stubborn-escape"}])
    # supervisor, CLI, escaper (without a supervisor: CLI, escaper)
    marked = 3 if subreaper.available() else 2
    record, marker = kill_owner_mid_session(repo, grace_ms=3_600_000, marked=marked)
    before = {p.pid for p in with_marker(marker)}
    reaped = await reap(repo)
    survivors = with_marker(marker) + noted(fakes)
    kill_all(survivors)
    assert survivors == []
    assert [r.status for r in reaped] == ["orphaned"]
    reason = reaped[0].reason or ""
    assert reason.endswith("none survived"), reason
    assert ended_pids(reason) <= before  # it ended marker processes only
    assert record["pid"] in ended_pids(reason)  # the leader was still there
    record_path = repo / ".review-handoff" / "runtime" / "t" / "owned" / "reviewer-session.json"
    assert json.loads(record_path.read_text())["reason"] == reason


async def test_kill_9_of_owner_and_leader_the_marker_finds_the_rest(
    repo: Path, fakes: FakeCLIs
) -> None:
    """With the leader gone too, the CLI and its setsid'd grandchild (re-parented to init)
    are found by the marker in their own environment alone."""
    fakes.script(claude=[{"mode": "setsid-grandchild"}])
    marked = 3 if subreaper.available() else 2
    _, marker = kill_owner_mid_session(repo, grace_ms=3_600_000, marked=marked, leader_too=True)
    orphans = {p.pid for p in with_marker(marker)}
    reaped = await reap(repo)
    survivors = with_marker(marker)
    kill_all(survivors)
    assert survivors == []
    reason = reaped[0].reason or ""
    assert [r.status for r in reaped] == ["orphaned"] and reason.endswith("none survived")
    assert orphans and ended_pids(reason) == orphans


@pytest.mark.skipif(not subreaper.available(), reason="needs the session supervisor (Linux)")
async def test_a_dead_run_with_nothing_left_is_orphaned_and_says_so(
    repo: Path, fakes: FakeCLIs
) -> None:
    """After the supervisor ended its session itself, the reaper signals nothing and says so."""
    fakes.script(claude=[{"mode": "hang"}])
    _, marker = kill_owner_mid_session(repo, grace_ms=300, marked=2)
    assert wait_until(lambda: not with_marker(marker))
    reaped = await reap(repo)
    assert [r.status for r in reaped] == ["orphaned"]
    assert "the reaper signalled nothing" in (reaped[0].reason or "")


async def test_the_reaper_never_signals_pid_1() -> None:
    """Whatever a record or a marker scan led to, pid 1 is never signalled; probed with
    signal 0, which reaches pid 1 as root but changes nothing (a pid > 1 is reached)."""
    init, me = procfs.Proc.of(1), procfs.Proc.of(os.getpid())
    assert init is not None and me is not None
    assert reaper._send([init, me], 0) == [os.getpid()]
    if os.geteuid() == 0:  # reachable: only the reaper's own guard keeps it out
        assert init.send_signal(0)


async def test_a_record_too_deep_to_parse_is_skipped_and_the_others_reaped(repo: Path) -> None:
    """json.loads raises RecursionError (not a ValueError) on deep nesting: the full scan
    (no stamp yet) skips such a file as any non-JSON one and still heals the others,
    instead of ending every dispatcher of the repository with a crash."""
    path = forge(repo, "lost-one")
    deep = path.parent.parent / "deep" / "reviewer-session.json"
    deep.parent.mkdir()
    deep.write_text("[" * 200_000)
    reaped = await reap(repo)
    assert [r.status for r in reaped] == ["lost"]
    assert json.loads(path.read_text())["status"] == "lost"
