"""Contract and process tests: one ``git rev-parse`` locates a checkout for ``consult``.

``consult`` starts that git before it imports the dispatcher (``git.start_locate``) and asks
for its answer where it always did: the answer and every refusal are ``locate``'s, and a
consult refused before it asked leaves no git behind.

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
from review_loop.orchestrator.git import (
    Checkout,
    common_dir,
    ensure_layout,
    locate,
    repo_root,
    start_locate,
)
from review_loop.orchestrator.git_lockdown import GLOBAL_OPTIONS
from tests.conftest import processes_with_token
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo, git
from tests.orchestrator.ownership import running, wait_until


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
# (orchestrator/git_lockdown.py), so variables of our own would not reach it.
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


def test_contract_start_locate_answers_as_locate_and_raises_only_when_asked(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for place in _places(repo):
        with start_locate(place) as locating:
            assert locating.result() == locate(place), place
    plain = tmp_path / "plain"
    plain.mkdir()
    for place in (plain, tmp_path / "missing", repo / ".git"):
        locating = start_locate(place)  # nothing raised yet: the caller checks other things
        with locating, pytest.raises(NotAGitRepositoryError) as started:
            locating.result()
        with pytest.raises(NotAGitRepositoryError) as located:
            locate(place)
        assert str(started.value) == str(located.value)
    monkeypatch.setenv("PATH", str(plain))  # no git at all
    locating = start_locate(repo)
    with locating, pytest.raises(InputError, match="git executable is not on PATH"):
        locating.result()
    with pytest.raises(InputError, match="git executable is not on PATH"):
        locate(repo)


def test_process_leaving_the_block_unasked_ends_and_reaps_git(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _slow_git_path(tmp_path))
    before = _live_children()
    with start_locate(repo) as locating:
        assert wait_until(lambda: len(_live_children()) > len(before), 20)
    assert _live_children() == before  # killed and reaped: not even a zombie is left
    locating.close()  # idempotent
    with pytest.raises(RuntimeError, match="after the block was left"):
        locating.result()


def test_process_a_consult_refused_after_git_started_leaves_no_git(
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


# Records, in order, each process started and each of consult's heavy imports.
ORDER_HARNESS = """
import json, sys
seen = []
def hook(event, args):
    if event == "subprocess.Popen":
        seen.append("spawn " + " ".join(map(str, args[1][:3])))
    elif event == "import" and args[0] == "review_loop.orchestrator.dispatcher":
        seen.append("import dispatcher")
sys.addaudithook(hook)
import atexit
atexit.register(lambda: print(json.dumps(seen), file=sys.stderr))
sys.argv = ["review-loop", *sys.argv[1:]]
from review_loop.orchestrator.cli import main
main()
"""


def test_process_consult_s_git_runs_while_the_dispatcher_is_imported(
    tmp_path: Path, repo: Path
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "fine"}])
    done = subprocess.run(
        [sys.executable, "-c", ORDER_HARNESS, "consult", "--peer", "codex", "--question", "?"],
        cwd=repo,
        env=fakes.env(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stderr.strip().splitlines()[-1])
    # The session's supervisor may start there too (tests/orchestrator/test_early_spare.py).
    supervisor = f"spawn {sys.executable} -I -S"
    assert [step for step in seen if step != supervisor][:2] == [
        f"spawn git -C {repo}",
        "import dispatcher",
    ]
