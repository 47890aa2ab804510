"""Process tests: committed files under ``.review-handoff/`` are the repository's, not ours.

A pull request can commit ``reviewer-session.json`` records of the right shape (``running``,
a dead owner) and index entries naming them. In a fresh clone, a ``review-loop consult``
with a fake CLI must leave every one of them as git has it (``git status --porcelain`` is
empty), and must not treat them as its own sessions (no ``reaped`` warning). A record the
clone's own review-loop wrote (untracked) is still healed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from review_loop.orchestrator.handoff import unfinished
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo, git

RUNTIME = Path(".review-handoff") / "runtime" / "consult-sessions"

REVIEW_LOOP = (sys.executable, "-m", "review_loop")


def forged(owner_pid: int = 424241) -> str:
    return json.dumps(
        {
            "product": "codex",
            "peer": "codex",
            "updated": "2026-01-01T00:00:00.000Z",
            "cwd": "/",
            "status": "running",
            "pid": 424242,
            "pgid": 424242,
            "procStart": 1.0,
            "ownerPid": owner_pid,
            "ownerStart": 2.0,
            "startedAt": "2026-01-01T00:00:00.000Z",
            "marker": uuid.uuid4().hex,
        }
    )


def clone_with_records(tmp_path: Path, count: int, *, entries: bool = False) -> Path:
    """A fresh clone of a repository that committed ``count`` forged records (and, with
    ``entries``, an index entry naming each)."""
    source = committed_repo(tmp_path / "source", {"a.txt": "a\n"})
    index = source / ".review-handoff" / unfinished.INDEX_DIR
    index.mkdir(parents=True)
    for number in range(count):
        folder = source / RUNTIME / f"evil-{number}"
        folder.mkdir(parents=True)
        (folder / "reviewer-session.json").write_text(forged())
        if entries:
            name = unfinished.entry_name(("consult-sessions", f"evil-{number}"), 424241, 2.0)
            (index / name).write_text("")
    git(source, "add", "-A", "-f")
    git(source, "commit", "-qm", "records")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
    return clone


def consult(repo: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*REVIEW_LOOP, "consult", "--repo", str(repo), "--peer", "codex", "--question", "hi"],
        capture_output=True,
        text=True,
        env={**os.environ, "REVIEW_LOOP_TIMEOUT_MS": "60000"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    return done


def tracked_changes(repo: Path) -> str:
    return git(repo, "status", "--porcelain", "--untracked-files=no")


def test_process_a_committed_record_is_never_rewritten(tmp_path: Path, fakes: FakeCLIs) -> None:
    clone = clone_with_records(tmp_path, 1)
    before = (clone / RUNTIME / "evil-0" / "reviewer-session.json").read_bytes()
    done = consult(clone)
    assert tracked_changes(clone) == ""
    assert (clone / RUNTIME / "evil-0" / "reviewer-session.json").read_bytes() == before
    assert "reaped" not in done.stderr


def test_process_3000_committed_records_stay_as_committed(tmp_path: Path, fakes: FakeCLIs) -> None:
    clone = clone_with_records(tmp_path, 3000)
    done = consult(clone)
    assert tracked_changes(clone) == ""
    assert "reaped" not in done.stderr
    consult(clone)  # the index, now stamped, names none of them either
    assert tracked_changes(clone) == ""


def test_process_committed_index_entries_are_neither_followed_nor_removed(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    clone = clone_with_records(tmp_path, 3, entries=True)
    boot = unfinished.boot_id()
    assert boot is not None
    # As if this user's review-loop had scanned this clone in this boot before a pull
    # brought the entries: the index is trusted, and it names committed records.
    (clone / ".review-handoff" / unfinished.INDEX_DIR / unfinished.STAMP).write_text(boot)
    done = consult(clone)
    assert tracked_changes(clone) == ""
    assert "reaped" not in done.stderr


def test_process_an_untracked_record_of_a_dead_owner_is_still_healed(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    clone = clone_with_records(tmp_path, 2)
    ours = clone / RUNTIME / "ours" / "reviewer-session.json"
    ours.parent.mkdir(parents=True)
    ours.write_text(forged())
    done = consult(clone)
    assert json.loads(ours.read_text())["status"] == "orphaned"
    assert done.stderr.count("reaped") == 1, done.stderr
    assert tracked_changes(clone) == ""
