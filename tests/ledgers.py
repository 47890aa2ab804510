"""Converge ledgers for tests that check (or forge) a completed task."""

from __future__ import annotations

from review_loop.agents.converge import (
    BlindReviewSummary,
    ConvergenceSummary,
    Gate,
    GateProof,
    GateRecord,
    Ledger,
    LedgerItem,
    PreflightSummary,
)
from review_loop.agents.evidence_model import Evidence


def completed_ledger(evidence: Evidence, *, agentic: GateRecord | None) -> Ledger:
    """A ledger with everything done on ``evidence`` (the item verified, preflight ready,
    converged, a clean blind review) but the agentic review, which is ``agentic`` if given.
    Gates are typed (self-reported) where the user may type them, proven where they must be.
    """
    gates = [
        GateRecord(gate=Gate.VERIFICATION, result="PASS", evidence=evidence),
        GateRecord(
            gate=Gate.ARCHITECTURE_HARDENING, result="NO_ACTIONABLE_FINDINGS", evidence=evidence
        ),
        GateRecord(
            gate=Gate.BLIND_REVIEW,
            result="CLEAN",
            evidence=evidence,
            provenance="proven",
            proof=GateProof(kind="blind-review", ref="blind-review-1.md", round=1),
        ),
    ]
    return Ledger(
        items=[LedgerItem(id="T1", status="VERIFIED_DONE", evidence="pytest -q")],
        gates=gates + ([agentic] if agentic else []),
        blindReviews=[
            BlindReviewSummary(
                round=1, verdict="CLEAN", evidence=evidence, product="claude", sessionId="s"
            )
        ],
        convergence=ConvergenceSummary(
            status="converged", decision="converged", rounds=1, recordPath="r", at="t"
        ),
        preflight=PreflightSummary(ready=True, at="t"),
        goal="completed",
    )
