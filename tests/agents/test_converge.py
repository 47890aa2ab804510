"""Contract tests of the task-completion loop's pure parts: positions, findings, ledger, result."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from review_loop.agents.converge import (
    BlindReviewSummary,
    CompletionInputs,
    ConvergenceSummary,
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
    frozen_scope,
    ledger_summary,
    parse_blind_review,
    parse_position,
    render_completion,
    render_missing_dependencies,
    round_a_prompt,
    round_b_prompt,
    section_text,
)
from review_loop.agents.evidence import Evidence

BLOCK = "## Disagreements\n{d}\n\n## Human decisions\n{h}\n\n{p}"


def block(d: str = "- none", h: str = "- none", p: str = "Position: AGREE") -> str:
    return "My analysis.\n\n" + BLOCK.format(d=d, h=h, p=p)


# -- positions ---------------------------------------------------------------------------------


def test_clean_agree() -> None:
    parsed = parse_position(block())
    assert parsed.position == "AGREE" and parsed.parsed
    assert parsed.disagreements == [] and parsed.humanDecisions == []
    assert not parsed.disagrees


@pytest.mark.parametrize(
    "line",
    ["Position: DISAGREE", "**Position:** DISAGREE", "position: disagree", "`Position: DISAGREE`"],
)
def test_disagree_spellings(line: str) -> None:
    parsed = parse_position(block(d="- T2 is out of scope", p=line))
    assert parsed.position == "DISAGREE" and parsed.disagrees
    assert parsed.disagreements == ["T2 is out of scope"]


def test_agree_with_a_listed_point_counts_as_disagreement() -> None:
    parsed = parse_position(block(d="- ownership of T1"))
    assert parsed.position == "AGREE" and parsed.disagrees
    assert parsed.points("Peer A (codex)") == ["Peer A (codex): ownership of T1"]


def test_missing_position_line_is_disagreement() -> None:
    parsed = parse_position(block(p="I think we are fine."))
    assert parsed.position is None and not parsed.parsed and parsed.disagrees
    assert "agreement not stated" in parsed.points("Peer B")[0]


def test_position_must_be_the_last_line() -> None:
    parsed = parse_position(block() + "\n\nOne more thought.")
    assert parsed.position is None


def test_human_decisions_and_none_variants() -> None:
    parsed = parse_position(block(d="- None.", h="- pick the public name\n* n/a"))
    assert parsed.disagreements == []
    assert parsed.humanDecisions == ["pick the public name"]


def test_unlisted_disagree() -> None:
    assert parse_position(block(p="Position: DISAGREE")).points("X") == [
        "X: DISAGREE (no point listed)"
    ]


def test_section_text() -> None:
    text = "# Pos\n\n## Scope\n- T1\n- T2\n\n### detail\nsub\n\n## Ownership\napp owns\n"
    assert section_text(text, "scope") == "T1; T2; sub"
    assert section_text(text, "ownership") == "app owns"
    assert section_text(text, "verification") == ""


# -- prompts ---------------------------------------------------------------------------------


def test_prompts_carry_what_each_round_needs() -> None:
    ledger = Ledger(items=[LedgerItem(id="T1", title="guard | input", status=LedgerStatus.PENDING)])
    a = round_a_prompt("A", "the plan", ledger)
    assert "Peer A" in a and "the plan" in a and "guard &#124; input" in a
    assert a.count("Position: AGREE") == 2  # the block and the rule, nothing else
    b = round_b_prompt(2, "B", "A", "host says", "A says", "B said")
    assert "round B2" in b and "host says" in b and "A says" in b and "B said" in b
    assert b.index("host says") < b.index("A says") < b.index("B said")


def test_blind_prompt_sees_only_evidence() -> None:
    evidence = Evidence(baseSha="a" * 40, pathFilter=None, digest="d" * 64, coveredPaths=["x"])
    prompt = blind_review_prompt(evidence, "diff --git a/x b/x\n+new\n")
    assert "d" * 64 in prompt and "+new" in prompt
    big = blind_review_prompt(evidence, "+" * 200_000)
    assert "Open the changed files yourself" in big and len(big) < 160_000


# -- blind review findings -----------------------------------------------------------------

TABLE = "## Findings\n\n| ID | Class | Title | Evidence | Required fix |\n|---|---|---|---|---|\n"


def test_findings_parsed() -> None:
    text = (
        TABLE
        + "| B1 | **Fix** | crash | app.py:2 | guard |\n"
        + "| B2 | backlog | hints | app.py:1 | later |\n"
        + "| B3 | Reject | a &#124; b | fine | none |\n\nVerdict: FIX\n"
    )
    verdict, findings = parse_blind_review(text)
    assert verdict == "FIX"
    assert [(f.id, f.cls) for f in findings] == [("B1", "Fix"), ("B2", "Backlog"), ("B3", "Reject")]
    assert findings[2].title == "a | b"
    assert findings[0].model_dump(by_alias=True)["class"] == "Fix"


def test_clean_review_with_none() -> None:
    assert parse_blind_review("## Findings\n\nNone\n\nVerdict: CLEAN") == ("CLEAN", [])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("## Findings\nNone\n", "last non-empty line"),
        ("## Findings\nNone\nVerdict: CLEAN\nVerdict: CLEAN", "exactly one"),
        ("Nothing.\nVerdict: CLEAN", "no `## Findings`"),
        ("## Findings\nNone\nVerdict: FIX", "at least one finding is class Fix"),
        (TABLE + "| B1 | Backlog | t | e | f |\nVerdict: FIX", "at least one finding"),
        (TABLE + "| B1 | Fix | t | e | f |\nVerdict: CLEAN", "at least one finding"),
        (TABLE + "| B1 | Maybe | t | e | f |\nVerdict: CLEAN", "Fix, Backlog or Reject"),
        (TABLE + "| B1 | Fix | t | e|x | f |\nVerdict: FIX", "&#124;"),
        (TABLE + "| B1 | Fix | t | e | f |\n| B1 | Fix | t | e | f |\nVerdict: FIX", "unique"),
        ("## Findings\n| ID | Kind | T |\n|---|---|---|\nVerdict: CLEAN", "columns"),
    ],
)
def test_malformed_reviews(text: str, problem: str) -> None:
    with pytest.raises(MalformedReviewError, match=problem.replace("`", ".").replace("|", r"\|")):
        parse_blind_review(text)


# -- ledger ------------------------------------------------------------------------------------


def ev(digest: str = "1", paths: list[str] | None = None, base: str = "b" * 40) -> Evidence:
    return Evidence(baseSha=base, pathFilter=paths, digest=digest * 64, coveredPaths=[])


def test_cited_statuses_need_evidence() -> None:
    for status in (LedgerStatus.VERIFIED_DONE, LedgerStatus.OBSOLETE, LedgerStatus.EXCLUDED):
        with pytest.raises(ValidationError, match="cited"):
            LedgerItem(id="T1", status=status)
    LedgerItem(id="T1", status=LedgerStatus.PENDING)
    with pytest.raises(ValidationError, match="item id"):
        LedgerItem(id="bad id", status=LedgerStatus.PENDING)
    with pytest.raises(ValidationError, match="unique"):
        Ledger(items=[LedgerItem(id="T", status="PENDING"), LedgerItem(id="T", status="PENDING")])


def test_with_item_replaces_in_place() -> None:
    ledger = Ledger(
        items=[LedgerItem(id="T1", status="PENDING"), LedgerItem(id="T2", status="PENDING")]
    )
    changed = ledger.with_item(LedgerItem(id="T1", status="VERIFIED_DONE", evidence="pytest"))
    assert [(i.id, i.status) for i in changed.items] == [
        ("T1", LedgerStatus.VERIFIED_DONE),
        ("T2", LedgerStatus.PENDING),
    ]
    assert ledger_summary(changed) == "1 VERIFIED_DONE (T1); 1 PENDING (T2)"
    assert frozen_scope(changed, "host words") == "T2 — host: host words; exclusions: none"


def done_ledger(evidence: Evidence) -> Ledger:
    return Ledger(
        items=[LedgerItem(id="T1", status="VERIFIED_DONE", evidence="pytest -q")],
        preflight=PreflightSummary(ready=True, at="t"),
        convergence=ConvergenceSummary(
            status="converged", decision="converged after 1 round", rounds=1, recordPath="r", at="t"
        ),
        gates=[
            GateRecord(gate=Gate.VERIFICATION, result="PASS", evidence=evidence),
            GateRecord(
                gate=Gate.AGENTIC_REVIEW,
                result="NO_FINDINGS",
                evidence=evidence,
                provenance="proven",
                proof=GateProof(kind="review-packet", ref="main/2026-01-01_00-00-x", round=1),
            ),
            GateRecord(
                gate=Gate.ARCHITECTURE_HARDENING, result="NO_ACTIONABLE_FINDINGS", evidence=evidence
            ),
            GateRecord(gate=Gate.BLIND_REVIEW, result="CLEAN", evidence=evidence, session="s1"),
        ],
        blindReviews=[
            BlindReviewSummary(
                round=1, verdict="CLEAN", evidence=evidence, product="claude", sessionId="s1"
            )
        ],
    )


def result_of(ledger: Ledger, evidence: Evidence | None) -> tuple[Result, list[str]]:
    return derive_result(CompletionInputs(ledger=ledger, evidence=evidence, protocol="p"))


def test_completed_when_everything_covers_the_same_evidence() -> None:
    evidence = ev()
    # coveredPaths and sourceRound are not part of the identity
    same = evidence.model_copy(update={"coveredPaths": ["x"], "sourceRound": 3})
    assert result_of(done_ledger(evidence), same) == (Result.COMPLETED, [])


def test_changed_evidence_makes_gates_stale() -> None:
    ledger = done_ledger(ev("1"))
    result, reasons = result_of(ledger, ev("2"))
    assert result is Result.UNVERIFIED
    assert sum("stale" in r for r in reasons) == 4
    assert len(ledger.stale_gates(ev("2"))) == 4


def test_scope_change_makes_gates_stale() -> None:
    result, reasons = result_of(done_ledger(ev("1")), ev("1", paths=["app.py"]))
    assert result is Result.UNVERIFIED and any("stale" in r for r in reasons)


def test_failed_preflight_is_missing_dependencies() -> None:
    ledger = done_ledger(ev()).model_copy(
        update={"preflight": PreflightSummary(ready=False, missing=["Peer B (grok): x"], at="t")}
    )
    assert result_of(ledger, ev()) == (Result.MISSING_DEPENDENCIES, ["Peer B (grok): x"])


def test_human_decision_and_deferred_goal_gate() -> None:
    ledger = done_ledger(ev()).with_item(LedgerItem(id="T9", status="HUMAN_DECISION"))
    result, reasons = result_of(ledger, ev())
    assert result is Result.HUMAN_GATE and reasons == ["HUMAN_DECISION: T9"]
    deferred = done_ledger(ev()).model_copy(update={"goal": "deferred-conflict"})
    assert result_of(deferred, ev())[0] is Result.HUMAN_GATE


def test_pending_fix_and_missing_gates_are_unverified() -> None:
    evidence = ev()
    base = done_ledger(evidence)
    pending = base.with_item(LedgerItem(id="T2", status="PENDING"))
    assert result_of(pending, evidence) == (Result.UNVERIFIED, ["PENDING: T2"])
    fix = base.model_copy(
        update={
            "gates": [
                *base.gates,
                GateRecord(gate=Gate.BLIND_REVIEW, result="FIX", evidence=evidence),
            ]
        }
    )
    assert result_of(fix, evidence) == (Result.UNVERIFIED, ["blind-review: FIX"])
    empty = Ledger()
    result, reasons = result_of(empty, None)
    assert result is Result.UNVERIFIED
    assert "no preflight recorded" in reasons and "verification: not run" in reasons


@pytest.mark.parametrize("passed", ["HUMAN_GATE", "MISSING_DEPENDENCIES", "UNVERIFIED"])
def test_architecture_hardening_result_passes_through(passed: str) -> None:
    evidence = ev()
    base = done_ledger(evidence)
    ledger = base.model_copy(
        update={
            "gates": [
                *base.gates,
                GateRecord(gate=Gate.ARCHITECTURE_HARDENING, result=passed, evidence=evidence),
            ]
        }
    )
    assert result_of(ledger, evidence)[0].value == passed


def test_completion_block_names_every_field() -> None:
    evidence = ev()
    inputs = CompletionInputs(ledger=done_ledger(evidence), evidence=evidence, protocol="none")
    text = render_completion(inputs, Result.COMPLETED, [])
    fields = [line.split(":")[0] for line in text.splitlines()[1:]]
    assert fields == [
        "- Scope / exclusions",
        "- Work ledger",
        "- Three-party decision",
        "- Goal",
        "- Final evidence id",
        "- Implemented",
        "- Verification",
        "- Agentic review",
        "- Architecture hardening",
        "- Final Claude audit",
        "- Gate provenance",  # added: which gate results were proven, which self-reported
        "- Fixed / Backlog / Rejected",
        "- Protocol, Git, and external actions",
        "- Lessons",
        "- Result",
    ]
    assert "STALE" not in text
    assert (
        "- Gate provenance: proven: agentic-review (review packet main/2026-01-01_00-00-x "
        "(round 1)); self-reported: verification, architecture-hardening, blind-review\n"
    ) in text
    stale = render_completion(
        CompletionInputs(ledger=done_ledger(evidence), evidence=ev("2"), protocol="none"),
        Result.UNVERIFIED,
        ["verification: stale"],
    )
    assert stale.count("STALE") == 4 and stale.endswith("- Open: verification: stale\n")


def test_missing_dependencies_block() -> None:
    assert render_missing_dependencies(["a", "b"]) == (
        "Task Completion Result\n"
        "- Result: MISSING_DEPENDENCIES\n"
        "- Missing: a; b\n"
        "- Stop point: before discussion, Goal activation, and source changes\n"
        "- Substitution/install: none; no generic agent impersonation, copied skill logic, "
        "or automatic install\n"
        "- Work started: no\n"
    )


def test_a_self_reported_agentic_review_never_completes() -> None:
    """COMPLETED needs an agentic-review proven by a review packet, not a typed token."""
    evidence = ev()
    typed = GateRecord(gate=Gate.AGENTIC_REVIEW, result="PASS", evidence=evidence)
    assert typed.provenance == "self-reported" and not typed.proven
    ledger = done_ledger(evidence)
    ledger = ledger.model_copy(update={"gates": [*ledger.gates, typed]})
    result, reasons = result_of(ledger, evidence)
    assert result is Result.UNVERIFIED
    assert reasons == [
        "agentic-review: PASS is self-reported; only an authenticated archived review packet "
        "of this evidence proves it"
    ]


def test_a_gate_is_proven_exactly_when_it_names_its_proof() -> None:
    proof = GateProof(kind="blind-review", ref="blind-review-1.md")
    with pytest.raises(ValidationError):
        GateRecord(gate=Gate.VERIFICATION, result="PASS", evidence=ev(), provenance="proven")
    with pytest.raises(ValidationError):
        GateRecord(gate=Gate.VERIFICATION, result="PASS", evidence=ev(), proof=proof)
