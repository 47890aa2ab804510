"""Contract tests: ``ledger show``'s plain reading is the ``Ledger`` model's, never looser.

``workflows/ledger_view.py`` shows a signed ledger without pydantic (``docs/performance.md``).
These tests hold it and the model path (``converge_gates.ledger_show``) together:

- ledgers written by the real code (the ``ledger`` write verbs, ``save_ledger`` of a
  ledger using every field) are shown exactly as the model path shows them: the same
  keys, in the same order, the same values, and without importing pydantic;
- a ledger with a bad MAC, another user's MAC, no MAC, a key the model does not know, a
  value of the wrong type, a key missing, not JSON, or a link or FIFO in its place gives
  exactly the model path's output (its untrusted report, its default-filled ledger, or its
  error naming the file and the key);
- mutated bodies: whatever the plain reading accepts, the model accepts with the same JSON
  form; whatever the model refuses, the plain reading refuses;
- the plain vocabulary (statuses, gates, goals, ...) is the model's.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from review_loop.agents import converge
from review_loop.agents.converge import (
    BlindFinding,
    BlindReviewSummary,
    ConvergenceSummary,
    Gate,
    GateProof,
    GateRecord,
    Ledger,
    LedgerItem,
    PreflightSummary,
)
from review_loop.agents.errors import FormatError, ReviewLoopError
from review_loop.agents.evidence_model import Evidence
from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.workflows import converge_gates, ledger_view
from review_loop.orchestrator.workflows.converge_store import (
    LEDGER_PURPOSE,
    RunPaths,
    save_ledger,
)
from review_loop.orchestrator.workflows.evidence import attest_evidence
from tests.gitrepo import committed_repo, git
from tests.ledgers import completed_ledger
from tests.orchestrator.workflows.test_review_run import rl
from tests.test_startup_imports import FORBIDDEN, imported_modules

RUN = "task"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = committed_repo(tmp_path / "repo", {"app.py": "print(1)\n"})
    (repo / "app.py").write_text("print(2)\n")
    return repo


def full_ledger(repo: Path) -> Ledger:
    """A ledger with every field set, optional ones both set and empty, on real evidence."""
    evidence = attest_evidence(repo, "HEAD", None)
    filtered = attest_evidence(repo, "HEAD", ["app.py"]).model_copy(update={"sourceRound": 2})
    skill = GateProof(
        kind="skill-report",
        ref="abc.json",
        path="/r/abc.json",
        sha256="a" * 64,
        skill="/skills/SKILL.md",
        skillSha256="b" * 64,
    )
    packet = GateProof(kind="review-packet", ref="p1", round=2, reviewer="codex", sessionId="s1")
    base = completed_ledger(evidence, agentic=None)
    return base.model_copy(
        update={
            "task": "Ship the guard — 守卫",
            "items": [
                *base.items,
                LedgerItem(id="T2", title="later", status="PENDING"),
                LedgerItem(id="T.3-x", status="HUMAN_DECISION", evidence="ask", updated="u"),
                LedgerItem(id="T4", status="EXCLUDED", evidence="out of scope"),
            ],
            "gates": [
                *base.gates,
                GateRecord(
                    gate=Gate.AGENTIC_REVIEW,
                    result="PASS",
                    evidence=filtered,
                    session="s1",
                    detail="d",
                    recordedAt="t",
                    provenance="proven",
                    proof=packet,
                ),
                GateRecord(
                    gate=Gate.GOAL_GATE,
                    result="CONTINUE",
                    evidence=evidence,
                    provenance="proven",
                    proof=skill,
                ),
            ],
            "blindReviews": [
                *base.blindReviews,
                BlindReviewSummary(
                    round=2,
                    verdict="FIX",
                    evidence=filtered,
                    product="claude",
                    sessionId=None,
                    findings=[
                        BlindFinding.model_validate(
                            {
                                "id": "B1",
                                "class": "Fix",
                                "title": "t",
                                "evidence": "e",
                                "requiredFix": "f",
                            }
                        )
                    ],
                    recordPath="blind-review-2.md",
                    at="t",
                ),
            ],
            "blindBudgetFrom": 1,
            "convergence": ConvergenceSummary(
                status="converged", decision="d", rounds=2, recordPath="r.md", at="t"
            ),
            "preflight": PreflightSummary(ready=False, missing=["grok"], at="t", via="round A"),
            "implemented": "the guard",
            "lessons": "none",
        }
    )


def shown_by_model(repo: Path) -> tuple[int, dict[str, Any]]:
    """What ``ledger show`` printed before the plain path: the model path's document (or
    its error, as the command line prints an exception)."""
    try:
        return 0, converge_gates.ledger_show(repo, RUN)
    except Exception as error:
        document = {"ok": False, "error": str(error)}
        if not isinstance(error, ReviewLoopError) or isinstance(error, FormatError):
            document["errorType"] = type(error).__name__
        return 1, document


def assert_same_as_model(repo: Path) -> dict[str, Any]:
    code, shown = rl(repo, "ledger", "show", "--run", RUN)
    expected_code, expected = shown_by_model(repo)
    assert (code, json.dumps(shown)) == (expected_code, json.dumps(expected))
    return shown


def ledger_path(repo: Path) -> Path:
    return RunPaths(repo, RUN).ledger


# -- real ledgers: the plain path shows exactly what the model path shows -------------------


def test_contract_ledgers_written_by_the_commands_are_shown_as_the_model_shows_them(
    repo: Path,
) -> None:
    assert_same_as_model(repo)  # no ledger yet: the empty ledger
    steps = [
        ("set", "--id", "T1", "--status", "PENDING", "--title", "guard it"),
        ("set", "--id", "T2", "--status", "VERIFIED_DONE", "--evidence", "pytest -q"),
        ("gate", "--gate", "verification", "--result", "PASS", "--paths", "app.py"),
        ("gate", "--gate", "goal-gate", "--result", "CONTINUE"),
        ("meta", "--task", "guard", "--goal", "active-checkpoint", "--lessons", "l"),
        ("set", "--id", "T1", "--status", "OBSOLETE", "--evidence", "superseded by T2"),
        ("result",),
    ]
    for step in steps:
        code, _ = rl(repo, "ledger", *step, "--run", RUN)
        assert code in (0, 2)
        # the file the command wrote is plainly trusted: shown without the model
        assert ledger_view.verified_ledger(ledger_path(repo)) is not None, step
        assert_same_as_model(repo)


def test_contract_a_ledger_using_every_field_is_shown_as_the_model_shows_it(
    repo: Path,
) -> None:
    save_ledger(RunPaths(repo, RUN), full_ledger(repo))
    assert ledger_view.verified_ledger(ledger_path(repo)) is not None
    shown = assert_same_as_model(repo)
    assert shown["ledger"]["blindReviews"][1]["findings"][0]["class"] == "Fix"


def test_contract_ledger_show_of_a_signed_ledger_imports_no_model(repo: Path) -> None:
    save_ledger(RunPaths(repo, RUN), full_ledger(repo))
    imported = imported_modules(["ledger", "show", "--run", RUN], repo, dict(os.environ))
    assert "review_loop.orchestrator.workflows.ledger_view" in imported  # the list is real
    assert not FORBIDDEN["ledger show"] & imported
    assert not {"pydantic", "review_loop.agents.converge"} & imported


def test_contract_empty_ledger_is_the_models_default() -> None:
    expected = Ledger().model_dump(mode="json", by_alias=True)
    assert json.dumps(ledger_view.empty_ledger()) == json.dumps(expected)


def test_contract_plain_vocabulary_is_the_models() -> None:
    assert tuple(converge.LedgerStatus) == ledger_view.STATUSES
    assert set(converge.CITED_STATUSES) == ledger_view.CITED_STATUSES
    assert tuple(Gate) == ledger_view.GATES
    assert ledger_view.GOALS == converge.GOALS
    assert ledger_view.ITEM_ID_RE.pattern == converge.ITEM_ID_RE.pattern
    assert get_args(converge.Provenance) == ledger_view.PROVENANCES
    assert get_args(GateProof.model_fields["kind"].annotation) == ledger_view.PROOF_KINDS
    verdict = BlindReviewSummary.model_fields["verdict"].annotation
    assert get_args(verdict) == ledger_view.VERDICTS
    assert get_args(BlindFinding.model_fields["cls"].annotation) == ledger_view.FINDING_CLASSES


# -- anything unusual: the model path's output, unchanged ------------------------------------


def sign(body: dict[str, Any]) -> dict[str, Any]:
    return state_auth.sign(LEDGER_PURPOSE, body)


def signed_body(repo: Path) -> dict[str, Any]:
    """The full ledger's body as ``save_ledger`` writes it (without its MAC)."""
    document = json.loads(save_ledger_file(repo).read_text())
    return {k: v for k, v in document.items() if k != "mac"}


def save_ledger_file(repo: Path) -> Path:
    save_ledger(RunPaths(repo, RUN), full_ledger(repo))
    return ledger_path(repo)


def with_key(body: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    return {**body, key: value}


def without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


def unsigned_cases(body: dict[str, Any]) -> dict[str, Any]:
    """Documents written as they are: no valid MAC of this user's."""
    return {
        "bad MAC": {**body, "mac": "0" * 64},
        "no MAC": body,
        "MAC of another body": {**sign(body), "task": "forged"},
        "MAC not text": {**body, "mac": 7},
    }


def signed_cases(body: dict[str, Any]) -> dict[str, Any]:
    """Bodies signed with this user's key that the plain path must leave to the model."""
    item = body["items"][0]
    return {
        "unknown key": with_key(body, "extra", 1),
        "unknown nested key": with_key(body, "items", [{**item, "extra": 1}]),
        "number as text": with_key(body, "blindBudgetFrom", "1"),
        "bool as number": with_key(body, "blindBudgetFrom", True),
        "float as number": with_key(body, "blindBudgetFrom", 1.0),
        "unknown status": with_key(body, "items", [{**item, "status": "DONE"}]),
        "missing key (an older ledger)": without(body, "blindBudgetFrom"),
        "missing nested key": with_key(body, "items", [without(item, "updated")]),
        "duplicate ids": with_key(body, "items", [item, item]),
        "uncited proof": with_key(body, "items", [{**item, "evidence": " "}]),
        "not an object": {"mac": None},
    }


def test_contract_untrusted_ledgers_are_reported_by_the_model_path(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = signed_body(repo)
    path = ledger_path(repo)
    for name, document in unsigned_cases(body).items():
        path.write_text(json.dumps(document))
        assert ledger_view.verified_ledger(path) is None, name
        shown = assert_same_as_model(repo)
        assert shown["untrusted"] == [{"path": str(path), "reason": "no valid MAC"}], name
        assert shown["ledger"] == ledger_view.empty_ledger(), name
    path.write_bytes(b"\xff{not json")
    assert assert_same_as_model(repo)["untrusted"][0]["reason"].startswith("not JSON")
    # nested too deep for json.loads (RecursionError, not a ValueError): not JSON either
    path.write_text("[" * 200_000)
    assert ledger_view.verified_ledger(path) is None
    assert assert_same_as_model(repo)["untrusted"][0]["reason"].startswith("not JSON")
    # signed by another user of the machine (another state secret): untrusted here
    monkeypatch.setenv("REVIEW_LOOP_HOME", str(tmp_path / "another-user"))
    foreign = sign(body)
    monkeypatch.undo()
    path.write_text(json.dumps(foreign))
    assert ledger_view.verified_ledger(path) is None
    assert assert_same_as_model(repo)["untrusted"][0]["reason"] == "no valid MAC"


def test_contract_a_committed_ledger_is_named_once_as_tracked_and_untrusted(repo: Path) -> None:
    path = save_ledger_file(repo)
    git(repo, "add", "-f", ".review-handoff")  # committed with the code: another user's state
    git(repo, "commit", "-qm", "review state")
    shown = rl(repo, "ledger", "show", "--run", RUN)[1]
    assert shown["tracked"] == [str(path.relative_to(repo))]  # the plain path reports it
    path.write_text(json.dumps({**json.loads(path.read_text()), "mac": "0" * 64}))
    shown = assert_same_as_model(repo)  # the model path, within the same report
    assert shown["tracked"] == [str(path.relative_to(repo))]
    assert shown["untrusted"] == [{"path": str(path), "reason": "no valid MAC"}]


@pytest.mark.parametrize("case", list(signed_cases({"items": [{}]})))
def test_contract_signed_ledgers_the_plain_path_does_not_know_go_to_the_model(
    repo: Path, case: str
) -> None:
    body = signed_body(repo)
    path = ledger_path(repo)
    path.write_text(json.dumps(sign(signed_cases(body)[case])))
    assert ledger_view.verified_ledger(path) is None
    assert_same_as_model(repo)


def test_contract_an_older_ledger_is_shown_with_the_models_defaults(repo: Path) -> None:
    body = signed_body(repo)
    ledger_path(repo).write_text(json.dumps(sign(without(body, "blindBudgetFrom"))))
    shown = assert_same_as_model(repo)
    assert shown["ok"] is True and shown["ledger"]["blindBudgetFrom"] == 0


def test_contract_a_signed_ledger_of_the_wrong_shape_is_named_by_the_model(repo: Path) -> None:
    body = signed_body(repo)
    ledger_path(repo).write_text(json.dumps(sign(with_key(body, "extra", 1))))
    code, shown = rl(repo, "ledger", "show", "--run", RUN)
    assert code == 1 and "LEDGER_INVALID" in shown["error"] and "key 'extra'" in shown["error"]


def test_contract_a_link_or_fifo_in_place_of_the_ledger_is_refused_by_the_model(
    repo: Path, tmp_path: Path
) -> None:
    path = save_ledger_file(repo)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(path.read_bytes())  # a signed ledger, reached through a link
    path.unlink()
    path.symlink_to(elsewhere)
    assert ledger_view.verified_ledger(path) is None
    shown = assert_same_as_model(repo)
    assert shown["ok"] is False and "link" in shown["error"]
    path.unlink()
    os.mkfifo(path)  # never waited on
    assert ledger_view.verified_ledger(path) is None
    shown = assert_same_as_model(repo)
    assert shown["ok"] is False and "not a regular file" in shown["error"]


# -- never looser: mutated bodies ------------------------------------------------------------

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2.0,
    "",
    " ",
    "x",
    "1",
    "T1",
    "VERIFIED_DONE",
    "PENDING",
    "verification",
    "proven",
    "self-reported",
    "review-packet",
    "FIX",
    "Fix",
    "completed",
    [],
    ["x"],
    [1],
    {},
]


def mutations(value: Any) -> Iterator[Any]:
    """``value`` with one change anywhere in it: a key dropped or added, a value replaced."""
    if isinstance(value, dict):
        for key in value:
            yield {k: v for k, v in value.items() if k != key}
            for changed in mutations(value[key]):
                yield {**value, key: changed}
        yield {**value, "extra": None}
    elif isinstance(value, list):
        for index, element in enumerate(value):
            for changed in mutations(element):
                yield [*value[:index], changed, *value[index + 1 :]]
        if value:
            yield [*value, copy.deepcopy(value[0])]  # a duplicate (item ids are unique)
            yield value[1:]
    for odd in ODD_VALUES:
        if odd != value or type(odd) is not type(value):
            yield odd


def model_form(body: Any) -> str | None:
    try:
        return json.dumps(Ledger.model_validate(body).model_dump(mode="json", by_alias=True))
    except ValidationError:
        return None


def test_contract_the_plain_reading_is_never_looser_than_the_model(repo: Path) -> None:
    body = full_ledger(repo).model_dump(mode="json", by_alias=True)
    assert json.dumps(ledger_view.plain_ledger(body)) == model_form(body)
    accepted = refused = 0
    for mutated in mutations(body):
        plain = ledger_view.plain_ledger(mutated)
        model = model_form(mutated)
        if plain is not None:
            accepted += 1
            assert json.dumps(plain) == model, mutated  # accepted: the model's very form
        elif model is None:
            refused += 1
    # the mutations reach both sides: many bodies accepted, many the model refuses
    assert accepted > 100 and refused > 1000, (accepted, refused)


def test_contract_evidence_in_the_plain_reading_is_the_models(repo: Path) -> None:
    evidence = attest_evidence(repo, "HEAD", ["app.py"])
    body = full_ledger(repo).model_dump(mode="json", by_alias=True)
    body["gates"][0]["evidence"] = evidence.model_dump()
    plain = ledger_view.plain_ledger(body)
    assert plain is not None
    assert Evidence.model_validate(plain["gates"][0]["evidence"]) == evidence
