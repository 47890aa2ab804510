"""Contract tests: a host following the audit seed literally finds its resolver (seed 002).

The seed runs ``python3 "${CLAUDE_SKILL_DIR}/scripts/resolve_scope.py" ...``; review-loop's
resolver is ``review-loop scope resolve``. ``review-loop shim resolve_scope --dir DIR``
writes ``DIR/scripts/resolve_scope.py`` (never over a file or through a link), which runs
``scope resolve`` with the same arguments, output and exit code; a host that types the
seed's tool name as a review-loop command is told where it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from review_loop.orchestrator import cli
from tests.orchestrator.workflows.test_scope import Remote

REVIEW_LOOP = Path(sys.executable).with_name("review-loop")


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "git")


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_the_seeds_resolver_path_runs_scope_resolve(remote: Remote, tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    skill.mkdir()
    installed = run(str(REVIEW_LOOP), "shim", "resolve_scope", "--dir", str(skill))
    assert installed.returncode == 0, installed.stderr
    document = json.loads(installed.stdout)
    script = skill / "scripts" / "resolve_scope.py"
    assert document["path"] == str(script) and document["skillDir"] == str(skill)
    env = {**os.environ, "CLAUDE_SKILL_DIR": str(skill)}
    literal = run("python3", f"{env['CLAUDE_SKILL_DIR']}/scripts/resolve_scope.py", "HEAD",
                  "--repo", str(remote.work), env=env)  # fmt: skip
    direct = run(str(REVIEW_LOOP), "scope", "resolve", "HEAD", "--repo", str(remote.work))
    assert literal.returncode == direct.returncode == 0, literal.stderr
    assert literal.stdout == direct.stdout
    assert json.loads(literal.stdout)["head"] == remote.head
    stale = run("python3", str(script), "nope...HEAD", "--repo", str(remote.work))
    assert stale.returncode == 2 and stale.stderr.startswith("error: implementation scope")


def test_the_resolver_is_never_written_over_a_file_or_through_a_link(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "resolve_scope.py").write_text("mine\n")
    again = run(str(REVIEW_LOOP), "shim", "resolve_scope", "--dir", str(skill))
    assert again.returncode == 1 and "already exists" in again.stdout
    assert (skill / "scripts" / "resolve_scope.py").read_text() == "mine\n"
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "scripts").symlink_to(tmp_path / "elsewhere")
    refused = run(str(REVIEW_LOOP), "shim", "resolve_scope", "--dir", str(linked))
    assert refused.returncode == 1 and "is a link" in refused.stdout
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("name", ["resolve_scope.py", "resolve_scope", "scripts/resolve_scope.py"])
def test_the_seeds_tool_name_as_a_command_names_scope_resolve(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.run([name, "HEAD"]) == 1
    err = capsys.readouterr().err
    assert "review-loop scope resolve" in err and "shim resolve_scope" in err


def test_shim_help_names_the_resolver(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["shim", "--help"]) == 0
    assert "shim resolve_scope --dir DIR" in capsys.readouterr().out
