"""Collaboration tests: the whole audit on a real repository, fake concern agents, the journal.

Concern agents are fake CLIs (``tests.fakes``) scripted per product, run through the real
dispatcher and process layer; the run is recorded in the real journal. Async tests run on
asyncio and trio; no process may outlive a test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents import verification_audit as va
from review_loop.orchestrator import cli
from review_loop.orchestrator.journal import runs
from review_loop.orchestrator.workflows.audit import AuditRequest, run_audit
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_scope import Remote

pytestmark = pytest.mark.anyio

PREFS = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
PATHS = ["a.py", "notes.txt", "tests/test_a.py", "web/app.ts"]
DRIVER = dict(va.DEFAULT_DRIVER)  # the run-driver identity is required (seed 002)


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "git")


def reply(
    status: str = "completed",
    audited: list[str] | None = None,
    *,
    receipts: bool | int = True,
    **extra: Any,
) -> dict[str, Any]:
    """A concern's reply; it reads each audited path and gives its read receipt (the
    fake reviewer reads its cwd: ``receipts=N`` stops each read after N lines)."""
    text = json.dumps({"status": status, "audited": audited or [], **extra})
    return {"mode": "ok", "text": text, "read_receipts": receipts}


def finding(path: str, line: int, rule: str, **extra: Any) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "rule": rule,
        "severity": "blocking",
        "message": f"{rule} at {path}:{line}",
        "observed": "what is there",
        "expected": "what should be",
        **extra,
    }


def concerns_file(tmp_path: Path, mapping: dict[str, str], prompt: str = "builtin") -> str:
    path = tmp_path / "concerns.json"
    path.write_text(
        json.dumps({"concerns": {k: {"product": p, "prompt": prompt} for k, p in mapping.items()}})
    )
    return str(path)


async def audit(remote: Remote, concerns: str | None, selector: str = "HEAD") -> dict[str, Any]:
    request = AuditRequest(
        selector=selector, directory=str(remote.work), concerns_file=concerns, driver=DRIVER
    )
    return await run_audit(request, prefs=PREFS)


def subjects(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for event in document["projection"]["events"]:
        payload = (event.get("data") or {}).get("payload") or {}
        if event["type"].endswith(".scope"):
            rows.append(("scope", payload["subject"], payload["coverageStatus"]))
        elif event["type"].endswith(".finding"):
            rows.append(("finding", payload["location"], payload["rule"]))
    return rows


async def test_full_audit_persists_in_the_seeds_order(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(
        claude=[
            reply(
                audited=["a.py"],
                findings=[finding("a.py", 1, "no-magic"), finding("a.py", 1, "no-magic")],
            )
        ],
        codex=[
            reply(
                audited=["tests/test_a.py", "notes.txt"],
                findings=[finding("tests/test_a.py", 40, "naming")],
            )
        ],
        gemini=[reply("not_applicable")],
    )
    config = concerns_file(
        tmp_path,
        {
            "python:audit-python-code": "claude",
            "python:audit-python-tests": "codex",
            "python:audit-python-architecture": "gemini",
        },
    )
    document = await audit(remote, config)
    assert document["ok"] is True, document
    assert document["terminalStatus"] == "rejected"
    assert subjects(document) == [
        ("scope", "a.py", "audited"),  # python code: rows, then its findings
        ("finding", "a.py:1", "no-magic"),  # the duplicate rule on the unit is merged
        ("scope", "tests/test_a.py", "audited"),  # python tests (notes.txt is not its match)
        ("scope", "typescript:audit-typescript-code", "missing-skill"),
        ("scope", "typescript:audit-typescript-architecture", "missing-skill"),
        ("scope", "notes.txt", "skipped"),  # accounting records, inventory order
        ("scope", "web/app.ts", "skipped"),
        *(("scope", p, "skipped") for p in document["governance"]["ungoverned"]),  # last
    ]
    assert document["governance"]["ungoverned"]  # no spx/ here: every path is ungoverned
    assert document["filed"] == [
        "filed: implementation:python:tests:tests/test_a.py:naming | rule: naming | severity: "
        f"blocking | run: {document['runToken']} | range: {remote.base}..{remote.head}"
    ]
    assert any("notes.txt" in note for note in document["notes"])
    events = document["projection"]["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "sh.spx.verify.terminal"
    assert document["projection"]["sealed"] is True
    units = {
        u["subject"]: u
        for u in document["projection"]["auditScopeUnits"]
        if not u["unitId"].startswith("implementation:governance:")  # missing governance
    }
    assert units["a.py"]["expectedProducer"]["skillName"] == "audit-python-code"
    assert units["a.py"]["producerProvenance"]["toolVersion"] == "claude"
    assert "producerProvenance" not in units["typescript:audit-typescript-code"]
    assert units["notes.txt"]["auditKind"] == "coverage-gap"
    assert document["concerns"][0] == {
        "skill": "python:audit-python-code",
        "product": "claude",
        "status": "completed",
        "audited": 1,
        "findings": 1,
    }
    prompts = {call["product"]: call["stdin"] for call in fakes.calls()}
    for path in PATHS:  # every concern gets the complete changeset
        assert f"- {path}" in prompts["codex"]
    assert Path(document["runFile"]).is_file()


async def test_clean_changeset_is_approved(remote: Remote, fakes: FakeCLIs, tmp_path: Path) -> None:
    fakes.script(claude=[reply(audited=PATHS)])
    document = await audit(remote, concerns_file(tmp_path, {"*": "claude"}))
    assert document["ok"] is True, document
    assert document["terminalStatus"] == "approved"
    assert document["filed"] == ["filed: none"]
    rows = subjects(document)
    assert ("scope", "notes.txt", "skipped") in rows
    assert rows.count(("scope", "a.py", "audited")) == 2  # code and architecture
    assert rows.count(("scope", "web/app.ts", "audited")) == 2
    assert len(fakes.calls()) == 5  # every selected concern dispatched


async def test_no_concern_installed_rejects_with_missing_skills(
    remote: Remote, fakes: FakeCLIs
) -> None:
    document = await audit(remote, None)
    assert document["ok"] is True and document["terminalStatus"] == "rejected"
    statuses = [row[2] for row in subjects(document)]
    ungoverned = len(document["governance"]["ungoverned"])  # a missing-governance unit each
    assert statuses.count("missing-skill") == 5 and statuses.count("skipped") == 4 + ungoverned
    assert fakes.calls() == []


async def test_stale_base_blocks_before_the_run_starts(remote: Remote, fakes: FakeCLIs) -> None:
    tip = remote.advance_main()
    document = await audit(remote, None)
    assert document["ok"] is False and document["status"] == "BLOCKED"
    assert document["runToken"] == "not-started" and document["exitCode"] == 3
    assert json.loads(document["stderr"]) == {
        "behind": 1,
        "merge_base": remote.base,
        "status": "stale-base",
        "tip": tip,
    }
    text = document["blocked"].splitlines()
    assert text[0] == "BLOCKED" and text[1] == "runToken: not-started"
    assert [line.split(":")[0] for line in text[1:]] == [
        "runToken",
        "command",
        "payloadSource",
        "payloadKey",
        "exitCode",
        "stderr",
        "diagnostic",
    ]
    assert "review-loop scope resolve 'HEAD'" in document["command"]


async def test_a_failed_concern_blocks_and_leaves_the_run_open(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(claude=[{"mode": "fail"}])
    document = await audit(remote, concerns_file(tmp_path, {"python:audit-python-code": "claude"}))
    assert document["ok"] is False and document["runToken"] != "not-started"
    assert "dispatch python:audit-python-code to claude" in document["command"]
    assert document["stderr"].startswith("DELIVERY_UNKNOWN")
    scope = f"{remote.base}..{remote.head}"
    run = runs.address(remote.work, "audit", "changeset", scope, document["runToken"])
    status = runs.status(run)
    assert status["sealed"] is False and status["lastSequence"] == 1


async def test_a_concern_naming_its_failure_blocks(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(claude=[reply("failed", failure="git show HEAD:a.py failed: permission denied")])
    document = await audit(remote, concerns_file(tmp_path, {"python:audit-python-code": "claude"}))
    assert document["ok"] is False
    assert document["command"].endswith("git show HEAD:a.py failed: permission denied")
    assert document["payloadSource"] is None and document["exitCode"] is None


async def test_an_unparseable_reply_is_asked_again_once(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(
        claude=[{"mode": "ok", "text": "I looked at it, it is fine."}, reply(audited=["a.py"])]
    )
    document = await audit(remote, concerns_file(tmp_path, {"python:audit-python-code": "claude"}))
    assert document["ok"] is True, document
    assert len(fakes.calls()) == 2
    assert "not the response contract" in fakes.calls()[1]["stdin"]


async def test_a_bad_concern_configuration_blocks_before_the_run(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    broken = tmp_path / "concerns.json"
    broken.write_text(json.dumps({"concerns": {"python:audit-python-code": {"prompt": "builtin"}}}))
    document = await audit(remote, str(broken))
    assert document["ok"] is False and document["runToken"] == "not-started"
    assert document["diagnostic"].startswith("configuration error")
    unknown = concerns_file(tmp_path, {"python:audit-python-code": "no-such-product"})
    document = await audit(remote, unknown)
    assert document["ok"] is False and "unknown product" in document["stderr"]


async def test_a_configured_prompt_file_is_used(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    (tmp_path / "code.md").write_text("Judge the code against PEP 8 only.")
    fakes.script(claude=[reply(audited=["a.py"])])
    config = concerns_file(tmp_path, {"python:audit-python-code": "claude"}, prompt="code.md")
    document = await audit(remote, config)
    assert document["ok"] is True
    assert fakes.calls()[0]["stdin"].startswith("Judge the code against PEP 8 only.")


async def test_advisory_audit_accounts_for_live_paths(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    (remote.work / "draft.py").write_text("x = 1\n")
    fakes.script(
        claude=[reply(audited=["a.py", "draft.py"], findings=[finding("draft.py", 7, "style")])]
    )
    config = concerns_file(tmp_path, {"python:audit-python-code": "claude"})
    document = await audit(remote, config, selector="worktree:HEAD")
    assert document["ok"] is True, document
    assert document["advisory"] is True
    rows = subjects(document)
    assert ("scope", "draft.py", "audited") in rows
    assert ("finding", "draft.py:7", "style") in rows  # a live path is touched text
    assert "draft.py" in fakes.calls()[0]["stdin"]


async def test_not_a_repository_blocks(tmp_path: Path, fakes: FakeCLIs) -> None:
    request = AuditRequest(selector="HEAD", directory=str(tmp_path), driver=DRIVER)
    document = await run_audit(request, prefs=PREFS)
    assert document["ok"] is False and document["runToken"] == "not-started"
    assert "rev-parse --show-toplevel" in document["command"]


# --- the command ----------------------------------------------------------------------------


def test_audit_command_prints_the_projection(
    remote: Remote,
    fakes: FakeCLIs,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fakes.script(claude=[reply(audited=PATHS)])
    config = concerns_file(tmp_path, {"*": "claude"})
    code = cli.run(["audit", "HEAD", str(remote.work), "--concerns", config, "--driver", "self"])
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert code == 0, out
    assert document["terminalStatus"] == "approved" and "run " in err
    blocked = cli.run(["audit", "a..b", str(remote.work), "--driver", "self"])
    out, _ = capsys.readouterr()
    assert blocked == 2 and json.loads(out)["status"] == "BLOCKED"
    driver = tmp_path / "driver.json"
    driver.write_text(json.dumps({"agentName": "x"}))
    bad = cli.run(["audit", "HEAD", str(remote.work), "--driver", str(driver)])
    out, _ = capsys.readouterr()  # a missing identity field is BLOCKED (test_audit_driver_file)
    assert bad == 2 and json.loads(out)["runToken"] == "not-started"


# --- the pure parts -------------------------------------------------------------------------


def test_concerns_follow_kind_order_then_code_tests_architecture() -> None:
    selection = [
        {
            "path": "web/x.ts",
            "artifacts": [
                {
                    "kind": "ts",
                    "role": "architecture",
                    "plugin": "ts",
                    "audit": "arch",
                    "contract": "concern",
                },
                {
                    "kind": "ts",
                    "role": "implementation",
                    "plugin": "ts",
                    "audit": "code",
                    "contract": "concern",
                },
            ],
        },
        {
            "path": "a.py",
            "artifacts": [
                {
                    "kind": "py",
                    "role": "tests",
                    "plugin": "py",
                    "audit": "tests",
                    "contract": "concern",
                },
                {
                    "kind": "py",
                    "role": "spec",
                    "plugin": "tree",
                    "audit": "spec",
                    "contract": "artifact-type",
                },
            ],
        },
    ]
    order = [c.skill for c in va.concerns_from_selection(selection)]
    assert order == ["ts:code", "ts:arch", "py:tests"]
    assert va.artifact_type_auditors(selection) == {"a.py": "tree:spec"}


def test_reply_parsing() -> None:
    document = {
        "status": "completed",
        "audited": ["a"],
        "findings": [
            {"path": "a", "rule": "x:y", "message": "m", "observed": "o", "expected": "e"}
        ],
    }
    fenced = f"Here:\n```json\n{json.dumps(document)}\n```"
    result = va.parse_concern_reply(fenced)
    assert result.audited == ("a",) and result.findings == ()
    assert "contains a colon" in result.withdrawn[0]
    with pytest.raises(va.ConcernReplyError):
        va.parse_concern_reply("no json here")
    with pytest.raises(va.ConcernReplyError):
        va.parse_concern_reply('{"status": "done"}')
    assert va.parse_concern_reply('{"status": "failed"}').failure


def test_changed_lines_from_a_zero_context_diff() -> None:
    diff = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n-a\n+b\n+c\n"
        "@@ -9,2 +10,0 @@\n-x\n-y\n"
        "diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n"
    )
    ranges = va.changed_lines(diff)
    assert ranges == {"a.py": [(1, 2)]}
    hit = va.ReturnedFinding("a.py", 2, "r", "debt", "m", "o", "e")
    miss = va.ReturnedFinding("a.py", 3, "r", "debt", "m", "o", "e")
    assert va.is_touched(hit, ranges, [], []) and not va.is_touched(miss, ranges, [], [])
    gone = va.ReturnedFinding("gone.py", 1, "r", "debt", "m", "o", "e")
    assert va.is_touched(gone, ranges, ["gone.py"], [])


def test_blocked_text_has_every_field() -> None:
    text = va.blocked_text({"command": "x"})
    assert text == (
        "BLOCKED\nrunToken: not-started\ncommand: x\npayloadSource: none\npayloadKey: none\n"
        "exitCode: none\nstderr: none\ndiagnostic: none"
    )
    assert va.shell_quote("it's") == "'it'\"'\"'s'"
