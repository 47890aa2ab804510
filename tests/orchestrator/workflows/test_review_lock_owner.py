"""The packet lock is proven like a process: pid and start time, not pid alone.

- Contract tests of the ``owner`` file (``LockOwner``): what this process writes reads
  back; an old lock (token and pid) reads with nothing more; malformed values are left
  out, never guessed. Of :func:`owner_gone`: a dead pid, another boot, a pid whose process
  has another start (reuse) are gone; the owner itself is not; an old lock is gone only when
  its pid's process started after the lock was written.
- Process tests: after a crash the lock's pid belongs to another process (simulated: a
  ``sleep`` this test started, with a wrong start written into the owner file):
  ``review-loop run --continue`` takes the lock over and runs. With the ``sleep``'s real
  start it refuses ``PACKET_LOCK_HELD`` naming the pid, its start and command line, and a
  ``hint`` saying how to clear the lock; the lock is left as it was, no reviewer is asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli import run as cli_run
from review_loop.orchestrator.handoff.unfinished import boot_id
from review_loop.orchestrator.process import procfs
from review_loop.orchestrator.workflows.review_store import LOCK_DIR, LockOwner, owner_gone
from tests.fakes import FakeCLIs
from tests.gitrepo import guarded_change

HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
NO_FINDINGS = {"mode": "ok", "text": f"## Findings\n\n{HEADER}\n\nVerdict: NO_FINDINGS\n"}


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process: what a reused pid belongs to after a crash."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _owner(pid: int, *, ticks: float | None, boot: str | None) -> LockOwner:
    return LockOwner("crashed-run-token", pid, procfs.start_time(pid), ticks, boot, None)


# -- the owner file ----------------------------------------------------------------------------


def test_contract_the_owner_file_names_pid_start_boot_and_since() -> None:
    mine = LockOwner.mine("tok")
    assert mine.pid == os.getpid() and mine.start == procfs.start_time(os.getpid())
    assert mine.ticks == procfs.start_ticks(os.getpid()) and mine.boot == boot_id()
    text = mine.text()
    assert text.startswith(f"tok\n{os.getpid()}\n")  # what an older review-loop reads
    assert LockOwner.parse(text) == mine


def test_contract_an_old_or_malformed_owner_file_reads_without_guessing() -> None:
    assert LockOwner.parse("tok\n123\n") == LockOwner("tok", 123)
    odd = LockOwner.parse("tok\nnot-a-pid\nstart nan\nticks x\nboot ../../etc\nsince yesterday\n")
    assert odd == LockOwner("tok", 0)


# -- who is gone -------------------------------------------------------------------------------


def test_contract_a_dead_owner_is_gone() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    reason = owner_gone(LockOwner("t", dead.pid), None)
    assert reason == f"pid {dead.pid} is not running"


def test_contract_the_owner_itself_is_not_gone() -> None:
    assert owner_gone(LockOwner.mine("t"), time.time()) is None


def test_contract_a_reused_pid_is_gone(sleeper: subprocess.Popen[bytes]) -> None:
    ticks = procfs.start_ticks(sleeper.pid)
    assert ticks is not None
    right = _owner(sleeper.pid, ticks=ticks, boot=boot_id())
    assert owner_gone(right, None) is None
    reused = _owner(sleeper.pid, ticks=ticks - 1, boot=boot_id())
    assert owner_gone(reused, None) == (
        f"pid {sleeper.pid} now belongs to another process (another start time)"
    )


def test_contract_a_lock_of_another_boot_is_gone(sleeper: subprocess.Popen[bytes]) -> None:
    if boot_id() is None:
        pytest.skip("no boot id on this system")
    other = _owner(sleeper.pid, ticks=procfs.start_ticks(sleeper.pid), boot="0000-other-boot")
    assert "before the machine restarted" in str(owner_gone(other, None))


def test_contract_an_old_lock_is_gone_when_its_pid_started_after_it(
    sleeper: subprocess.Popen[bytes],
) -> None:
    started = procfs.start_time(sleeper.pid)
    assert started is not None
    old = LockOwner("t", sleeper.pid)  # pid only: what review-loop wrote before
    assert owner_gone(old, started + 5) is None  # written after the process started: held
    reason = owner_gone(old, started - 5)  # written before the process existed
    assert reason == f"pid {sleeper.pid} belongs to a process started after the lock was taken"


# -- through the command line ------------------------------------------------------------------


@pytest.fixture
def packet(tmp_path: Path, fakes: FakeCLIs) -> tuple[Path, Path]:
    """A review run whose first round failed (the packet waits for ``--continue``): the
    repository and the packet's runtime directory."""
    repo = guarded_change(tmp_path / "repo")
    fakes.script(codex=[{"mode": "fail"}, NO_FINDINGS])
    out: list[str] = []
    cli_run(["run", "--repo", str(repo), "--reviewer", "codex"], stdout=out.append)
    doc = json.loads(out[0])
    return repo, repo / ".review-handoff" / "runtime" / str(doc["packetId"])


def _crashed_lock(runtime: Path, owner: LockOwner) -> Path:
    lock = runtime / LOCK_DIR
    lock.mkdir()
    (lock / "owner").write_text(owner.text())
    return lock


def _continue(repo: Path) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", "run", "--repo", str(repo), "--continue"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout)


def test_process_a_lock_whose_pid_was_reused_is_taken_over(
    packet: tuple[Path, Path], fakes: FakeCLIs, sleeper: subprocess.Popen[bytes]
) -> None:
    repo, runtime = packet
    ticks = procfs.start_ticks(sleeper.pid)
    assert ticks is not None
    lock = _crashed_lock(runtime, _owner(sleeper.pid, ticks=ticks + 100, boot=boot_id()))
    code, document = _continue(repo)
    assert code == 0 and document["status"] == "archived", document
    assert len(fakes.calls()) == 2  # the first round, then the one --continue asked for
    assert not lock.exists()  # released after the run
    assert sleeper.poll() is None  # the unrelated process is left alone


def test_process_a_live_owner_is_refused_naming_it_with_a_hint(
    packet: tuple[Path, Path], fakes: FakeCLIs, sleeper: subprocess.Popen[bytes]
) -> None:
    repo, runtime = packet
    owner = _owner(sleeper.pid, ticks=procfs.start_ticks(sleeper.pid), boot=boot_id())
    lock = _crashed_lock(runtime, owner)
    before = (lock / "owner").read_text()
    code, document = _continue(repo)
    assert code == 1 and document["ok"] is False, document
    error = document["error"]
    assert error.startswith(f"PACKET_LOCK_HELD: packet lock held by pid {sleeper.pid} (started ")
    assert "command: sleep 300" in error
    assert document["hint"].endswith(f"remove the lock: rm -r {lock}"), document
    assert (lock / "owner").read_text() == before
    assert len(fakes.calls()) == 1  # only the first round's reviewer
