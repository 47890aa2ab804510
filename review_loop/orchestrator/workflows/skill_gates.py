"""Gates whose work a host skill does: proven by the skill's report, never by a typed token.

``architecture-hardening`` (the ``architecture-hardening-loop`` skill) and ``goal-gate``
(the ``goal-gate`` skill) run inside the host, not in review-loop, so review-loop cannot
sign what they did. What it can check, and does before a report gives a gate its result:

- the report is ``.review-handoff/gate-reports/<skill>/*.json``, a regular file reached
  without a link, that git does not track (a tracked file came from the repository);
- it is a :class:`SkillReport` of that skill;
- its evidence (``baseSha + pathFilter + digest``) equals the evidence recomputed now with
  the same base and path filter (and ``--base`` / ``--paths`` when given);
- the skill resolves now to an installed ``SKILL.md`` outside the reviewed repository (a
  repository cannot vouch for work on itself) whose sha256 equals the report's.

The recorded gate is ``proven`` with a ``skill-report`` proof that pins the report's and the
skill's sha256 in the signed ledger. It proves the report was made for this exact tree by
this installed skill version; it cannot prove which process wrote the file
(``docs/seed-workflows.md``, "Skill gates").
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from review_loop.agents.converge import (
    GATE_SKILLS,
    GOAL_GATE_TOKENS,
    PROVEN,
    Gate,
    GateProof,
    GateRecord,
    SkillReport,
    evidence_id,
    skill_report_problems,
)
from review_loop.agents.evidence import Evidence, normalize_path_filter
from review_loop.agents.skills import SkillCheck
from review_loop.orchestrator.handoff.files import HANDOFF_DIR, read_bytes, utc_now
from review_loop.orchestrator.handoff.git import rev_parse

REPORTS_DIR = "gate-reports"


@dataclass(frozen=True, slots=True)
class SkillProof:
    """The gate record a skill report proves, or why each report found does not.

    Attributes:
        record: the proven record (``proof`` set), or ``None``.
        considered: why each report passed over did not prove the gate.
        directory: where reports were looked for.
    """

    record: GateRecord | None
    considered: list[str]
    directory: Path


def report_dir(repo: Path, skill: str) -> Path:
    """``<repo>/.review-handoff/gate-reports/<skill>``."""
    return repo / HANDOFF_DIR / REPORTS_DIR / skill


def _candidates(repo: Path, directory: Path) -> list[Path]:
    """The ``*.json`` regular files of ``directory``, newest first; none below a link."""
    current = repo
    for part in directory.relative_to(repo).parts:
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return []
        except OSError:
            return []
    with os.scandir(directory) as entries:
        found = [
            (entry.stat(follow_symlinks=False).st_mtime_ns, Path(entry.path))
            for entry in entries
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)
        ]
    return [path for _, path in sorted(found, reverse=True)]


def _tracked(repo: Path) -> set[str]:
    from review_loop.orchestrator.handoff.trust import tracked_handoff_files

    return set(tracked_handoff_files(repo))


def find_skill_proof(
    repo: Path,
    gate: Gate,
    *,
    base: str | None,
    paths: str | list[str] | None,
    extra_dirs: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> SkillProof:
    """The newest report of ``gate``'s skill that proves the tree now (see the module)."""
    from review_loop.orchestrator.workflows.skills import resolve_skill

    skill = GATE_SKILLS[gate]
    directory = report_dir(repo, skill)
    want_base = rev_parse(repo, base) if base is not None else None
    want_paths = normalize_path_filter(paths) if paths is not None else None
    tracked = _tracked(repo)
    installed = resolve_skill(repo, skill, extra_dirs=extra_dirs, env=env)
    considered: list[str] = []
    for path in _candidates(repo, directory):
        name = path.name
        if str(path.relative_to(repo)) in tracked:
            considered.append(f"{name}: tracked by git, so it came from the repository")
            continue
        try:
            data = read_bytes(path, anchor=repo)
            report = SkillReport.model_validate_json(data)
        except OSError as error:
            considered.append(f"{name}: not a {skill} report ({_first_line(error)})")
            continue
        except ValueError as error:  # every field problem, with what it accepts
            considered.append(f"{name}: not a {skill} report ({skill_report_problems(error)})")
            continue
        problem = _mismatch(repo, report, skill, want_base, paths, want_paths)
        if problem is None:
            problem = _skill_problem(repo, installed, report.skillSha256)
        if problem is not None:
            considered.append(f"{name}: {problem}")
            continue
        assert installed.found is not None  # _skill_problem checked it
        record = GateRecord(
            gate=gate,
            result=report.result,
            evidence=report.evidence,
            detail=(report.decision or report.summary or f"{skill} report")[:300],
            recordedAt=utc_now(),
            provenance=PROVEN,
            proof=GateProof(
                kind="skill-report",
                ref=name,
                path=str(path),
                sha256=hashlib.sha256(data).hexdigest(),
                skill=installed.found,
                skillSha256=report.skillSha256,
            ),
        )
        return SkillProof(record, considered, directory)
    return SkillProof(None, considered, directory)


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__


def _mismatch(
    repo: Path,
    report: SkillReport,
    skill: str,
    want_base: str | None,
    paths: str | list[str] | None,
    want_paths: list[str] | None,
) -> str | None:
    """Why ``report`` is not ``skill``'s report on the evidence now, or ``None``."""
    from review_loop.orchestrator.workflows.evidence import attest_evidence

    covered = report.evidence
    if report.skill != skill:
        return f"written by {report.skill!r}, not {skill}"
    if skill == GATE_SKILLS[Gate.GOAL_GATE] and report.result not in GOAL_GATE_TOKENS:
        return (
            f"result: {report.result!r} is not a goal-gate result; accepted: "
            f"{' | '.join(sorted(GOAL_GATE_TOKENS))}"
        )
    if want_base is not None and covered.baseSha != want_base:
        return f"covers base {covered.baseSha[:12]}, not {want_base[:12]}"
    if paths is not None and covered.pathFilter != want_paths:
        return f"covers path filter {covered.pathFilter}, not {want_paths}"
    now: Evidence = attest_evidence(repo, covered.baseSha, covered.pathFilter)
    if not covered.same_snapshot(now):
        return f"covers {evidence_id(covered)}, the tree is now {evidence_id(now)}"
    return None


def _skill_problem(repo: Path, installed: SkillCheck, claimed: str) -> str | None:
    """Why the installed skill does not vouch for the report's ``skillSha256``, or ``None``.

    A skill reached through a link into the repository is the repository's own: resolved.
    """
    found = installed.found
    if found is None:
        return f"the skill is not installed (looked in {', '.join(installed.lookedIn)})"
    if Path(found).resolve().is_relative_to(repo.resolve()):
        return f"the skill resolves to {found}, inside the reviewed repository"
    try:
        actual = hashlib.sha256(Path(found).read_bytes()).hexdigest()
    except OSError as error:
        return f"the installed skill {found} cannot be read ({error.strerror})"
    if actual != claimed:
        return f"names skill sha256 {claimed[:12]}, the installed {found} is {actual[:12]}"
    return None
