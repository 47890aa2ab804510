"""Contract tests: the payload tables are the validators' fields (seed 002, journal by hand).

Every field a table names is one the validator checks, with the same accepted values; a
refused payload lists every problem of its fields at once; the verbs' ``--help`` is made
from the same tables. A host driving ``spx`` by hand from the help alone gets a payload
accepted at its first ``scope add``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from review_loop.agents import run_payloads as rp
from review_loop.agents import verification as v
from review_loop.orchestrator import cli
from tests.orchestrator.journal.payloads import finding, unit

REVIEW_FINDING = {
    "path": "keep.py",
    "side": "RIGHT",
    "originalCommit": "abc",
    "diffHunk": "@@ -1 +1 @@",
    "body": "why 2?",
    "line": 1,
    "finding": {"disposition": "BLOCKING", "summary": "magic number"},
}
SAMPLES: dict[tuple[str, str], tuple[Callable[[Any], Any], dict[str, Any]]] = {
    ("audit", "scope"): (v.validate_audit_scope, unit("src/a.py")),
    ("audit", "finding"): (v.validate_audit_finding, finding(unit("src/a.py"))),
    ("review", "scope"): (
        v.validate_review_scope,
        {"path": "a.py", "commit": "abc", "side": "LEFT", "coverageState": "clean"},
    ),
    ("review", "finding"): (v.validate_review_finding, REVIEW_FINDING),
    ("review", "terminal-metadata"): (
        v.validate_review_terminal_metadata,
        {"actor": "me", "body": "", "submittedAt": "2026", "commit": "abc", "state": "approved"},
    ),
    ("test", "scope"): (v.validate_test_scope, {"moduleId": "tests/test_a.py"}),
    ("test", "finding"): (
        v.validate_test_finding,
        {"moduleId": "tests/test_a.py", "testName": "test_x", "errors": ["boom"]},
    ),
}


def without(payload: dict[str, Any], name: str) -> dict[str, Any]:
    changed = copy.deepcopy(payload)
    *parents, last = name.split(".")
    target = changed
    for part in parents:
        target = target[part]
    target.pop(last, None)
    return changed


def replaced(payload: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(payload)
    *parents, last = name.split(".")
    target = changed
    for part in parents:
        target = target[part]
    target[last] = value
    return changed


def test_every_payload_kind_has_a_table_and_a_sample() -> None:
    assert set(rp.TABLES) == set(SAMPLES)


@pytest.mark.parametrize("where", sorted(SAMPLES))
def test_a_valid_sample_has_no_problems(where: tuple[str, str]) -> None:
    validate, sample = SAMPLES[where]
    validate(sample)
    assert rp.problems(*where, sample) == []


@pytest.mark.parametrize("where", sorted(SAMPLES))
def test_each_required_field_of_the_table_is_one_the_validator_requires(
    where: tuple[str, str],
) -> None:
    validate, sample = SAMPLES[where]
    for entry in rp.TABLES[where]:
        parent = entry.name.rpartition(".")[0]
        if not entry.required or (parent and parent not in json.dumps(sample)):
            continue
        if parent and not isinstance(rp._lookup(sample, parent), dict):
            continue  # under an optional object the sample does not carry
        broken = without(sample, entry.name)
        with pytest.raises(v.PayloadRejectedError) as refused:
            validate(broken)
        assert f'"{entry.name}"' in refused.value.reason, (entry.name, refused.value.reason)
        assert rp.problems(*where, broken) == [f"{entry.name}: missing; accepted: {entry.accepted}"]


@pytest.mark.parametrize("where", sorted(SAMPLES))
def test_each_choice_accepts_exactly_the_validators_values(where: tuple[str, str]) -> None:
    validate, sample = SAMPLES[where]
    for entry in rp.TABLES[where]:
        if (
            not entry.accepted.startswith("one of ")
            or rp._lookup(sample, entry.name) is rp._MISSING
        ):
            continue
        with pytest.raises(v.PayloadRejectedError):
            validate(replaced(sample, entry.name, "bogus"))
        for value in entry.accepted.removeprefix("one of ").split(" | "):
            payload = replaced(sample, entry.name, value)
            if where == ("audit", "scope") and entry.name == "auditKind":
                payload["auditClass"] = next(
                    (c for c, kinds in v.AUDIT_KINDS_BY_CLASS.items() if value in kinds),
                    "implementation",
                )
                if value == "coverage-gap":  # its own rules: uncovered, no provenance
                    payload.pop("producerProvenance")
                    payload["coverageStatus"] = "skipped"
            if where == ("audit", "scope") and entry.name == "auditClass":
                payload["auditKind"] = sorted(v.AUDIT_KINDS_BY_CLASS[value])[0]
            assert rp.problems(*where, payload) == []
            validate(payload)


def test_every_problem_is_reported_at_once_without_echoing_values() -> None:
    payload = without(unit("src/a.py"), "auditKind")
    payload["coverageRequirement"] = "must-secret"
    del payload["priorContext"]["concernPartition"]
    del payload["expectedProducer"]
    found = rp.problems("audit", "scope", payload)
    assert found == [
        "auditKind: missing; accepted: " + rp.TABLES[("audit", "scope")][3].accepted,
        "coverageRequirement: a string, not accepted; accepted: one of required | optional",
        "priorContext.concernPartition: missing; accepted: a non-empty string",
        "expectedProducer: missing; accepted: an object",  # its six fields not repeated
    ]
    assert not any("must-secret" in line for line in found)
    assert rp.problems("audit", "scope", [1]) == [
        "the payload: a list, not an object; accepted: an object"
    ]


@pytest.mark.parametrize(
    ("verb", "kinds"),
    [
        (["scope", "add"], [("audit", "scope"), ("review", "scope"), ("test", "scope")]),
        (["finding", "add"], [("audit", "finding"), ("review", "finding"), ("test", "finding")]),
        (["finish"], [("review", "terminal-metadata")]),
    ],
)
def test_each_verbs_help_lists_its_payload_fields_from_the_tables(
    verb: list[str], kinds: list[tuple[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.run(["verification", "run", *verb, "--help"]) == 0
    text = capsys.readouterr().out
    for where in kinds:
        for line in rp.describe(*where):
            assert f"  {line}" in text, line
    if verb == ["finish"]:
        for kind, statuses in v.TERMINAL_BY_TYPE.items():
            assert f"  {kind}: {' | '.join(statuses)}" in text


def test_help_narrows_to_the_named_verification_type(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["verification", "run", "scope", "add", "--verification-type", "test", "--help"]
    assert cli.run(argv) == 0
    text = capsys.readouterr().out
    assert "scope add payload, --verification-type test:" in text
    assert "--verification-type audit:" not in text
