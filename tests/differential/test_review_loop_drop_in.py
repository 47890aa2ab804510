"""Differential (contract) tests: review-loop is a drop-in for the original Node ``review-loop``.

The golden files under ``golden/rl/`` are the original's REAL outputs: recorded by
``python -m tests.differential.record_originals <review-loop.mjs>`` from
Adonis0123/adonis-skills @ e2acfae790e9 under node 20, each scenario in a fresh repository
with the fake reviewer CLIs, normalised for paths, uuids, times and digests. These tests run
the same command lines through review-loop (its real CLI entry point, the same fakes through
the real process layer) and compare exit codes, key sets, value types, statuses and the
values a client branches on (:mod:`tests.differential.compare`). The originals are not
needed to run them.

Flags review-loop needs for a documented deviation are added where a scenario says so
(``Step.ours_extra``); none is needed today: PASS_WITH_CONCERNS waits for the user by
default, as in the original.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli import run as cli_run
from tests.differential.compare import differences
from tests.differential.scenarios import (
    BASE_FILES,
    CHANGED,
    FIX,
    GOLDEN,
    SCENARIOS,
    Scenario,
    expand,
    normalise,
)
from tests.fakes import FakeCLIs
from tests.gitrepo import committed_repo

# Keys whose values legitimately differ from the original's (docs/compatibility.md).
OURS_DIFFER = {
    # where review-loop's own scripts live: a path, not the skill's scripts directory
    # and the reviewers it runs: every registered product (gemini added)
    "help": {"$.skillScriptsDir", "$.defaults.reviewer"},
}


def _golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / "rl" / f"{name}.json").read_text())
    return data


def _run_ours(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[int, Any]], dict[str, str]]:
    repo = committed_repo(tmp_path / "repo", BASE_FILES)
    (repo / "app.py").write_text(CHANGED)
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(**scenario.script)
    for key, value in fakes.env().items():
        monkeypatch.setenv(key, value)
    fix = tmp_path / "fix.md"
    fix.write_text(FIX)
    question = tmp_path / "question.md"
    question.write_text("Ship it?\n")
    values = {"repo": str(repo), "packet": "", "fix": str(fix), "question": str(question)}
    paths = {str(repo): "<repo>", str(fix): "<fix>"}
    results = []
    for step in scenario.steps:
        out: list[str] = []
        code = cli_run([*expand(step.argv, values), *step.ours_extra], stdout=out.append)
        assert len(out) == 1, out
        document = json.loads(out[0])
        if isinstance(document.get("packetPath"), str):
            values["packet"] = document["packetPath"]
        results.append((code, normalise(document, paths)))
    return results, values


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_contract_same_command_lines_same_contract(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden = _golden(scenario.name)
    ours, _ = _run_ours(scenario, tmp_path, monkeypatch)
    allowed = OURS_DIFFER.get(scenario.name, set())
    for i, (step, (code, document)) in enumerate(zip(golden["steps"], ours, strict=True)):
        label = f"{scenario.name} step {i} {step['argv']}"
        if not scenario.steps[i].compare:
            continue
        assert code == step["exit"], (label, document)
        found = [d for d in differences(step["stdout"], document) if d.split(":")[0] not in allowed]
        assert found == [], label


def test_contract_sessions_reads_the_records_the_original_wrote(tmp_path: Path) -> None:
    """A ``reviewer-session.json`` the original wrote is listed, as the original lists it."""
    golden = _golden("blocked_fix_pass")
    ((relative, record),) = golden["records"].items()
    assert set(record) == {"product", "sessionId", "updated"}
    listed = golden["steps"][-1]
    repo = committed_repo(tmp_path / "repo", BASE_FILES)
    sid = "0b5e3c1a-3f9a-4c8e-9d3b-2a7c6e1f4d20"
    path = repo / relative.replace("main--<slug>", "main--0d6e4079e367").replace(
        "<stamp>", "2026-11-30_23-55"
    )
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps({"product": "claude", "sessionId": sid, "updated": "2026-11-30T23:55:00.000Z"})
    )
    out: list[str] = []
    code = cli_run(["sessions", f"--repo={repo}"], stdout=out.append)
    document = normalise(json.loads(out[0]), {str(repo): "<repo>"})
    assert code == listed["exit"] == 0
    assert differences(listed["stdout"], document) == []
    entry = document["sessions"][0]
    assert entry["resume"] == listed["stdout"]["sessions"][0]["resume"]


def test_contract_resume_commands_split_into_an_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``cd <repo> &&``: the command splits into the argv that resumes; ``cwd`` is apart."""
    (scenario,) = [s for s in SCENARIOS if s.name == "blocked_fix_pass"]
    ours, _ = _run_ours(scenario, tmp_path, monkeypatch)
    code, listed = ours[-1]
    assert code == 0
    entry = listed["sessions"][0]
    for command in entry["resume"].values():
        argv = shlex.split(command)
        assert argv[0] == "claude" and "<uuid>" in argv and "&&" not in argv
    assert entry["cwd"] == "<repo>"
    assert entry["resumeInShell"]["interactive"].startswith("cd <repo> && claude")


def test_contract_already_archived_carries_the_run_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The original's ``already_archived`` has ``state``; review-loop's keeps it (and adds)."""
    (scenario,) = [s for s in SCENARIOS if s.name == "archived_continue_packet"]
    ours, _ = _run_ours(scenario, tmp_path, monkeypatch)
    code, document = ours[-1]
    assert code == 0 and document["status"] == "already_archived"
    assert document["state"]["lastVerdict"] == "NO_FINDINGS" and "packetHash" in document["state"]
    assert document["evidenceCurrent"] is True


def test_contract_delivery_unknown_message_says_the_reason_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Reviewer invoke failed (no retry): <reason>`` as the original, the reason not doubled."""
    repo = committed_repo(tmp_path / "repo", BASE_FILES)
    (repo / "app.py").write_text(CHANGED)
    fakes = FakeCLIs(tmp_path / "fakes")
    for key, value in fakes.env().items():
        monkeypatch.setenv(key, value)
    (repo / ".review-handoff").mkdir()
    (repo / ".review-handoff" / "STOP").write_text("")
    out: list[str] = []
    code = cli_run(["run", f"--repo={repo}", "--reviewer=claude"], stdout=out.append)
    document = json.loads(out[0])
    assert code == 2 and document["status"] == "DELIVERY_UNKNOWN", document
    message = document["message"]
    assert message.startswith("Reviewer invoke failed (no retry): "), message
    reason = message.removeprefix("Reviewer invoke failed (no retry): ")
    assert reason and f"{reason}: {reason}" not in message and fakes.calls() == []


@pytest.mark.parametrize(("attempts", "said"), [(1, "(no retry)"), (2, "(2 attempts)")])
def test_contract_delivery_unknown_message_counts_attempts_and_says_a_bare_reason_once(
    tmp_path: Path, attempts: int, said: str
) -> None:
    """A reason without other detail is said once; "no retry" only after a single attempt."""
    from review_loop.agents.models import DeliveryState
    from review_loop.agents.outcomes import Attempt, Delivery
    from review_loop.orchestrator.workflows import review_run
    from review_loop.orchestrator.workflows.review_store import PacketRef

    ref = PacketRef(tmp_path, "main--0123456789ab", "2026-01-01_00-00-auto-loop", archived=False)
    ref.runtime.mkdir(parents=True)
    reason = "STOP interrupt (pre-spawn)"
    attempt = Attempt(
        product="claude",
        peer="claude",
        command=["claude"],
        state=DeliveryState.NOT_SUBMITTED,
        reason=reason,
        detail=reason,
    )
    delivery = Delivery(
        state=DeliveryState.DELIVERY_UNKNOWN,
        peer="claude",
        product="claude",
        reason=reason,
        detail=reason,
        cwd=str(tmp_path),
        attempts=[attempt] * attempts,
    )
    document = review_run._delivery_unknown(ref, {"round": 0}, delivery, 1)
    assert document["message"] == f"Reviewer invoke failed {said}: {reason}"
    assert document["state"]["pendingStage"] is None and document["state"]["round"] == 0
