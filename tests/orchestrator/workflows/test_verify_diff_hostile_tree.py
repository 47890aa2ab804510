"""Collaboration and process tests: verify-diff in a repository that plants links.

A pull request commits ``skills/x/SKILL.md`` as a symbolic link: to ``/proc/self/environ``
(review-loop's own environment, the caller's secrets), to a file outside the repository
holding a canary, or to ``../../.git/config`` with a suggested edit that would add
``core.fsmonitor``. verify-diff runs (auto-derive and ``--target``) through the real
dispatcher and process layer with the fake executor, whose prompts are captured:

- no canary, and nothing of the environment, is in any prompt or in any file under
  ``.review-handoff/``; the linked file is named in ``skipped_files`` with why, and the
  prompt says it was not read;
- ``.git/config`` stays byte-identical, the refused edit is named in ``refused_edits``.

The real-CLI half is ``tests/e2e/test_hostile_reads.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_verify_diff import (
    auto_plan,
    auto_verdict,
    explicit_plan,
    git,
    make_repo,
    prompts,
    run,
    section,
    verdict,
)

CANARY = "canary-outside-file-3d9b71"
ENV_CANARY = "canary-env-aws-0c4e2a"
SKILL = "---\nname: x\ndescription: a skill\n---\nbody\n"
NOTES = "notes\n"


def hostile_repo(root: Path, link_to: str) -> Path:
    """Base ``main`` holds a real skill; branch ``pr`` replaces SKILL.md by a link to
    ``link_to`` and changes the skill's notes (so the skill has a real file too)."""
    repo = make_repo(root, {"skills/x/SKILL.md": SKILL, "skills/x/notes.md": NOTES})
    git(repo, "branch", "-M", "main")
    git(repo, "checkout", "-qb", "pr")
    skill = repo / "skills" / "x" / "SKILL.md"
    skill.unlink()
    skill.symlink_to(link_to)
    (repo / "skills" / "x" / "notes.md").write_text(NOTES + "more notes\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pr")
    return repo


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "secret.md"
    victim.parent.mkdir()
    victim.write_text(f"{SKILL}{CANARY}\n")
    return victim


def handoff_text(repo: Path) -> str:
    """Every file review-loop wrote under ``.review-handoff/``, concatenated."""
    root = repo / ".review-handoff"
    return "".join(p.read_text("utf-8", "replace") for p in root.rglob("*") if p.is_file())


def environ_values() -> list[str]:
    """Distinctive values of this process's ``/proc/self/environ`` (what a link leaks)."""
    raw = Path("/proc/self/environ").read_bytes().decode("utf-8", "replace")
    return [entry for entry in raw.split("\0") if len(entry) > 12 and "=" in entry]


def assert_nothing_leaked(repo: Path, fakes: FakeCLIs, leaked: list[str]) -> None:
    seen = "\n".join(prompts(fakes)) + handoff_text(repo)
    assert prompts(fakes), "the executor was never asked"
    for value in leaked:
        assert value not in seen, f"{value[:40]!r} reached the prompt or the records"


def skipped_entry(document: dict[str, Any], target: str) -> dict[str, str]:
    (entry,) = document["skipped_files"]
    assert entry["path"] == "skills/x/SKILL.md"
    assert entry["reason"].startswith(f"skills/x/SKILL.md is a symbolic link (to {target})")
    return entry


pytestmark = pytest.mark.anyio


# -- reads: auto-derive ------------------------------------------------------------------


async def test_auto_a_link_to_proc_self_environ_never_reaches_the_prompt(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = hostile_repo(tmp_path / "repo", "/proc/self/environ")
    fakes.script(claude=[auto_verdict("x, better", "yes", gaps=())])
    document, _ = await run(repo, auto_plan(base="main"))
    assert_nothing_leaked(repo, fakes, ["PATH=", *environ_values()])
    assert document["status"] == "converged"
    skipped_entry(document, "/proc/self/environ")
    files = section(prompts(fakes)[0], "AFFECTED FILES")
    assert (
        "### skills/x/SKILL.md\n(not read by review-loop: skills/x/SKILL.md is a symbolic" in files
    )
    assert "### skills/x/notes.md\nnotes\nmore notes" in files  # the real file is still read
    recorded = json.loads(
        (next((repo / ".review-handoff/runtime/verify-diff").iterdir()) / "result.json").read_text()
    )
    assert recorded["skipped_files"] == document["skipped_files"]


async def test_auto_a_link_to_a_file_outside_never_reaches_the_prompt(
    tmp_path: Path, fakes: FakeCLIs, outside: Path
) -> None:
    repo = hostile_repo(tmp_path / "repo", str(outside))
    fakes.script(claude=[auto_verdict("x, better", "yes", gaps=())])
    document, _ = await run(repo, auto_plan(base="main"))
    assert_nothing_leaked(repo, fakes, [CANARY])
    skipped_entry(document, str(outside))


async def test_auto_an_edit_through_a_link_to_git_config_is_refused(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = hostile_repo(tmp_path / "repo", "../../.git/config")
    config = repo / ".git" / "config"
    before = config.read_bytes()
    fsmonitor = '\tbare = false\n\tfsmonitor = "touch PWNED-fsmonitor; false"\n'
    fakes.script(
        claude=[
            auto_verdict(
                "x, better",
                edits=[("skills/x/SKILL.md", "\tbare = false\n", fsmonitor)],
            )
        ]
    )
    document, _ = await run(repo, auto_plan(base="main"))
    assert config.read_bytes() == before
    assert document["applied_edits_count_total"] == 0
    (refused,) = document["refused_edits"]
    assert refused["path"] == "skills/x/SKILL.md"
    assert refused["reason"].startswith(
        "skills/x/SKILL.md is a symbolic link (to ../../.git/config)"
    )
    assert "bare = false" not in "\n".join(prompts(fakes))  # nor was .git/config read
    assert (repo / "skills" / "x" / "SKILL.md").is_symlink()


# -- reads: --target ---------------------------------------------------------------------


@pytest.mark.parametrize("link_to", ["/proc/self/environ", "outside", "../../.git/config"])
async def test_target_a_link_is_a_missing_target_naming_why(
    tmp_path: Path, fakes: FakeCLIs, outside: Path, link_to: str
) -> None:
    target = str(outside) if link_to == "outside" else link_to
    repo = hostile_repo(tmp_path / "repo", target)
    config = (repo / ".git" / "config").read_bytes()
    document, _ = await run(repo, explicit_plan(target="skills/x/SKILL.md", base="main"))
    assert document["status"] == "skipped" and document["reason"] == "missing target"
    skipped_entry(document, target)
    assert fakes.calls() == []  # nothing was sent anywhere
    assert (repo / ".git" / "config").read_bytes() == config


async def test_target_in_a_linked_directory_is_a_missing_target(
    tmp_path: Path, fakes: FakeCLIs, outside: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.md": "a\n"})
    (repo / "docs").symlink_to(outside.parent)
    document, _ = await run(repo, explicit_plan(target="docs/secret.md"))
    assert document["reason"] == "missing target"
    assert document["skipped_files"][0]["reason"].startswith("docs is a symbolic link")
    assert fakes.calls() == []


async def test_a_regular_target_has_no_extra_keys(tmp_path: Path, fakes: FakeCLIs) -> None:
    repo = make_repo(tmp_path / "repo", {"SKILL.md": SKILL})
    (repo / "SKILL.md").write_text(SKILL + "more\n")
    fakes.script(claude=[verdict("yes", gaps=())])
    document, _ = await run(repo, explicit_plan())
    assert document["status"] == "converged"
    assert "skipped_files" not in document and "refused_edits" not in document


# -- the command, with the caller's secrets in review-loop's own environment ---------------


def run_cli(fakes: FakeCLIs, repo: Path, *args: str) -> dict[str, Any]:
    env = fakes.env(path_only=True)
    env.update({"REVIEW_LOOP_TIMEOUT_MS": "20000", "AWS_SECRET_ACCESS_KEY": ENV_CANARY})
    proc = subprocess.run(
        [sys.executable, "-m", "review_loop", "verify-diff", "--repo", str(repo), *args],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert ENV_CANARY not in proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    assert isinstance(document, dict)
    return document


def test_command_auto_the_callers_environment_never_reaches_the_prompt(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = hostile_repo(tmp_path / "repo", "/proc/self/environ")
    fakes.script(claude=[auto_verdict("x, better", "yes", gaps=())])
    document = run_cli(fakes, repo, "--base", "main", "--executor", "claude")
    assert_nothing_leaked(repo, fakes, [ENV_CANARY, "PATH="])
    skipped_entry(document, "/proc/self/environ")


def test_command_target_the_callers_environment_never_reaches_the_prompt(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    repo = hostile_repo(tmp_path / "repo", "/proc/self/environ")
    args = ["--base", "main", "--executor", "claude", "--target", "skills/x/SKILL.md"]
    document = run_cli(fakes, repo, *args, "--description", "d", "--fix-direction", "f")
    assert document["reason"] == "missing target"
    skipped_entry(document, "/proc/self/environ")
    assert fakes.calls() == []
    assert not os.path.exists(repo / ".review-handoff" / "runtime" / "verify-diff")


# -- --target names a path as text, never through a link ---------------------------------


def test_normalize_target_never_resolves_a_link(tmp_path: Path) -> None:
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.workflows.verify_diff import normalize_target

    real = make_repo(tmp_path / "real", {"real.md": "r\n"})
    (real / "alias.md").symlink_to("real.md")
    (tmp_path / "via").symlink_to(real)
    repo = tmp_path / "via"  # the repository as the user named it, through a link
    assert normalize_target(repo, str(real / "alias.md")) == "alias.md"  # not real.md
    assert normalize_target(repo, str(repo / "sub" / ".." / "real.md")) == "real.md"
    for bad in (".git/config", ".GIT/config", "sub/.git/x", str(real), "."):
        with pytest.raises(InputError, match="--target"):
            normalize_target(repo, bad)
    with pytest.raises(InputError, match="outside the repository"):
        normalize_target(repo, str(tmp_path / "elsewhere.md"))


async def test_target_in_the_git_dir_under_another_name_is_never_read(
    tmp_path: Path, fakes: FakeCLIs
) -> None:
    # a work tree whose git dir lies inside it, not named .git (--separate-git-dir)
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(
        ["git", "init", "-q", "--separate-git-dir", str(work / "gd"), str(work)], check=True
    )
    (work / "a.md").write_text("a\n")
    git(work, "add", "a.md")
    git(work, "commit", "-qm", "init")
    document, _ = await run(work, explicit_plan(target="gd/config"))
    assert document["reason"] == "missing target"
    assert document["skipped_files"] == [{"path": "gd/config", "reason": "gd is the git directory"}]
    assert fakes.calls() == []
