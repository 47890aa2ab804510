"""Contract tests of ``orchestrator.git_lockdown``: the argv, environment and overrides
every git review-loop runs gets; and process tests of the pieces no command reaches today
(a hook-running command, a pager under a terminal), run through the real git.
"""

from __future__ import annotations

import os
import pty
import stat
import subprocess
from pathlib import Path

import pytest

from review_loop.orchestrator.handoff import git_lockdown as lockdown
from review_loop.orchestrator.handoff.git import git, locked_environment
from review_loop.orchestrator.workflows.evidence import snapshot_evidence
from tests.gitrepo import committed_repo
from tests.gitrepo import git as plain_git


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = t\n\temail = t@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return committed_repo(tmp_path / "repo", {"a.txt": "quiet words\n"})


def canary(path: Path, then: str = "exit 0") -> str:
    marker = path.with_suffix(".ran")
    path.write_text(f'#!/bin/sh\nenv > "{marker}"\n{then}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# -- argv ---------------------------------------------------------------------------------------


def test_every_command_gets_the_global_options() -> None:
    argv = lockdown.argv(Path("/r"), ["rev-parse", "HEAD"])
    assert argv[:3] == ["git", "-C", "/r"]
    assert argv[3:-2] == list(lockdown.GLOBAL_OPTIONS)
    assert argv[-2:] == ["rev-parse", "HEAD"]
    assert "core.fsmonitor=" in argv and "core.hooksPath=/dev/null" in argv
    assert "protocol.allow=never" in argv and "--no-pager" in argv


@pytest.mark.parametrize(
    ("args", "tail"),
    [
        (["diff", "HEAD"], ["diff", "--no-ext-diff", "--no-textconv", "HEAD"]),
        (
            ["--literal-pathspecs", "-c", "core.quotePath=true", "diff", "--no-index"],
            [
                *("--literal-pathspecs", "-c", "core.quotePath=true", "diff"),
                *("--no-ext-diff", "--no-textconv", "--no-index"),
            ],
        ),
        (["show", "HEAD:x"], ["show", "--no-ext-diff", "--no-textconv", "HEAD:x"]),
        (["log", "-p"], ["log", "--no-ext-diff", "--no-textconv", "-p"]),
        (["grep", "-l", "x"], ["grep", "--no-textconv", "-l", "x"]),
        (["status", "-z"], ["status", "-z"]),
        ([b"ls-files", b"--", b"\xff"], ["ls-files", "--", os.fsdecode(b"\xff")]),
    ],
)
def test_diff_commands_get_no_external_diff_and_no_textconv(
    args: list[str | bytes], tail: list[str]
) -> None:
    argv = lockdown.argv(Path("/r"), args)
    assert argv[3 + len(lockdown.GLOBAL_OPTIONS) :] == tail


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        (["rev-parse", "--show-toplevel"], False),
        (["symbolic-ref", "HEAD"], False),
        (["ls-files", "-z", "--others"], False),
        (["ls-files", "-m"], True),
        (["cat-file", "--batch-check"], False),
        (["cat-file", "--filters", "HEAD:a"], True),
        (["config", "-z", "--list"], False),
        (["diff", "a..b"], True),
        (["--literal-pathspecs", "diff"], True),
        (["status", "--porcelain"], True),
        (["checkout", "HEAD", "--", "x"], True),
        (["anything-new"], True),  # unknown: reset the drivers
    ],
)
def test_which_commands_need_the_driver_overrides(args: list[str], needs: bool) -> None:
    assert lockdown.needs_driver_overrides(args) is needs


# -- the drivers ----------------------------------------------------------------------------------


def listing(*records: tuple[str, str, str | None]) -> bytes:
    out = b""
    for scope, key, value in records:
        out += scope.encode() + b"\0" + key.encode()
        out += (b"\n" + value.encode() if value is not None else b"") + b"\0"
    return out


def test_drivers_the_repository_defines_are_reset() -> None:
    overrides = lockdown.driver_overrides(
        listing(
            ("global", "filter.lfs.process", "git-lfs filter-process"),
            ("global", "filter.lfs.required", "true"),
            ("local", "filter.evil.clean", "/tmp/evil"),
            ("local", "filter.evil.required", None),
            ("worktree", "filter.a=b.c.smudge", "/tmp/evil"),
            ("local", "filter.lfs.process", "/tmp/evil"),  # redefines the user's
            ("local", "core.editor", "/tmp/evil"),  # not a driver key: not this read's job
            ("command", "filter.cmd.clean", "mine"),
        )
    )
    assert overrides == [
        ("filter.a=b.c.smudge", ""),
        ("filter.evil.clean", ""),
        ("filter.evil.required", ""),
        ("filter.lfs.process", "git-lfs filter-process"),
    ]


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([("local", "diff.submodule", "diff")], [("diff.submodule", "short")]),
        ([("local", "diff.submodule", "log")], [("diff.submodule", "short")]),
        ([("global", "diff.submodule", "log")], []),
        ([("global", "diff.submodule", "diff")], [("diff.submodule", "log")]),
        (
            [("global", "diff.submodule", "log"), ("local", "diff.submodule", "diff")],
            [("diff.submodule", "log")],
        ),
    ],
)
def test_a_submodule_diff_never_runs_a_child_diff(
    records: list[tuple[str, str, str | None]], expected: list[tuple[str, str]]
) -> None:
    assert lockdown.driver_overrides(listing(*records)) == expected


def test_a_filter_whose_name_holds_an_equals_sign_is_reset(repo: Path, tmp_path: Path) -> None:
    # "-c filter.a=b.clean=" cannot say this; a GIT_CONFIG_COUNT entry can.
    clean = canary(tmp_path / "clean", "cat")
    plain_git(repo, "config", "filter.a=b.clean", clean)
    (repo / ".gitattributes").write_text("* filter=a=b\n")
    os.utime(repo / "a.txt", (1, 1))
    subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=False)
    assert (tmp_path / "clean.ran").exists()  # the control: plain git runs it
    (tmp_path / "clean.ran").unlink()
    os.utime(repo / "a.txt", (2, 2))
    assert git(repo, "diff").returncode == 0
    assert not (tmp_path / "clean.ran").exists()


def test_a_textconv_driver_never_runs_and_the_digest_shows_the_bytes(
    repo: Path, tmp_path: Path
) -> None:
    plain_git(repo, "config", "diff.upper.textconv", canary(tmp_path / "upper", "tr a-z A-Z <"))
    (repo / ".gitattributes").write_text("*.up diff=upper\n")
    (repo / "shout.up").write_text("quiet words\n")
    snap = snapshot_evidence(repo, keep_text=True)
    assert snap.diff_text is not None and "+quiet words" in snap.diff_text
    assert not (tmp_path / "upper.ran").exists()


# -- the environment ----------------------------------------------------------------------------


def test_the_environment_is_an_allow_list() -> None:
    source = {
        "PATH": "/bin",
        "HOME": "/home/u",
        "LC_ALL": "C",
        "LANG": "C.UTF-8",
        "GIT_CONFIG_GLOBAL": "/home/u/.gitconfig",
        "GIT_DIFF_OPTS": "--unified=1",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "GITHUB_TOKEN": "secret",
        "GIT_EXTERNAL_DIFF": "/tmp/evil",
        "GIT_SSH_COMMAND": "/tmp/evil",
        "GIT_PAGER": "/tmp/evil",
        "GIT_ASKPASS": "/tmp/evil",
        "LD_PRELOAD": "/tmp/evil.so",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "me",
    }
    env = lockdown.environment([("filter.x.clean", "")], source)
    assert env == {
        "PATH": "/bin",
        "HOME": "/home/u",
        "LC_ALL": "C",
        "LANG": "C.UTF-8",
        "GIT_CONFIG_GLOBAL": "/home/u/.gitconfig",
        "GIT_DIFF_OPTS": "--unified=1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "user.name",  # the caller's entries first, ours after
        "GIT_CONFIG_VALUE_0": "me",
        "GIT_CONFIG_KEY_1": "filter.x.clean",
        "GIT_CONFIG_VALUE_1": "",
    }


def test_locked_environment_reads_the_repositorys_drivers(repo: Path) -> None:
    plain_git(repo, "config", "filter.evil.clean", "/tmp/evil")
    env = locked_environment(repo)
    assert (env["GIT_CONFIG_KEY_0"], env["GIT_CONFIG_VALUE_0"]) == ("filter.evil.clean", "")


# -- what no command reaches today ----------------------------------------------------------


def test_a_hook_never_runs(repo: Path, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    canary(hooks / "pre-commit")
    plain_git(repo, "config", "core.hooksPath", str(hooks))
    assert git(repo, "commit", "--allow-empty", "-qm", "x").returncode == 0
    assert not (hooks / "pre-commit.ran").exists()
    plain_git(repo, "commit", "--allow-empty", "-qm", "control")
    assert (hooks / "pre-commit.ran").exists()


def test_no_pager_runs_on_a_terminal(repo: Path, tmp_path: Path) -> None:
    plain_git(repo, "config", "core.pager", canary(tmp_path / "pager", "cat"))
    env = lockdown.environment()
    for argv, ran in ((lockdown.argv(repo, ["log", "-1"]), False), (["git", "log", "-1"], True)):
        leader, follower = pty.openpty()
        try:
            subprocess.run(argv, cwd=repo, stdout=follower, stderr=follower, env=env, check=True)
        finally:
            os.close(follower)
            os.close(leader)
        assert (tmp_path / "pager.ran").exists() is ran


def test_what_a_fetch_would_run_is_reset() -> None:
    overrides = lockdown.driver_overrides(
        listing(
            ("global", "credential.helper", "store"),
            ("local", "credential.helper", "/tmp/evil"),
            ("global", "credential.https://x.example.helper", "mine"),
            ("local", "core.sshcommand", "/tmp/evil"),
            ("local", "core.askpass", "/tmp/evil"),
            ("global", "core.gitproxy", "proxy for example.com"),
            ("local", "core.gitproxy", "/tmp/evil"),
        )
    )
    assert overrides == [
        ("core.askpass", ""),
        ("core.sshcommand", "ssh"),
        ("credential.helper", ""),  # empties the list, then the user's helpers again
        ("credential.helper", "store"),
        ("protocol.git.allow", "never"),  # an untrusted proxy cannot be outranked
    ]


def test_a_fetch_gets_its_transport_options_and_environment() -> None:
    argv = lockdown.argv(Path("/r"), ["fetch", "--quiet", "origin"])
    assert "protocol.allow=never" not in argv and "protocol.ext.allow=never" in argv
    assert "core.fsmonitor=" in argv and "core.hooksPath=/dev/null" in argv
    assert argv[-4:] == ["fetch", "--upload-pack=git-upload-pack", "--quiet", "origin"]
    source = {"PATH": "/bin", "SSH_AUTH_SOCK": "/run/agent", "AWS_SECRET_ACCESS_KEY": "s"}
    assert "SSH_AUTH_SOCK" not in lockdown.environment(source=source)
    env = lockdown.environment(source=source, transport=True)
    assert env["SSH_AUTH_SOCK"] == "/run/agent" and "AWS_SECRET_ACCESS_KEY" not in env
