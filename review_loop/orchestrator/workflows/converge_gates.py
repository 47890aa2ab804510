"""Preflight, the blind review, the ledger commands and the Task Completion Result.

- **preflight** proves each role is really usable before any work: a real round trip to
  Peer A, Peer B and the blind reviewer (in parallel, no fallback — no product stands in
  for another), then ``sessions`` must list the session each left (the resumable handle).
  Anything missing gives the seed's ``MISSING_DEPENDENCIES`` block, naming exactly what.
  Preflight always proves afresh (it is a liveness proof); every call is still journaled.
- **blind review** computes the final evidence, sends only that (never a position) to a
  fresh read-only session of the blind reviewer, parses Fix / Backlog / Reject, recomputes
  the evidence afterwards, and records the review against the evidence id it saw. The
  same evidence is never reviewed twice; at most two blind reviews per run.
- **ledger** items, gate results (each tied to freshly computed evidence), and the result:
  older gate results whose ``baseSha + pathFilter + digest`` differ from the current
  evidence are stale, and the result says so.
- **gates bind to proof** (``docs/authenticated-state.md``): ``agentic-review`` takes its
  result from an authenticated archived review packet whose evidence equals the current
  evidence, never from a typed token; ``blind-review`` from the blind review this module
  ran; ``architecture-hardening`` and ``goal-gate`` from their host skill's report checked
  against the current evidence and the installed skill (``workflows/skill_gates.py``).
  Typed results are stored as ``self-reported``.

Every command's result names what it did not believe (``untrusted``) and the files git
tracks under ``.review-handoff/`` (``tracked``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from review_loop.agents.converge import (
    BLIND_REVIEWER_PRODUCT,
    GATE_PASS,
    GATE_SKILLS,
    GOAL_GATE_TOKENS,
    GRILL_SKILL,
    MAX_BLIND_ROUNDS,
    PROVEN,
    BlindReviewSummary,
    CompletionInputs,
    Gate,
    GateProof,
    GateRecord,
    Ledger,
    LedgerItem,
    LedgerStatus,
    MalformedReviewError,
    PreflightSummary,
    Result,
    blind_review_prompt,
    derive_result,
    evidence_id,
    gate_provenance,
    parse_blind_review,
    preflight_prompt,
    render_completion,
    render_missing_dependencies,
    result_ok,
)
from review_loop.agents.errors import InputError
from review_loop.agents.evidence import Evidence
from review_loop.agents.skills import SkillCheck
from review_loop.orchestrator.handoff.files import atomic_write_bytes, utc_now
from review_loop.orchestrator.handoff.git import ensure_layout, rev_parse
from review_loop.orchestrator.handoff.trust import reporting, reporting_async
from review_loop.orchestrator.workflows.converge_store import (
    PROTOCOL_ACTIONS,
    Journal,
    RunPaths,
    journaled_call,
    load_ledger,
    run_lock,
    save_ledger,
    sha256_text,
)

if TYPE_CHECKING:  # ``ledger`` uses these gates without the dispatcher's imports
    from review_loop.orchestrator.dispatcher import Dispatcher

# -- preflight ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Role:
    """A role preflight must prove: its label (``Peer A``) and the peer name to launch."""

    label: str
    peer: str


@reporting_async
async def run_preflight(
    dispatcher: Dispatcher,
    *,
    run: str,
    roles: Sequence[Role],
    unavailable: Sequence[str] = (),
    timeout_ms: int | None = None,
    skills: Sequence[SkillCheck] = (),
) -> dict[str, Any]:
    """Prove every role with a round trip and a listed session; record it in the ledger.

    ``unavailable`` names roles that could not even be chosen (e.g. the prefs order ran
    out after removing the host); they are reported as missing without a call.
    ``skills`` are the resolved skill checks (:func:`orchestrator.skills.resolve_skills`):
    each one not found is missing, named with where it was looked for.
    """
    paths = RunPaths(dispatcher.repo, run)
    with run_lock(paths):
        journal = Journal(paths.journal)
        entries = await _round_trips(dispatcher, journal, paths, roles, timeout_ms)
        missing = [*(s.missing_text() for s in skills if s.found is None), *unavailable]
        checks = []
        for role in roles:
            check, problem = await _check_role(dispatcher, role, entries[role.label])
            if problem:
                missing.append(problem)
            checks.append(check)
        ready = not missing
        _record_preflight(paths, journal, ready=ready, missing=missing)
    return _preflight_document(paths, run, ready, checks, skills, missing)


async def _round_trips(
    dispatcher: Dispatcher,
    journal: Journal,
    paths: RunPaths,
    roles: Sequence[Role],
    timeout_ms: int | None,
) -> dict[str, dict[str, Any]]:
    """Each role's journaled answer to the preflight prompt, asked in parallel, by label."""
    prompt = preflight_prompt()
    entries: dict[str, dict[str, Any]] = {}

    async def prove(role: Role) -> None:
        key = f"preflight:{role.label}:{role.peer}:{sha256_text(prompt)[:16]}"
        entries[role.label] = await journaled_call(
            dispatcher,
            journal,
            paths,
            stage="preflight",
            side=role.label,
            key=key,
            peer=role.peer,
            prompt=prompt,
            timeout_ms=timeout_ms,
        )

    async with anyio.create_task_group() as group:
        for role in roles:
            group.start_soon(prove, role)
    return entries


async def _check_role(
    dispatcher: Dispatcher, role: Role, entry: dict[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """The role's check: a delivered answer whose session ``sessions`` lists; the problem."""
    from review_loop.orchestrator.sessions.listing import list_sessions

    label = f"{role.label} ({entry['product']})"
    listed = False
    problem = None
    if entry["state"] != "DELIVERED":
        problem = (
            f"{label}: no real round trip — {entry['state']}: "
            f"{entry.get('reason') or 'failed'}"
            + (f" ({entry['detail'][:200]})" if entry.get("detail") else "")
        )
    elif not entry.get("sessionId"):
        problem = f"{label}: answered but left no session id to resume"
    else:
        found = await anyio.to_thread.run_sync(list_sessions, dispatcher.repo, entry["product"])
        listed = any(item.session.session_id == entry["sessionId"] for item in found)
        if not listed:
            problem = (
                f"{label}: session {entry['sessionId']} is not listed by "
                f"`review-loop sessions --product={entry['product']}`"
            )
    check = {
        "role": role.label,
        "peer": role.peer,
        "product": entry["product"],
        "roundTrip": entry["state"],
        "sessionId": entry.get("sessionId"),
        "resumable": listed,
        "reason": entry.get("reason"),
        "ok": problem is None,
    }
    return check, problem


async def prove_blind_reviewer(
    dispatcher: Dispatcher,
    journal: Journal,
    paths: RunPaths,
    *,
    peer: str,
    timeout_ms: int | None,
    answered: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], str | None]:
    """The blind reviewer's preflight when ``converge``'s round A stands in for preflight.

    As ``preflight`` proves it: a real round trip (journaled, no fallback) whose session
    ``sessions`` lists. ``answered`` is a round-A answer of this same peer (Claude was a
    peer, so its first round trip serves, as the seed lets round A serve for the peers);
    an answer of this run's journal is reused too. Returns the check and the problem
    (``None`` when proven).
    """
    role = Role("Blind reviewer", peer)
    prompt = preflight_prompt()
    key = f"preflight:{role.label}:{role.peer}:{sha256_text(prompt)[:16]}"
    entry = answered or journal.answered(key)
    if entry is None:
        entry = await journaled_call(
            dispatcher,
            journal,
            paths,
            stage="preflight",
            side=role.label,
            key=key,
            peer=peer,
            prompt=prompt,
            timeout_ms=timeout_ms,
        )
    return await _check_role(dispatcher, role, entry)


def _record_preflight(
    paths: RunPaths, journal: Journal, *, ready: bool, missing: list[str]
) -> None:
    """The outcome in the ledger's preflight summary, then in the journal."""
    ledger = load_ledger(paths)
    save_ledger(
        paths,
        ledger.model_copy(
            update={"preflight": PreflightSummary(ready=ready, missing=missing, at=utc_now())}
        ),
    )
    journal.append("preflight.result", ready=ready, missing=missing)


def _preflight_document(
    paths: RunPaths,
    run: str,
    ready: bool,
    checks: list[dict[str, Any]],
    skills: Sequence[SkillCheck],
    missing: list[str],
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "ok": ready,
        "status": "ready" if ready else Result.MISSING_DEPENDENCIES.value,
        "result": None if ready else Result.MISSING_DEPENDENCIES.value,
        "run": run,
        "checks": checks,
        "skills": [s.model_dump() for s in skills],
        "missing": missing,
        "protocolArtifacts": PROTOCOL_ACTIONS,
        "journalPath": str(paths.journal),
        "ledgerPath": str(paths.ledger),
    }
    if not ready:
        document["block"] = render_missing_dependencies(missing)
    return document


# -- blind review ----------------------------------------------------------------------------


def _evidence_key(evidence: Evidence) -> str:
    return sha256_text(
        "\n".join([evidence.baseSha, ",".join(evidence.pathFilter or []), evidence.digest])
    )[:24]


def _review_document(review: BlindReviewSummary, *, reused: bool) -> dict[str, Any]:
    findings = [f.model_dump(by_alias=True) for f in review.findings]
    return {
        "ok": True,
        "status": "reviewed",
        "verdict": review.verdict,
        "round": review.round,
        "reused": reused,
        "evidence": review.evidence.model_dump(),
        "evidenceId": evidence_id(review.evidence),
        "reviewer": {"product": review.product, "sessionId": review.sessionId, "fresh": True},
        "findings": findings,
        "fix": [f["id"] for f in findings if f["class"] == "Fix"],
        "backlog": [f["id"] for f in findings if f["class"] == "Backlog"],
        "reject": [f["id"] for f in findings if f["class"] == "Reject"],
        "recordPath": review.recordPath,
        "message": (
            "In-scope Fix: make the minimal fix, verify, rerun every downstream gate, then "
            "blind-review the new evidence."
            if review.verdict == "FIX"
            else "No in-scope Fix on this evidence."
        ),
    }


@reporting_async
async def run_blind_review(
    dispatcher: Dispatcher,
    *,
    run: str,
    reviewer: str,
    base: str,
    paths_filter: str | list[str] | None,
    timeout_ms: int | None = None,
    continue_budget: bool = False,
) -> dict[str, Any]:
    """Blind-review the current evidence in a fresh read-only session of ``reviewer``.

    At most :data:`MAX_BLIND_ROUNDS` reviews per budget; past it the result is
    ``budget_exhausted`` / ``UNVERIFIED``. ``continue_budget`` (``--continue``) is the
    seed's later continuation: only once the budget is spent, it opens a new budget on
    the same run and reviews the current evidence, with no new run or ledger.
    """
    from review_loop.orchestrator.workflows.evidence import attest_evidence, compute_evidence

    repo = dispatcher.repo
    paths = RunPaths(repo, run)
    with run_lock(paths):
        evidence, diff = await anyio.to_thread.run_sync(compute_evidence, repo, base, paths_filter)
        ledger = load_ledger(paths)
        for earlier in reversed(ledger.blindReviews):
            if earlier.evidence.same_snapshot(evidence):
                _record_reuse(paths, ledger, earlier)
                return _review_document(earlier, reused=True)
        round_number, spent = _next_round(paths, ledger, continue_budget=continue_budget)
        if spent:
            return _budget_exhausted(round_number, evidence)
        journal = Journal(paths.journal)
        key = f"blind:{_evidence_key(evidence)}"
        entry = await _ask_once(
            dispatcher, journal, paths, key, reviewer, evidence, diff, timeout_ms
        )
        common = _round_fields(round_number, evidence, entry)
        if entry["state"] != "DELIVERED":
            return _not_delivered(common, entry)
        text = str(entry.get("text") or "")
        record_path = paths.dir / f"blind-review-{round_number}.md"
        try:
            verdict, findings = parse_blind_review(text)
        except MalformedReviewError as error:
            atomic_write_bytes(record_path.with_suffix(".malformed.md"), text.encode("utf-8"))
            journal.append("call.void", stage="blind", side="blind", key=key, reason=str(error))
            return _malformed(common, error)
        after = await anyio.to_thread.run_sync(attest_evidence, repo, base, paths_filter)
        review = BlindReviewSummary(
            round=round_number,
            verdict=verdict,
            evidence=evidence,
            product=entry["product"],
            sessionId=entry.get("sessionId"),
            findings=findings,
            recordPath=str(record_path),
            at=utc_now(),
        )
        _record_review(paths, review, text)
    document = _review_document(review, reused=False)
    if not after.same_snapshot(evidence):
        document["evidenceChangedDuringReview"] = True
        document["message"] += " The tree changed during the review: this review is stale."
    return document


def _next_round(paths: RunPaths, ledger: Ledger, *, continue_budget: bool) -> tuple[int, bool]:
    """The next round's number, and whether its budget is spent (``--continue`` renews it)."""
    round_number = len(ledger.blindReviews) + 1
    spent = round_number - ledger.blindBudgetFrom > MAX_BLIND_ROUNDS
    if spent and continue_budget:
        save_ledger(paths, ledger.model_copy(update={"blindBudgetFrom": len(ledger.blindReviews)}))
        Journal(paths.journal).append("blind.budget.continue", fromRound=round_number)
        spent = False
    return round_number, spent


def _budget_exhausted(round_number: int, evidence: Evidence) -> dict[str, Any]:
    return {
        "ok": False,
        "status": "budget_exhausted",
        "result": Result.UNVERIFIED.value,
        "round": round_number,
        "evidence": evidence.model_dump(),
        "message": f"the blind review budget ({MAX_BLIND_ROUNDS} rounds) is used; "
        "the result stays UNVERIFIED. Hand back control; a later `blind-review "
        "--continue` continues this run from the incomplete evidence",
    }


async def _ask_once(
    dispatcher: Dispatcher,
    journal: Journal,
    paths: RunPaths,
    key: str,
    reviewer: str,
    evidence: Evidence,
    diff: str,
    timeout_ms: int | None,
) -> dict[str, Any]:
    """The journal's answer for ``key``, or the reviewer's, asked now and journaled."""
    entry = journal.answered(key)
    if entry is None:
        entry = await journaled_call(
            dispatcher,
            journal,
            paths,
            stage="blind",
            side="blind",
            key=key,
            peer=reviewer,
            prompt=blind_review_prompt(evidence, diff),
            timeout_ms=timeout_ms,
            # blind also on disk: a copy without .review-handoff/, where the earlier
            # positions are kept, and the repository itself read-only
            isolate=True,
        )
    return entry


def _round_fields(round_number: int, evidence: Evidence, entry: dict[str, Any]) -> dict[str, Any]:
    """What every document of an asked round says: round, evidence and reviewer."""
    return {
        "round": round_number,
        "evidence": evidence.model_dump(),
        "evidenceId": evidence_id(evidence),
        "reviewer": {
            "product": entry["product"],
            "sessionId": entry.get("sessionId"),
            "fresh": not entry.get("resumed", False),
        },
    }


def _not_delivered(common: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "ok": False,
        "status": entry["state"],
        "result": Result.UNVERIFIED.value,
        **common,
        "reason": entry.get("reason"),
        "detail": entry.get("detail"),
        "message": "the blind review did not arrive; this gate is UNVERIFIED (the "
        "handle is kept; the next blind-review starts a fresh session)",
    }


def _malformed(common: dict[str, Any], error: MalformedReviewError) -> dict[str, Any]:
    return {
        "ok": False,
        "status": "malformed_reviewer_output",
        "result": Result.UNVERIFIED.value,
        **common,
        "error": str(error),
        "message": "the blind review does not follow the required shape",
    }


def _record_reuse(paths: RunPaths, ledger: Ledger, review: BlindReviewSummary) -> None:
    """Make the ledger's blind-review gate the reused review of the current snapshot.

    A Fix resolved by going back to a snapshot that already had a review (removing debug
    code, say) costs no new round, but the ledger must then say that review is the one
    that covers the tree now: without this the latest gate stays the Fix of another
    snapshot, stale for good, and the run can never complete on the reviewed tree.
    """
    latest = ledger.latest_gates().get(Gate.BLIND_REVIEW)
    if latest is not None and latest.proof is not None and latest.proof.round == review.round:
        return  # already the latest: nothing to record
    save_ledger(paths, ledger.model_copy(update={"gates": [*ledger.gates, _blind_gate(review)]}))
    Journal(paths.journal).append("blind.reuse", round=review.round)


def _blind_gate(review: BlindReviewSummary) -> GateRecord:
    """The blind-review gate a review proves, pointing at its record file."""
    record_path = Path(review.recordPath)
    return GateRecord(
        gate=Gate.BLIND_REVIEW,
        result=review.verdict,
        evidence=review.evidence,
        session=review.sessionId,
        detail=f"{sum(1 for f in review.findings if f.cls == 'Fix')} Fix",
        recordedAt=utc_now(),
        provenance=PROVEN,
        proof=GateProof(
            kind="blind-review",
            ref=record_path.name,
            path=str(record_path),
            round=review.round,
            reviewer=review.product,
            sessionId=review.sessionId,
        ),
    )


def _record_review(paths: RunPaths, review: BlindReviewSummary, text: str) -> None:
    """The review's record file, then its summary and its gate in the ledger."""
    record_path = Path(review.recordPath)
    header = (
        f"# Blind Review {review.round}\n\n"
        f"- reviewer: {review.product} (fresh read-only session {review.sessionId})\n"
        f"- evidence: {evidence_id(review.evidence)}\n"
        f"- verdict: {review.verdict}\n\n## Reviewer response\n\n"
    )
    atomic_write_bytes(record_path, (header + text.strip() + "\n").encode("utf-8"))
    ledger = load_ledger(paths)
    save_ledger(
        paths,
        ledger.model_copy(
            update={
                "blindReviews": [*ledger.blindReviews, review],
                "gates": [*ledger.gates, _blind_gate(review)],
            }
        ),
    )


# -- ledger ----------------------------------------------------------------------------------


@reporting
def ledger_show(repo: Path, run: str) -> dict[str, Any]:
    """The ledger document."""
    paths = RunPaths(repo, run)
    ledger = load_ledger(paths)
    return {
        "ok": True,
        "run": run,
        "ledgerPath": str(paths.ledger),
        "exists": paths.ledger.exists(),
        "ledger": ledger.model_dump(mode="json", by_alias=True),
    }


@reporting
def ledger_set_item(
    repo: Path,
    run: str,
    *,
    item_id: str,
    status: str,
    title: str | None,
    evidence: str | None,
) -> dict[str, Any]:
    """Add an item or change one; ``title``/``evidence`` keep their value when ``None``."""
    try:
        status_value = LedgerStatus(status)
    except ValueError:
        raise InputError(
            "--status", f"{status!r} is not a ledger status", ", ".join(LedgerStatus)
        ) from None
    paths = RunPaths(repo, run)

    def build(ledger: Ledger) -> LedgerItem:
        old = next((i for i in ledger.items if i.id == item_id), None)
        try:
            return LedgerItem(
                id=item_id,
                title=title if title is not None else (old.title if old else ""),
                status=status_value,
                evidence=evidence if evidence is not None else (old.evidence if old else ""),
                updated=utc_now(),
            )
        except ValueError as error:
            field = "--evidence" if "evidence" in str(error) else "--id"
            raise InputError(field, _first_error(error)) from None

    build(load_ledger(paths))  # validate before anything is written
    ensure_layout(repo)
    with run_lock(paths):
        ledger = load_ledger(paths)
        item = build(ledger)
        ledger = save_ledger(paths, ledger.with_item(item))
    return {**ledger_show(repo, run), "item": item.model_dump(mode="json")}


def _first_error(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return str(found[0].get("msg", error)).removeprefix("Value error, ")
    return str(error)


@reporting
def ledger_meta(repo: Path, run: str, changes: dict[str, str]) -> dict[str, Any]:
    """Set the task text, Goal state, implemented summary or lessons."""
    paths = RunPaths(repo, run)

    def apply(ledger: Ledger) -> Ledger:
        try:
            return Ledger.model_validate(
                {**ledger.model_dump(mode="json", by_alias=True), **changes}
            )
        except ValueError as error:
            raise InputError("--goal", _first_error(error)) from None

    apply(load_ledger(paths))  # validate before anything is written
    ensure_layout(repo)
    with run_lock(paths):
        save_ledger(paths, apply(load_ledger(paths)))
    return ledger_show(repo, run)


@reporting
def ledger_gate(
    repo: Path,
    run: str,
    *,
    gate: str,
    result: str | None,
    base: str,
    paths_filter: str | list[str] | None,
    session: str | None,
    detail: str,
    base_given: bool = True,
    skill_dirs: Sequence[str] = (),
) -> dict[str, Any]:
    """Record a gate result against the evidence computed now (before and after: same).

    ``agentic-review`` takes its result from :func:`find_review_proof`, never from ``result``
    (a typed token is ignored and reported; with no proof nothing is written and the
    document says how to prove it). ``architecture-hardening`` and ``goal-gate`` without
    ``result`` take it from their skill's report (:func:`skill_gates.find_skill_proof`;
    ``skill_dirs`` are the user's skill directories). A typed ``result`` is stored as
    ``self-reported``.
    """
    from review_loop.orchestrator.workflows.evidence import attest_evidence

    try:
        gate_value = Gate(gate)
    except ValueError:
        raise InputError("--gate", f"{gate!r} is not a gate", ", ".join(Gate)) from None
    if gate_value is Gate.BLIND_REVIEW:
        raise InputError("--gate", "blind-review results are recorded by `blind-review`")
    token = (result or "").strip().upper()
    if result is not None and (not token or not token.replace("_", "").isalpha()):
        raise InputError("--result", f"{result!r} is not a result token", "e.g. PASS")
    if gate_value is Gate.AGENTIC_REVIEW:
        return _agentic_review_gate(
            repo, run, typed=token or None, base=base if base_given else None, paths=paths_filter
        )
    if gate_value in GATE_SKILLS and not token:
        return _skill_gate(
            repo,
            run,
            gate_value,
            base=base if base_given else None,
            paths=paths_filter,
            skill_dirs=skill_dirs,
        )
    if not token:
        raise InputError("--result", "is required for this gate", "the gate's result token")
    if gate_value is Gate.GOAL_GATE and token not in GOAL_GATE_TOKENS:
        raise InputError(
            "--result", f"{token!r} is not a goal-gate result", ", ".join(sorted(GOAL_GATE_TOKENS))
        )
    evidence = attest_evidence(repo, base, paths_filter)
    record = GateRecord(
        gate=gate_value,
        result=token,
        evidence=evidence,
        session=session,
        detail=detail,
        recordedAt=utc_now(),
    )
    return _store_gate(repo, run, record)


def _store_gate(repo: Path, run: str, record: GateRecord) -> dict[str, Any]:
    paths = RunPaths(repo, run)
    ensure_layout(repo)
    with run_lock(paths):
        ledger = load_ledger(paths)
        save_ledger(paths, ledger.model_copy(update={"gates": [*ledger.gates, record]}))
    return {
        **ledger_show(repo, run),
        "gate": record.model_dump(mode="json"),
        "passed": record.passed,
        "provenance": record.provenance,
        "passing": sorted(GATE_PASS[record.gate]),
        "evidenceId": evidence_id(record.evidence),
    }


@dataclass(frozen=True, slots=True)
class ReviewProof:
    """The ``agentic-review`` gate record a review packet proves, or why none does.

    Attributes:
        record: the proven record (``proof`` set), or ``None``.
        considered: why each authenticated archived packet passed over did not prove it.
    """

    record: GateRecord | None
    considered: list[str]


def find_review_proof(
    repo: Path, *, base: str | None, paths: str | list[str] | None
) -> ReviewProof:
    """The newest authenticated archived review packet of this branch proving the tree now.

    A packet proves the ``agentic-review`` gate when its run state carries a valid MAC, it
    was archived by a verdict, and its evidence (``baseSha + pathFilter + digest``) equals
    the evidence recomputed now with that packet's own base and path filter (``base`` and
    ``paths``, when given, must also match it). Untrusted packets are reported and skipped.
    """
    from review_loop.agents.evidence import normalize_path_filter
    from review_loop.agents.review import branch_identity
    from review_loop.orchestrator.handoff.git import current_branch
    from review_loop.orchestrator.workflows.evidence import attest_evidence
    from review_loop.orchestrator.workflows.review_store import (
        authenticated_archives,
        branch_slugs,
    )

    identity = branch_identity(current_branch(repo), rev_parse(repo, "HEAD", field="HEAD"))
    want_base = rev_parse(repo, base) if base is not None else None
    want_paths = normalize_path_filter(paths) if paths is not None else None
    current: dict[tuple[str, tuple[str, ...] | None], Evidence] = {}
    considered: list[str] = []
    for ref, state in authenticated_archives(repo, branch_slugs(identity)):
        verdict = state.get("lastVerdict")
        try:
            covered = Evidence.model_validate(state.get("evidence"))
        except ValueError:
            considered.append(f"{ref.packet_id}: its run state records no evidence")
            continue
        if state.get("lifecycleState") != "archived" or not isinstance(verdict, str):
            considered.append(f"{ref.packet_id}: not archived by a verdict")
            continue
        if want_base is not None and covered.baseSha != want_base:
            considered.append(f"{ref.packet_id}: reviewed against base {covered.baseSha[:12]}")
            continue
        if paths is not None and covered.pathFilter != want_paths:
            considered.append(f"{ref.packet_id}: reviewed with path filter {covered.pathFilter}")
            continue
        key = (covered.baseSha, tuple(covered.pathFilter) if covered.pathFilter else None)
        if key not in current:
            current[key] = attest_evidence(repo, covered.baseSha, covered.pathFilter)
        if not covered.same_snapshot(current[key]):
            considered.append(
                f"{ref.packet_id}: covers {evidence_id(covered)}, the tree is now "
                f"{evidence_id(current[key])}"
            )
            continue
        record = GateRecord(
            gate=Gate.AGENTIC_REVIEW,
            result=verdict,
            evidence=covered,
            session=ref.packet_id,
            detail=f"review packet {ref.packet_id}",
            recordedAt=utc_now(),
            provenance=PROVEN,
            proof=GateProof(
                kind="review-packet",
                ref=ref.packet_id,
                path=str(ref.path),
                round=state.get("round"),
                reviewer=state.get("reviewer"),
                sessionId=state.get("reviewerSessionId"),
            ),
        )
        return ReviewProof(record, considered)
    return ReviewProof(None, considered)


def _agentic_review_gate(
    repo: Path, run: str, *, typed: str | None, base: str | None, paths: str | list[str] | None
) -> dict[str, Any]:
    from review_loop.orchestrator.workflows.evidence import attest_evidence

    found = find_review_proof(repo, base=base, paths=paths)
    if found.record is None:
        now = attest_evidence(repo, base or "HEAD", paths)
        return {
            **ledger_show(repo, run),
            "ok": False,
            "status": "GATE_UNPROVEN",
            "gate": None,
            "typedResult": typed,
            "considered": found.considered or ["no archived review packet on this branch"],
            "evidenceId": evidence_id(now),
            "message": "agentic-review takes its result from an archived review packet, never "
            "from --result: run `review-loop run` (then fix-completion and run --continue) "
            "until the packet is archived on the current evidence, then run `review-loop "
            "ledger gate --gate agentic-review` again. Nothing was recorded.",
        }
    document = _store_gate(repo, run, found.record)
    if typed is not None:
        document["ignoredResult"] = typed
        document["message"] = (
            f"--result {typed} was ignored: agentic-review takes its result "
            f"({found.record.result}) from review packet {found.record.session}"
        )
    return document


def _skill_gate(
    repo: Path,
    run: str,
    gate: Gate,
    *,
    base: str | None,
    paths: str | list[str] | None,
    skill_dirs: Sequence[str],
) -> dict[str, Any]:
    from review_loop.orchestrator.workflows.evidence import attest_evidence
    from review_loop.orchestrator.workflows.skill_gates import find_skill_proof

    found = find_skill_proof(repo, gate, base=base, paths=paths, extra_dirs=skill_dirs)
    if found.record is not None:
        return _store_gate(repo, run, found.record)
    now = attest_evidence(repo, base or "HEAD", paths)
    skill = GATE_SKILLS[gate]
    return {
        **ledger_show(repo, run),
        "ok": False,
        "status": "GATE_UNPROVEN",
        "gate": None,
        "considered": found.considered or [f"no report in {found.directory}"],
        "evidenceId": evidence_id(now),
        "reportDir": str(found.directory),
        "message": f"{gate.value} takes its result from the {skill} skill's report: run the "
        f"skill on the current evidence so that it writes {found.directory}/"
        f"{now.digest}.json, then run `review-loop ledger gate --gate {gate.value}` again "
        "(or type --result to record it as self-reported). Nothing was recorded.",
    }


def preflight_from_consults(
    repo: Path, ledger: Ledger, skill_dirs: Sequence[str] = ()
) -> PreflightSummary:
    """The preflight the seed's own recipe proves: ``consult`` per peer, then ``sessions``.

    Ready when kept consult round trips (signed, :func:`converge_store.round_trips`) cover
    two peers of distinct products and the blind reviewer's product, each session still
    listed by ``sessions`` (the resumable handle), and every required skill resolves (the
    conditional ``grill-with-docs`` too when the ledger holds a ``HUMAN_DECISION``).
    """
    from review_loop.orchestrator.sessions.listing import list_sessions
    from review_loop.orchestrator.workflows.converge_store import round_trips
    from review_loop.orchestrator.workflows.skills import resolve_skills

    listed: set[str] = set()
    for entry in round_trips(repo):
        product = str(entry.get("product"))
        if product not in listed and any(
            item.session.session_id == entry.get("sessionId")
            for item in list_sessions(repo, product)
        ):
            listed.add(product)
    missing = []
    if BLIND_REVIEWER_PRODUCT not in listed:
        missing.append(
            f"Blind reviewer ({BLIND_REVIEWER_PRODUCT}): no consult round trip whose session "
            f"`review-loop sessions --product={BLIND_REVIEWER_PRODUCT}` lists"
        )
    peers = sorted(listed - {BLIND_REVIEWER_PRODUCT})
    if len(peers) < 2:
        missing.append(
            f"Peer A and Peer B: consult round trips with listed sessions for {peers or 'none'}"
            ", two products other than the blind reviewer's needed"
        )
    grill = [GRILL_SKILL] if ledger.by_status(LedgerStatus.HUMAN_DECISION) else []
    skills = resolve_skills(repo, host=None, extra_dirs=skill_dirs, optional=grill)
    missing += [check.missing_text() for check in skills if check.found is None]
    return PreflightSummary(
        ready=not missing, missing=missing, at=utc_now(), via="consult + sessions"
    )


@reporting
def ledger_result(
    repo: Path,
    run: str,
    *,
    base: str | None,
    paths_filter: str | list[str] | None,
    skill_dirs: Sequence[str] = (),
) -> dict[str, Any]:
    """Recompute the evidence and derive the Task Completion Result; write the block.

    ``base`` and the filter default to those of the newest gate result, so the evidence is
    recomputed "with the same base/filter"; giving other ones is a change of scope, which
    makes every older gate result stale.
    """
    from review_loop.orchestrator.workflows.evidence import attest_evidence

    paths = RunPaths(repo, run)
    if base is not None:
        rev_parse(repo, base)
    ensure_layout(repo)
    with run_lock(paths):
        ledger = load_ledger(paths)
        if ledger.preflight is None:  # the seed's recipe (consult, then sessions) may hold
            found = preflight_from_consults(repo, ledger, skill_dirs)
            if found.ready:
                ledger = save_ledger(paths, ledger.model_copy(update={"preflight": found}))
        last = ledger.gates[-1].evidence if ledger.gates else None
        if base is None:
            base = last.baseSha if last else "HEAD"
            if paths_filter is None and last is not None:
                paths_filter = last.pathFilter
        evidence = attest_evidence(repo, base, paths_filter)
        inputs = CompletionInputs(ledger=ledger, evidence=evidence, protocol=PROTOCOL_ACTIONS)
        result, reasons = derive_result(inputs)
        if result is Result.MISSING_DEPENDENCIES:
            block = render_missing_dependencies(reasons)
        else:
            block = render_completion(inputs, result, reasons)
        path = paths.dir / "task-completion-result.md"
        atomic_write_bytes(path, block.encode("utf-8"))
        Journal(paths.journal).append("result", result=result.value, reasons=reasons)
    stale = ledger.stale_gates(evidence)
    provenance = gate_provenance(ledger)
    return {
        "ok": result_ok(result),
        "result": result.value,
        "reasons": reasons,
        "provenGates": provenance[PROVEN],
        "selfReportedGates": provenance["self-reported"],
        "staleGates": [
            {"gate": r.gate.value, "result": r.result, "evidenceId": evidence_id(r.evidence)}
            for r in stale
        ],
        "evidence": evidence.model_dump(),
        "evidenceId": evidence_id(evidence),
        "block": block,
        "blockPath": str(path),
        "run": run,
        "ledgerPath": str(paths.ledger),
    }
