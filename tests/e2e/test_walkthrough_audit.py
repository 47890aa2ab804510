"""End-to-end tests: seed 002 (audit-implementation) walked by a host agent, literally.

The host drives the journal by hand through the ``spx`` launcher, each command the seed
names, in order, stopping at the first non-zero exit (the seed's rule): anchor and resolve
with the seed's own ``python3 "${CLAUDE_SKILL_DIR}/scripts/resolve_scope.py"`` (written by
``review-loop shim resolve_scope``), open, load the governing nodes (``scope governance``),
read the sealed input back, record one unit per inspected path, an accounting record per
other path and a coverage-gap unit per ungoverned path with payloads built from nothing
but ``scope add --help``, a finding keyed ``<unitId>:<rule>``, reconcile, finish, render.
Then the tool-driven audit (``review-loop audit``) with fake concern CLIs: a concern that
passes a selected path over in silence is asked again and, silent again, BLOCKS (A65); a
truncated read is re-issued (A49); the result says whether it is reusable gate evidence
(A73); a driver file missing identity fields is the seed's BLOCKED ``not-started`` (A4).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents import verification_audit as va
from tests.e2e.walkthrough import Host
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_scope import Remote, commit

DRIVER = dict(va.DEFAULT_DRIVER)


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "git")


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


def help_fields(text: str) -> set[str]:
    """The payload field names ``--help`` lists (``name:`` or ``name (optional):``)."""
    names = set()
    for line in text.splitlines():
        head = line.strip().split(":", 1)[0].removesuffix(" (optional)")
        if head and " " not in head and line.startswith("  ") and ":" in line:
            names.add(head)
    return names


def dotted(payload: dict[str, Any], prefix: str = "") -> set[str]:
    names = set()
    for key, value in payload.items():
        names.add(prefix + key)
        if isinstance(value, dict):
            names |= dotted(value, f"{prefix}{key}.")
    return names


def unit(path: str, *, audited: bool) -> dict[str, Any]:
    """A scope payload as the help describes it: an audited unit, or an accounting record."""
    if audited:
        return {
            "unitId": f"implementation:python:code:{path}",
            "subject": path,
            "auditClass": "implementation",
            "auditKind": "code",
            "coverageRequirement": "required",
            "coverageStatus": "audited",
            "priorContext": {"changedFilePartition": path, "concernPartition": "code"},
            "expectedProducer": DRIVER,
            "recordedByRunDriver": DRIVER,
            "producerProvenance": {
                "agentOwningPluginVersion": "1",
                "skillOwningPluginVersion": "1",
            },
        }
    return {
        "unitId": f"implementation:unknown:coverage-gap:{path}",
        "subject": path,
        "auditClass": "implementation",
        "auditKind": "coverage-gap",
        "coverageRequirement": "optional",
        "coverageStatus": "skipped",
        "priorContext": {"changedFilePartition": path, "concernPartition": "unclaimed"},
        "expectedProducer": DRIVER,
        "recordedByRunDriver": DRIVER,
    }


def test_the_host_drives_the_journal_by_hand_from_the_help_alone(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    shim = tmp_path / "shimbin"
    shim.mkdir()
    host = Host(fakes, remote.work, extra_path=shim)
    host.ok("review-loop", "shim", "spx", "--dir", str(shim))
    # The seed's skill directory: its scripts/resolve_scope.py runs review-loop scope resolve
    skill = tmp_path / "skill"
    skill.mkdir()
    host.ok("review-loop", "shim", "resolve_scope", "--dir", str(skill))
    host.env["CLAUDE_SKILL_DIR"] = str(skill)
    resolver = f"{host.env['CLAUDE_SKILL_DIR']}/scripts/resolve_scope.py"  # the seed's path
    # A governing decision at the head: it names a.py (an evidence link)
    head = commit(remote.work, {"spx/10-core/20-mean.adr.md": "# Mean\nDecision: a.py.\n"}, "adr")
    # 1 Anchor
    root = host.ok("git", "-C", str(remote.work), "rev-parse", "--show-toplevel").out.strip()
    resolved = host.ok("python3", resolver, "HEAD", "--repo", root).json()
    base, head = resolved["base"], resolved["head"]
    scope = f"{base}..{head}"
    assert host.ok("git", "-C", root, "status", "--porcelain=v1", "-z").out == ""
    # 2 Open
    scratch = tmp_path / "scratch"  # the session scratch directory holds the audit input
    scratch.mkdir()
    audit_input = scratch / "audit-input.json"
    audit_input.write_text(json.dumps({"selector": "HEAD", "runDriver": DRIVER}))
    start_input = scratch / "start.json"
    host.ok(
        "python3", resolver, "HEAD", "--repo", root,
        "--audit-input", str(audit_input), "--scratch-dir", str(scratch),
        "--output", str(start_input),
    )  # fmt: skip
    where = ["--verification-type", "audit", "--scope-type", "changeset", "--scope", scope]
    started = host.ok("spx", "-C", root, "verification", "run", "start", *where,
                      "--input", str(start_input)).json()  # fmt: skip
    token = started["runToken"]
    where += ["--run", token]
    # 3 Load: the governing nodes of the resolved paths, and the paths no node governs
    governance = host.ok("review-loop", "scope", "governance", "HEAD", "--repo", root).json()
    assert governance["head"] == head
    assert [(n["path"], n["names"]) for n in governance["nodes"]] == [
        ("spx/10-core/20-mean.adr.md", ["a.py"])
    ]
    gaps = {gap["subject"]: gap["unitId"] for gap in governance["coverageGaps"]}
    assert "a.py" not in gaps and "notes.txt" in gaps
    # 4 Enumerate: the selection is read back from the sealed input, never re-resolved
    sealed = host.ok("spx", "-C", root, "verification", "run", "input", *where).json()
    inventory = json.loads(sealed["content"])["changed_paths"]
    assert sorted(inventory) == sorted(resolved["changed_paths"])
    # 6 Record: the payload fields come from the verb's --help, nothing else
    help_text = host.ok(
        "spx", "verification", "run", "scope", "add", "--verification-type", "audit", "--help"
    ).out
    listed = help_fields(help_text)
    keys: dict[str, str] = {}
    for path in inventory:
        payload = unit(path, audited=path == "a.py")
        assert dotted(payload) <= listed, dotted(payload) - listed
        file = scratch / f"unit-{len(keys)}.json"
        file.write_text(json.dumps(payload))
        host.ok("spx", "-C", root, "verification", "run", "scope", "add", *where,
                "--idempotency-key", payload["unitId"], "--payload", str(file))  # fmt: skip
        keys[path] = payload["unitId"]
    # Missing governance is coverage evidence: one optional coverage-gap unit per path
    for path, unit_id in gaps.items():
        payload = {**unit(path, audited=False), "unitId": unit_id}
        payload["priorContext"] = {"changedFilePartition": path, "concernPartition": "ungoverned"}
        file = scratch / f"gap-{len(keys)}.json"
        file.write_text(json.dumps(payload))
        host.ok("spx", "-C", root, "verification", "run", "scope", "add", *where,
                "--idempotency-key", unit_id, "--payload", str(file))  # fmt: skip
        keys[f"gap:{path}"] = unit_id
    finding_help = host.ok(
        "spx", "verification", "run", "finding", "add", "--verification-type", "audit", "--help"
    ).out
    finding = {
        "unitId": keys["a.py"],
        "rule": "wrong-mean",
        "location": "a.py:1",
        "message": "a2 is not the mean",
        "severity": "blocking",
        "producerIdentity": DRIVER,
        "producerProvenance": {"agentOwningPluginVersion": "1", "skillOwningPluginVersion": "1"},
        "evidence": {"observed": "a2", "expected": "the mean"},
    }
    assert dotted(finding) <= help_fields(finding_help)
    finding_file = scratch / "finding.json"
    finding_file.write_text(json.dumps(finding))
    key = f"{keys['a.py']}:wrong-mean"  # the seed's finding key form
    host.ok("spx", "-C", root, "verification", "run", "finding", "add", *where,
            "--idempotency-key", key, "--payload", str(finding_file))  # fmt: skip
    # 7 Reconcile, finish with the status the evidence derives, render
    reconciled = host.ok(
        "python3", resolver, "HEAD", "--repo", root,
        "--reconcile-run", token, "--scope-identity", scope,
    ).json()  # fmt: skip
    assert reconciled["reconciled"] is True
    host.ok("spx", "-C", root, "verification", "run", "finish", *where,
            "--terminal-status", "rejected")  # fmt: skip
    projection = host.ok("spx", "-C", root, "verification", "run", "render", *where).json()
    assert projection["terminalStatus"] == "rejected"
    assert all(step.code == 0 for step in host.history)


def test_a_refused_payload_names_every_problem_in_one_retry(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    host = Host(fakes, remote.work)
    root = str(remote.work)
    scope = f"{remote.base}..{remote.head}"
    source = tmp_path / "in.json"
    source.write_text("{}")
    where = ["--verification-type", "audit", "--scope-type", "changeset", "--scope", scope]
    token = host.ok("review-loop", "verification", "run", "start", *where, "--input",
                    str(source), "-C", root).json()["runToken"]  # fmt: skip
    where += ["--run", token]
    partial = {"unitId": "u", "subject": "a.py", "auditClass": "implementation"}
    payload = tmp_path / "p.json"
    payload.write_text(json.dumps(partial))
    refused = host.run("review-loop", "verification", "run", "scope", "add", *where, "-C", root,
                       "--idempotency-key", "u", "--payload", str(payload))  # fmt: skip
    assert refused.code == 1
    listed = [
        line.split(":")[0].strip() for line in refused.err.splitlines() if "; accepted:" in line
    ]
    assert listed == [
        "auditKind", "coverageRequirement", "coverageStatus", "priorContext",
        "expectedProducer", "recordedByRunDriver",
    ]  # fmt: skip
    fixed = {**unit("a.py", audited=True), "unitId": "u"}
    payload.write_text(json.dumps(fixed))
    host.ok("review-loop", "verification", "run", "scope", "add", *where, "-C", root,
            "--idempotency-key", "u", "--payload", str(payload))  # fmt: skip
    # the same finding under a second key is refused, never counted twice
    finding = {
        "unitId": "u", "rule": "wrong-mean", "location": "a.py:1", "message": "m",
        "severity": "blocking", "producerIdentity": DRIVER,
        "producerProvenance": {"agentOwningPluginVersion": "1", "skillOwningPluginVersion": "1"},
        "evidence": {"observed": "o", "expected": "e"},
    }  # fmt: skip
    payload.write_text(json.dumps(finding))
    for key, code in (("python:code:a.py:other", 0), ("u:wrong-mean", 1)):
        done = host.run("review-loop", "verification", "run", "finding", "add", *where, "-C",
                        root, "--idempotency-key", key, "--payload", str(payload))  # fmt: skip
        assert done.code == code, done.err
    assert "unitId and rule are not already recorded" in done.err
    status = host.ok("review-loop", "verification", "run", "status", *where, "-C", root)
    assert status.json()["findingCount"] == 1


def concerns(tmp_path: Path) -> Path:
    path = tmp_path / "concerns.json"
    path.write_text(json.dumps({"concerns": {"*": {"product": "codex", "prompt": "builtin"}}}))
    return path


def test_the_tool_driven_audit_blocks_on_a_silent_concern(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    host = Host(fakes, remote.work)
    silent = {"mode": "ok", "text": json.dumps({"status": "completed", "audited": []})}
    fakes.script(codex=[silent])
    argv = ["review-loop", "audit", "HEAD", str(remote.work), "--concerns", str(concerns(tmp_path))]
    blocked = host.run(*argv, "--driver", "self")
    assert blocked.code == 2, blocked.err[-2000:]
    document = blocked.json()
    assert document["status"] == "BLOCKED" and "no final result" in document["stderr"]
    assert "did not settle every path" in fakes.calls()[-1]["stdin"]

    text = json.dumps({"status": "completed", "audited": sorted(
        ["a.py", "notes.txt", "tests/test_a.py", "web/app.ts"])})  # fmt: skip
    truncated = {"mode": "ok", "read_receipts": 0, "text": text}  # read cut short: no line
    complete = {"mode": "ok", "read_receipts": True, "text": text}
    fakes.script(codex=[truncated, complete])
    facts = tmp_path / "deterministic.json"  # established before the audit, never by it
    facts.write_text(json.dumps({"head": remote.head, "passing": True, "checks": ["pytest"]}))
    before = len(fakes.calls())
    approved = host.ok(*argv, "--driver", "self", "--deterministic-verification",
                       str(facts)).json()  # fmt: skip
    assert approved["terminalStatus"] == "approved"
    # the concerns run in parallel: whichever read first was cut short is asked once more
    asked = fakes.calls()[before:]
    dispatched = [c for c in approved["concerns"] if c.get("product") == "codex"]
    assert len(asked) == len(dispatched) + 1
    assert sum("Your read of these bodies was truncated" in call["stdin"] for call in asked) == 1
    assert approved["gateEligible"] is True, approved["gateEligibility"]
    # an advisory audit never supplies reusable gate evidence
    fakes.script(codex=[complete])
    advisory = host.ok("review-loop", "audit", "worktree:HEAD", str(remote.work), "--concerns",
                       str(concerns(tmp_path)), "--driver", "self").json()  # fmt: skip
    assert advisory["advisory"] is True and advisory["gateEligible"] is False
    assert "advisory" in advisory["gateEligibility"]


def test_a_driver_file_missing_fields_is_blocked_not_started(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    host = Host(fakes, remote.work)
    driver = tmp_path / "driver.json"
    driver.write_text(json.dumps({"agentName": "me", "producerKind": "agent"}))
    done = host.run("review-loop", "audit", "HEAD", str(remote.work), "--driver", str(driver))
    assert done.code == 2
    document = done.json()
    assert document["runToken"] == "not-started"
    assert "'agentOwningPluginName'" in document["stderr"]
    assert fakes.calls() == []
