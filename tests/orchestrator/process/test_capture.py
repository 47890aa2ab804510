"""Reviewer output is bounded in memory and on disk, and kept outside the repository.

Contract tests of :class:`~review_loop.orchestrator.process.capture.BoundedCapture` (whole up to
the cap, dropped past it, a spill that fails read back into memory, the spill removed),
the start-up sweep of a killed owner's spill, and process tests of ``run_process`` with
a real flooding fake CLI and the temp directory on a real small tmpfs: the spill never
passes the cap, a full disk ends nothing, and the space is freed.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import anyio
import pytest

from review_loop.agents.models import Completed, Invocation
from review_loop.orchestrator.process import capture
from review_loop.orchestrator.process.capture import BoundedCapture
from review_loop.orchestrator.process.run import run_process
from review_loop.orchestrator.sandbox import isolation
from tests.fakes import FakeCLIs
from tests.tmpfs import small_disk, used_bytes

MIB = 1024 * 1024
GRACE = 0.5


def _spills(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"{capture.OUTPUT_PREFIX}*"))


def _feed(sink: BoundedCapture, data: bytes, chunk: int = 65536) -> None:
    for start in range(0, len(data), chunk):
        sink.feed(data[start : start + chunk])


# -- contract ------------------------------------------------------------------------------


def test_contract_a_stream_under_the_cap_is_kept_whole_and_its_spill_removed(
    tmp_path: Path,
) -> None:
    data = os.urandom(300_000)
    sink = BoundedCapture(1000, 1000, tmp_path, keep_cap=400_000)
    _feed(sink, data, chunk=7000)
    (spill,) = _spills(tmp_path)
    assert spill.stat().st_size == len(data) and (spill.stat().st_mode & 0o777) == 0o600
    sink.settle()
    assert sink.value() == data and not sink.truncated and sink.dropped == 0
    sink.close()
    assert _spills(tmp_path) == [] and sink.value() == data


def test_contract_past_the_cap_the_spill_goes_at_once_and_the_middle_is_dropped(
    tmp_path: Path,
) -> None:
    data = os.urandom(300_000)
    sink = BoundedCapture(1000, 1000, tmp_path, keep_cap=100_000)
    _feed(sink, data[:100_000], chunk=5000)
    assert len(_spills(tmp_path)) == 1  # at the cap: still whole
    sink.feed(data[100_000:100_001])
    assert _spills(tmp_path) == []  # one byte past it: removed, before the stream ends
    _feed(sink, data[100_001:], chunk=5000)
    sink.settle()
    assert sink.truncated and sink.value() == data[:1000] + data[-1000:]
    assert sink.dropped == len(data) - 2000 and sink.spill_error is None
    assert _spills(tmp_path) == []


def test_contract_the_spill_is_in_the_temp_directory_named_for_its_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sink = BoundedCapture(10, 10)
    sink.feed(b"x" * 100)
    (spill,) = _spills(tmp_path)
    assert spill.name.startswith(capture.output_prefix()) and spill.name.endswith(".spill")
    sink.close()
    assert _spills(tmp_path) == []


def test_contract_stderr_keeps_no_spill(tmp_path: Path) -> None:
    sink = BoundedCapture(10, 10, tmp_path, keep_cap=0)
    sink.feed(b"a" * 10 + b"b" * 100 + b"c" * 10)
    assert _spills(tmp_path) == [] and sink.value() == b"a" * 10 + b"c" * 10
    assert sink.dropped == 100


def test_contract_a_full_disk_moves_the_stream_into_memory_and_frees_the_disk(
    tmp_path: Path,
) -> None:
    """On a real 1 MiB tmpfs, a 3 MiB stream: ENOSPC, the spill read back and removed, the
    disk as empty as before, and the stream still whole (in memory, under the cap)."""
    data = os.urandom(3 * MIB)
    with small_disk(tmp_path / "disk", "1m") as disk:
        before = used_bytes(disk)
        sink = BoundedCapture(65536, 65536, disk, keep_cap=8 * MIB)
        _feed(sink, data)
        assert sink.spill_error == "ENOSPC"
        assert _spills(disk) == [] and used_bytes(disk) == before
        sink.settle()
        sink.close()
        assert sink.value() == data and not sink.truncated


def test_contract_a_full_disk_past_the_cap_keeps_head_and_tail(tmp_path: Path) -> None:
    data = os.urandom(3 * MIB)
    with small_disk(tmp_path / "disk", "1m") as disk:
        sink = BoundedCapture(65536, 65536, disk, keep_cap=2 * MIB)
        _feed(sink, data)
        sink.settle()
        sink.close()
        assert sink.spill_error == "ENOSPC" and _spills(disk) == []
        assert sink.value() == data[:65536] + data[-65536:]
        assert sink.dropped == len(data) - 2 * 65536


def test_contract_the_sweep_names_the_capture_prefix() -> None:
    assert capture.OUTPUT_PREFIX in isolation._SWEPT


def test_contract_the_sweep_removes_the_spill_files_of_dead_owners_only(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"{capture.OUTPUT_PREFIX}{gone.pid}-100-abc.spill"
    dead.write_bytes(b"x" * 1000)
    target = tmp_path / "elsewhere"
    target.write_text("kept")
    link = tmp_path / f"{capture.OUTPUT_PREFIX}{gone.pid}-100-link.spill"
    link.symlink_to(target)
    live = BoundedCapture(1, 1, tmp_path)
    live.feed(b"xyz")  # this process's own spill: its owner runs
    (mine,) = (p for p in _spills(tmp_path) if p not in (dead, link))
    assert isolation.remove_orphaned_scratch(tmp_path) == [dead]
    assert sorted(_spills(tmp_path)) == sorted([link, mine]) and target.read_text() == "kept"
    live.close()


# -- process -------------------------------------------------------------------------------


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    fakes = FakeCLIs(tmp_path / "fakes")
    for key, value in fakes.env().items():
        monkeypatch.setenv(key, value)
    return fakes


def _codex(cwd: Path) -> Invocation:
    return Invocation(argv=("codex", "exec", "--json", "-"), stdin=b"hi", cwd=cwd)


async def _flood_watching(
    invocation: Invocation, temp: Path, *, deadline: float, output_cap: int
) -> tuple[int, Completed]:
    """Run a flooding CLI and sample the disk's use while it runs; (the most seen, result)."""
    most = 0
    result: list[Completed] = []

    async def run() -> None:
        result.append(
            await run_process(invocation, deadline=deadline, grace=GRACE, output_cap=output_cap)
        )

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        while not result:
            most = max(most, used_bytes(temp))
            await anyio.sleep(0.01)
    return most, result[0]


@pytest.mark.anyio
async def test_process_a_flood_never_spills_past_the_cap(
    fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI printing without end for 2 s, the temp dir on a 48 MiB tmpfs, a cap of 8 MiB:
    the disk never holds more than the cap, and nothing is left on it afterwards."""
    fakes.script(codex=[{"mode": "flood"}])
    with small_disk(tmp_path / "tmp", "48m") as temp:
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        before = used_bytes(temp)
        most, done = await _flood_watching(_codex(tmp_path), temp, deadline=2, output_cap=8 * MIB)
        assert most - before <= 8 * MIB + 64 * 1024  # a tmpfs page or so of slack
        assert _spills(temp) == [] and used_bytes(temp) == before
    assert done.timed_out and done.stdout_truncated
    assert done.stdout_dropped > 0 and done.stdout_spill_error is None


@pytest.mark.anyio
async def test_process_a_flood_onto_a_full_temp_disk_ends_nothing_and_frees_it(
    fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp dir on a 4 MiB tmpfs, under the default cap: ENOSPC while spilling ends
    neither the session nor the call; the session is ended at its deadline as usual, its
    head and tail kept, and the disk is as empty as before."""
    fakes.script(codex=[{"mode": "flood"}])
    with small_disk(tmp_path / "tmp", "4m") as temp:
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        before = used_bytes(temp)
        done = await run_process(_codex(tmp_path), deadline=2, grace=GRACE)
        assert _spills(temp) == [] and used_bytes(temp) == before
    assert done.timed_out and done.stdout_spill_error == "ENOSPC"
    assert done.stdout_truncated and done.stdout_dropped > 0
    assert len(done.stdout) == 8 * MIB


@pytest.mark.anyio
async def test_process_a_big_answer_onto_a_full_temp_disk_arrives_whole(
    fakes: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 20 MB answer, the temp dir on a 4 MiB tmpfs: the answer arrives whole (the spill
    moved into memory), the disk is freed."""
    fakes.script(codex=[{"mode": "big-answer", "bytes": 20_000_000}])
    with small_disk(tmp_path / "tmp", "4m") as temp:
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        before = used_bytes(temp)
        done = await run_process(_codex(tmp_path), deadline=60, grace=GRACE)
        assert _spills(temp) == [] and used_bytes(temp) == before
    assert done.returncode == 0 and done.stdout_spill_error == "ENOSPC"
    assert not done.stdout_truncated and b"z" * 20_000_000 in done.stdout


@pytest.mark.anyio
async def test_process_the_spill_of_a_killed_owner_is_removed_by_the_next_dispatcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review-loop killed with SIGKILL while its reviewer floods: its spill stays in the
    temp dir (nothing ran to remove it) until the next dispatcher's start-up sweep."""
    from review_loop.orchestrator.dispatcher import open_dispatcher
    from review_loop.prefs import Prefs
    from tests.gitrepo import committed_repo
    from tests.orchestrator.process.ownership import kill_owner_once, wait_until

    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    temp = tmp_path / "tmp"
    temp.mkdir()
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "flood"}])
    env = {**os.environ, **fakes.env(), "TMPDIR": str(temp)}

    def spilled() -> None:
        assert wait_until(lambda: bool(_spills(temp))), "the flood never spilled"

    kill_owner_once(repo, "codex", env, spilled)
    (left,) = _spills(temp)  # the killed owner's spill is still there ...
    alive = BoundedCapture(1, 1, temp)
    alive.feed(b"xyz")  # ... beside this process's own, whose owner runs

    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None):
        pass
    assert _spills(temp) == [alive.spill_path]  # ... until the next command starts
    alive.close()
    assert not left.exists()
