"""The review run: review → fix → re-review on a packet, one round per ``run`` call.

``run`` (``docs/origins.md`` §3.7): choose or create the packet, take its lock, check
the state and the packet hash (fail closed), freeze this round's evidence, ask the
reviewer (a new session in round 1, the same session resumed afterwards), parse and
check the answer (one correction round by resuming the same session), update the
ledger, append the stage to the packet and archive it on PASS / NO_FINDINGS.

``fix-completion`` records the fixer's ``# Fix Completion``; ``close --reason
accept-concerns`` archives a PASS_WITH_CONCERNS packet parked for the user.

"The review failed to run" is always ``DELIVERY_UNKNOWN``, never a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from review_loop.agents.errors import InputError, StateError
from review_loop.agents.models import DeliveryState
from review_loop.agents.outcomes import Delivery, RecordError
from review_loop.agents.review import (
    DEFAULT_ROUNDS,
    Ledger,
    ReviewAnswer,
    ReviewFormatError,
    Verdict,
    apply_answer,
    branch_identity,
    branch_slug,
    missing_coverage,
    parse_answer,
    valid_scope,
)
from review_loop.agents.review_packet import (
    decision_closure_text,
    fixer_position,
    h1_sections,
    join_packet,
    new_packet_text,
    normalise_fix_completion,
    rebuild_ledger,
    review_stage,
    split_packet,
)
from review_loop.agents.review_prompt import (
    DEFAULT_DIFF_BUDGET,
    ReviewPrompt,
    build_review_prompt,
    correction_prompt,
)
from review_loop.orchestrator.dispatcher import SESSION_FILE, Dispatcher, PeerRequest, resolve_peer
from review_loop.orchestrator.handoff.files import (
    append_line,
    atomic_write_bytes,
    read_bytes,
    rename,
    unlink,
    utc_now,
)
from review_loop.orchestrator.handoff.git import current_branch, ensure_layout, rev_parse
from review_loop.orchestrator.handoff.recording import RecordingError, append_record, record_error
from review_loop.orchestrator.handoff.trust import note_untrusted, reporting, reporting_async
from review_loop.orchestrator.log import log_event
from review_loop.orchestrator.workflows.pending_answer import (
    PendingAnswer,
    clear_answer,
    keep_answer,
    prompt_digest,
    take_answer,
)
from review_loop.orchestrator.workflows.review_store import (
    PacketRef,
    StateRecoveryRequiredError,
    branch_slugs,
    create_packet,
    latest_trusted_packet,
    ledger_from_state,
    ledger_to_state,
    load_state,
    packet_lock,
    packet_problem,
    read_packet,
    resolve_packet_arg,
    save_state,
    sha256_bytes,
)

PWC = Verdict.PASS_WITH_CONCERNS.value
DEFAULT_SCOPE = "auto-loop"
LARGE_DIFF_LINES = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPlan:
    """A validated ``run`` command line."""

    reviewer: str | None = None
    host: str | None = None
    completion: str | None = None
    base: str | None = None
    rounds: str | None = None
    cont: bool = False
    scope: str = DEFAULT_SCOPE
    packet: str | None = None
    paths: list[str] | None = None
    intake: bool = False
    timeout_ms: int | None = None
    diff_budget: int = DEFAULT_DIFF_BUDGET


EvidenceFn = Callable[[Path, str, list[str] | None], tuple[Any, str]]


def _default_evidence(repo: Path, base: str, paths: list[str] | None) -> tuple[Any, str]:
    from review_loop.orchestrator.workflows.evidence import compute_evidence

    return compute_evidence(repo, base, paths)


def parse_rounds(value: str | None) -> tuple[str, int | float] | None:
    """``N`` (absolute) or ``+N`` (added to the persisted budget), ``N`` any finite number
    from 1 as the original reads it (``Number()``: ``2``, ``1e1``, ``1.5``)."""
    from review_loop.agents.js_number import js_number, plain

    if value is None or value == "":
        return None
    text = value.strip()
    kind = "add" if text.startswith("+") else "set"
    number = js_number(text[1:] if kind == "add" else text)
    if number is None or number < 1:
        raise InputError("--rounds", f"{value!r} is not a round count", "N or +N with N ≥ 1")
    return kind, plain(number)


def validate_plan(plan: RunPlan) -> None:
    """Refuse impossible combinations before anything is written."""
    if plan.intake and (plan.cont or plan.packet):
        raise InputError("--intake", "cannot be combined with --continue or --packet")
    if plan.completion not in (None, "pass", "review"):
        raise InputError("--completion", f"{plan.completion!r}", "pass or review")
    if not valid_scope(plan.scope):
        raise InputError(
            "--scope", f"{plan.scope!r}", "1-3 kebab-case words, at most 24 characters"
        )
    parse_rounds(plan.rounds)


def _identity(repo: Path) -> str:
    return branch_identity(current_branch(repo), rev_parse(repo, "HEAD", field="HEAD"))


# -- results ------------------------------------------------------------------------------


def _fail_closed(code: str, message: str, ref: PacketRef, **extra: Any) -> dict[str, Any]:
    return {
        "ok": False,
        "status": code,
        "code": code,
        "message": message,
        "packetPath": str(ref.path),
        "packetId": ref.packet_id,
        **extra,
    }


def state_view(state: dict[str, Any]) -> dict[str, Any]:
    """The run state as the original prints it in a result: ``evidenceRound<N>`` is
    ``true`` (the frozen evidence's record stays in ``state.evidence``), and a finding's
    ``targetFiles`` in ``findingCatalog`` is the files joined with ``", "``."""
    view = {
        key: True if re.fullmatch(r"evidenceRound\d+", key) and value else value
        for key, value in state.items()
    }
    catalog = state.get("findingCatalog")
    if isinstance(catalog, dict):
        view["findingCatalog"] = {
            fid: {**entry, "targetFiles": ", ".join(map(str, entry["targetFiles"]))}
            if isinstance(entry, dict) and isinstance(entry.get("targetFiles"), list)
            else entry
            for fid, entry in catalog.items()
        }
    return view


def _findings_out(ledger: Ledger, ids: list[str]) -> list[dict[str, Any]]:
    # The original's finding shape (docs/compatibility.md): targetFiles is a string.
    return [ledger.catalog[fid].document() for fid in ids]


# -- run ----------------------------------------------------------------------------------


def _trusted_packet_of(repo: Path, plan: RunPlan, slugs: tuple[str, ...]) -> PacketRef | None:
    """The packet this call works on, or ``None`` for a new one.

    Only a packet whose record is authenticated is continued (or reported as archived): an
    untrusted one (a state without a valid MAC, a staged or archived packet without a
    state) is reported and the review runs again on a new packet, with a real reviewer
    call. ``--continue`` passes over untrusted packets to the newest trusted one.
    """
    if plan.packet:
        ref = resolve_packet_arg(repo, slugs, plan.packet)
        problem = packet_problem(ref)
        if problem is None:
            return ref
        note_untrusted(*problem)
        return None
    if not plan.cont:
        return None
    active, skipped = latest_trusted_packet(repo, slugs[0], archived=False)
    if active is not None:
        return active
    archived, more = latest_trusted_packet(repo, slugs[0], archived=True)
    if archived is not None or not skipped + more:
        # As the original: nothing active to continue is a usage error (exit 1). An
        # archived packet's verdict is reported with --continue --packet <path>.
        raise InputError(
            "--continue",
            "run --continue requires an active packet",
            "run first, or --continue --packet <archived packet> to see its verdict",
        )
    return None


@reporting_async
async def run_review(
    dispatcher: Dispatcher, plan: RunPlan, *, evidence_fn: EvidenceFn | None = None
) -> dict[str, Any]:
    """One ``run`` call. Returns the result document (``ok`` false → exit 2).

    The result names what was not believed (``untrusted``) and the files git tracks under
    ``.review-handoff/`` (``tracked``); see ``docs/authenticated-state.md``.

    Raises:
        InputError: bad options, or a packet in a state this call cannot work on.
        StateError: ``PACKET_LOCK_HELD``.
    """
    validate_plan(plan)
    repo = dispatcher.repo
    ensure_layout(repo)
    identity = _identity(repo)
    slugs = branch_slugs(identity)
    ref = _trusted_packet_of(repo, plan, slugs)
    if ref is not None and ref.archived:
        if not plan.cont:
            raise InputError("--packet", "the packet is archived", "an active packet")
        read_packet(ref, identity)
        state = load_state(ref.runtime) or {}
        current = await anyio.to_thread.run_sync(_covers_the_tree, repo, state.get("evidence"))
        return {
            "ok": True,
            "status": "already_archived",
            "packetPath": str(ref.path),
            "packetId": ref.packet_id,
            "verdict": state.get("lastVerdict"),
            "round": state.get("round"),
            "evidence": state.get("evidence"),
            "evidenceCurrent": current,
            "state": state_view(state),  # the original's key: the run state
            "message": "Packet already archived; start a new packet with run (no --continue)."
            + ("" if current else " Its verdict covers other code than the tree has now."),
        }
    if ref is None:
        base_sha = rev_parse(repo, plan.base or "HEAD")
        paths = _normalise_paths(plan.paths)
        ref = create_packet(
            repo,
            slugs[0],
            plan.scope,
            lambda packet_id: new_packet_text(
                packet_id=packet_id,
                branch=identity,
                scope=plan.scope,
                created=utc_now(),
                intake=plan.intake,
                base_sha=base_sha,
                paths=paths,
            ),
        )
    with packet_lock(ref.runtime):
        return await _run_locked(dispatcher, plan, ref, identity, evidence_fn or _default_evidence)


def _covers_the_tree(repo: Path, recorded: Any) -> bool:
    """Whether an archived verdict's evidence equals the tree's evidence now.

    ``baseSha + pathFilter + digest``, recomputed with the recorded base and filter.
    """
    from review_loop.agents.evidence import Evidence
    from review_loop.orchestrator.workflows.evidence import attest_evidence

    try:
        evidence = Evidence.model_validate(recorded)
    except ValueError:
        return False
    return evidence.same_snapshot(attest_evidence(repo, evidence.baseSha, evidence.pathFilter))


def _normalise_paths(paths: list[str] | None) -> list[str] | None:
    from review_loop.agents.evidence import normalize_path_filter

    return normalize_path_filter(paths) if paths else None


def _check_state(ref: PacketRef, data: bytes) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(failure result or None, state)`` — the fail-closed checks of §3.7 step 5."""
    try:
        state = load_state(ref.runtime)
    except StateRecoveryRequiredError as error:
        return _fail_closed("STATE_RECOVERY_REQUIRED", str(error), ref), {}
    if state is None:
        return None, {}
    if state.get("pendingStage"):
        return (
            _fail_closed(
                "STATE_RECOVERY_REQUIRED",
                "a previous run stopped while writing a stage "
                f"({state['pendingStage']}); inspect the packet and the state by hand",
                ref,
            ),
            state,
        )
    pinned = state.get("packetHash")
    if pinned and sha256_bytes(data) != pinned:
        return (
            _fail_closed(
                "packet_hash_mismatch",
                "the packet changed outside review-loop since its last recorded write; "
                "restore it (or record the fix with fix-completion) before continuing",
                ref,
                expected=pinned,
                actual=sha256_bytes(data),
                expectedHash=pinned,  # the original's names
                actualHash=sha256_bytes(data),
            ),
            state,
        )
    if int(state.get("round") or 0) > 0 and ledger_from_state(state) is None:
        try:
            _, body = split_packet(data.decode("utf-8"))
            stages = [a for a, _ in h1_sections(body) if a in ("review_findings", "re_review")]
            if len(stages) != int(state.get("round") or 0):
                raise ValueError(f"{len(stages)} review stages for round {state.get('round')}")
            rebuilt = rebuild_ledger(body)
        except (ValueError, UnicodeDecodeError) as error:
            return (
                _fail_closed(
                    "STATE_MIGRATION_REQUIRED",
                    "the state's findings ledger is incomplete and the packet's stages "
                    f"cannot rebuild it: {error}",
                    ref,
                ),
                state,
            )
        state.update(ledger_to_state(rebuilt))
        state["ledgerRebuiltFromPacket"] = True
    return None, state


def _budget(plan: RunPlan, state: dict[str, Any]) -> int | float:
    persisted: int | float = state.get("roundsBudget") or DEFAULT_ROUNDS
    rounds = parse_rounds(plan.rounds)
    if rounds is None:
        return persisted
    kind, n = rounds
    return persisted + n if kind == "add" else n


@dataclass(frozen=True, slots=True)
class _Round:
    """This round's settings: seeded from the command line and the packet's state."""

    number: int
    reviewer: str
    product: str
    completion: str
    budget: int | float  # the original takes any number from 1 (--rounds 1.5)
    base_sha: str
    paths: list[str] | None


@dataclass(frozen=True, slots=True)
class _Frozen:
    """This round's frozen evidence: its record, its diff text, and the file it is in."""

    evidence: dict[str, Any]
    diff_text: str
    path: Path


async def _run_locked(
    dispatcher: Dispatcher,
    plan: RunPlan,
    ref: PacketRef,
    identity: str,
    evidence_fn: EvidenceFn,
) -> dict[str, Any]:
    """One round under the packet's lock, as its steps: open the packet's state (fail
    closed), check the round may start, seed it, stop on an exhausted budget, freeze the
    evidence, ask the reviewer, record the round."""
    data, meta, body = read_packet(ref, identity)
    ended, state = _open_state(ref, data, meta, body)
    if ended is not None:
        return ended
    _check_round_order(plan, state, meta, body)
    seed = _seed_round(dispatcher, plan, ref, state, data)
    ledger = ledger_from_state(state) or Ledger()
    if seed.number > seed.budget:
        save_state(ref.runtime, state)
        return _budget_exhausted(ref, state, ledger, body, seed.budget)
    warnings: list[str] = []
    frozen = await _freeze_evidence(dispatcher.repo, ref, state, seed, evidence_fn, warnings)
    if isinstance(frozen, dict):
        return frozen
    prompt = _round_prompt(plan, ref, body, seed, frozen, ledger, warnings)
    asked = await _ask_reviewer(
        dispatcher, plan, ref, state, prompt, ledger, seed.reviewer, seed.product, warnings
    )
    if isinstance(asked, dict):
        return asked
    return _record_round(
        _Recording(
            ref=ref,
            state=state,
            meta=meta,
            body=body,
            asked=asked,
            evidence=frozen.evidence,
            warnings=warnings,
            completion=seed.completion,
            reviewer=seed.reviewer,
        )
    )


def _open_state(
    ref: PacketRef, data: bytes, meta: dict[str, str], body: str
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(result that ends the call or None, state)``: the packet's run state, opened.

    Owns the fail-closed checks (:func:`_check_state`), the archived packet, and the
    first state of a packet that holds only its handoff. A packet with review stages
    but no state is refused, never started over: nothing vouches for those stages.
    """
    failure, state = _check_state(ref, data)
    if failure is not None:
        return failure, state
    if meta.get("lifecycle_state") == "archived":
        return {
            "ok": True,
            "status": "already_archived",
            "packetPath": str(ref.path),
            "packetId": ref.packet_id,
            "state": state_view(state),  # the original's key: the run state
            "message": "Packet already archived.",
        }, state
    if not state:
        if any(a not in ("review_handoff", "review_intake") for a, _ in h1_sections(body)):
            return _fail_closed(
                "STATE_MIGRATION_REQUIRED",
                "the packet has review stages but no run state",
                ref,
            ), state
        state = {"round": 0, "packetHash": sha256_bytes(data)}
    return None, state


def _check_round_order(
    plan: RunPlan, state: dict[str, Any], meta: dict[str, str], body: str
) -> None:
    """Refuse a round the packet is not ready for (usage errors, nothing written).

    Round 1 needs the packet's single handoff (or intake); a later round needs
    ``--continue`` and a trailing ``# Fix Completion``, so a re-review always answers
    a recorded fix.
    """
    previous_round = int(state.get("round") or 0)
    anchors = [a for a, _ in h1_sections(body)]
    if previous_round == 0:
        if len(anchors) != 1 or anchors[0] not in ("review_handoff", "review_intake"):
            raise InputError(
                "--packet",
                "a first round needs exactly one H1, '# Review Handoff' or '# Review Intake'",
            )
    elif not plan.cont:
        raise InputError(
            "--continue",
            f"the packet already has round {previous_round} "
            f"(last verdict {state.get('lastVerdict')}); continue it or start a new packet",
            "run --continue",
        )
    elif _another_round(state, meta, anchors):
        return  # the user's "another round" after PASS_WITH_CONCERNS: a plain re-review
    elif anchors[-1:] != ["fix_completion"] or meta.get("last_anchor") != "fix_completion":
        raise InputError(
            "--continue",
            f"the packet ends with {anchors[-1] if anchors else 'nothing'} "
            f"(lifecycle {meta.get('lifecycle_state')}); a re-review needs a trailing "
            "'# Fix Completion' (record it with fix-completion"
            + (
                ", or close --reason accept-concerns"
                if state.get("lastVerdict") == "PASS_WITH_CONCERNS"
                else ""
            )
            + ")",
        )


def _another_round(state: dict[str, Any], meta: dict[str, str], anchors: list[str]) -> bool:
    """Whether the packet waits on the user's decision after PASS_WITH_CONCERNS (the
    original's "archive or another round"): another round is a plain ``run --continue``,
    the reviewer re-reviews the same packet, as in the original."""
    return (
        state.get("lastVerdict") == "PASS_WITH_CONCERNS"
        and meta.get("lifecycle_state") == "awaiting_user_decision"
        and anchors[-1:] in (["review_findings"], ["re_review"])
        and meta.get("last_anchor") == anchors[-1]
    )


def _seed_round(
    dispatcher: Dispatcher, plan: RunPlan, ref: PacketRef, state: dict[str, Any], data: bytes
) -> _Round:
    """Settle this round's reviewer, completion, budget, base and paths into ``state``
    (saved by the next step). The base is pinned by the first round, so a re-review
    reviews against the same base; ``--rounds`` on a re-review overrides the budget."""
    repo = dispatcher.repo
    previous_round = int(state.get("round") or 0)
    # The seed: reviewer selection follows the saved preference order, without the host.
    reviewer = (
        plan.reviewer or state.get("reviewer") or dispatcher.prefs.default_reviewer(plan.host)
    )
    peer = resolve_peer(reviewer, dispatcher.prefs, field="--reviewer")
    # PASS_WITH_CONCERNS waits on the user by default, as the original; "pass" fixes them.
    completion = plan.completion or state.get("completion") or "review"
    budget = _budget(plan, state)
    pinned_base = state.get("baseSha")
    if pinned_base and plan.base and rev_parse(repo, plan.base) != pinned_base:
        raise InputError("--base", f"the packet's base is pinned to {pinned_base}")
    base_sha = pinned_base or rev_parse(repo, plan.base or "HEAD")
    paths = _normalise_paths(plan.paths) or state.get("paths") or None
    state.update(
        {
            "baseSha": base_sha,
            "reviewer": reviewer,
            "completion": completion,
            "roundsBudget": budget,
            "round": previous_round,
            "pathFilter": paths,
            "paths": paths,
            "packetPath": str(ref.path),
            "roundStartPacketHash": sha256_bytes(data),
            "updated": utc_now(),
        }
    )
    return _Round(
        number=previous_round + 1,
        reviewer=reviewer,
        product=peer.product,
        completion=completion,
        budget=budget,
        base_sha=base_sha,
        paths=paths,
    )


async def _freeze_evidence(
    repo: Path,
    ref: PacketRef,
    state: dict[str, Any],
    seed: _Round,
    evidence_fn: EvidenceFn,
    warnings: list[str],
) -> _Frozen | dict[str, Any]:
    """This round's evidence, frozen once per round; or ``evidence_hash_mismatch``.

    A retried round reviews exactly what was frozen (re-hashed on every reuse; fail
    closed when the file changed), so a verdict always names the code it judged.
    Records the changed-line count and saves the state.
    """
    round_number = seed.number
    evidence_path = ref.runtime / "evidence" / f"round-{round_number}.diff"
    frozen_digest = state.get(f"evidenceDigest{round_number}")
    frozen = bool(frozen_digest) and evidence_path.exists()
    if frozen:
        reused = await _reuse_frozen(
            repo, ref, state, seed, evidence_fn, evidence_path, frozen_digest, warnings
        )
        if isinstance(reused, dict):
            return reused
        evidence, diff_text = reused
    else:
        computed, diff_text = await anyio.to_thread.run_sync(
            evidence_fn, repo, seed.base_sha, seed.paths
        )
        evidence = computed.model_copy(update={"sourceRound": round_number}).model_dump(mode="json")
        atomic_write_bytes(evidence_path, diff_text.encode("utf-8"))
        state[f"evidenceRound{round_number}"] = evidence
        state[f"evidenceDigest{round_number}"] = evidence["digest"]
    changed_lines = sum(
        1
        for line in diff_text.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )
    if changed_lines > LARGE_DIFF_LINES:
        warnings.append(f"large diff: {changed_lines} changed lines (> {LARGE_DIFF_LINES})")
    state["evidencePath"] = str(evidence_path)
    state["lineCount"] = changed_lines  # the original counts changed (+/-) lines
    # ... but its report counts every line of the frozen evidence a retried round reuses
    # (the diff text split on newlines): the report's count, as the original's.
    state["reportLineCount"] = len(diff_text.split("\n")) if frozen else changed_lines
    save_state(ref.runtime, state)
    return _Frozen(evidence, diff_text, evidence_path)


async def _reuse_frozen(
    repo: Path,
    ref: PacketRef,
    state: dict[str, Any],
    seed: _Round,
    evidence_fn: EvidenceFn,
    evidence_path: Path,
    frozen_digest: Any,
    warnings: list[str],
) -> tuple[dict[str, Any], str] | dict[str, Any]:
    """The frozen evidence of this round, re-hashed; ``evidence_hash_mismatch`` (fail
    closed, state saved) when the file changed on disk. Warns when the working tree
    moved since it was frozen: the round still reviews the frozen evidence."""
    round_number = seed.number
    diff_bytes = read_bytes(evidence_path)
    if sha256_bytes(diff_bytes) != frozen_digest:
        save_state(ref.runtime, state)
        return _fail_closed(
            "evidence_hash_mismatch",
            f"the frozen evidence of round {round_number} changed on disk",
            ref,
            evidencePath=str(evidence_path),
            expected=frozen_digest,
            actual=sha256_bytes(diff_bytes),
        )
    diff_text = diff_bytes.decode("utf-8")
    evidence = dict(state.get(f"evidenceRound{round_number}") or {})
    current, _ = await anyio.to_thread.run_sync(evidence_fn, repo, seed.base_sha, seed.paths)
    if current.digest != frozen_digest:
        warnings.append(
            f"the working tree changed since round {round_number}'s evidence was frozen; "
            "this round reviews the frozen evidence"
        )
    return evidence, diff_text


def _round_prompt(
    plan: RunPlan,
    ref: PacketRef,
    body: str,
    seed: _Round,
    frozen: _Frozen,
    ledger: Ledger,
    warnings: list[str],
) -> ReviewPrompt:
    """The reviewer's question for this round. Warns when the diff was summarised: a
    passing verdict must then list the summarised paths under ``## Coverage``."""
    prompt = build_review_prompt(
        round_number=seed.number,
        packet_id=ref.packet_id,
        packet_path=str(ref.path),
        packet_body=body,
        base_sha=seed.base_sha,
        evidence_path=str(frozen.path),
        paths=seed.paths,
        changed=list(frozen.evidence.get("coveredPaths") or []),
        diff_text=frozen.diff_text,
        ledger=ledger,
        budget=plan.diff_budget,
    )
    if prompt.must_cover:
        warnings.append(
            f"diff too large for one prompt: {len(prompt.must_cover)} path(s) summarised; "
            "a passing verdict must list them under ## Coverage"
        )
    return prompt


# -- the reviewer's answer: asked once, then recorded or kept -------------------------------


@dataclass(frozen=True, slots=True)
class _Answered:
    """A parsed reviewer answer for this round, how it came, and what was not recorded."""

    answer: ReviewAnswer
    ledger: Ledger
    delivery: Delivery
    text: str
    kept_at: Path | None
    record_error: RecordError | None


async def _ask_reviewer(
    dispatcher: Dispatcher,
    plan: RunPlan,
    ref: PacketRef,
    state: dict[str, Any],
    prompt: ReviewPrompt,
    ledger: Ledger,
    reviewer: str,
    product: str,
    warnings: list[str],
) -> _Answered | dict[str, Any]:
    """This round's answer (with one correction round), or the result that ends the call.

    An answer already delivered for exactly this question (kept by :func:`_keep` when a
    previous call could not record its round) is used instead of asking again.
    """
    runtime, repo, round_number = ref.runtime, dispatcher.repo, int(state["round"]) + 1
    failures: list[RecordError] = []
    asking = _Asking(dispatcher, plan, ref, state, prompt, reviewer, product, warnings, failures)
    found = take_answer(runtime, repo, ref.packet_id, round_number, prompt.text)
    if found is not None:
        delivery, text, corrected = _use_kept(*found, repo, round_number, warnings)
        kept_at: Path | None = found[1]
    else:
        asked = await _ask_first(asking)
        if isinstance(asked, dict):
            return asked
        (delivery, text, kept_at), corrected = asked, False
    outcome = _check_answer(text, round_number, ledger, prompt)
    if isinstance(outcome, str) and not corrected:
        retried = await _ask_correction(asking, delivery, outcome)
        if isinstance(retried, dict):
            return retried
        delivery, text, kept_at = retried
        outcome = _check_answer(text, round_number, ledger, prompt)
    if isinstance(outcome, str):
        return _malformed(ref, repo, state, round_number, outcome)
    answer, new_ledger = outcome
    first_failure = failures[0] if failures else None
    return _Answered(answer, new_ledger, delivery, text, kept_at, first_failure)


def _use_kept(
    kept: PendingAnswer, kept_at: Path, repo: Path, round_number: int, warnings: list[str]
) -> tuple[Delivery, str, bool]:
    """``(delivery, text, corrected)`` of a kept answer: nobody is asked again, and the
    result says so. A kept correction is not corrected twice."""
    log_event("kept-answer-used", round=round_number, path=str(kept_at), level="warning")
    warnings.append(f"the reviewer's answer kept at {kept_at} was used; nobody was asked")
    delivery = Delivery(
        state=DeliveryState.DELIVERED,
        peer=kept.reviewer,
        product=kept.product,
        sessionId=kept.sessionId,
        attempts=[],
        cwd=str(repo),
    )
    return delivery, kept.text, kept.correction


@dataclass(frozen=True, slots=True)
class _Asking:
    """This round's question: who asks which reviewer about which packet, with what
    prompt; the warnings and the unwritten records the asking collects (lists it appends
    to). :func:`_ask_first` and :func:`_ask_correction` share it."""

    dispatcher: Dispatcher
    plan: RunPlan
    ref: PacketRef
    state: dict[str, Any]
    prompt: ReviewPrompt
    reviewer: str
    product: str
    warnings: list[str]
    failures: list[RecordError]


async def _ask_first(asking: _Asking) -> tuple[Delivery, str, Path | None] | dict[str, Any]:
    """``(delivery, text, kept at)`` of this round's question, or ``DELIVERY_UNKNOWN``.

    Round 1 starts a new session; a re-review resumes the stored one when it belongs to
    this product, so the reviewer keeps what it said. ``round_started`` is recorded
    first: when it cannot be, nothing is asked. The answer is kept before anything else.
    """
    ref, state, prompt, warnings = asking.ref, asking.state, asking.prompt, asking.warnings
    dispatcher, reviewer = asking.dispatcher, asking.reviewer
    runtime, repo, round_number = ref.runtime, dispatcher.repo, int(state["round"]) + 1
    resume = _stored_session(runtime, asking.product) if round_number > 1 else None
    if round_number > 1 and resume is None:
        warnings.append("no stored reviewer session for this product: a new session was started")
    unwritten = append_record(
        runtime / "events.jsonl",
        {
            "event": "round_started",
            "at": utc_now(),
            "round": round_number,
            "reviewer": reviewer,
        },
    )
    if unwritten is not None:
        raise RecordingError(unwritten)  # nothing was asked: no answer to lose
    delivery = await dispatcher.consult(
        PeerRequest(
            peer=reviewer,
            prompt=prompt.text,
            record_dir=runtime,
            resume_session_id=resume,
            timeout_ms=asking.plan.timeout_ms,
            stop_files=(runtime / "STOP",),
        )
    )
    if not delivery.ok or delivery.reply is None:
        return _delivery_unknown(ref, state, delivery, round_number)
    if delivery.degraded:
        warnings.append(f"reviewer session not resumed ({delivery.degradedReason}): new session")
    text = delivery.reply.text
    kept_at = _keep(ref, repo, round_number, prompt, delivery, text, False, asking.failures)
    return delivery, text, kept_at


async def _ask_correction(
    asking: _Asking, delivery: Delivery, problem: str
) -> tuple[Delivery, str, Path | None] | dict[str, Any]:
    """The one correction round: the answering session resumed with what was wrong, its
    answer kept like the first; ``DELIVERY_UNKNOWN`` when it does not arrive."""
    ref, state, prompt, dispatcher = asking.ref, asking.state, asking.prompt, asking.dispatcher
    runtime, round_number = ref.runtime, int(state["round"]) + 1
    session = delivery.sessionId
    retry = await dispatcher.consult(
        PeerRequest(
            peer=asking.reviewer,
            prompt=correction_prompt(prompt, problem, round_number, resumed=bool(session)),
            record_dir=runtime,
            resume_session_id=session,
            timeout_ms=asking.plan.timeout_ms,
            stop_files=(runtime / "STOP",),
        )
    )
    if not retry.ok or retry.reply is None:
        return _delivery_unknown(ref, state, retry, round_number, correction=True)
    text = retry.reply.text
    kept_at = _keep(ref, dispatcher.repo, round_number, prompt, retry, text, True, asking.failures)
    return retry, text, kept_at


def _malformed(
    ref: PacketRef, repo: Path, state: dict[str, Any], round_number: int, problem: str
) -> dict[str, Any]:
    """``malformed_reviewer_output`` after the correction round. The answer was judged and
    refused, so its kept copy is cleared: the next run asks again rather than reusing it."""
    clear_answer(ref.runtime, repo, ref.packet_id, round_number)
    save_state(ref.runtime, state)
    return {
        "ok": False,
        "status": "malformed_reviewer_output",
        "message": f"Reviewer output malformed after one correction: {problem}",
        "error": problem,
        "round": round_number,
        "packetPath": str(ref.path),
        "packetId": ref.packet_id,
        "answerPath": str(ref.runtime / "answers" / f"round-{round_number}.correction.md"),
    }


def _keep(
    ref: PacketRef,
    repo: Path,
    round_number: int,
    prompt: ReviewPrompt,
    delivery: Delivery,
    text: str,
    correction: bool,
    failures: list[RecordError],
) -> Path | None:
    """Keep a delivered answer (signed) before anything else is written; save its copy
    under ``answers/``. Failures are collected, never raised: the answer is in hand."""
    if delivery.recordError is not None:
        failures.append(delivery.recordError)
    where, failed = keep_answer(
        ref.runtime,
        PendingAnswer(
            repo=str(repo.resolve()),
            packetId=ref.packet_id,
            round=round_number,
            promptSha256=prompt_digest(prompt.text),
            reviewer=delivery.peer,
            product=delivery.product,
            sessionId=delivery.sessionId,
            text=text,
            correction=correction,
            deliveredAt=utc_now(),
        ),
    )
    failures.extend(e for e in (failed,) if e is not None)
    answer_path = (
        ref.runtime / "answers" / f"round-{round_number}{'.correction' if correction else ''}.md"
    )
    try:
        atomic_write_bytes(answer_path, text.encode("utf-8"))
    except OSError as error:
        failures.append(record_error(answer_path, error))
    return where


@dataclass(frozen=True, slots=True)
class _Recording:
    """A round to record: its packet (state, front matter, body), the reviewer's answer,
    the frozen evidence, the warnings so far and the round's settings. The recording
    steps (:func:`_write_round`, :func:`_write_stage`, :func:`_settle_state`) share it
    instead of passing the same ten values along; ``state`` is updated in place."""

    ref: PacketRef
    state: dict[str, Any]
    meta: dict[str, str]
    body: str
    asked: _Answered
    evidence: dict[str, Any]
    warnings: list[str]
    completion: str
    reviewer: str


def _record_round(rec: _Recording) -> dict[str, Any]:
    """Write the round (:func:`_write_round`); when that fails, report ``RECORD_FAILED``
    with the answer, the path and the errno, and keep the answer for the retry."""
    ref, asked = rec.ref, rec.asked
    round_number = asked.answer.round
    try:
        result = _write_round(rec)
    except OSError as error:
        return _record_failed(ref, rec.state, asked, record_error(_failed_path(error, ref), error))
    clear_answer(ref.runtime, ref.repo, ref.packet_id, round_number)
    if asked.record_error is not None:
        result["recordError"] = asked.record_error.document()
    return result


def _failed_path(error: OSError, ref: PacketRef) -> Path:
    """The file an ``OSError`` names, else the packet (the round's main record)."""
    return Path(error.filename) if isinstance(error.filename, str) else ref.path


def _record_failed(
    ref: PacketRef, state: dict[str, Any], asked: _Answered, failed: RecordError
) -> dict[str, Any]:
    """``RECORD_FAILED``: the answer arrived and is printed; the round is not recorded."""
    runtime, round_number = ref.runtime, asked.answer.round
    with suppress(OSError):
        if sha256_bytes(read_bytes(ref.path)) == state.get("roundStartPacketHash"):
            # The stage never reached the packet: undo the marker so the retry may run.
            state["pendingStage"] = None
            save_state(runtime, state)
    log_event("record-failed", level="error", path=failed.path, errno=failed.errno)
    if asked.kept_at is not None:
        retry = (
            f"The answer is kept (signed) at {asked.kept_at}. Free space or make it writable, "
            "then run --continue: the kept answer is used, the reviewer is not asked again."
        )
    else:
        retry = (
            "The answer could not be kept anywhere; it is printed here (text). A retry "
            "would ask the reviewer again."
        )
    return {
        "ok": False,
        "status": "RECORD_FAILED",
        "code": "RECORD_FAILED",
        "message": f"The reviewer answered round {round_number} ({asked.answer.verdict.value}), "
        f"but the round could not be recorded: {failed.message} [{failed.errno}]. {retry}",
        "recordError": failed.document(),
        "round": round_number,
        "verdict": asked.answer.verdict.value,
        "reviewer": asked.delivery.peer,
        "sessionId": asked.delivery.sessionId,
        "text": asked.text,
        "answerKept": str(asked.kept_at) if asked.kept_at else None,
        "packetPath": str(ref.path),
        "packetId": ref.packet_id,
    }


def _stored_session(runtime: Path, product: str) -> str | None:
    """The stored reviewer session id, when it belongs to ``product``."""
    import json

    try:
        record = json.loads(read_bytes(runtime / SESSION_FILE).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    if not isinstance(record, dict) or record.get("product") != product:
        return None
    sid = record.get("sessionId")
    return sid if isinstance(sid, str) and sid else None


def _check_answer(
    text: str, round_number: int, ledger: Ledger, prompt: ReviewPrompt
) -> tuple[ReviewAnswer, Ledger] | str:
    """The parsed answer and the new ledger, or what is wrong with the answer."""
    try:
        answer = parse_answer(text, round_number, ledger.finding_ids)
        new_ledger = apply_answer(ledger, answer)
        missing = missing_coverage(answer, prompt.must_cover)
        if missing:
            raise ReviewFormatError(
                "the diff was summarised and a passing verdict must list every summarised "
                f"path under '## Coverage'; missing: {', '.join(missing)}"
            )
    except ReviewFormatError as error:
        return str(error)
    return answer, new_ledger


def _delivery_unknown(
    ref: PacketRef,
    state: dict[str, Any],
    delivery: Delivery,
    round_number: int,
    *,
    correction: bool = False,
) -> dict[str, Any]:
    save_state(ref.runtime, state)
    from review_loop.orchestrator.explain import failure_words

    detail = failure_words(delivery)  # "non-zero exit N: …" as the original says it
    said = delivery.reason if detail == delivery.reason else f"{delivery.reason}: {detail}"
    return {
        "ok": False,
        "status": "DELIVERY_UNKNOWN",
        "code": "DELIVERY_UNKNOWN",
        "reason": delivery.reason,
        "delivery": delivery.state.value,
        # The original's words; "no retry" is true only when one attempt was made.
        "message": "Reviewer invoke failed "
        + ("(no retry)" if len(delivery.attempts) <= 1 else f"({len(delivery.attempts)} attempts)")
        + f": {said}"
        + (" (during the correction round)" if correction else ""),
        "packetPath": str(ref.path),
        "packetId": ref.packet_id,
        "round": round_number,
        "reviewer": delivery.peer,
        "sessionId": delivery.sessionId,
        # The whole run state, as the original prints it (baseSha, packetHash, ...).
        "state": {
            **state_view(state),
            "round": state.get("round"),
            "lastVerdict": state.get("lastVerdict"),
            "lifecycleState": state.get("lifecycleState", "in_progress"),
            "pendingStage": state.get("pendingStage"),
        },
        "recommendation": "Nothing was recorded for this round. Check the reviewer, then "
        "run --continue (the frozen evidence is reused).",
    }


def _budget_exhausted(
    ref: PacketRef, state: dict[str, Any], ledger: Ledger, body: str, budget: int | float
) -> dict[str, Any]:
    unresolved = ledger.open_blocking + ledger.open_concerns
    reassessments = state.get("lastReassessments") or []
    return {
        "ok": False,
        "status": "budget_exhausted",
        "packetPath": str(ref.path),
        "packetId": ref.packet_id,
        "openBlocking": ledger.open_blocking,
        "unresolved": unresolved,
        "lastVerdict": state.get("lastVerdict"),
        "roundsUsed": int(state.get("round") or 0),
        "roundsBudget": budget,
        "positions": {
            "reviewer": {
                "lastVerdict": state.get("lastVerdict"),
                "openBlocking": ledger.open_blocking,
                "findingIds": ledger.finding_ids,
                "findings": _findings_out(ledger, ledger.finding_ids),
                "reassessments": reassessments,
            },
            "fixer": fixer_position(body),
        },
        "message": f"All {budget} review rounds are used and findings remain open.",
        "recommendation": "Review both positions; to keep going, run --continue --rounds +N "
        "(N more rounds).",
    }


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a verdict does: the run's status, the packet's lifecycle, and whether a
    ``# Fix Handoff`` follows the review stage."""

    status: str
    lifecycle: str
    fix: bool


def _outcome(verdict: Verdict, completion: str) -> _Outcome:
    """The verdict under the packet's completion mode: PASS_WITH_CONCERNS is fixed with
    ``completion=pass`` and parked for the user's decision with ``completion=review``."""
    if verdict is Verdict.BLOCKED:
        return _Outcome("blocked", "blocked", True)
    if verdict is Verdict.PASS_WITH_CONCERNS and completion == "pass":
        return _Outcome("concerns_require_fix", "blocked", True)
    if verdict is Verdict.PASS_WITH_CONCERNS:
        return _Outcome("awaiting_user_decision", "awaiting_user_decision", False)
    return _Outcome("archived", "archived", False)


def _write_round(rec: _Recording) -> dict[str, Any]:
    """Record the round as its steps: render the stage, check the packet is still what
    the round started from (fail closed), write the stage, settle the state, report.
    ``OSError`` propagates to :func:`_record_round` (``RECORD_FAILED``)."""
    ref, state, answer, ledger = rec.ref, rec.state, rec.asked.answer, rec.asked.ledger
    reviewer, delivery = rec.reviewer, rec.asked.delivery
    outcome = _outcome(answer.verdict, rec.completion)
    stage, anchor = review_stage(
        answer=answer,
        ledger=ledger,
        reviewer=reviewer,
        session_id=delivery.sessionId,
        base_sha=str(state["baseSha"]),
        evidence_path=str(state.get("evidencePath")),
        digest=str(rec.evidence.get("digest")),
        fix_handoff=outcome.fix,
        completion=rec.completion,
    )
    # The packet must still be exactly what this round started from.
    current = read_bytes(ref.path)
    if sha256_bytes(current) != state.get("roundStartPacketHash"):
        save_state(ref.runtime, state)
        return _fail_closed(
            "packet_hash_mismatch",
            "the packet changed while the reviewer was running; nothing was written",
            ref,
        )
    encoded, final = _write_stage(rec, stage, anchor, outcome)
    _settle_state(rec, outcome, anchor, encoded, final)
    common: dict[str, Any] = {
        "verdict": answer.verdict.value,
        "round": answer.round,
        "packetPath": str(final.path),
        "packetId": ref.packet_id,
        "reviewer": reviewer,
        "sessionId": delivery.sessionId,
    }
    if rec.warnings:
        common["warning"] = "; ".join(rec.warnings)
    recorded = _Recorded(final, state, rec.body, ledger, rec.evidence, outcome, anchor, common)
    return _round_result(recorded)


def _write_stage(
    rec: _Recording, stage: str, anchor: str, outcome: _Outcome
) -> tuple[bytes, PacketRef]:
    """Append the stage to the packet: ``(bytes written, the packet's ref now)``.

    The state marks ``pendingStage`` before the packet is written, so a stop between
    the two writes is found (``STATE_RECOVERY_REQUIRED``), never guessed over. An
    archived round moves the packet to the archive and drops its STOP file.
    """
    ref, state, round_number = rec.ref, rec.state, rec.asked.answer.round
    now = utc_now()
    new_meta = dict(rec.meta)
    new_meta.update(
        {
            "updated": now,
            "last_anchor": anchor,
            "lifecycle_state": outcome.lifecycle,
            "round": str(round_number),
            "base_sha": str(state["baseSha"]),
            "reviewer": rec.reviewer,
            "mode": "auto",
        }
    )
    text = join_packet(new_meta, rec.body.rstrip("\n") + "\n" + stage)
    encoded = text.encode("utf-8")
    state["pendingStage"] = {"round": round_number, "anchor": anchor, "at": now}
    save_state(ref.runtime, state)
    atomic_write_bytes(ref.path, encoded)
    final = ref
    if outcome.status == "archived":
        final = PacketRef(ref.repo, ref.slug, ref.base, archived=True)
        rename(ref.path, final.path)
        unlink(ref.runtime / "STOP", missing_ok=True)
    return encoded, final


def _settle_state(
    rec: _Recording, outcome: _Outcome, anchor: str, encoded: bytes, final: PacketRef
) -> None:
    """Save the state of the recorded round (the new ledger, the packet's hash pinned for
    the next call's check, the session a re-review resumes, ``pendingStage`` cleared),
    then note ``round_finished`` in the events, best effort."""
    ref, state, answer = rec.ref, rec.state, rec.asked.answer
    state.update(ledger_to_state(rec.asked.ledger))
    state.update(
        {
            "round": answer.round,
            "lastVerdict": answer.verdict.value,
            "lifecycle": outcome.status,
            "lifecycleState": outcome.lifecycle,
            "lastAnchor": anchor,
            "evidence": rec.evidence,
            "packetHash": sha256_bytes(encoded),
            "packetPath": str(final.path),
            "reviewerSessionId": rec.asked.delivery.sessionId,
            "lastReassessments": [r.model_dump(mode="json") for r in answer.reassessments],
            "pendingStage": None,
            "updated": utc_now(),
        }
    )
    save_state(ref.runtime, state)
    # The round is recorded: an unwritable event line must not turn it into a failure.
    append_record(
        ref.runtime / "events.jsonl",
        {
            "event": "round_finished",
            "at": utc_now(),
            "round": answer.round,
            "verdict": answer.verdict.value,
            "status": outcome.status,
        },
    )


@dataclass(frozen=True, slots=True)
class _Recorded:
    """A round just recorded: what its result reports."""

    final: PacketRef
    state: dict[str, Any]
    body: str
    ledger: Ledger
    evidence: dict[str, Any]
    outcome: _Outcome
    anchor: str
    common: dict[str, Any]


def _round_result(done: _Recorded) -> dict[str, Any]:
    """The result of a recorded round, by its status: archived, parked for the user,
    or findings to fix (see :func:`_fix_result`)."""
    ledger, evidence, common = done.ledger, done.evidence, done.common
    verdict, round_number = common["verdict"], common["round"]
    if done.outcome.status == "archived":
        return {
            "ok": True,
            "status": "archived",
            **common,
            "message": f"Review passed ({verdict}) on the frozen evidence of round "
            f"{round_number}; packet archived.",
            "evidence": evidence,
            "report": {
                "verdict": verdict,
                "rounds": round_number,
                "findingIds": ledger.finding_ids,
                "lineCount": done.state.get("reportLineCount", done.state.get("lineCount")),
            },
        }
    if done.outcome.status == "awaiting_user_decision":
        return {
            "ok": True,
            "status": "awaiting_user_decision",
            **common,
            "openConcerns": ledger.open_concerns,
            "concerns": _findings_out(ledger, ledger.open_concerns),
            "evidence": evidence,
            "message": "PASS_WITH_CONCERNS in review mode: the user decides — fix "
            "(fix-completion, then run --continue) or accept (close --reason accept-concerns).",
        }
    return _fix_result(done)


def _fix_result(done: _Recorded) -> dict[str, Any]:
    """Findings to fix: ``needsContinue``, or ``budget_exhausted`` (with both positions)
    when BLOCKED used the last budgeted round and no ``--rounds`` override is set."""
    ledger, state, common, lifecycle = done.ledger, done.state, done.common, done.outcome.lifecycle
    status, round_number = done.outcome.status, common["round"]
    open_ids = ledger.open_blocking + ledger.open_concerns
    budget: int | float = state.get("roundsBudget") or DEFAULT_ROUNDS
    if status == "blocked" and round_number >= budget and not state.get("budgetOverride"):
        # As the original: BLOCKED on the last budgeted round stops now (exit 2), never
        # asking for a fix pass no round is left to review. The round is recorded.
        return {
            **_budget_exhausted(done.final, state, ledger, done.body, budget),
            **common,
            "findings": _findings_out(ledger, open_ids),
            "lastAnchor": done.anchor,
            "lifecycleState": lifecycle,
            "evidence": done.evidence,
        }
    return {
        "ok": True,
        "status": status,
        **common,
        "openBlocking": ledger.open_blocking,
        "openConcerns": ledger.open_concerns,
        "findings": _findings_out(ledger, open_ids),
        "lastAnchor": done.anchor,
        "lifecycleState": lifecycle,
        "evidence": done.evidence,
        "needsContinue": True,
        "message": (
            "BLOCKED: fix the blocking findings"
            if status == "blocked"
            else "PASS_WITH_CONCERNS with completion=pass: fix the concerns"
        )
        + ", record fix-completion, then run --continue.",
    }


# -- fix-completion and close ---------------------------------------------------------------


def _locked_packet(repo: Path, packet: str) -> tuple[PacketRef, str]:
    ensure_layout(repo)
    identity = _identity(repo)
    ref = resolve_packet_arg(repo, branch_slugs(identity), packet)
    return ref, identity


def _untrusted(ref: PacketRef) -> dict[str, Any] | None:
    """``STATE_UNTRUSTED`` (fail closed) for a packet whose record is not authenticated.

    ``fix-completion`` and ``close`` write a new, signed state: on a forged record that
    would launder it into one this user's review-loop vouches for.
    """
    problem = packet_problem(ref)
    if problem is None:
        return None
    note_untrusted(*problem)
    path, reason = problem
    return _fail_closed(
        "STATE_UNTRUSTED",
        f"{path}: {reason}; review-loop did not write this record, so it will not build on "
        "it. Start a new review with run (no --packet).",
        ref,
    )


@reporting
def fix_completion(repo: Path, packet: str, body_text: str) -> dict[str, Any]:
    """Append the fixer's ``# Fix Completion`` and set the packet back in progress."""
    stage = normalise_fix_completion(body_text)
    ref, identity = _locked_packet(repo, packet)
    if ref.archived:
        raise InputError("--packet", "the packet is archived", "an active packet")
    refused = _untrusted(ref)
    if refused is not None:
        return refused
    with packet_lock(ref.runtime):
        data, meta, body = read_packet(ref, identity)
        failure, state = _check_state(ref, data)
        if failure is not None:
            return failure
        if not state or int(state.get("round") or 0) < 1:
            raise InputError("--packet", "the packet has no review round to answer yet")
        anchors = [a for a, _ in h1_sections(body)]
        # As the original: a Fix Completion answers a Fix Handoff or a Re-review, never the
        # first round's findings (after PASS_WITH_CONCERNS there: close, or another round).
        allowed = {"fix_handoff", "re_review"}
        last = anchors[-1] if anchors else None
        if last not in allowed or meta.get("last_anchor") != last:
            raise InputError(
                "--packet",
                f"the packet ends with {last} (last_anchor {meta.get('last_anchor')}); "
                "a Fix Completion answers a Fix Handoff or a Re-review",
            )
        now = utc_now()
        new_meta = dict(meta)
        new_meta.update(
            {"updated": now, "last_anchor": "fix_completion", "lifecycle_state": "in_progress"}
        )
        text = join_packet(new_meta, body.rstrip("\n") + "\n" + stage)
        encoded = text.encode("utf-8")
        state["pendingStage"] = {"anchor": "fix_completion", "at": now}
        save_state(ref.runtime, state)
        atomic_write_bytes(ref.path, encoded)
        state.update(
            {
                "packetHash": sha256_bytes(encoded),
                "lastAnchor": "fix_completion",
                "lifecycleState": "in_progress",
                "pendingStage": None,
                "updated": utc_now(),
            }
        )
        save_state(ref.runtime, state)
        append_line(ref.runtime / "events.jsonl", {"event": "fix_completion", "at": now})
        return {
            "ok": True,
            "status": "fix_recorded",
            "packetPath": str(ref.path),
            "packetId": ref.packet_id,
            "lastAnchor": "fix_completion",
            "lifecycleState": "in_progress",
            "round": state.get("round"),
            "openBlocking": state.get("openBlocking", []),
            "openConcerns": state.get("openConcerns", []),
            "message": "Fix Completion recorded; re-review with run --continue "
            f"--packet {ref.path}.",
            # The original's keys: the packet as written, and its hash.
            "meta": _packet_meta(text, new_meta),
            "packetHash": state["packetHash"],
        }


def _packet_meta(text: str, frontmatter: dict[str, str]) -> dict[str, Any]:
    """The original's ``readPacketMeta`` of a packet just written."""
    return {
        "text": text,
        "frontmatter": frontmatter,
        "lastAnchor": frontmatter.get("last_anchor"),
        "lifecycleState": frontmatter.get("lifecycle_state", "in_progress"),
        "packetId": frontmatter.get("packet_id"),
        "fingerprint": sha256_bytes(text.encode("utf-8")),
    }


@reporting
def close_packet(repo: Path, packet: str, reason: str) -> dict[str, Any]:
    """``close --reason accept-concerns``: the user accepted the concerns; archive."""
    if reason != "accept-concerns":
        raise InputError("--reason", f"{reason!r}", "accept-concerns")
    ref, identity = _locked_packet(repo, packet)
    if ref.archived:
        raise InputError("--packet", "the packet is already archived", "an active packet")
    refused = _untrusted(ref)
    if refused is not None:
        return refused
    with packet_lock(ref.runtime):
        data, meta, body = read_packet(ref, identity)
        failure, state = _check_state(ref, data)
        if failure is not None:
            return failure
        _require_awaiting_decision(meta, body, state)
        concerns = list(state.get("openConcerns") or [])
        evidence = state.get("evidence") or {}
        now = utc_now()
        stage = decision_closure_text(
            reason=reason, concern_ids=concerns, closed=now, evidence_digest=evidence.get("digest")
        )
        final = _archive_with_closure(ref, meta, body, state, stage, now)
        return _closed_document(ref, final, state, reason, concerns, now)


def _require_awaiting_decision(
    meta: Mapping[str, Any], body: str, state: Mapping[str, Any]
) -> None:
    """Refuse ``close`` unless the packet is a PASS_WITH_CONCERNS awaiting the user."""
    last = meta.get("last_anchor")
    anchors = [a for a, _ in h1_sections(body)]
    if (
        meta.get("lifecycle_state") != "awaiting_user_decision"
        or last not in ("review_findings", "re_review")
        or anchors[-1:] != [last]
        or state.get("lastVerdict") != "PASS_WITH_CONCERNS"
    ):
        raise StateError(
            "CLOSE_NOT_ALLOWED",
            "close needs a PASS_WITH_CONCERNS packet awaiting the user's decision "
            f"(lifecycle {meta.get('lifecycle_state')}, last anchor {last})",
        )


def _archive_with_closure(
    ref: PacketRef,
    meta: Mapping[str, Any],
    body: str,
    state: dict[str, Any],
    stage: str,
    now: str,
) -> PacketRef:
    """Append the decision closure, move the packet to the archive, record it; the archived
    packet. The pending stage is saved first, so a crash between the steps is healed."""
    new_meta = dict(meta)
    new_meta.update(
        {"updated": now, "last_anchor": "decision_closure", "lifecycle_state": "archived"}
    )
    encoded = join_packet(new_meta, body.rstrip("\n") + "\n" + stage).encode("utf-8")
    state["pendingStage"] = {"anchor": "decision_closure", "at": now}
    save_state(ref.runtime, state)
    atomic_write_bytes(ref.path, encoded)
    final = PacketRef(ref.repo, ref.slug, ref.base, archived=True)
    rename(ref.path, final.path)
    unlink(ref.runtime / "STOP", missing_ok=True)
    state.update(
        {
            "packetHash": sha256_bytes(encoded),
            "packetPath": str(final.path),
            "lastAnchor": "decision_closure",
            "lifecycleState": "archived",
            "lifecycle": "archived",
            "pendingStage": None,
            "updated": utc_now(),
        }
    )
    save_state(ref.runtime, state)
    append_line(ref.runtime / "events.jsonl", {"event": "decision_closure", "at": now})
    return final


def _closed_document(
    ref: PacketRef,
    final: PacketRef,
    state: Mapping[str, Any],
    reason: str,
    concerns: list[Any],
    now: str,
) -> dict[str, Any]:
    """``close``'s result: the archived packet and the original's report."""
    return {
        "ok": True,
        "status": "archived",
        "reason": reason,
        "packetPath": str(final.path),
        "packetId": ref.packet_id,
        "lastAnchor": "decision_closure",
        "lifecycleState": "archived",
        "originalVerdict": "PASS_WITH_CONCERNS",
        "acceptedConcernIds": concerns,
        "evidence": state.get("evidence") or {},
        "message": "The user accepted the open concerns; the verdict stays "
        "PASS_WITH_CONCERNS and the packet is archived.",
        "report": {
            # The original's report keys ...
            "originalVerdict": "PASS_WITH_CONCERNS",
            "closeReason": reason,
            "acceptedConcernIds": concerns,
            "closedAt": now,
            "lastAnchor": "decision_closure",
            "lifecycleState": "archived",
            # ... and the run's, as an archived run reports them.
            "verdict": "PASS_WITH_CONCERNS",
            "rounds": state.get("round"),
            "findingIds": state.get("findingIds", []),
            "lineCount": state.get("lineCount"),
        },
    }


__all__ = [
    "RunPlan",
    "branch_slug",
    "close_packet",
    "fix_completion",
    "parse_rounds",
    "run_review",
    "validate_plan",
]
