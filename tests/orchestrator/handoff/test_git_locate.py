"""Contract and process tests: one ``git rev-parse`` locates a checkout for ``consult``.

``consult`` asks for it where its checks need the checkout: a consult refused before then
starts no git, and leaves none behind.

``git.locate`` asks git for the top level and the common dir in one process; it must give
exactly what ``repo_root`` and ``common_dir`` give one at a time (top level, a directory
below it, a linked worktree, a name holding a newline) and refuse what ``repo_root``
refuses. A whole ``review-loop consult`` then runs git once, not three times (the top level
twice and the common dir once), and still writes the exclude entry where git keeps it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from review_loop.agents.errors import InputError, NotAGitRepositoryError
from review_loop.orchestrator.handoff.git import (
    Checkout,
    common_dir,
    ensure_layout,
    locate,
    repo_root,
)
from review_loop.orchestrator.handoff.git_lockdown import GLOBAL_OPTIONS
from tests.conftest import processes_with_token
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo, git
from tests.orchestrator.process.ownership import running


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"a.txt": "a\n"})


def _places(repo: Path) -> list[Path]:
    below = repo / "sub" / "deeper"
    below.mkdir(parents=True)
    worktree = repo.parent / "linked"
    git(repo, "worktree", "add", "-q", str(worktree))
    odd = repo.parent / "line\nbreak"
    committed_repo(odd, {"b.txt": "b\n"})
    return [repo, below, worktree, odd]


def test_contract_locate_is_repo_root_and_common_dir_in_one(repo: Path) -> None:
    for place in _places(repo):
        checkout = locate(place)
        root = repo_root(place)
        assert checkout == Checkout(root, common_dir(root)), place
    assert locate(repo.parent / "linked").common_dir == (repo / ".git").resolve()


def test_contract_locate_refuses_what_repo_root_refuses(tmp_path: Path, repo: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for place in (plain, tmp_path / "missing", repo / ".git"):
        with pytest.raises(NotAGitRepositoryError) as located:
            locate(place)
        with pytest.raises(NotAGitRepositoryError) as rooted:
            repo_root(place)
        assert str(located.value) == str(rooted.value)


def test_contract_ensure_layout_uses_the_located_common_dir(repo: Path) -> None:
    worktree = _places(repo)[2]
    ensure_layout(locate(worktree))
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    assert "/.review-handoff/" in exclude.splitlines()
    assert (worktree / ".review-handoff" / "runtime" / "consults").is_dir()


# The paths are written into the wrapper: git gets an allow-listed environment
# (orchestrator/handoff/git_lockdown.py), so variables of our own would not reach it.
GIT_LOGGER = """#!/bin/sh
printf '%s\\n' "$*" >> '{calls}'
exec '{real}' "$@"
"""


def test_process_consult_runs_git_once(tmp_path: Path, repo: Path) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    wrapper = tmp_path / "gitbin"
    wrapper.mkdir()
    calls = tmp_path / "git-calls.txt"
    real = shutil.which("git") or "git"
    (wrapper / "git").write_text(GIT_LOGGER.format(calls=calls, real=real))
    (wrapper / "git").chmod(0o755)
    env = fakes.env(dict(os.environ))
    env.update(PATH=f"{wrapper}:{env['PATH']}")
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", "consult", "--peer", "codex", "--question", "?"],
        cwd=repo / ".",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["text"] == "fine"
    options = " ".join(GLOBAL_OPTIONS)
    assert calls.read_text().splitlines() == [
        f"-C {repo} {options} rev-parse --show-toplevel --git-common-dir"
    ]
    assert "/.review-handoff/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()


# A git that never answers (until killed): what a command that fails first must end.
SLOW_GIT = """#!/bin/sh
exec sleep 60
"""


def _slow_git_path(tmp_path: Path) -> str:
    directory = tmp_path / "slowgit"
    directory.mkdir()
    (directory / "git").write_text(SLOW_GIT)
    (directory / "git").chmod(0o755)
    return f"{directory}:{os.environ['PATH']}"


def _live_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if running(p)]


def test_contract_locate_without_git_names_git(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    with pytest.raises(InputError, match="git executable is not on PATH"):
        locate(repo)


def test_process_a_refused_consult_leaves_no_git(
    tmp_path: Path, repo: Path, no_process_left_behind: str
) -> None:
    env = dict(os.environ, PATH=_slow_git_path(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", "consult", "--peer", "codex", "--question", " "],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=50,  # hang-catching: a consult that waited for this git would take 60 s
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "--question" in json.loads(done.stdout)["error"]
    assert processes_with_token(no_process_left_behind) == []  # ended before the exit
