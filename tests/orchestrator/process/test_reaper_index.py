"""Process and contract tests of the index of unfinished records.

(``orchestrator/handoff/unfinished.py``.)

The start-up reaper reads every record only when the index is not trusted (no stamp of
this boot: a repository from before the index, a reboot, an index that could not be
written); otherwise it reads only the records the index names. A dispatcher makes a
record's entry before its first write and removes it once the record is finished, so a
session whose owner was killed with SIGKILL is still found (the kill tests here and in
test_reaper.py). Each async test runs on asyncio and trio.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest

from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.handoff import unfinished
from review_loop.orchestrator.process import reaper
from tests.fakes import FakeCLIs
from tests.gitrepo import empty_repo
from tests.orchestrator.process.ownership import (
    kill_all,
    kill_owner_mid_session,
    noted,
    with_marker,
)
from tests.orchestrator.process.test_reaper import PREFS, dead_pid, forge, reap
from tests.orchestrator.process.test_reaper import (
    fakes as fakes,  # the ownership tag passed through
)

pytestmark = pytest.mark.anyio

needs_boot_id = pytest.mark.skipif(unfinished.boot_id() is None, reason="no boot id (Linux)")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository where review-loop has run: its records' directory exists."""
    made = empty_repo(tmp_path / "repo")
    (made / ".review-handoff" / "runtime").mkdir(parents=True)
    return made


def entry_names(repo: Path) -> list[str]:
    return sorted(entry.name for entry in unfinished.entries(repo))


def stamp(repo: Path) -> Path:
    return unfinished.index_dir(repo) / unfinished.STAMP


@needs_boot_id
async def test_process_a_repository_without_a_stamp_is_read_whole_then_stamped(
    repo: Path,
) -> None:
    """No stamp of this boot: every record is read (a forged one without an entry is
    found and marked lost), then the stamp holds this boot's id."""
    forge(repo, "unindexed")
    reaped = await reap(repo)
    assert [r.status for r in reaped] == ["lost"]
    assert stamp(repo).read_text() == unfinished.boot_id()
    assert unfinished.trusted(repo)


@needs_boot_id
async def test_process_a_stamped_index_is_read_instead_of_every_record(repo: Path) -> None:
    """Once stamped, a record without an entry is not read; one with an entry is, judged as
    before (untrusted, nothing signalled), and its entry is removed."""
    assert await reap(repo) == []
    assert unfinished.trusted(repo)
    unindexed = forge(repo, "unindexed")
    assert await reap(repo) == []  # not read: the index names no such record
    record = json.loads(unindexed.read_text())
    assert unfinished.add(repo, unindexed.parent, record["ownerPid"], record["ownerStart"])
    assert entry_names(repo) != []
    reaped = await reap(repo)
    assert [r.status for r in reaped] == ["lost"]
    assert (reaped[0].reason or "").startswith("untrusted record (")
    assert entry_names(repo) == []
    assert json.loads(unindexed.read_text())["status"] == "lost"


@needs_boot_id
async def test_process_a_stamp_of_another_boot_is_not_trusted(repo: Path) -> None:
    assert await reap(repo) == []
    stamp(repo).write_text("another-boot")
    forge(repo, "unindexed")
    reaped = await reap(repo)
    assert [r.status for r in reaped] == ["lost"]
    assert stamp(repo).read_text() == unfinished.boot_id()


@needs_boot_id
async def test_process_a_planted_entry_with_a_non_ascii_digit_is_ignored(repo: Path) -> None:
    """A name whose pid is a digit int() refuses ('\u00b2') is no entry: the stamped
    index is read as usual, the record it seems to name is not, nothing fails."""
    assert await reap(repo) == []
    assert unfinished.trusted(repo)
    forge(repo, "planted")
    (unfinished.index_dir(repo) / "\u00b2-x-forged%2Fplanted").touch()
    assert entry_names(repo) == []
    assert reaper.nothing_to_reap(repo)
    assert await reap(repo) == []


@needs_boot_id
async def test_process_a_full_scan_adopts_the_record_of_a_live_owner(repo: Path) -> None:
    """An unfinished record whose owner still runs (a process of another version) gets an
    entry in the full scan: after its owner dies, the index finds it."""
    me = os.getpid()
    live = forge(repo, "live", ownerPid=me, ownerStart=psutil.Process(me).create_time())
    assert await reap(repo) == []
    assert [(e.first, e.second, e.owner_pid) for e in unfinished.entries(repo)] == [
        ("forged", "live", me)
    ]
    record = json.loads(live.read_text())
    record["ownerPid"] = dead_pid()  # its owner is gone now
    live.write_text(json.dumps(record))
    # the entry still names the live owner: it is kept, and its record is read and reaped
    reaped = await reap(repo)
    assert [r.status for r in reaped] == ["lost"]
    assert entry_names(repo) == []


@needs_boot_id
async def test_process_entries_of_finished_or_vanished_records_are_dropped(repo: Path) -> None:
    assert await reap(repo) == []
    runtime = repo / ".review-handoff" / "runtime"
    finished = forge(repo, "finished", status="finished")
    record = json.loads(finished.read_text())
    unfinished.add(repo, finished.parent, record["ownerPid"], record["ownerStart"])
    me = os.getpid()
    mine = psutil.Process(me).create_time()
    unfinished.add(repo, runtime / "forged" / "not-yet-written", me, mine)  # its owner runs
    unfinished.add(repo, runtime / "forged" / "never-written", record["ownerPid"], 1.0)
    assert len(entry_names(repo)) == 3
    assert await reap(repo) == []
    assert [(e.second, e.owner_pid) for e in unfinished.entries(repo)] == [("not-yet-written", me)]


@needs_boot_id
async def test_process_a_consult_indexes_its_record_only_while_unfinished(
    repo: Path, fakes: FakeCLIs
) -> None:
    """Killed mid-session, the owner leaves its record's entry; the next dispatcher reaps
    the record through it and removes it. A consult that ends leaves none."""
    fakes.script(claude=[{"mode": "stubborn-escape"}])
    assert await reap(repo) == []  # stamped: from here the reaper reads the index
    _, marker = kill_owner_mid_session(repo, grace_ms=300, marked=2)
    assert [(e.first, e.second) for e in unfinished.entries(repo)] == [("t", "owned")]
    reaped = await reap(repo)
    kill_all(with_marker(marker) + noted(fakes))
    assert [r.status for r in reaped] == ["orphaned"]
    assert entry_names(repo) == []
    fakes.script(claude=[{"mode": "ok"}])
    async with open_dispatcher(repo=repo, prefs=PREFS, progress=lambda _: None) as d:
        delivery = await d.consult(PeerRequest(peer="claude", prompt="q", record_dir="t/asked"))
    assert delivery.ok, delivery
    assert entry_names(repo) == []


async def test_process_an_index_that_cannot_be_written_makes_the_next_reaper_read_all(
    repo: Path, fakes: FakeCLIs
) -> None:
    """A file where the index belongs: no entry can be made, the consult still runs (no
    stamp can say the index is complete), and the next reaper reads every record."""
    fakes.script(claude=[{"mode": "ok"}])
    index = unfinished.index_dir(repo)
    index.write_text("not a directory")
    async with open_dispatcher(repo=repo, prefs=PREFS, progress=lambda _: None) as d:
        delivery = await d.consult(PeerRequest(peer="claude", prompt="q", record_dir="t/asked"))
    assert delivery.ok and delivery.recordError is None, delivery
    assert not unfinished.trusted(repo)
    forge(repo, "unindexed")
    assert [r.status for r in await reap(repo)] == ["lost"]


@needs_boot_id
async def test_process_a_stamped_index_that_cannot_be_written_refuses_the_launch(
    repo: Path, fakes: FakeCLIs
) -> None:
    """The stamp says the index is complete and no entry can be made nor the stamp
    removed: the record is not written and nothing is launched (no record, no launch)."""
    fakes.script(claude=[{"mode": "ok"}])
    assert await reap(repo) == []
    index = unfinished.index_dir(repo)
    # immutable (root ignores file modes): no entry can be made, the stamp not removed
    if subprocess.run(["chattr", "+i", str(index)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        async with open_dispatcher(repo=repo, prefs=PREFS, progress=lambda _: None) as d:
            delivery = await d.consult(PeerRequest(peer="claude", prompt="q", record_dir="t/asked"))
    finally:
        subprocess.run(["chattr", "-i", str(index)], check=True)
    assert [c for c in fakes.calls() if "--version" not in c.get("argv", [])] == []
    assert not delivery.ok and delivery.state.value == "NOT_SUBMITTED", delivery
    assert delivery.recordError is not None
    assert delivery.recordError.path.startswith(str(index))
    assert not (repo / ".review-handoff/runtime/t/asked/reviewer-session.json").exists()


def test_contract_entry_names_round_trip_and_refuse_what_is_not_an_entry(tmp_path: Path) -> None:
    repo = tmp_path
    runtime = repo / ".review-handoff" / "runtime"
    for first, second in [
        ("consult-sessions", "2026-12-01T02-30-53-754Z-codex"),
        ("a%2Fb", "c%25d%"),
        ("%", "é ü"),
        (".hidden", "x-y-z"),
    ]:
        parts = unfinished.record_parts(repo, runtime / first / second)
        assert parts == (first, second)
        for start in (1764556323.45, None):
            name = unfinished.entry_name(parts, 4242, start)
            entry = unfinished.parse(name)
            assert entry is not None
            assert (entry.first, entry.second, entry.owner_pid, entry.owner_start) == (
                first,
                second,
                4242,
                start,
            )
    for outside in (runtime, runtime / "one", runtime / "a" / "b" / "c", tmp_path / "x" / "y"):
        assert unfinished.record_parts(repo, outside) is None
    for name in (
        ".scanned",
        "12-1.0-..%2Fx",
        "12-1.0-x%2F..",
        "12-1.0-x%2F",
        "12-1.0-%2Fx",
        "12-1.0-x",
        "12-1.0-a%2Fb%2Fc",
        "-1-1.0-a%2Fb",
        "x-1.0-a%2Fb",
        "12-nan?-a%2Fb",
        "12-1.0",
        "²-1.0-a%2Fb",
        "1²-x-a%2Fb",
    ):
        assert unfinished.parse(name) is None, name


@needs_boot_id
async def test_process_a_record_that_could_not_be_healed_keeps_the_index_untrusted(
    repo: Path,
) -> None:
    """A full scan that could not rewrite a dead owner's record (its directory immutable)
    writes no stamp: the next reaper reads every record again and heals it then."""
    forged = forge(repo, "stuck")
    if subprocess.run(["chattr", "+i", str(forged.parent)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        assert [r.status for r in await reap(repo)] == ["lost"]
    finally:
        subprocess.run(["chattr", "-i", str(forged.parent)], check=True)
    assert json.loads(forged.read_text())["status"] == "running"
    assert not unfinished.trusted(repo)
    assert [r.status for r in await reap(repo)] == ["lost"]
    assert json.loads(forged.read_text())["status"] == "lost"
    assert unfinished.trusted(repo)


async def test_process_a_repository_without_records_gets_no_index(tmp_path: Path) -> None:
    """A dispatcher creates nothing but its records: no stamp, no directory, in a
    repository that has none (its first full scan reads nothing)."""
    fresh = empty_repo(tmp_path / "fresh")
    assert await reap(fresh) == []
    assert not (fresh / ".review-handoff").exists()
