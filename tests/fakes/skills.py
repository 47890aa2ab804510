"""The skills the task-completion loop's preflight resolves, installed in a test directory."""

from __future__ import annotations

from pathlib import Path

from review_loop.agents.skills import required_skills, seed_catalog

GRILL = "grill-with-docs"


def seed_skill_names(*, grill: bool = False) -> list[str]:
    """Every skill preflight requires (and ``grill-with-docs`` when asked)."""
    optional = [GRILL] if grill else []
    return [skill.name for skill, _ in required_skills(seed_catalog(), optional=optional)]


def install_skills(root: Path, names: list[str] | None = None) -> Path:
    """Write ``root/<name>/SKILL.md`` for ``names`` (default: all, with grill-with-docs)."""
    for name in seed_skill_names(grill=True) if names is None else names:
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: test\n---\n")
    return root
