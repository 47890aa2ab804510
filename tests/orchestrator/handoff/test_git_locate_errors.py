"""Contract tests: ``git.locate`` raises what went wrong as what it is.

Not only a missing directory or a missing git: a working directory that no longer exists
is not "git is not on PATH", and a git that cannot be run is the error ``repo_root``
raises for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from review_loop.orchestrator.handoff.git import locate, repo_root
from tests.gitrepo import committed_repo

# In a process of its own: its working directory is removed under it.
GONE_CWD_PROBE = """
import json, os, sys
from review_loop.orchestrator.handoff.git import locate, repo_root
os.chdir(sys.argv[1])
os.rmdir(sys.argv[1])
def outcome(call):
    try:
        call()
    except Exception as error:
        return [type(error).__name__, str(error)]
    return None
started = outcome(lambda: locate(None))
print(json.dumps([started, outcome(lambda: repo_root(None))]))
"""


def test_contract_a_vanished_working_directory_is_raised_as_repo_root_raises_it(
    tmp_path: Path,
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", GONE_CWD_PROBE, str(gone)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    started, rooted = json.loads(done.stdout)
    assert rooted[0] == "FileNotFoundError"
    assert started == rooted  # not "the git executable is not on PATH"


def test_contract_a_git_that_cannot_run_is_raised_as_repo_root_raises_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "a\n"})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text("#!/bin/sh\nexit 0\n")  # on PATH, not executable
    os.chmod(bin_dir / "git", 0o644)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(PermissionError) as started:
        locate(repo)
    with pytest.raises(PermissionError) as rooted:
        repo_root(repo)  # one git at a time, through subprocess.run: the same error
    assert str(started.value) == str(rooted.value)
