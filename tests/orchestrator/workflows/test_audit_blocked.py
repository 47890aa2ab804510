"""Collaboration tests: the audit's BLOCKED rules of seed 002 (A4, A18, A64, A71, A45).

- a missing run-driver identity is BLOCKED ``not-started``, never review-loop's by default;
- established deterministic-verification facts for the audited head are retained;
- a concern that cannot reach a final status is named by its units' ``unitId``;
- a refused run-recording write is ``diagnostic: configuration error: <path>``;
- a reconcile that names only ``unaccounted`` paths goes back to recording their rows.

Concern agents are fake CLIs through the real dispatcher and process layer; the run is the
real journal. Async tests run on asyncio and trio.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator import cli
from review_loop.orchestrator.journal import runs
from review_loop.orchestrator.workflows import scope
from review_loop.orchestrator.workflows.audit import AuditRequest, run_audit
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_audit import (  # the remote fixture too (fakes: conftest)
    DRIVER,
    PATHS,
    PREFS,
    concerns_file,
    remote,
    reply,
)
from tests.orchestrator.workflows.test_scope import Remote

__all__ = ["remote"]  # a pytest fixture shared with test_audit

pytestmark = pytest.mark.anyio


def request(remote: Remote, config: str, **extra: Any) -> AuditRequest:
    fields: dict[str, Any] = {"driver": DRIVER, **extra}
    return AuditRequest(selector="HEAD", directory=str(remote.work), concerns_file=config, **fields)


def no_run_started(remote: Remote) -> bool:
    return not (remote.work / ".review-handoff" / "verification").exists()


async def test_missing_driver_identity_blocks_not_started(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    config = concerns_file(tmp_path, {"*": "claude"})
    document = await run_audit(request(remote, config, driver=None), prefs=PREFS)
    assert document["ok"] is False and document["status"] == "BLOCKED"
    assert document["runToken"] == "not-started"
    assert document["payloadSource"] is None and document["payloadKey"] is None
    assert "run-driver identity" in document["stderr"] and "--driver" in document["stderr"]
    assert no_run_started(remote) and fakes.calls() == []


def test_cli_without_driver_blocks_and_self_names_review_loop(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = concerns_file(tmp_path, {"*": "claude"})
    code = cli.run(["audit", "HEAD", str(remote.work), "--concerns", config])
    document = json.loads(capsys.readouterr().out)
    assert code == 2 and document["runToken"] == "not-started"
    assert "runToken: not-started" in document["blocked"]
    assert no_run_started(remote)
    fakes.script(claude=[reply(audited=PATHS)])
    code = cli.run(["audit", "HEAD", str(remote.work), "--concerns", config, "--driver", "self"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["terminalStatus"] == "approved"


async def test_deterministic_facts_for_the_audited_head_are_retained(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(claude=[reply(audited=PATHS)] * 2)
    config = concerns_file(tmp_path, {"*": "claude"})
    facts = {"head": remote.head, "checks": [{"command": "pytest -q", "exitCode": 0}]}
    document = await run_audit(request(remote, config, deterministic=facts), prefs=PREFS)
    assert document["ok"] is True, document
    assert document["deterministicVerification"] == {"status": "established", **facts}
    run = runs.address(
        remote.work, "audit", "changeset", document["scopeIdentity"], document["runToken"]
    )
    sealed = json.loads(runs.read_input(run)["content"])
    assert sealed["deterministicVerification"] == {"status": "established", **facts}

    other = {"head": remote.base, "checks": []}  # facts for another commit
    document = await run_audit(request(remote, config, deterministic=other), prefs=PREFS)
    assert document["deterministicVerification"] == "unestablished"
    assert any("recorded as unestablished" in note for note in document["notes"])


def test_cli_deterministic_facts_file_is_validated(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"head": "HEAD"}))
    argv = ["audit", "HEAD", str(remote.work), "--driver", "self"]
    code = cli.run([*argv, "--deterministic-verification", str(facts)])
    document = json.loads(capsys.readouterr().out)
    assert code == 1 and document["error"].startswith("--deterministic-verification: ")
    assert no_run_started(remote) and fakes.calls() == []


async def test_a_failed_concern_names_its_units(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(claude=[reply("failed", failure="could not read a.py")])
    config = concerns_file(tmp_path, {"python:audit-python-code": "claude"})
    document = await run_audit(request(remote, config), prefs=PREFS)
    assert document["status"] == "BLOCKED" and document["runToken"] != "not-started"
    assert "implementation:python:code:a.py" in document["command"]
    assert "could not read a.py" in document["command"]
    fields = ("payloadSource", "payloadKey", "exitCode", "stderr", "diagnostic")
    assert [document[f] for f in fields] == [None] * 5


async def test_a_refused_recording_write_is_a_configuration_error(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    runtime = remote.work / ".review-handoff" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "audit").write_text("in the way")  # the scratch directory cannot be made
    config = concerns_file(tmp_path, {"*": "claude"})
    document = await run_audit(request(remote, config), prefs=PREFS)
    assert document["status"] == "BLOCKED" and document["runToken"] == "not-started"
    assert document["diagnostic"].startswith(f"configuration error: {runtime / 'audit'}")
    assert "diagnostic: configuration error: " in document["blocked"]
    assert fakes.calls() == []


def test_cli_refused_recording_write_is_blocked_not_a_crash(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = remote.work / ".review-handoff" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "audit").write_text("in the way")
    config = concerns_file(tmp_path, {"*": "claude"})
    code = cli.run(["audit", "HEAD", str(remote.work), "--concerns", config, "--driver", "self"])
    document = json.loads(capsys.readouterr().out)
    assert code == 2 and document["status"] == "BLOCKED", document
    assert document["diagnostic"].startswith("configuration error: ")


def unaccounted_first(times: int, field: str = "unaccounted") -> tuple[list[int], Any]:
    """A reconciler that names notes.txt under ``field`` ``times`` times, then the real one."""
    calls: list[int] = []

    def reconcile(repo: Path, selector: str, token: str, identity: str) -> tuple[Any, int]:
        calls.append(1)
        verdict, code = scope.reconcile_run(repo, selector, token, identity)
        if len(calls) <= times:
            return {**verdict, "reconciled": False, field: ["notes.txt"]}, 1
        return verdict, code

    return calls, reconcile


async def test_unaccounted_only_returns_to_recording_then_finishes(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    # The concern claims a.py only: notes.txt and the rest are accounting rows.
    fakes.script(claude=[reply(audited=["a.py"])])
    config = concerns_file(tmp_path, {"python:audit-python-code": "claude"})
    calls, reconcile = unaccounted_first(1)
    document = await run_audit(request(remote, config, reconcile=reconcile), prefs=PREFS)
    assert document["ok"] is True, document
    assert len(calls) == 2  # back to recording once, then reconciled and finished
    assert document["terminalStatus"] == "rejected"  # the other python concerns: missing-skill


@pytest.mark.parametrize(("times", "field", "expected"), [(2, "unaccounted", 2), (1, "drifted", 1)])
async def test_still_unreconciled_or_drifted_blocks(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path, times: int, field: str, expected: int
) -> None:
    fakes.script(claude=[reply(audited=["a.py"])])
    config = concerns_file(tmp_path, {"python:audit-python-code": "claude"})
    calls, reconcile = unaccounted_first(times, field)
    document = await run_audit(request(remote, config, reconcile=reconcile), prefs=PREFS)
    assert document["status"] == "BLOCKED" and document["diagnostic"] == f"unreconciled: {field}"
    assert len(calls) == expected
