"""Preflight resolves the skills of seed 004 where hosts install them (contract and process).

The catalog (``review_loop/agents/data/seed-skills.json``) names the skills and, per host,
the user, plugin and repository skill directories. A repository's directories are
untrusted: a skill there counts only as a real file below real directories (no link).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.skills import required_skills, seed_catalog
from review_loop.orchestrator.workflows.skills import SKILL_DIRS_ENV, resolve_skills
from tests.fakes import FakeCLIs
from tests.fakes.skills import install_skills, seed_skill_names
from tests.gitrepo import committed_repo

SEED = [
    "goal-gate",
    "agentic-review-handoff",
    "architecture-hardening-loop",
    "improve-codebase-architecture",
    "codebase-design",
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "repo", {"app.py": "x = 1\n"})


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def found(checks: list[Any]) -> dict[str, str | None]:
    return {c.name: c.found for c in checks}


# -- contract ------------------------------------------------------------------------------


def test_contract_the_seed_skills_and_their_hard_dependencies() -> None:
    chain = [(s.name, parent) for s, parent in required_skills(seed_catalog())]
    assert chain == [
        ("goal-gate", None),
        ("agentic-review-handoff", None),
        ("architecture-hardening-loop", None),
        ("improve-codebase-architecture", "architecture-hardening-loop"),
        ("codebase-design", "architecture-hardening-loop"),
    ]
    assert seed_skill_names() == SEED
    assert seed_skill_names(grill=True) == [*SEED, "grill-with-docs"]  # only when required
    named = [s.name for s, _ in required_skills(seed_catalog(), optional=["house-style"])]
    assert named == [*SEED, "house-style"]  # any skill the user requires


def test_contract_claude_user_plugin_and_repository_directories(repo: Path, home: Path) -> None:
    install_skills(home / ".claude" / "skills", ["goal-gate"])
    plugin = home / ".claude" / "plugins" / "marketplaces" / "m" / "plugins" / "p" / "skills"
    install_skills(plugin, ["agentic-review-handoff"])
    install_skills(repo / ".claude" / "skills", ["architecture-hardening-loop"])
    install_skills(home / "elsewhere", ["improve-codebase-architecture"])
    checks = resolve_skills(
        repo, host="claude", extra_dirs=["~/elsewhere"], env={"HOME": str(home)}
    )
    at = {name: path and str(Path(path).parent.parent) for name, path in found(checks).items()}
    assert at == {
        "goal-gate": str(home / ".claude/skills"),
        "agentic-review-handoff": str(plugin),
        "architecture-hardening-loop": str(repo / ".claude/skills"),
        "improve-codebase-architecture": str(home / "elsewhere"),
        "codebase-design": None,
    }
    missing = checks[-1]
    assert missing.neededBy == "architecture-hardening-loop"
    assert missing.lookedIn == [
        str(home / ".claude/skills/codebase-design/SKILL.md"),
        str(home / ".claude/plugins/marketplaces/*/plugins/*/skills/codebase-design/SKILL.md"),
        str(home / ".claude/plugins/marketplaces/*/skills/codebase-design/SKILL.md"),
        str(home / ".claude/plugins/cache/*/*/*/skills/codebase-design/SKILL.md"),
        str(repo / ".claude/skills/codebase-design/SKILL.md"),
        str(home / "elsewhere/codebase-design/SKILL.md"),
    ]
    text = missing.missing_text()
    assert text.startswith("skill codebase-design (needed by architecture-hardening-loop): ")


def test_contract_each_host_has_its_own_directories(repo: Path, home: Path) -> None:
    install_skills(home / ".agents" / "skills", SEED[:2])
    install_skills(home / "codex-home" / "skills", SEED[2:])
    env = {"HOME": str(home), "CODEX_HOME": str(home / "codex-home")}
    assert all(found(resolve_skills(repo, host="codex", env=env)).values())
    claude = found(resolve_skills(repo, host="claude", env=env))
    assert not any(claude.values())  # Claude Code reads neither ~/.agents nor $CODEX_HOME
    install_skills(repo / ".gemini" / "skills", SEED[2:])
    assert all(found(resolve_skills(repo, host="gemini", env=env)).values())
    # no host named: every host's directories
    assert all(found(resolve_skills(repo, host=None, env=env)).values())


@pytest.mark.parametrize("link", ["skill-dir", "skills-dir", "host-dir", "skill-file"])
def test_contract_a_link_in_the_repository_is_never_followed(
    repo: Path, home: Path, tmp_path: Path, link: str
) -> None:
    outside = install_skills(tmp_path / "outside" / ".claude" / "skills", ["goal-gate"])
    target = repo / ".claude" / "skills" / "goal-gate"
    if link == "skill-dir":
        target.parent.mkdir(parents=True)
        target.symlink_to(outside / "goal-gate")
    elif link == "skills-dir":
        target.parent.parent.mkdir(parents=True)
        target.parent.symlink_to(outside)
    elif link == "host-dir":
        (repo / ".claude").symlink_to(outside.parent)
    else:
        target.mkdir(parents=True)
        (target / "SKILL.md").symlink_to(outside / "goal-gate" / "SKILL.md")
    checks = resolve_skills(repo, host="claude", env={"HOME": str(home)})
    assert found(checks)["goal-gate"] is None


def test_contract_a_directory_named_skill_md_is_no_skill(repo: Path, home: Path) -> None:
    (home / ".claude" / "skills" / "goal-gate" / "SKILL.md").mkdir(parents=True)
    (repo / ".claude" / "skills" / "goal-gate" / "SKILL.md").mkdir(parents=True)
    checks = resolve_skills(repo, host="claude", env={"HOME": str(home)})
    assert found(checks)["goal-gate"] is None


def test_contract_env_skill_dirs(repo: Path, home: Path, tmp_path: Path) -> None:
    one = install_skills(tmp_path / "one", SEED[:3])
    two = install_skills(tmp_path / "two", SEED[3:])
    env = {"HOME": str(home), SKILL_DIRS_ENV: f"{one}{os.pathsep}{two}"}
    assert all(found(resolve_skills(repo, host="grok", env=env)).values())


# -- process: review-loop preflight ----------------------------------------------------------


def preflight(
    repo: Path, home: Path, fakes: FakeCLIs, *args: str
) -> tuple[int, dict[str, Any], str]:
    env = fakes.env(path_only=True)
    env.pop(SKILL_DIRS_ENV, None)
    env["HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-m", "review_loop", "preflight", "--repo", str(repo), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_process_missing_skill_is_missing_dependencies_named_with_where_looked(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    install_skills(home / ".claude" / "skills", SEED[:4])  # codebase-design missing
    code, doc, _ = preflight(repo, home, fakes, "--host", "claude")
    assert code == 2 and doc["status"] == "MISSING_DEPENDENCIES"
    assert all(check["ok"] for check in doc["checks"])  # the sessions are fine
    (missing,) = doc["missing"]
    assert missing.startswith("skill codebase-design (needed by architecture-hardening-loop): ")
    assert str(home / ".claude/skills/codebase-design/SKILL.md") in missing
    assert str(repo / ".claude/skills/codebase-design/SKILL.md") in missing
    assert (
        "- Missing: skill codebase-design (needed by architecture-hardening-loop)" in doc["block"]
    )
    assert "- Work started: no" in doc["block"]
    assert [s["name"] for s in doc["skills"] if s["found"] is None] == ["codebase-design"]

    # the user points at another directory: by flag, then by prefs
    extra = install_skills(tmp_path / "team-skills", ["codebase-design"])
    code, doc, _ = preflight(repo, home, fakes, "--host", "claude", "--skill-dir", str(extra))
    assert code == 0 and doc["status"] == "ready", doc
    env = fakes.env(path_only=True)
    subprocess.run(
        [sys.executable, "-m", "review_loop", "prefs", "set", "skillDirs", str(extra)],
        check=True,
        capture_output=True,
        env=env,
    )
    code, doc, _ = preflight(repo, home, fakes, "--host", "claude")
    assert code == 0 and doc["status"] == "ready", doc

    # grill-with-docs only when the user requires it
    code, doc, _ = preflight(
        repo, home, fakes, "--host", "claude", "--require-skill", "grill-with-docs"
    )
    assert code == 2
    assert [m.split(":")[0] for m in doc["missing"]] == ["skill grill-with-docs"]


def test_process_skill_dir_must_be_absolute(repo: Path, home: Path, tmp_path: Path) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    code, doc, _ = preflight(repo, home, fakes, "--skill-dir", "relative/dir")
    assert code == 1 and doc["error"].startswith("--skill-dir: ")
    assert fakes.calls() == []
