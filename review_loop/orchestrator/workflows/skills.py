"""Resolve the skills preflight requires: expand each host's locations, check presence.

Locations come from the catalog (``review_loop/agents/data/seed-skills.json``) for the
host, then the user's own directories (``--skill-dir``, prefs ``skillDirs``). A skill is
found at ``<location>/<name>/SKILL.md`` when that is a readable regular file.

The user's locations are trusted: links are followed (skills are often linked into
place). The repository's locations (``<repo>/.claude/skills`` ...) belong to the reviewed,
untrusted repository: there a skill counts only when every component below the
repository root is a real directory and ``SKILL.md`` a regular file, checked with
``lstat`` (no link followed); nothing there is opened, read or run.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from review_loop.agents.skills import (
    REPO_PREFIX,
    SkillCatalog,
    SkillCheck,
    required_skills,
    seed_catalog,
)

SKILL_FILE = "SKILL.md"
SKILL_DIRS_ENV = "REVIEW_LOOP_SKILL_DIRS"
"""More skill directories, ``os.pathsep``-separated, searched after prefs ``skillDirs``."""
_VAR = re.compile(r"^\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):-(?P<default>[^}]*)\}")


def _user_path(pattern: str, env: Mapping[str, str], home: Path) -> str:
    """``${VAR:-default}`` and a leading ``~`` replaced (the user's own locations)."""
    match = _VAR.match(pattern)
    if match:
        value = env.get(match["name"]) or match["default"]
        pattern = value + pattern[match.end() :]
    if pattern == "~" or pattern.startswith("~/"):
        pattern = str(home) + pattern[1:]
    return pattern


def _user_dirs(pattern: str, env: Mapping[str, str], home: Path) -> list[Path]:
    expanded = _user_path(pattern, env, home)
    if "*" in expanded:
        return [Path(p) for p in sorted(glob.glob(expanded)) if os.path.isdir(p)]
    return [Path(expanded)]


def _readable_file(path: Path) -> bool:
    return path.is_file() and os.access(path, os.R_OK)


def _in_repository(repo: Path, relative: str) -> bool:
    """``repo/relative`` exists with no link below ``repo``: real dirs, a regular file."""
    current = repo
    parts = Path(relative).parts
    for index, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return False
        last = index == len(parts) - 1
        if not (stat.S_ISREG(mode) if last else stat.S_ISDIR(mode)):
            return False
    return True


def _find(
    name: str, patterns: Sequence[str], extra: Sequence[Path], repo: Path, env: Mapping[str, str]
) -> SkillCheck:
    home = Path(env.get("HOME") or Path.home())
    looked: list[str] = []
    for pattern in patterns:
        if pattern.startswith(REPO_PREFIX):
            relative = f"{pattern.removeprefix(REPO_PREFIX)}/{name}/{SKILL_FILE}"
            looked.append(str(repo / relative))
            if _in_repository(repo, relative):
                return SkillCheck(name=name, purpose="", found=str(repo / relative))
            continue
        for directory in _user_dirs(pattern, env, home):
            candidate = directory / name / SKILL_FILE
            if "*" not in pattern:
                looked.append(str(candidate))
            if _readable_file(candidate):
                return SkillCheck(name=name, purpose="", found=str(candidate))
        if "*" in pattern:
            looked.append(f"{_user_path(pattern, env, home)}/{name}/{SKILL_FILE}")
    for directory in extra:
        candidate = directory / name / SKILL_FILE
        looked.append(str(candidate))
        if _readable_file(candidate):
            return SkillCheck(name=name, purpose="", found=str(candidate))
    return SkillCheck(name=name, purpose="", lookedIn=looked)


def _extra_dirs(extra_dirs: Iterable[str], env: Mapping[str, str]) -> list[Path]:
    """The user's directories (``~`` expanded), then those of ``$REVIEW_LOOP_SKILL_DIRS``."""
    home = Path(env.get("HOME") or Path.home())
    listed = [*extra_dirs, *(d for d in env.get(SKILL_DIRS_ENV, "").split(os.pathsep) if d)]
    return [Path(_user_path(d, env, home)) for d in listed]


def resolve_skills(
    repo: Path,
    *,
    host: str | None,
    extra_dirs: Iterable[str] = (),
    optional: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
    catalog: SkillCatalog | None = None,
) -> list[SkillCheck]:
    """Every required skill (and its hard dependencies) with where it was found or looked.

    ``host`` picks the host's locations (the host runs the skills); unnamed, every host's.
    ``extra_dirs`` are the user's directories, searched after the host's (``~`` expanded),
    then those of ``$REVIEW_LOOP_SKILL_DIRS``.
    ``optional`` names conditional skills this round needs (``grill-with-docs``).
    """
    env = os.environ if env is None else env
    catalog = seed_catalog() if catalog is None else catalog
    extra = _extra_dirs(extra_dirs, env)
    patterns = catalog.patterns(host)
    checks = []
    for skill, needed_by in required_skills(catalog, optional=optional):
        found = _find(skill.name, patterns, extra, repo, env)
        checks.append(found.model_copy(update={"purpose": skill.purpose, "neededBy": needed_by}))
    return checks


def resolve_skill(
    repo: Path,
    name: str,
    *,
    extra_dirs: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
    catalog: SkillCatalog | None = None,
) -> SkillCheck:
    """One skill, searched in every host's locations then the user's (as preflight does).

    The repository's locations are searched last: a skill the reviewed repository ships
    can vouch for nothing, so it must never shadow one the user installed.
    """
    env = os.environ if env is None else env
    catalog = seed_catalog() if catalog is None else catalog
    extra = _extra_dirs(extra_dirs, env)
    patterns = catalog.patterns(None)
    users = [pattern for pattern in patterns if not pattern.startswith(REPO_PREFIX)]
    installed = _find(name, users, extra, repo, env)
    return installed if installed.found is not None else _find(name, patterns, extra, repo, env)
