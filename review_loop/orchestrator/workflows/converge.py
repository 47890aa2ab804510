"""``converge``: three-party convergence of the host, Peer A and Peer B (seed 004, Phase 1).

- **A.** Both peers answer the same plan and ledger in parallel, each in a new session,
  each with its own deadline; neither sees the host's position or the other's.
- **B.** Each peer, in its own resumed session, gets the host's position and the other
  peer's latest position (and its own, so a fallback or a degraded resume still has it) and
  attacks the strongest argument. Both run in parallel. Round 1 always runs; round 2 only
  when round 1 ended with a disagreement (see :mod:`review_loop.agents.converge` for the
  explicit ``Position: AGREE|DISAGREE`` rule). At most two rounds.
- **Timeouts** follow the seed through the dispatcher: a fallback first (a product neither
  peer nor the host uses; when both peers call at once their fallback lists are disjoint),
  else one retry only on proven non-submission, else the stage is ``UNVERIFIED`` — the
  positions already obtained and every handle stay in the journal, and the next
  ``converge`` continues from the missing side only.
- Writes the "Three-party Convergence" record (Markdown and JSON) and points the ledger
  at it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from review_loop.agents.converge import (
    BLIND_REVIEWER_PRODUCT,
    MAX_B_ROUNDS,
    ConvergenceRecord,
    ConvergenceSummary,
    Ledger,
    LedgerStatus,
    PositionBlock,
    PreflightSummary,
    Result,
    continuation_prompt,
    decision_text,
    frozen_scope,
    host_scope,
    ledger_summary,
    missing_host_sections,
    parse_position,
    render_missing_dependencies,
    round_a_prompt,
    round_b_prompt,
    section_text,
)
from review_loop.agents.errors import InputError
from review_loop.agents.skills import SkillCheck
from review_loop.orchestrator.dispatcher import Dispatcher, is_installed, resolve_peer
from review_loop.orchestrator.handoff.files import atomic_write_bytes, atomic_write_json, utc_now
from review_loop.orchestrator.handoff.trust import reporting_async
from review_loop.orchestrator.workflows.converge_store import (
    Journal,
    RunPaths,
    journaled_call,
    load_ledger,
    run_lock,
    save_ledger,
    sha256_text,
)
from review_loop.prefs import Prefs

SIDES = ("A", "B")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvergeInputs:
    """A validated ``converge`` call."""

    run: str
    plan: str
    host_position: str | None  # None: round A only (the host writes it meanwhile)
    host: str | None
    peers: tuple[str, str]
    fallback: tuple[str, ...] = ()
    timeout_ms: int | None = None
    skills: tuple[SkillCheck, ...] = ()
    # the Claude the blind review will use, proven with round A when no preflight is recorded
    blind_reviewer: str = BLIND_REVIEWER_PRODUCT


def select_converge_peers(prefs: Prefs, named: list[str], host: str | None) -> list[str]:
    """Peer A and Peer B: the named peers first, then the prefs order without the host.

    The host is always skipped (three different products), whatever ``skipHost`` says.
    Returns fewer than two names when the prefs order runs out.
    """
    chosen = list(named)
    products = {resolve_peer(name, prefs).product for name in chosen}
    host_product = resolve_peer(host, prefs, field="--host").product if host else None
    for product in prefs.reviewers_for(host_product, skip_host=True):
        if len(chosen) >= 2:
            break
        if product not in products:
            chosen.append(product)
            products.add(product)
    return chosen


def plan_peers(
    prefs: Prefs,
    named: list[str],
    host: str | None,
    peer_command: str | None,
    which: Any,
) -> tuple[Prefs, list[str]]:
    """Choose Peer A and Peer B and route ``--peer-command``; may return fewer than two.

    Raises:
        InputError: more than two named, a repeated product, the host named as a peer, or
            a bad ``--peer-command``.
    """
    from review_loop.orchestrator.workflows.consult import with_peer_command

    if host is not None:
        resolve_peer(host, prefs, field="--host")
    if len(named) > 2:
        raise InputError("--peer", f"at most two peers, got {named}", "Peer A and Peer B")
    peers = select_converge_peers(prefs, named, host)
    if peer_command is not None:
        prefs, peers = with_peer_command(prefs, peers, peer_command, which)
    if len(peers) == 2:
        check_peers(prefs, peers, host)
    return prefs, peers


def check_peers(prefs: Prefs, peers: list[str], host: str | None) -> None:
    """Two peers of two products, neither the host's.

    Raises:
        InputError: too many or too few peers, a repeated product, or the host's product.
    """
    if len(peers) != 2:
        raise InputError(
            "--peer",
            f"three-way convergence needs exactly two peers, got {peers}",
            "two products other than the host (named, or from the prefs order)",
        )
    products = [resolve_peer(p, prefs).product for p in peers]
    if products[0] == products[1]:
        raise InputError("--peer", f"both peers are {products[0]!r}", "two different products")
    if host is not None:
        host_product = resolve_peer(host, prefs, field="--host").product
        if host_product in products:
            raise InputError("--peer", f"the host product {host_product!r} cannot be a peer")


def _split_fallbacks(
    prefs: Prefs, fallback: tuple[str, ...], avoid: set[str], both: bool
) -> dict[str, tuple[str, ...]]:
    """Each side's fallback list; disjoint when both sides are asked at once."""
    usable: list[str] = []
    seen: set[str] = set()
    for name in fallback:
        peer = resolve_peer(name, prefs, field="--fallback")
        if peer.product in avoid or peer.product in seen or not is_installed(peer):
            continue
        seen.add(peer.product)
        usable.append(name)
    if both and len(usable) >= 2:
        return {"A": tuple(usable[0::2]), "B": tuple(usable[1::2])}
    return {"A": tuple(usable), "B": tuple(usable)}


@dataclass
class _SideState:
    """What one side has so far in this run."""

    peer: str
    product: str
    session: str | None = None
    latest: dict[str, Any] | None = None  # the newest delivered call.end


class _Converge:
    def __init__(self, dispatcher: Dispatcher, inputs: ConvergeInputs, paths: RunPaths) -> None:
        self.dispatcher = dispatcher
        self.inputs = inputs
        self.paths = paths
        self.journal = Journal(paths.journal)
        self.ledger = load_ledger(paths)
        prefs = dispatcher.prefs
        self.sides = {
            side: _SideState(name, resolve_peer(name, prefs).product)
            for side, name in zip(SIDES, inputs.peers, strict=True)
        }
        self.host_product = (
            resolve_peer(inputs.host, prefs, field="--host").product if inputs.host else None
        )
        self.asked = 0
        self.reused = 0
        self.failures: dict[str, dict[str, Any]] = {}
        # the blind reviewer's preflight check and its problem, once checked in this call
        self.blind: tuple[dict[str, Any], str | None] | None = None

    def avoid(self) -> set[str]:
        products = {s.product for s in self.sides.values()}
        products.update(resolve_peer(p, self.dispatcher.prefs).product for p in self.inputs.peers)
        if self.host_product:
            products.add(self.host_product)
        return products

    async def stage(self, stage: str, prompts: dict[str, str], *, new_session: bool) -> bool:
        """Run the sides of ``stage`` that have no answer yet, in parallel; True if both have."""
        todo: dict[str, tuple[str, str, str | None]] = {}
        for side, prompt in prompts.items():
            key = f"{stage}:{side}:{sha256_text(prompt)[:16]}"
            done = self.journal.answered(key)
            if done is not None:
                self.reused += 1
                self._take(side, done)
                continue
            state = self.sides[side]
            # An earlier call of this same request left a session but no answer: continue it.
            prior = self.journal.handle(side, key=key)
            resume: str | None = None
            if prior is not None and prior.product == state.product:
                resume, prompt = prior.session_id, continuation_prompt(prompt)
            elif not new_session:
                resume = state.session
            todo[side] = (key, prompt, resume)
        if not todo:
            return True
        fallbacks = _split_fallbacks(
            self.dispatcher.prefs, self.inputs.fallback, self.avoid(), len(todo) == 2
        )
        results: dict[str, dict[str, Any]] = {}

        async def ask(side: str, key: str, prompt: str, resume: str | None) -> None:
            results[side] = await journaled_call(
                self.dispatcher,
                self.journal,
                self.paths,
                stage=stage,
                side=side,
                key=key,
                peer=self.sides[side].peer,
                prompt=prompt,
                resume=resume,
                fallback=fallbacks[side],
                avoid=tuple(sorted(self.avoid())),
                timeout_ms=self.inputs.timeout_ms,
            )

        async with anyio.create_task_group() as group:
            for side, (key, prompt, resume) in todo.items():
                self.asked += 1
                group.start_soon(ask, side, key, prompt, resume)
        self._void_collision(results)
        complete = True
        for side in SIDES:
            entry = results.get(side)
            if entry is None:
                continue
            if entry["state"] == "DELIVERED" and entry["event"] == "call.end":
                self._take(side, entry)
                self.failures.pop(side, None)
            else:
                self.failures[side] = entry
                complete = False
        return complete and all(
            self.journal.answered(f"{stage}:{s}:{sha256_text(p)[:16]}") for s, p in prompts.items()
        )

    def _void_collision(self, results: dict[str, dict[str, Any]]) -> None:
        """Both sides answered by one product (only via a shared fallback): void the later."""
        if len(results) != 2 or any(r["state"] != "DELIVERED" for r in results.values()):
            return
        if results["A"]["product"] != results["B"]["product"]:
            return
        later = max(results.values(), key=lambda e: int(e["seq"]))
        results[later["side"]] = self.journal.append(
            "call.void",
            stage=later["stage"],
            side=later["side"],
            key=later["key"],
            reason="fallback collided: both sides answered by the same product",
            state="VOID",
        )

    def text(self, side: str) -> str:
        """The side's latest delivered answer."""
        latest = self.sides[side].latest
        return str(latest["text"]) if latest else ""

    def _take(self, side: str, entry: dict[str, Any]) -> None:
        state = self.sides[side]
        state.peer = entry["answeredBy"]
        state.product = entry["product"]
        state.session = entry["sessionId"]
        state.latest = entry

    async def run(self) -> dict[str, Any]:
        inputs = self.inputs
        host_block = parse_position(inputs.host_position or "")
        prompts_a = {s: round_a_prompt(s, inputs.plan, self.ledger) for s in SIDES}
        positions_a: dict[str, str] = {}
        blocks: dict[str, dict[str, PositionBlock]] = {}
        rounds = 0
        status = "UNVERIFIED"
        missing_stage = "A"
        standing_in = self.ledger.preflight is None  # round A serves as the preflight
        if standing_in and self._blind_side() is None:
            # No peer is the blind reviewer: prove it alongside round A (no separate round).
            async with anyio.create_task_group() as group:
                group.start_soon(self._prove_blind)
                a_done = await self.stage("A", prompts_a, new_session=True)
        else:
            a_done = await self.stage("A", prompts_a, new_session=True)
        if standing_in:
            stopped = await self.preflight_from_round_a(a_done)
            if stopped is not None:
                return stopped
        if a_done and inputs.host_position is None:
            return self.awaiting_host_position()
        if a_done:
            positions_a = {s: self.text(s) for s in SIDES}
            blocks["A"] = {s: parse_position(t) for s, t in positions_a.items()}
            latest = dict(positions_a)
            for round_number in range(1, MAX_B_ROUNDS + 1):
                stage = f"B{round_number}"
                prompts = {
                    side: round_b_prompt(
                        round_number,
                        side,
                        other,
                        inputs.host_position or "",
                        latest[other],
                        latest[side],
                    )
                    for side, other in (("A", "B"), ("B", "A"))
                }
                if not await self.stage(stage, prompts, new_session=False):
                    missing_stage = stage
                    break
                rounds = round_number
                latest = {s: self.text(s) for s in SIDES}
                blocks[stage] = {s: parse_position(t) for s, t in latest.items()}
                if not any(b.disagrees for b in blocks[stage].values()):
                    status = "converged"
                    break
            else:
                status = "host_adjudication"
        if status != "UNVERIFIED" and self.ledger.by_status(LedgerStatus.HUMAN_DECISION):
            status = "HUMAN_GATE"
        disagreement_a = bool(blocks.get("A")) and (
            host_block.disagrees or any(b.disagrees for b in blocks["A"].values())
        )
        fast_path = (
            bool(blocks.get("A"))
            and not disagreement_a
            and not self.ledger.by_status(LedgerStatus.HUMAN_DECISION)
        )
        return self.finish(
            status, rounds, fast_path, disagreement_a, host_block, blocks, missing_stage
        )

    def _blind_side(self) -> str | None:
        """The side whose peer is the blind reviewer itself (same product and command)."""
        prefs = self.dispatcher.prefs
        blind = resolve_peer(self.inputs.blind_reviewer, prefs, field="--blind-reviewer")
        for side, name in zip(SIDES, self.inputs.peers, strict=True):
            peer = resolve_peer(name, prefs)
            if (peer.product, peer.command) == (blind.product, blind.command):
                return side
        return None

    async def _prove_blind(self) -> None:
        """The blind reviewer's round trip (seed: "likewise for the Claude used for blind
        review"); a peer's round-A answer serves when that peer is the blind reviewer."""
        from review_loop.orchestrator.workflows.converge_gates import prove_blind_reviewer

        answered = None
        side = self._blind_side()
        if side is not None:
            state = self.sides[side]
            if state.latest is not None and state.peer == self.inputs.blind_reviewer:
                answered = state.latest  # not a fallback's answer: the blind reviewer's own
        self.blind = await prove_blind_reviewer(
            self.dispatcher,
            self.journal,
            self.paths,
            peer=self.inputs.blind_reviewer,
            timeout_ms=self.inputs.timeout_ms,
            answered=answered,
        )

    async def preflight_from_round_a(self, a_done: bool) -> dict[str, Any] | None:
        """Seed: round A's first successful round trip serves as the peers' preflight.

        Both peers answered; each session must also be listed by ``sessions`` (the
        resumable handle), as ``preflight`` checks, and the blind reviewer must be proven
        the same way (:meth:`_prove_blind`). Recorded in the ledger ``via: round A`` once
        round A is in, or as soon as the blind reviewer failed. Returns the seed's
        ``MISSING_DEPENDENCIES`` document when something is missing: the loop stops here,
        before round B, the Goal and any source change.
        """
        from review_loop.orchestrator.sessions.listing import list_sessions

        if a_done and self.blind is None:
            await self._prove_blind()  # the blind reviewer was a peer: its round A serves
        problem = self.blind[1] if self.blind is not None else None
        if not a_done and problem is None:
            return None  # round A is incomplete (UNVERIFIED); nothing is proven yet
        missing = [s.missing_text() for s in self.inputs.skills if s.found is None]
        for side in SIDES if a_done else ():
            state = self.sides[side]
            found = await anyio.to_thread.run_sync(
                list_sessions, self.dispatcher.repo, state.product
            )
            if not any(item.session.session_id == state.session for item in found):
                missing.append(
                    f"Peer {side} ({state.product}): session {state.session} is not listed by "
                    f"`review-loop sessions --product={state.product}`"
                )
        if problem is not None:
            missing.append(problem)
        summary = PreflightSummary(ready=not missing, missing=missing, at=utc_now(), via="round A")
        self.ledger = save_ledger(
            self.paths, load_ledger(self.paths).model_copy(update={"preflight": summary})
        )
        self.journal.append("preflight.result", ready=not missing, missing=missing, via="round A")
        if not missing:
            return None
        document = missing_dependencies(
            self.paths.run,
            missing,
            "round A stood in for the preflight and a capability is missing; the loop stops "
            "before round B, the Goal and any source change (run `review-loop preflight` "
            "once it is there)",
            asked=self.asked,
        )
        if self.blind is not None:
            document["blindReviewer"] = self.blind[0]
        return document

    def awaiting_host_position(self) -> dict[str, Any]:
        """Round A is in: the host's position is needed before round B (seed: it writes it
        while the peers answer round A). Nothing else is recorded; the next call with
        ``--host-position`` reuses these answers."""
        return {
            "ok": True,
            "status": "awaiting_host_position",
            "result": None,
            "run": self.paths.run,
            "rounds": 0,
            "peers": {
                side: {
                    "peer": state.peer,
                    "product": state.product,
                    "sessionId": state.session,
                    "state": "DELIVERED",
                    "position": parse_position(self.text(side)).position,
                }
                for side, state in self.sides.items()
            },
            "preflight": self.ledger.preflight.model_dump() if self.ledger.preflight else None,
            "message": "round A is answered and kept; call converge again with "
            "--host-position FILE to run round B",
            "asked": self.asked,
            "reused": self.reused,
            "journalPath": str(self.paths.journal),
            "ledgerPath": str(self.paths.ledger),
        }

    def finish(
        self,
        status: str,
        rounds: int,
        fast_path: bool,
        disagreement_a: bool,
        host_block: PositionBlock,
        blocks: dict[str, dict[str, PositionBlock]],
        missing_stage: str,
    ) -> dict[str, Any]:
        last_stage = f"B{rounds}" if rounds else "A"
        final = blocks.get(last_stage, {})
        remaining = self._remaining_disagreements(status, final)
        proposed = self._proposed_decisions(final, host_block)
        decisions = [
            f"HUMAN_DECISION {i.id}: {i.title}".rstrip(": ")
            for i in self.ledger.by_status(LedgerStatus.HUMAN_DECISION)
        ]
        fallbacks = [
            f"{f['from']} → {f['to']} ({f['reason']}, {f['stage']})"
            for entry in self.journal.calls()
            for f in entry.get("fallbacks", [])
        ]
        record = self._record(
            decision=decision_text(status, rounds, fast_path, self._missing(), remaining),
            why=self._why(host_block, final, last_stage, disagreement_a),
            fallbacks=fallbacks,
            remaining=[*decisions, *remaining, *proposed],
        )
        text = record.render(self.sides["A"].product, self.sides["B"].product)
        record_md = self.paths.dir / "convergence.md"
        atomic_write_bytes(record_md, text.encode("utf-8"))
        document: dict[str, Any] = {
            "ok": status != "UNVERIFIED",
            "status": status,
            "result": status if status in ("UNVERIFIED", "HUMAN_GATE") else None,
            "run": self.paths.run,
            "rounds": rounds,
            "fastPath": fast_path,
            "disagreementInA": disagreement_a,
            "missingStage": missing_stage if status == "UNVERIFIED" else None,
            "record": record.model_dump(),
            "recordText": text,
            "recordPath": str(record_md),
            "peers": self._final_peers(final),
            "host": {
                "product": self.host_product,
                "position": host_block.position,
                # named, not silently "not stated": the host may fix its position
                "missingSections": missing_host_sections(self.inputs.host_position or ""),
            },
            "remainingDisagreements": remaining,
            "remainingDecisions": decisions,
            "proposedHumanDecisions": proposed,
            "fallbacks": fallbacks,
            "asked": self.asked,
            "reused": self.reused,
            "journalPath": str(self.paths.journal),
            "ledgerPath": str(self.paths.ledger),
        }
        self._store_result(
            document, status=status, rounds=rounds, decision=record.decision, record_md=record_md
        )
        return document

    def _remaining_disagreements(self, status: str, final: dict[str, PositionBlock]) -> list[str]:
        """The last round's open points, when the host or a human must settle them."""
        remaining: list[str] = []
        if status in ("host_adjudication", "HUMAN_GATE"):
            for side in SIDES:
                block = final.get(side)
                if block is not None:
                    remaining.extend(block.points(f"Peer {side} ({self.sides[side].product})"))
        return remaining

    def _proposed_decisions(
        self, final: dict[str, PositionBlock], host_block: PositionBlock
    ) -> list[str]:
        """The human decisions the peers' last blocks and the host's propose, each credited."""
        proposed: list[str] = []
        for side in SIDES:
            block = final.get(side)
            if block is not None:
                proposed.extend(f"(proposed by Peer {side}) {d}" for d in block.humanDecisions)
        proposed.extend(f"(proposed by the host) {d}" for d in host_block.humanDecisions)
        return proposed

    def _missing(self) -> list[str]:
        """Each failed peer's position, named with its stage and why."""
        return [
            f"Peer {side} ({self.sides[side].product}) at {entry['stage']}: "
            f"{entry.get('reason') or entry.get('state')}"
            for side, entry in sorted(self.failures.items())
        ]

    def _why(
        self,
        host_block: PositionBlock,
        final: dict[str, PositionBlock],
        last_stage: str,
        disagreement_a: bool,
    ) -> str:
        """The record's ``why``: every party's stance at the end."""
        why = [f"host: {self._stance(host_block)}"]
        for side in SIDES:
            block = final.get(side)
            label = f"Peer {side} ({self.sides[side].product})"
            if side in self.failures:
                why.append(f"{label}: position missing at {self.failures[side]['stage']}")
            elif block is not None:
                why.append(f"{label}: {self._stance(block)} after {last_stage}")
        if disagreement_a:
            why.append("round A had disagreement")
        return "; ".join(why)

    def _record(
        self, *, decision: str, why: str, fallbacks: list[str], remaining: list[str]
    ) -> ConvergenceRecord:
        """The convergence record, its scope and duties read from the host's position."""
        host = self.inputs.host_position or ""
        return ConvergenceRecord(
            decision=decision,
            why=why,
            workLedger=ledger_summary(self.ledger),
            frozenScope=frozen_scope(self.ledger, *host_scope(host)),
            ownership=section_text(host, "ownership")
            or "not stated in the host position (no '## Ownership' heading)",
            verification=section_text(host, "verification")
            or "not stated in the host position (no '## Verification' heading)",
            peerA=self._session_line("A"),
            peerB=self._session_line("B"),
            fallbacks="; ".join(fallbacks) or "none",
            remainingDecisions="; ".join(remaining) or "none",
        )

    def _final_peers(self, final: dict[str, PositionBlock]) -> dict[str, dict[str, Any]]:
        """Each peer's session, delivery and last position, as the document reports them."""
        return {
            side: {
                "peer": state.peer,
                "product": state.product,
                "sessionId": state.session or self._handle_id(side),
                "state": "UNVERIFIED" if side in self.failures else "DELIVERED",
                "position": final[side].position if side in final else None,
                "disagreements": final[side].disagreements if side in final else [],
                "failure": _failure(self.failures.get(side)),
            }
            for side, state in self.sides.items()
        }

    def _store_result(
        self, document: dict[str, Any], *, status: str, rounds: int, decision: str, record_md: Path
    ) -> None:
        """The document as ``convergence.json``, then the journal's result, then the ledger's."""
        atomic_write_json(self.paths.dir / "convergence.json", document)
        self.journal.append("converge.result", status=status, rounds=rounds, asked=self.asked)
        self.ledger = save_ledger(
            self.paths,
            load_ledger(self.paths).model_copy(
                update={
                    "convergence": ConvergenceSummary(
                        status=status,
                        decision=decision,
                        rounds=rounds,
                        recordPath=str(record_md),
                        at=utc_now(),
                        hostExclusions=host_scope(self.inputs.host_position or "")[1],
                    )
                }
            ),
        )

    @staticmethod
    def _stance(block: PositionBlock) -> str:
        if block.position is None:
            return "no Position line (counted as disagreement)"
        count = len(block.disagreements)
        return block.position + (f" ({count} point(s))" if count else "")

    def _handle_id(self, side: str) -> str | None:
        handle = self.journal.handle(side)
        return handle.session_id if handle else None

    def _session_line(self, side: str) -> str:
        state = self.sides[side]
        if side in self.failures:
            handle = self._handle_id(side)
            reason = self.failures[side].get("reason") or self.failures[side].get("state")
            return f"{handle or 'none'} — UNVERIFIED ({reason}); handle kept, continue from here"
        return state.session or "none"


def _failure(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {
        key: entry.get(key)
        for key in ("stage", "state", "reason", "detail", "timedOut", "sessionId", "fallbacks")
    }


@reporting_async
async def run_converge(dispatcher: Dispatcher, inputs: ConvergeInputs) -> dict[str, Any]:
    """Run (or continue) the convergence of ``inputs.run``; returns the command document.

    The document names what was not believed (``untrusted``: a ledger or journal lines
    without a valid MAC, whose answers are asked again) and the files git tracks under
    ``.review-handoff/`` (``tracked``).
    """
    paths = RunPaths(dispatcher.repo, inputs.run)
    with run_lock(paths):
        preflight = load_ledger(paths).preflight
        if preflight is None:
            # No preflight yet: what is missing without asking anyone stops it before any
            # discussion (a skill; the blind reviewer's CLI not even on PATH).
            missing = [s.missing_text() for s in inputs.skills if s.found is None]
            missing += _blind_not_installed(dispatcher, inputs.blind_reviewer)
            if missing:
                return missing_dependencies(
                    inputs.run,
                    missing,
                    "no preflight is recorded and a capability is missing; no peer was "
                    "asked (run `review-loop preflight` once it is there)",
                    asked=0,
                )
        if preflight is not None and not preflight.ready:
            # The seed stops before any discussion when a capability is missing.
            return missing_dependencies(
                inputs.run,
                preflight.missing,
                "the last preflight of this run failed; run `review-loop "
                "preflight` again once the missing capability is there",
                asked=0,
            )
        return await _Converge(dispatcher, inputs, paths).run()


def _blind_not_installed(dispatcher: Dispatcher, name: str) -> list[str]:
    """The blind reviewer, named, when its executable is not on PATH (no call needed)."""
    peer = resolve_peer(name, dispatcher.prefs, field="--blind-reviewer")
    if is_installed(peer):
        return []
    return [
        f"Blind reviewer ({peer.product}): `{peer.command[0]}` is not on PATH, so no real "
        f"{peer.product} session can do the blind review"
    ]


def missing_dependencies(
    run: str, missing: list[str], message: str, *, asked: int
) -> dict[str, Any]:
    """The seed's ``MISSING_DEPENDENCIES`` stop as ``converge``'s document."""
    return {
        "ok": False,
        "status": Result.MISSING_DEPENDENCIES.value,
        "result": Result.MISSING_DEPENDENCIES.value,
        "run": run,
        "missing": missing,
        "block": render_missing_dependencies(missing),
        "message": message,
        "asked": asked,
    }


__all__ = [
    "ConvergeInputs",
    "Ledger",
    "check_peers",
    "plan_peers",
    "run_converge",
    "select_converge_peers",
]
