"""Process tests: review-loop's own git runs nothing the repository's configuration names.

One repository whose ``.git/config`` names a canary program for every way git can start
one on its own (fsmonitor, hooks, an external diff and a per-driver diff command, a
textconv and a clean/smudge filter that a committed ``.gitattributes`` gives every file,
the pager, the ssh command, a credential helper, askpass, gpg), and whose tree has a
tracked change, an untracked file and a changed skill. Every command that runs git runs
in it, as ``python -m review_loop`` with the fake reviewer CLIs; afterwards no canary
has written its marker. Without the lockdown, fsmonitor alone fires under every one of
them (``sessions`` and ``ledger show`` included) and the diff drivers under the commands
that diff, each seeing the caller's whole environment.

The drivers the user's own (global) configuration defines are trusted: one runs, and sees
only the small environment git gets, not the caller's secrets.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.gitrepo import git

SECRET = "AWS_SECRET_ACCESS_KEY"
KEYS = {
    "core.fsmonitor": "exit 1",  # no answer: git falls back to a full scan
    "diff.external": "exit 0",
    "diff.hostile.command": "exit 0",
    "diff.hostile.textconv": 'cat "$1"',
    "filter.hostile.clean": "cat",
    "filter.hostile.smudge": "cat",
    "core.pager": "cat",
    "core.sshCommand": "exit 1",
    "credential.helper": "exit 0",
    "core.askPass": "exit 1",
    "gpg.program": "exit 1",
}
HOOKS = ("pre-commit", "post-checkout", "post-index-change", "reference-transaction")
HEADER = (
    "| ID | 严重度 | 标题 | 证据 | Target files | Required fix | Acceptance check |\n"
    "|---|---|---|---|---|---|---|"
)
SKILL = "---\nname: x\ndescription: a skill\n---\n\nDo the thing.\n"


@dataclass(frozen=True)
class Hostile:
    repo: Path
    markers: Path
    fakes: FakeCLIs
    home: Path

    def fired(self) -> dict[str, bool]:
        """Each marker written: the key (or hook) that ran, and whether it saw the secret."""
        return {p.name: SECRET in p.read_text() for p in sorted(self.markers.iterdir())}

    def rl(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = self.fakes.env()
        env[SECRET] = "canary-secret-value"
        env["REVIEW_LOOP_HOME"] = str(self.home)
        env["GIT_CONFIG_GLOBAL"] = str(self.home / "gitconfig")
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["REVIEW_LOOP_TIMEOUT_MS"] = "30000"
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            env.pop(name, None)
        return subprocess.run(
            [sys.executable, "-m", "review_loop", *argv],
            cwd=self.repo,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )


def canary(path: Path, marker: Path, then: str) -> str:
    path.write_text(f'#!/bin/sh\nenv > "{marker}"\n{then}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def no_findings() -> dict[str, object]:
    return {"mode": "ok", "text": "## Findings\n\n" + HEADER + "\n\nVerdict: NO_FINDINGS\n"}


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    markers, bin_dir, hooks, home = (tmp_path / d for d in ("markers", "bin", "hooks", "home"))
    for folder in (markers, bin_dir, hooks, home):
        folder.mkdir()
    (home / "gitconfig").write_text("[user]\n\tname = t\n\temail = t@example.invalid\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    (repo / "app.py").write_text("def f(x):\n    return x[0]\n")
    (repo / "skills" / "x").mkdir(parents=True)
    (repo / "skills" / "x" / "SKILL.md").write_text(SKILL)
    (repo / ".gitattributes").write_text("* diff=hostile filter=hostile\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    git(repo, "checkout", "-q", "-b", "pr")  # a committed change for audit and scope
    (repo / "lib.py").write_text("X = 1\n")
    git(repo, "add", "lib.py")
    git(repo, "commit", "-qm", "pr")
    # The change under review: a tracked edit, a changed skill and an untracked file.
    (repo / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    (repo / "skills" / "x" / "SKILL.md").write_text(SKILL + "Do it well.\n")
    (repo / "new.py").write_text("print('new')\n")
    made = Hostile(repo, markers, FakeCLIs(tmp_path / "fakes"), home)
    for hook in HOOKS:
        canary(hooks / hook, markers / f"hook-{hook}", "exit 0")
    git(repo, "config", "remote.origin.url", "ssh://example.invalid/repo.git")
    return made


def arm(hostile: Hostile, keys: dict[str, str]) -> None:
    """Write ``keys`` into ``.git/config``, each naming its own canary (the setup's own
    git ran none of them: they come last)."""
    bin_dir = hostile.markers.parent / "bin"
    for key, then in keys.items():
        git(hostile.repo, "config", key, canary(bin_dir / key, hostile.markers / key, then))
    git(hostile.repo, "config", "core.hooksPath", str(hostile.markers.parent / "hooks"))
    git(hostile.repo, "config", "log.showSignature", "true")


def _run_first(hostile: Hostile) -> None:
    hostile.fakes.script(codex=[no_findings()])
    done = hostile.rl("run", "--reviewer", "codex")
    assert done.returncode == 0, done.stderr
    for marker in hostile.markers.iterdir():  # only what the command under test runs counts
        marker.unlink()


COMMANDS: dict[str, list[str]] = {
    "evidence": ["evidence"],
    "run": ["run", "--reviewer", "codex"],
    "verify-diff auto": ["verify-diff", "--executor", "claude", "--max-iterations", "1"],
    "verify-diff explicit": [
        "verify-diff", "--description", "d", "--fix-direction", "f",
        "--target", "skills/x/SKILL.md", "--executor", "claude", "--max-iterations", "1",
    ],
    "audit": ["audit", "worktree:main...HEAD", ".", "--driver", "self"],
    "sessions": ["sessions", "--repo", "."],
    "ledger show": ["ledger", "show", "--run", "t"],
    "ledger gate": ["ledger", "gate", "--gate", "agentic-review", "--run", "t"],
    "preflight": ["preflight", "--repo", ".", "--peer", "codex", "--host", "claude"],
    "scope resolve": ["scope", "resolve", "main...HEAD", "--repo", "."],
    "consult": ["consult", "--repo", ".", "--peer", "codex", "--question", "Q"],
    "blind-review": ["blind-review", "--repo", ".", "--reviewer", "claude"],
}  # fmt: skip
NEEDS_A_REVIEW = {"sessions", "ledger show", "ledger gate"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_configured_program_runs(hostile: Hostile, command: str) -> None:
    arm(hostile, KEYS)
    if command in NEEDS_A_REVIEW:
        _run_first(hostile)  # records to list, gate and show
    hostile.fakes.script(any_=[no_findings()])
    done = hostile.rl(*COMMANDS[command])
    assert isinstance(json.loads(done.stdout), dict), done.stderr  # it ran, printed one document
    assert hostile.fired() == {}, done.stderr[-2000:]


def test_the_fixture_fires_under_plain_git(hostile: Hostile) -> None:
    """The control: the same repository makes the user's own git run its programs."""
    arm(hostile, KEYS)
    env = {**os.environ, SECRET: "canary-secret-value"}
    subprocess.run(["git", "diff"], cwd=hostile.repo, env=env, capture_output=True, check=False)
    fired = hostile.fired()
    assert {"core.fsmonitor", "diff.hostile.command", "filter.hostile.clean"} <= set(fired), fired
    assert fired["core.fsmonitor"] is True  # with the caller's whole environment


def test_a_filter_the_user_defines_runs_without_the_callers_secrets(hostile: Hostile) -> None:
    arm(hostile, KEYS)
    # The user's own global configuration names a filter (as git lfs installs one) that
    # the repository's attributes select: trusted, it runs; its environment is git's.
    user_filter = canary(hostile.home / "user-filter", hostile.markers / "user-filter", "cat")
    with (hostile.home / "gitconfig").open("a") as config:
        config.write(f'[filter "trusted"]\n\tclean = {user_filter}\n')
    (hostile.repo / ".gitattributes").write_text("* filter=trusted\n")
    os.utime(hostile.repo / "app.py", (1, 1))  # stat-dirty: git must hash it again
    done = hostile.rl("evidence")
    assert done.returncode == 0, done.stderr
    assert hostile.fired() == {"user-filter": False}  # ran, and saw no secret
    seen = (hostile.markers / "user-filter").read_text()
    assert "canary-secret-value" not in seen and "FAKE_AGENT_LOG" not in seen


# One key at a time, where one setting would hide another (a driver's diff command is
# used instead of diff.external, an external diff instead of a textconv driver).
ALONE = {
    "core.fsmonitor": "exit 1",
    "diff.external": "exit 0",
    "diff.hostile.textconv": 'cat "$1"',
    "filter.hostile.clean": "cat",
    "filter.hostile.process": "exit 1",
}


@pytest.mark.parametrize("key", sorted(ALONE))
@pytest.mark.parametrize("command", ["evidence", "run"])
def test_each_key_alone_runs_nothing(hostile: Hostile, key: str, command: str) -> None:
    arm(hostile, {key: ALONE[key]})
    hostile.fakes.script(any_=[no_findings()])
    os.utime(hostile.repo / "app.py", (1, 1))  # stat-dirty: git must hash it again
    done = hostile.rl(*COMMANDS[command])
    assert hostile.fired() == {}
    assert done.returncode == 0, done.stderr
    control = subprocess.run(["git", "diff"], cwd=hostile.repo, capture_output=True, check=False)
    assert key in hostile.fired(), control.stderr  # the user's own git runs it


def test_a_lazy_fetch_runs_no_ssh_command(hostile: Hostile, tmp_path: Path) -> None:
    """A partial clone's missing blob would make git fetch it, through the repository's
    ``core.sshCommand``: no transport is allowed, and the command fails instead."""
    git(hostile.repo, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    url = f"file://{hostile.repo}"
    subprocess.run(
        ["git", "clone", "-q", "--no-checkout", "--filter=blob:none", url, str(clone)],
        check=True,
        capture_output=True,
    )
    git(clone, "config", "remote.origin.url", "ssh://example.invalid/repo.git")
    ssh = canary(tmp_path / "ssh", hostile.markers / "core.sshCommand", "exit 1")
    git(clone, "config", "core.sshCommand", ssh)
    done = subprocess.run(
        [sys.executable, "-m", "review_loop", "evidence", "--repo", str(clone)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert hostile.fired() == {}
    assert done.returncode != 0 and "transport 'ssh' not allowed" in done.stdout, done.stdout


def test_a_fetch_reaches_the_remote_and_runs_nothing_the_repository_names(
    hostile: Hostile, tmp_path: Path
) -> None:
    """``scope resolve origin/main...HEAD`` refreshes its base with ``git fetch``: the
    user's transport works; the repository's upload-pack, ssh command and credential
    helper do not run."""
    upstream = tmp_path / "upstream.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(hostile.repo), str(upstream)],
        check=True,
        capture_output=True,
    )
    git(hostile.repo, "remote", "set-url", "origin", str(upstream))
    git(hostile.repo, "fetch", "-q", "origin")
    upload_pack = 'exec git-upload-pack "$@"'
    arm(
        hostile,
        {
            "remote.origin.uploadpack": upload_pack,
            "core.sshCommand": "exit 1",
            "credential.helper": "exit 0",
            "core.fsmonitor": "exit 1",
        },
    )
    done = hostile.rl("scope", "resolve", "origin/main...HEAD", "--repo", ".")
    assert hostile.fired() == {}
    assert done.returncode == 0, done.stdout + done.stderr
    control = subprocess.run(["git", "fetch", "origin"], cwd=hostile.repo, capture_output=True)
    assert "remote.origin.uploadpack" in hostile.fired(), control.stderr
