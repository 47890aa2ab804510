"""Collaboration tests of ``review-loop scope resolve`` and its reconcile mode, with the journal.

End to end: the CLI runs in-process (it ends with ``SystemExit(code)``, as the
original script does) against real git repositories with an ``origin`` remote.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator import cli
from tests.orchestrator.journal.payloads import unit
from tests.orchestrator.workflows.test_scope import Remote, commit


class Outcome:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def doc(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    path = tmp_path / "scratch"
    path.mkdir()
    return path


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    def invoke(*args: str, stdin: str | None = None) -> Outcome:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        try:
            code = cli.run(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return Outcome(code, out, err)

    return invoke


def resolve(run_cli: Any, remote: Remote, *extra: str) -> Outcome:
    result: Outcome = run_cli("scope", "resolve", "HEAD", "--repo", str(remote.work), *extra)
    return result


# --- resolve mode ---------------------------------------------------------------------------


def test_resolve_prints_sorted_json(run_cli: Any, remote: Remote) -> None:
    result = resolve(run_cli, remote)
    assert result.code == 0 and result.err == ""
    assert result.out.count("\n") == 1
    assert result.out.strip() == json.dumps(json.loads(result.out), sort_keys=True)
    doc = result.doc
    assert doc["base"] == remote.base and doc["head"] == remote.head
    selection = {
        entry["path"]: [a["audit"] for a in entry["artifacts"]]
        for entry in doc["artifact_selection"]
    }
    assert selection == {
        "a.py": ["audit-python-code", "audit-python-architecture"],
        "notes.txt": [],
        "tests/test_a.py": ["audit-python-tests", "audit-python-architecture"],
        "web/app.ts": ["audit-typescript-code", "audit-typescript-architecture"],
    }


def test_audit_input_file_and_output_file(run_cli: Any, remote: Remote, scratch: Path) -> None:
    audit_input = scratch / "run-1-audit-input.json"
    audit_input.write_text(json.dumps({"selector": "HEAD", "head": "forged", "identity": {"x": 1}}))
    output = scratch / "run-1-start-input.json"
    result = resolve(
        run_cli,
        remote,
        "--audit-input",
        str(audit_input),
        "--scratch-dir",
        str(scratch),
        "--output",
        str(output),
    )
    assert result.code == 0, result.err
    summary = result.doc
    assert summary["scope_identity"] == f"{remote.base}..{remote.head}"
    assert summary["changed_path_count"] == 4 and summary["output"] == str(output)
    written = json.loads(output.read_text())
    assert written["head"] == remote.head  # the resolved key wins
    assert written["selector"] == "HEAD" and written["identity"] == {"x": 1}
    assert output.read_text().strip() == json.dumps(written, sort_keys=True)


@pytest.mark.parametrize("where", ["audit-input", "output"])
def test_files_outside_the_scratch_dir_are_refused(
    run_cli: Any, remote: Remote, scratch: Path, tmp_path: Path, where: str
) -> None:
    inside = scratch / "in.json"
    inside.write_text("{}")
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    files = {"audit-input": str(inside), "output": str(scratch / "out.json")}
    files[where] = str(outside)
    result = resolve(
        run_cli,
        remote,
        "--audit-input",
        files["audit-input"],
        "--scratch-dir",
        str(scratch),
        "--output",
        files["output"],
    )
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("error: implementation scope resolution failed: --")
    assert "outside --scratch-dir" in result.err
    assert not (scratch / "out.json").exists()


@pytest.mark.parametrize(
    ("text", "message"), [("{oops", "must be a JSON object"), ('"x"', "must be a JSON object")]
)
def test_malformed_audit_input_is_refused(
    run_cli: Any, remote: Remote, scratch: Path, text: str, message: str
) -> None:
    path = scratch / "in.json"
    path.write_text(text)
    result = resolve(run_cli, remote, "--audit-input", str(path), "--scratch-dir", str(scratch))
    assert result.code == 1 and message in result.err


def test_command_failures_exit_2(run_cli: Any, remote: Remote, tmp_path: Path) -> None:
    bad = run_cli("scope", "resolve", "nosuch...HEAD", "--repo", str(remote.work))
    assert bad.code == 2 and bad.err.startswith("error: implementation scope resolution failed:")
    nowhere = run_cli("scope", "resolve", "HEAD", "--repo", str(tmp_path))
    assert nowhere.code == 2 and "not inside a git checkout" in nowhere.err


def test_stale_base_exits_3_with_its_diagnostic_on_stderr(run_cli: Any, remote: Remote) -> None:
    tip = remote.advance_main()
    result = resolve(run_cli, remote)
    assert result.code == 3 and result.out == ""
    assert result.err.strip() == json.dumps(
        {"behind": 1, "merge_base": remote.base, "status": "stale-base", "tip": tip}, sort_keys=True
    )


# --- reconcile mode, with a real run ---------------------------------------------------------


class Audit:
    """A started audit run over the remote's feature branch."""

    def __init__(self, run_cli: Any, remote: Remote, scratch: Path) -> None:
        self.run_cli, self.remote = run_cli, remote
        output = scratch / "start.json"
        resolved = resolve(run_cli, remote, "--scratch-dir", str(scratch), "--output", str(output))
        assert resolved.code == 0, resolved.err
        self.identity = resolved.doc["scope_identity"]
        started = run_cli(
            "verification",
            "run",
            "start",
            "-C",
            str(remote.work),
            "--verification-type",
            "audit",
            "--scope-type",
            "changeset",
            "--scope",
            self.identity,
            "--input",
            str(output),
        )
        assert started.code == 0, started.err
        self.token = json.loads(started.out)["runToken"]
        self.inventory = json.loads(started.out)["resolvedScope"]
        self.scratch = scratch

    def locator(self) -> list[str]:
        return [
            "-C",
            str(self.remote.work),
            "--verification-type",
            "audit",
            "--scope-type",
            "changeset",
            "--scope",
            self.identity,
            "--run",
            self.token,
        ]

    def add(self, payload: dict[str, Any]) -> None:
        path = self.scratch / f"{len(list(self.scratch.iterdir()))}.json"
        path.write_text(json.dumps(payload))
        result = self.run_cli(
            "verification",
            "run",
            "scope",
            "add",
            *self.locator(),
            "--idempotency-key",
            payload["unitId"],
            "--payload",
            str(path),
        )
        assert result.code == 0, result.err

    def reconcile(
        self, selector: str = "HEAD", identity: str | None = None, token: str | None = None
    ) -> Outcome:
        result: Outcome = self.run_cli(
            "scope",
            "resolve",
            selector,
            "--repo",
            str(self.remote.work),
            "--reconcile-run",
            token or self.token,
            "--scope-identity",
            identity or self.identity,
        )
        return result


@pytest.fixture
def audit(run_cli: Any, remote: Remote, scratch: Path) -> Audit:
    return Audit(run_cli, remote, scratch)


def record_all(audit: Audit, skip: tuple[str, ...] = ()) -> None:
    for path in audit.inventory:
        if path not in skip:
            audit.add(unit(path))


def test_reconciled_run_exits_0_and_may_finish(audit: Audit) -> None:
    record_all(audit)
    audit.add(
        unit("python:audit-python-tests", status="missing-skill")
    )  # names a skill, not a path
    result = audit.reconcile()
    assert result.code == 0, result.err
    assert result.doc == {
        "drifted": [],
        "expected": 4,
        "nonfinal": [],
        "recorded": 4,
        "reconciled": True,
        "unaccounted": [],
        "unexpected": [],
    }
    finished = audit.run_cli(
        "verification", "run", "finish", *audit.locator(), "--terminal-status", "rejected"
    )
    assert finished.code == 0, finished.err


def test_unaccounted_paths_exit_1(audit: Audit) -> None:
    record_all(audit, skip=("notes.txt",))
    result = audit.reconcile()
    assert result.code == 1 and result.doc["unaccounted"] == ["notes.txt"]
    assert result.doc["reconciled"] is False


def test_unexpected_subject_exits_1(audit: Audit) -> None:
    record_all(audit)
    audit.add(unit("not/in/scope.py"))
    result = audit.reconcile()
    assert result.code == 1 and result.doc["unexpected"] == ["not/in/scope.py"]


def test_nonfinal_required_unit_exits_1(audit: Audit) -> None:
    record_all(audit, skip=("a.py",))
    audit.add(unit("a.py", status="incomplete"))
    result = audit.reconcile()
    assert result.code == 1 and result.doc["nonfinal"] == ["implementation:python:code:a.py"]


def test_drift_exits_1(audit: Audit, remote: Remote) -> None:
    record_all(audit)
    commit(remote.work, {"late.py": "l\n"}, "after start")
    result = audit.reconcile()  # the selector now resolves to a different head
    assert result.code == 1 and result.doc["drifted"] == ["late.py"]


def test_unknown_run_and_missing_identity_exit_2(audit: Audit) -> None:
    unknown = audit.reconcile(token="2026-01-01_00-00-00-000-000000000000")
    assert unknown.code == 2 and unknown.out == ""
    assert unknown.err.startswith("error: implementation audit reconciliation failed:")
    assert "could not locate the requested run" in unknown.err
    missing = audit.run_cli(
        "scope", "resolve", "HEAD", "--repo", str(audit.remote.work), "--reconcile-run", audit.token
    )
    assert missing.code == 2 and "requires --scope-identity" in missing.err
    wrong = audit.reconcile(identity=f"{audit.remote.base}..{audit.remote.base}")
    assert wrong.code == 2 and "selector does not match the recorded run" in wrong.err


def test_stale_base_in_reconcile_mode_exits_3(audit: Audit, remote: Remote) -> None:
    record_all(audit)
    remote.advance_main()
    result = audit.reconcile()
    assert result.code == 3 and json.loads(result.err)["status"] == "stale-base"


def test_real_process_exit_codes(remote: Remote) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "review_loop",
            "scope",
            "resolve",
            "a..b",
            "--repo",
            str(remote.work),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == "" and "two-dot" in done.stderr
