"""The skills the task-completion loop needs, and where hosts install them (pure).

Seed 004's Capability Preflight requires ``goal-gate``, ``agentic-review-handoff`` and
``architecture-hardening-loop`` with their transitive hard dependencies (the hardening
loop's scanner and ``codebase-design``), and ``grill-with-docs`` only when the user requires
it. Both the requirements and each host's skill locations are data
(``data/seed-skills.json``); the orchestrator expands the locations and checks presence.

A skill resolves when ``<location>/<name>/SKILL.md`` is a readable regular file. A name, a
catalog entry or a CLI alone is not a skill; resolving never runs or loads anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib.resources import files

from pydantic import BaseModel, ConfigDict, Field

CATALOG_FILE = "seed-skills.json"
REPO_PREFIX = "<repo>/"


class SkillRequirement(BaseModel):
    """One skill of the catalog: what it is for and which skills it needs."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    purpose: str
    needs: tuple[str, ...] = ()
    conditional: bool = False
    dependencyOnly: bool = False


class SkillCatalog(BaseModel):
    """The required skills and, per host product, its skill location patterns."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    about: str = ""
    skills: tuple[SkillRequirement, ...]
    locations: dict[str, tuple[str, ...]]

    def requirement(self, name: str) -> SkillRequirement:
        """The entry named ``name`` (a dependency not in the catalog gets a bare entry)."""
        found = next((s for s in self.skills if s.name == name), None)
        return found or SkillRequirement(name=name, purpose="hard dependency")

    def patterns(self, host: str | None) -> tuple[str, ...]:
        """The host's locations; every host's (deduplicated, in order) when none is named."""
        if host is not None:
            return self.locations.get(host, ())
        return tuple(dict.fromkeys(p for group in self.locations.values() for p in group))


class SkillCheck(BaseModel):
    """Where a required skill was found, or everywhere it was looked for."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    purpose: str
    neededBy: str | None = None
    found: str | None = None
    lookedIn: list[str] = Field(default_factory=list)

    def missing_text(self) -> str:
        """The ``Missing:`` entry: the exact skill, its dependency chain, where looked."""
        chain = f" (needed by {self.neededBy})" if self.neededBy else ""
        return f"skill {self.name}{chain}: no readable {self.name}/SKILL.md in " + ", ".join(
            self.lookedIn
        )


@cache
def seed_catalog() -> SkillCatalog:
    """The catalog shipped with review-loop."""
    text = files("review_loop.agents").joinpath("data", CATALOG_FILE).read_text("utf-8")
    return SkillCatalog.model_validate(json.loads(text))


def required_skills(
    catalog: SkillCatalog, *, optional: Iterable[str] = ()
) -> list[tuple[SkillRequirement, str | None]]:
    """Every skill to resolve with the skill that needs it, dependencies after their parent.

    ``optional`` names conditional skills this round actually needs (``grill-with-docs``
    when the user requires it) or any other skill the user requires; other conditional
    skills and bare dependencies start no chain of their own.
    """
    wanted = set(optional)
    out: list[tuple[SkillRequirement, str | None]] = []
    seen: set[str] = set()

    def visit(skill: SkillRequirement, parent: str | None) -> None:
        if skill.name in seen:
            return
        seen.add(skill.name)
        out.append((skill, parent))
        for name in skill.needs:
            chain = f"{parent} -> {skill.name}" if parent else skill.name
            visit(catalog.requirement(name), chain)

    for skill in catalog.skills:
        if skill.dependencyOnly or (skill.conditional and skill.name not in wanted):
            continue
        visit(skill, None)
    for name in sorted(wanted - seen):  # a skill the user requires that the catalog lacks
        visit(catalog.requirement(name), None)
    return out
