"""Process tests: the throw-away copy of an isolated run does not outlive a killed owner.

An isolated reviewer (the npm grok, no read-only mode) runs in a scratch directory under
the temp dir holding a copy of the repository and the CLI's credential files. review-loop
removes it when the run ends, however it ends, unless review-loop itself is killed with
SIGKILL: then the next review-loop that opens a dispatcher removes it. A scratch directory
whose owner still runs is left alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from review_loop.orchestrator.dispatcher import open_dispatcher
from review_loop.orchestrator.sandbox import isolation
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo
from tests.orchestrator.process.ownership import kill_owner_once


@pytest.mark.anyio
async def test_the_scratch_of_a_killed_owner_is_removed_by_the_next_dispatcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not await isolation.namespace_available():
        pytest.skip("no isolation namespace on this machine")
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    temp = tmp_path / "tmp"
    temp.mkdir()
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(grok=[{"mode": "hang"}])
    env = {**os.environ, **fakes.env(), "FAKE_GROK_VARIANT": "vibe", "TMPDIR": str(temp)}

    def scratch_made() -> None:
        assert [p.name for p in temp.iterdir() if p.name.startswith("review-loop-isolated-")]

    kill_owner_once(repo, "grok", env, scratch_made)
    alive = tempfile.mkdtemp(prefix=isolation.scratch_prefix(), dir=temp)  # ours: running
    left = sorted(p.name for p in temp.iterdir())
    assert len(left) == 2  # the killed owner's scratch is still there ...

    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("FAKE_GROK_VARIANT", "vibe")
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None):
        pass
    assert [p.name for p in temp.iterdir()] == [Path(alive).name]  # ... until the next run


def test_contract_the_sweep_removes_only_real_directories_of_dead_owners(tmp_path: Path) -> None:
    """What the sweep at every dispatcher's start may remove: a directory (never a link,
    never what it points to, never a file) named for a review-loop process that is gone."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = f"{isolation.SCRATCH_PREFIX}{gone.pid}-100-"
    orphan = temp / f"{dead}orphan"
    (orphan / "work").mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("kept")
    (temp / f"{dead}link").symlink_to(target, target_is_directory=True)
    (temp / f"{dead}file").write_text("a file")
    (temp / f"{isolation.SCRATCH_PREFIX}not-a-pid").mkdir()
    (temp / f"other-{dead}").mkdir()
    alive = Path(tempfile.mkdtemp(prefix=isolation.scratch_prefix(), dir=temp))
    assert isolation.remove_orphaned_scratch(temp) == [orphan]
    assert sorted(p.name for p in temp.iterdir()) == sorted(
        [
            f"{dead}link",
            f"{dead}file",
            f"{isolation.SCRATCH_PREFIX}not-a-pid",
            f"other-{dead}",
            alive.name,
        ]
    )
    assert (target / "keep.txt").read_text() == "kept"
    assert isolation.remove_orphaned_scratch(tmp_path / "missing") == []


def test_contract_a_killed_demos_directory_is_swept_like_a_scratch_copy(tmp_path: Path) -> None:
    """``review-loop demo`` names its directory for its pid and start time: the sweep
    removes a dead demo's directory and leaves a running one's, and the directories of
    older demos (a random name, no owner to prove gone) alone."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = tmp_path / f"{isolation.DEMO_PREFIX}{gone.pid}-100-abc"
    (orphan / "repo").mkdir(parents=True)
    older = tmp_path / f"{isolation.DEMO_PREFIX}k3j4h5"
    older.mkdir()
    running = Path(
        tempfile.mkdtemp(prefix=isolation.scratch_prefix(isolation.DEMO_PREFIX), dir=tmp_path)
    )
    assert isolation.remove_orphaned_scratch(tmp_path) == [orphan]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([older.name, running.name])


@pytest.mark.anyio
async def test_an_orphaned_scratch_is_removed_when_the_reaper_has_nothing_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dispatcher's quick start (a trusted index with nothing to reap, no worker
    thread) still finds and removes a dead owner's scratch directory."""
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    (repo / ".review-handoff" / "runtime").mkdir(parents=True)  # review-loop ran here
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None):
        pass  # the first one reads every record and stamps the index
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = temp / f"{isolation.SCRATCH_PREFIX}{gone.pid}-100-orphan"
    (orphan / "work").mkdir(parents=True)
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        assert d.reaped == []
    assert not orphan.exists()


def test_contract_an_imported_tempfile_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # an embedding program's choice
    assert isolation.temp_directories() == [tmp_path]


def test_process_a_consult_sweeps_the_scratch_of_a_dead_owner_in_its_tmpdir(
    tmp_path: Path,
) -> None:
    # The command line's sweep, in the $TMPDIR tempfile chooses
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    temp = tmp_path / "tmp"
    temp.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = temp / f"{isolation.SCRATCH_PREFIX}{gone.pid}-100-orphan"
    (orphan / "work").mkdir(parents=True)
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", "consult", "--peer", "codex", "--question", "?"],
        cwd=repo,
        env={**fakes.env(), "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["text"] == "fine"
    assert not orphan.exists()
