"""Contract tests: every payload rule of the verification-run contract, one test each.

The pure rules in ``review_loop.agents.verification``, in spx's wording.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from review_loop.agents import verification as v
from tests.orchestrator.journal.payloads import finding, finding_key, gap, producer, unit

CHANGESET = v.Selector("changeset", "base..head")


def field(path: str) -> str:
    return f'payload field "{path}" is missing or malformed'


def requirement(text: str) -> str:
    return f"payload does not satisfy: {text}"


def reason_of(function: Any, *args: Any) -> str:
    with pytest.raises(v.PayloadRejectedError) as caught:
        function(*args)
    return caught.value.reason


def view_with(*units: dict[str, Any], findings: int = 0) -> dict[str, Any]:
    view = v.new_view()
    for index, payload in enumerate(units, start=1):
        v.fold_event(view, {"type": v.SCOPE_EVENT, "seq": index, "data": {"payload": payload}})
    for index in range(findings):
        v.fold_event(view, {"type": v.FINDING_EVENT, "seq": 100 + index, "data": {}})
    return view


# --- scope unit fields ----------------------------------------------------------------------


def test_valid_unit_is_normalized_and_unknown_fields_dropped() -> None:
    payload = unit(note="free text")
    accepted = v.validate_audit_scope(payload)
    assert "note" not in accepted
    assert list(accepted) == [
        "unitId",
        "auditClass",
        "auditKind",
        "subject",
        "coverageRequirement",
        "coverageStatus",
        "priorContext",
        "expectedProducer",
        "recordedByRunDriver",
        "producerProvenance",
    ]


def test_unit_must_be_an_object() -> None:
    assert reason_of(v.validate_audit_scope, ["x"]) == requirement("the payload is a JSON object")


RETIRED_NAMES = [
    "id",
    "subjectPaths",
    "expectedProducerIdentity",
    "executionProducerIdentity",
    "stableProducerIdentity",
    "observed",
    "expected",
]


@pytest.mark.parametrize("alias", RETIRED_NAMES)
def test_extra_fields_named_like_retired_aliases_are_dropped_as_spx_does(alias: str) -> None:
    payload = unit()
    payload[alias] = "x"
    accepted = v.validate_audit_scope(payload)
    assert alias not in accepted and accepted["unitId"] == payload["unitId"]


def test_id_in_place_of_unit_id_is_the_missing_unit_id() -> None:
    payload = unit()
    payload["id"] = payload.pop("unitId")
    assert reason_of(v.validate_audit_scope, payload) == field("unitId")


@pytest.mark.parametrize("name", ["unitId", "subject"])
def test_required_strings(name: str) -> None:
    payload = unit()
    payload[name] = ""
    assert reason_of(v.validate_audit_scope, payload) == field(name)
    del payload[name]
    assert reason_of(v.validate_audit_scope, payload) == field(name)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("auditClass", "implementations"),
        ("auditKind", "unit-tests"),
        ("coverageRequirement", "mandatory"),
        ("coverageStatus", "done"),
    ],
)
def test_enumerations(name: str, value: str) -> None:
    assert reason_of(v.validate_audit_scope, unit(**{name: value})) == field(name)


def test_kind_must_fit_the_class() -> None:
    payload = unit(auditClass="spec")  # kind "code" is an implementation kind
    assert reason_of(v.validate_audit_scope, payload) == requirement(
        "the audit kind is compatible with the audit class"
    )
    assert v.validate_audit_scope(unit(auditClass="spec", kind="adr"))["auditKind"] == "adr"


def test_coverage_gap_fits_every_class() -> None:
    for audit_class in v.AUDIT_CLASSES:
        payload = gap("x")
        payload["auditClass"] = audit_class
        assert v.validate_audit_scope(payload)["auditKind"] == "coverage-gap"


@pytest.mark.parametrize("status", ["audited", "not-applicable"])
def test_coverage_gap_cannot_claim_coverage(status: str) -> None:
    payload = gap("x")
    payload["coverageStatus"] = status
    assert reason_of(v.validate_audit_scope, payload) == requirement(
        "a coverage-gap unit carries an uncovered coverage status"
    )


def test_coverage_gap_carries_no_provenance() -> None:
    payload = gap("x")
    payload["producerProvenance"] = {
        "agentOwningPluginVersion": "1",
        "skillOwningPluginVersion": "1",
    }
    assert reason_of(v.validate_audit_scope, payload) == requirement(
        "a coverage-gap unit records no producer provenance"
    )


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda p: p.pop("priorContext"), "priorContext"),
        (lambda p: p.update(priorContext="x"), "priorContext"),
        (
            lambda p: p["priorContext"].pop("changedFilePartition"),
            "priorContext.changedFilePartition",
        ),
        (lambda p: p["priorContext"].pop("concernPartition"), "priorContext.concernPartition"),
        (
            lambda p: p["priorContext"].update(languagePartition=""),
            "priorContext.languagePartition",
        ),
        (lambda p: p.pop("expectedProducer"), "expectedProducer"),
        (lambda p: p.pop("recordedByRunDriver"), "recordedByRunDriver"),
        (lambda p: p.update(parentUnitId=""), "parentUnitId"),
        (lambda p: p.update(producerProvenance=[]), "producerProvenance"),
        (
            lambda p: p["producerProvenance"].pop("skillOwningPluginVersion"),
            "producerProvenance.skillOwningPluginVersion",
        ),
        (
            lambda p: p["producerProvenance"].update(toolVersion=""),
            "producerProvenance.toolVersion",
        ),
    ],
)
def test_nested_fields_are_named_by_path(mutate: Any, expected: str) -> None:
    payload = unit()
    mutate(payload)
    assert reason_of(v.validate_audit_scope, payload) == field(expected)


@pytest.mark.parametrize("name", v.PRODUCER_FIELDS)
@pytest.mark.parametrize("holder", ["expectedProducer", "recordedByRunDriver"])
def test_each_producer_field_is_required(holder: str, name: str) -> None:
    payload = unit()
    payload[holder][name] = ""
    assert reason_of(v.validate_audit_scope, payload) == field(f"{holder}.{name}")


def test_language_partition_is_optional() -> None:
    payload = unit()
    del payload["priorContext"]["languagePartition"]
    assert "languagePartition" not in v.validate_audit_scope(payload)["priorContext"]


def test_parent_must_differ_from_the_unit() -> None:
    payload = unit()
    payload["parentUnitId"] = payload["unitId"]
    assert reason_of(v.validate_audit_scope, payload) == requirement(
        "a unit's parent unit differs from the unit itself"
    )


# --- scope units in a run -------------------------------------------------------------------


def for_run(payload: dict[str, Any], view: dict[str, Any], selector: v.Selector = CHANGESET) -> Any:
    return v.validate_scope_for_run("audit", payload, view, selector, payload["unitId"])


def test_first_unit_must_be_a_root() -> None:
    child = unit(parent="implementation:python:code:root")
    assert reason_of(for_run, child, v.new_view()) == requirement(
        "the run's first unit records no parent unit"
    )


def test_changeset_run_accepts_several_roots_until_a_child_is_recorded() -> None:
    first, second = unit("a.py"), unit("b.py")
    view = view_with(first)
    assert for_run(second, view)["subject"] == "b.py"
    child = unit("c.py", parent=first["unitId"])
    assert for_run(child, view_with(first, second))["parentUnitId"] == first["unitId"]
    late_root = unit("d.py")
    assert reason_of(for_run, late_root, view_with(first, second, child)) == requirement(
        "a child unit names a parent unit already recorded in the run"
    )


def test_child_names_a_recorded_parent() -> None:
    view = view_with(unit("a.py"))
    orphan = unit("b.py", parent="implementation:python:code:nowhere.py")
    assert reason_of(for_run, orphan, view) == requirement(
        "a child unit names a parent unit already recorded in the run"
    )


def test_file_run_opens_with_a_required_root_on_its_file() -> None:
    selector = v.Selector("file", "src/a.py")
    assert for_run(unit("src/a.py"), v.new_view(), selector)["subject"] == "src/a.py"
    for payload in (unit("src/b.py"), unit("src/a.py", requirement="optional")):
        assert reason_of(for_run, payload, v.new_view(), selector) == requirement(
            "a file-scoped run opens with a required root unit whose subject is the run's file "
            "selector"
        )


def test_file_run_has_one_root() -> None:
    selector = v.Selector("file", "src/a.py")
    assert reason_of(
        for_run, unit("src/a.py", concern="tests"), view_with(unit("src/a.py")), selector
    ) == requirement("a file-scoped run records no second root unit")


@pytest.mark.parametrize("key", ["scope-00", "implementation:python:code:its.py", "idem-1"])
def test_scope_key_is_the_clients_choice_as_in_spx(key: str) -> None:
    payload = unit("it's.py")
    accepted = v.validate_scope_for_run("audit", payload, v.new_view(), CHANGESET, key)
    assert accepted["subject"] == "it's.py"  # an apostrophe survives


# --- findings -------------------------------------------------------------------------------


def finding_for_run(payload: dict[str, Any], view: dict[str, Any], key: str | None = None) -> Any:
    return v.validate_finding_for_run("audit", payload, view, key or finding_key(payload))


def test_valid_finding_is_normalized() -> None:
    recorded = unit()
    accepted = finding_for_run(finding(recorded, extra="dropped"), view_with(recorded))
    assert "extra" not in accepted
    assert accepted["evidence"] == {"observed": "except:", "expected": "except ValueError:"}


@pytest.mark.parametrize("name", ["unitId", "rule", "location", "message"])
def test_finding_required_strings(name: str) -> None:
    payload = finding(unit())
    payload[name] = ""
    assert reason_of(v.validate_audit_finding, payload) == field(name)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda p: p.update(severity="critical"), "severity"),
        (lambda p: p.pop("producerIdentity"), "producerIdentity"),
        (lambda p: p["producerIdentity"].pop("skillName"), "producerIdentity.skillName"),
        (lambda p: p.pop("producerProvenance"), "producerProvenance"),
        (
            lambda p: p["producerProvenance"].pop("agentOwningPluginVersion"),
            "producerProvenance.agentOwningPluginVersion",
        ),
        (lambda p: p.pop("evidence"), "evidence"),
        (lambda p: p["evidence"].pop("observed"), "evidence.observed"),
        (lambda p: p["evidence"].update(expected=""), "evidence.expected"),
    ],
)
def test_finding_fields(mutate: Any, expected: str) -> None:
    payload = finding(unit())
    mutate(payload)
    assert reason_of(v.validate_audit_finding, payload) == field(expected)


@pytest.mark.parametrize("alias", ["observed", "expected", "executionProducerIdentity"])
def test_finding_extra_fields_named_like_retired_aliases_are_dropped(alias: str) -> None:
    payload = finding(unit())
    payload[alias] = "x"
    assert alias not in v.validate_audit_finding(payload)


def test_observed_in_place_of_evidence_is_the_missing_evidence_as_in_spx() -> None:
    payload = finding(unit())
    payload["observed"] = payload.pop("evidence")["observed"]
    assert reason_of(v.validate_audit_finding, payload) == field("evidence")


def test_finding_names_a_recorded_unit() -> None:
    payload = finding(unit("a.py"))
    assert reason_of(finding_for_run, payload, view_with(unit("b.py"))) == requirement(
        "a finding names a unit already recorded as scope evidence in the run"
    )


def test_finding_rule_may_hold_a_colon_and_the_key_is_the_clients_choice() -> None:
    recorded = unit()
    view = view_with(recorded)
    assert finding_for_run(finding(recorded, rule="style:naming"), view)["rule"] == "style:naming"
    assert finding_for_run(finding(recorded), view, "other-key")["unitId"] == recorded["unitId"]


def test_spx_does_not_compare_producer_identity_with_expected_producer() -> None:
    recorded = unit()
    payload = finding(recorded)
    payload["producerIdentity"] = producer("some-other-skill")
    assert finding_for_run(payload, view_with(recorded))["producerIdentity"]["skillName"] == (
        "some-other-skill"
    )


# --- terminal status ------------------------------------------------------------------------


def audit_terminal(status: str, view: dict[str, Any], selector: v.Selector = CHANGESET) -> Any:
    return v.check_terminal("audit", status, None, view, selector, has_metadata=False)


def test_audit_approved_when_every_required_unit_is_covered_and_no_finding() -> None:
    view = view_with(unit("a.py"), unit("b.py", status="not-applicable"), gap("c.md"))
    assert v.expected_audit_status(view, CHANGESET) == "approved"
    assert audit_terminal("approved", view) is None


@pytest.mark.parametrize(
    "units",
    [
        [],
        [unit("a.py", status="missing-skill")],
        [unit("a.py", status="unsupported")],
        [unit("a.py", status="skipped")],
        [unit("a.py", status="incomplete")],
        [{**gap("a.py"), "coverageRequirement": "required"}],
    ],
    ids=["no-units", "missing-skill", "unsupported", "skipped", "incomplete", "required-gap"],
)
def test_audit_rejected_by_uncovered_evidence(units: list[dict[str, Any]]) -> None:
    view = view_with(*units)
    assert v.expected_audit_status(view, CHANGESET) == "rejected"
    with pytest.raises(v.TerminalRejectedError) as caught:
        audit_terminal("approved", view)
    assert caught.value.conflict
    assert caught.value.reason == (
        "terminal completion does not satisfy: the terminal status matches the status the "
        "run's recorded evidence requires"
    )


def test_audit_rejected_by_any_finding() -> None:
    view = view_with(unit("a.py"), findings=1)
    assert audit_terminal("rejected", view) is None
    with pytest.raises(v.TerminalRejectedError):
        audit_terminal("approved", view)


def test_optional_uncovered_unit_does_not_reject() -> None:
    view = view_with(unit("a.py"), unit("b.py", requirement="optional", status="skipped"))
    assert v.expected_audit_status(view, CHANGESET) == "approved"


def test_file_run_root_must_match_for_approval() -> None:
    selector = v.Selector("file", "src/a.py")
    assert v.expected_audit_status(view_with(unit("src/a.py")), selector) == "approved"
    assert v.expected_audit_status(view_with(unit("src/b.py")), selector) == "rejected"


def test_audit_refuses_terminal_metadata() -> None:
    with pytest.raises(v.TerminalRejectedError) as caught:
        v.check_terminal("audit", "approved", {}, view_with(unit()), CHANGESET, has_metadata=True)
    assert not caught.value.conflict


def test_test_runs_seal_with_runner_statuses() -> None:
    assert (
        v.check_terminal("test", "passed", None, v.new_view(), CHANGESET, has_metadata=False)
        is None
    )
    with pytest.raises(v.TerminalRejectedError):
        v.check_terminal("test", "approved", None, v.new_view(), CHANGESET, has_metadata=False)
    with pytest.raises(v.TerminalRejectedError):
        v.check_terminal(
            "test", "passed", None, view_with(findings=1), CHANGESET, has_metadata=False
        )


def test_review_runs_follow_findings_and_metadata() -> None:
    metadata = {
        "actor": "a",
        "state": "approved",
        "body": "",
        "submittedAt": "2026-01-01T00:00:00Z",
        "commit": "abc",
    }
    clean = v.new_view()
    assert v.check_terminal("review", "approved", metadata, clean, CHANGESET, has_metadata=True)
    with pytest.raises(v.TerminalRejectedError):
        v.check_terminal("review", "rejected", metadata, clean, CHANGESET, has_metadata=True)
    with pytest.raises(v.TerminalRejectedError):
        v.check_terminal(
            "review", "approved", metadata, view_with(findings=1), CHANGESET, has_metadata=True
        )
    with pytest.raises(v.TerminalRejectedError):
        v.check_terminal("review", "passed", None, clean, CHANGESET, has_metadata=False)
    bad = {**metadata, "state": "maybe"}
    with pytest.raises(v.TerminalRejectedError) as caught:
        v.check_terminal("review", "approved", bad, clean, CHANGESET, has_metadata=True)
    assert not caught.value.conflict


# --- review and test payloads ---------------------------------------------------------------


def test_review_payloads() -> None:
    scope = {"path": "a.py", "commit": "abc", "side": "RIGHT", "coverageState": "clean", "line": 3}
    assert v.validate_review_scope(scope)["line"] == 3
    assert reason_of(v.validate_review_scope, {**scope, "side": "UP"}) == field("side")
    assert reason_of(v.validate_review_scope, {**scope, "line": 0}) == field("line")
    comment = {
        "path": "a.py",
        "originalCommit": "abc",
        "diffHunk": "@@",
        "body": "b",
        "side": "LEFT",
        "finding": {"disposition": "DEBT", "summary": "s"},
    }
    assert reason_of(v.validate_review_finding, comment) == requirement(
        "a review finding anchors to a line or to a position"
    )
    assert v.validate_review_finding({**comment, "position": 2})["position"] == 2
    bad = copy.deepcopy(comment)
    bad["finding"]["disposition"] = "NIT"
    assert reason_of(v.validate_review_finding, bad) == field("finding.disposition")


def test_test_payloads() -> None:
    assert v.validate_test_scope({"moduleId": "m"}) == {"moduleId": "m"}
    assert reason_of(
        v.validate_test_finding, {"moduleId": "m", "testName": "t", "errors": [1]}
    ) == field("errors")


# --- selectors, tokens, rejection block ------------------------------------------------------


@pytest.mark.parametrize("scope", ["a...b", "a..b..c", "..b", "a..", "ab"])
def test_changeset_scope_needs_exactly_two_dots(scope: str) -> None:
    with pytest.raises(v.ScopeSelectorError, match=r"<base>\.\.<head>"):
        v.canonical_selector("changeset", scope)


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../x", "a/../../b", "C:\\x", "."])
def test_file_scope_is_a_safe_relative_path(path: str) -> None:
    with pytest.raises(v.ScopeSelectorError):
        v.canonical_selector("file", path)


def test_file_scope_is_normalized() -> None:
    assert v.canonical_selector("file", "./src//a.py") == ("file", "src/a.py")


def test_unknown_scope_type() -> None:
    with pytest.raises(v.ScopeSelectorError):
        v.canonical_selector("commit", "x")


def test_branch_slug_matches_spx() -> None:
    slug = v.branch_slug("Feature/Äpfel_2")
    assert slug.startswith("feature-pfel-2-") and len(slug.split("-")[-1]) == 8
    assert v.branch_slug("---") == v.sha256_hex(b"---")[:8]
    assert len(v.branch_slug("x" * 500).encode()) <= 120


def test_run_token_shape() -> None:
    assert v.is_run_token("2026-01-02_03-04-05-678-0123456789ab")
    assert not v.is_run_token("2026-01-02_03-04-05-678-0123456789AB")


def test_rejection_block_layout() -> None:
    text = v.render_rejection("head", "audit", "scope", "why", "note")
    assert text.splitlines() == [
        "head",
        "",
        "  verification type  audit",
        "  evidence kind      scope",
        "  reason             why",
        "",
        "  note",
    ]


def test_input_digest_is_canonical() -> None:
    expected = v.sha256_hex(b'{"content":"x","source":"stdin"}')
    assert v.digest_run_input("stdin", "x") == expected
