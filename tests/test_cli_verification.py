"""Collaboration and process tests of ``review-loop verification run`` (the spx contract).

End to end on real git repos: most tests run the CLI in-process (``cli.run``) for speed; the
concurrency tests start real ``review-loop`` processes.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.verification import RUN_TOKEN_PATTERN
from review_loop.orchestrator import cli
from tests.orchestrator.journal.mounts import read_only, tmpfs
from tests.orchestrator.journal.payloads import finding, finding_key, gap, unit


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.email", "t@example.com")
        git(root, "config", "user.name", "t")
        (root / "old.py").write_text("x = 1\n")
        (root / "keep.py").write_text("k = 1\n")
        git(root, "add", ".")
        git(root, "commit", "-qm", "base")
        self.base = git(root, "rev-parse", "HEAD")
        git(root, "mv", "old.py", "new.py")
        (root / "keep.py").write_text("k = 2\n")
        (root / "src").mkdir()
        (root / "src" / "a.py").write_text("a = 1\n")
        git(root, "add", ".")
        git(root, "commit", "-qm", "head")
        self.head = git(root, "rev-parse", "HEAD")
        self.scope = f"{self.base}..{self.head}"


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def doc(self) -> Any:
        lines = self.out.splitlines()
        assert len(lines) == 1, self.out  # exactly one JSON line on stdout
        return json.loads(lines[0])

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.err.splitlines() if line.startswith("{")]


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, repo: Repo) -> Any:
    def invoke(*args: str, stdin: str | None = None) -> Result:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = cli.run(["verification", "run", *args, "-C", str(repo.root)])
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return invoke


def locator(repo: Repo, token: str, scope: str | None = None) -> list[str]:
    return [
        "--verification-type",
        "audit",
        "--scope-type",
        "changeset",
        "--scope",
        scope or repo.scope,
        "--run",
        token,
    ]


def start(run_cli: Any, kind: str, scope_type: str, scope: str, source: str, **kw: Any) -> Result:
    """``verification run start`` of a ``kind`` run over ``scope``, its input from ``source``."""
    args = ["--verification-type", kind, "--scope-type", scope_type, "--scope", scope]
    result: Result = run_cli("start", *args, "--input", source, **kw)
    return result


def write(path: Path, document: Any) -> str:
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return str(path)


@pytest.fixture
def started(run_cli: Any, repo: Repo, tmp_path: Path) -> dict[str, Any]:
    source = write(tmp_path / "start.json", {"changed_paths": ["keep.py", "new.py", "src/a.py"]})
    result = start(run_cli, "audit", "changeset", repo.scope, source)
    assert result.code == 0, result.err
    document: dict[str, Any] = result.doc
    return document


def add(
    run_cli: Any, repo: Repo, token: str, verb: str, key: str, payload: Any, tmp: Path
) -> Result:
    path = write(tmp / f"payload-{abs(hash(key))}-{time.monotonic_ns()}.json", payload)
    result: Result = run_cli(
        verb, "add", *locator(repo, token), "--idempotency-key", key, "--payload", path
    )
    return result


# --- start / input -------------------------------------------------------------------------


def test_start_reports_the_run_locator(run_cli: Any, repo: Repo, tmp_path: Path) -> None:
    source = write(tmp_path / "in.json", {"selector": "HEAD"})
    result = start(run_cli, "audit", "changeset", repo.scope, source)
    assert result.code == 0, result.err
    doc = result.doc
    assert list(doc) == ["runToken", "contextDigest", "resolvedScope", "input", "locator"]
    assert RUN_TOKEN_PATTERN.match(doc["runToken"])
    assert doc["resolvedScope"] == ["keep.py", "new.py", "old.py", "src/a.py"]  # rename: both
    assert doc["input"]["source"] == source and len(doc["input"]["digest"]) == 64
    loc = doc["locator"]
    assert list(loc) == [
        "runToken",
        "verificationType",
        "scopeType",
        "scopeIdentity",
        "backendIdentity",
        "storageNamespace",
        "runTarget",
    ]
    assert loc["scopeIdentity"] == repo.scope and loc["backendIdentity"] == "local"
    target = Path(loc["runTarget"])
    assert target.is_file() and target.parent == Path(loc["storageNamespace"])
    assert target.name == f"run-{doc['runToken']}.jsonl"
    [event] = result.events
    assert event["type"] == "sh.spx.verify.run-context" and event["seq"] == 1
    assert event["data"] == {"driveMode": "caller"}
    assert "/.review-handoff/" in (repo.root / ".git" / "info" / "exclude").read_text()


def test_start_from_stdin_and_input_replays_it(run_cli: Any, repo: Repo) -> None:
    text = '{"changed_paths": ["new.py"], "note": "exact text\\n"}'
    result = start(run_cli, "audit", "changeset", repo.scope, "stdin", stdin=text)
    token = result.doc["runToken"]
    replay = run_cli("input", *locator(repo, token))
    assert replay.code == 0
    assert replay.doc == {
        "source": "stdin",
        "digest": result.doc["input"]["digest"],
        "content": text,
    }


def test_file_scope_start(run_cli: Any, repo: Repo, tmp_path: Path) -> None:
    result = start(run_cli, "audit", "file", "./src//a.py", write(tmp_path / "i.json", "{}"))
    assert result.doc["resolvedScope"] == ["src/a.py"]
    assert result.doc["locator"]["scopeIdentity"] == "src/a.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--verification-type", "lint"], "verification type is not registered"),
        (["--scope", "A...B"], "verify changeset scope must be <base>..<head>"),
        (["--scope", "nosuch..HEAD"], "could not derive the changeset changed-file scope"),
        (["--scope", "--output=x..HEAD"], "must not start with '-'"),
        (["--input", "/no/such/file.json"], "could not read the recorded run input"),
        (["--scope-type", "commit"], "no verification-context substrate representation"),
    ],
)
def test_start_refusals(
    run_cli: Any, repo: Repo, tmp_path: Path, args: list[str], message: str
) -> None:
    options = {
        "--verification-type": "audit",
        "--scope-type": "changeset",
        "--scope": repo.scope,
        "--input": write(tmp_path / "i.json", "{}"),
    }
    options.update(dict(zip(args[::2], args[1::2], strict=True)))
    result = run_cli("start", *(f"{key}={value}" for key, value in options.items()))
    assert result.code == 1 and result.out == ""
    assert message in result.err
    assert not (repo.root / ".review-handoff" / "verification" / "branch").exists() or not any(
        (repo.root / ".review-handoff").rglob("run-*.jsonl")
    )


def test_start_outside_a_repository(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = cli.run(
        [
            "verification",
            "run",
            "start",
            "-C",
            str(tmp_path),
            "--verification-type",
            "audit",
            "--scope-type",
            "file",
            "--scope",
            "a.py",
            "--input",
            "stdin",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and "not inside a git checkout" in err


def test_missing_required_option_is_a_usage_error(run_cli: Any, repo: Repo) -> None:
    result = run_cli(
        "status", "--verification-type", "audit", "--scope-type", "changeset", "--scope", repo.scope
    )
    assert result.code == 1 and "--run" in result.err


# --- scope add / finding add ----------------------------------------------------------------


def test_scope_add_appends_and_repeats_are_idempotent(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    payload = unit("src/a.py")
    first = add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path)
    assert first.code == 0, first.err
    assert first.doc == {"sequence": 2, "idempotent": False}
    [event] = first.events
    assert event["type"] == "sh.spx.verify.scope" and event["id"] == payload["unitId"]
    assert event["data"]["idempotencyKey"] == payload["unitId"]
    assert event["data"]["payload"]["subject"] == "src/a.py"
    # A repeat returns the original sequence without reading the payload (it may be gone).
    again = run_cli(
        "scope",
        "add",
        *locator(repo, token),
        "--idempotency-key",
        payload["unitId"],
        "--payload",
        "/gone.json",
    )
    assert again.code == 0 and again.doc == {"sequence": 2, "idempotent": True}
    assert again.events == []


def test_payload_from_stdin(run_cli: Any, repo: Repo, started: dict[str, Any]) -> None:
    payload = unit("new.py")
    result = run_cli(
        "scope",
        "add",
        *locator(repo, started["runToken"]),
        "--idempotency-key",
        payload["unitId"],
        "--payload",
        "stdin",
        stdin=json.dumps(payload),
    )
    assert result.code == 0 and result.doc["sequence"] == 2


def test_finding_add_after_its_unit(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    recorded = unit("keep.py")
    add(run_cli, repo, token, "scope", recorded["unitId"], recorded, tmp_path)
    report = finding(recorded)
    result = add(run_cli, repo, token, "finding", finding_key(report), report, tmp_path)
    assert result.code == 0, result.err
    assert result.doc == {"sequence": 3, "idempotent": False}
    assert result.events[0]["type"] == "sh.spx.verify.finding"
    # the same key under scope add is a different index: it does not collide
    status = run_cli("status", *locator(repo, token)).doc
    assert status["findingCount"] == 1 and status["lastSequence"] == 3


def assert_unchanged(run_cli: Any, repo: Repo, token: str, last: int) -> None:
    status = run_cli("status", *locator(repo, token))
    assert status.doc["lastSequence"] == last and status.doc["sealed"] is False


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("{not json", "evidence payload is not valid JSON"),
        ("", "evidence payload is not valid JSON"),
        ("NaN", "evidence payload is not valid JSON"),
        (json.dumps([1]), "payload does not satisfy: the payload is a JSON object"),
        (
            json.dumps({**unit("src/a.py"), "priorContext": {"changedFilePartition": "src/a.py"}}),
            'payload field "priorContext.concernPartition" is missing or malformed',
        ),
        (
            json.dumps({**unit("src/a.py"), "unitId": ""}),
            'payload field "unitId" is missing or malformed',
        ),
    ],
    ids=["malformed", "empty", "nan", "array", "missing-field", "empty-unit-id"],
)
def test_bad_payloads_leave_the_run_unchanged(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path, payload: str, expected: str
) -> None:
    token = started["runToken"]
    result = add(
        run_cli, repo, token, "scope", "implementation:python:code:src/a.py", payload, tmp_path
    )
    assert result.code == 1 and result.out == ""
    assert expected in result.err
    if "payload field" in expected or "does not satisfy" in expected:
        lines = result.err.splitlines()
        assert lines[0] == "review-loop verification run scope add: evidence payload rejected"
        assert lines[2] == "  verification type  audit"
        assert lines[3] == "  evidence kind      scope"
        assert lines[6] == (
            "  the run is unchanged; fix the payload and retry with the same idempotency key"
        )  # spx's block, line for line; then review-loop's list of every problem
        assert lines[8] == "  every problem of this payload (field: what is wrong; accepted):"
        assert lines[-1] == "  every field: review-loop verification run scope add --help"
    assert_unchanged(run_cli, repo, token, 1)


def test_keys_with_apostrophes(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    # As spx: the key is the client's; each distinct key records, a repeat is idempotent.
    token = started["runToken"]
    payload = unit("it's.py")
    exact = add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path)
    assert exact.code == 0 and exact.doc == {"sequence": 2, "idempotent": False}
    again = add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path)
    assert again.code == 0 and again.doc == {"sequence": 2, "idempotent": True}
    own = add(run_cli, repo, token, "scope", "scope-00", unit("b.py"), tmp_path)
    assert own.code == 0 and own.doc == {"sequence": 3, "idempotent": False}


def test_finding_for_an_unrecorded_unit_is_refused(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    report = finding(unit("keep.py"))
    result = add(
        run_cli, repo, started["runToken"], "finding", finding_key(report), report, tmp_path
    )
    assert result.code == 1
    assert result.err.startswith(
        "review-loop verification run finding add: evidence payload rejected"
    )
    assert "a finding names a unit already recorded as scope evidence in the run" in result.err
    assert_unchanged(run_cli, repo, started["runToken"], 1)


def test_unknown_run_token(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    bogus = "2026-01-01_00-00-00-000-000000000000"
    for args in (
        ["status", *locator(repo, bogus)],
        ["render", *locator(repo, bogus)],
        ["input", *locator(repo, bogus)],
        ["finish", *locator(repo, bogus), "--terminal-status", "approved"],
        ["scope", "add", *locator(repo, bogus), "--idempotency-key", "k", "--payload", "stdin"],
    ):
        result = run_cli(*args)
        assert result.code == 1, args
        assert "could not locate the requested run" in result.err
        assert "run=" in result.err and "namespace=" in result.err and "target=" in result.err
        if args[0] in ("status", "render", "finish"):  # as spx: the input record searched
            assert result.err.rstrip().endswith(f"/input-{bogus}.json"), result.err
    # as spx: a token that is not a file name is refused as such
    result = run_cli("status", *locator(repo, "../../etc"))
    assert result.code == 1 and result.err == "state-store token must be a safe path segment\n"


def test_selector_that_does_not_match_the_run(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    other = f"{repo.base}..{repo.base}"
    payload = unit("src/a.py")
    for args in (
        ["status", *locator(repo, token, other)],
        ["render", *locator(repo, token, other)],
        ["input", *locator(repo, token, other)],
        [
            "scope",
            "add",
            *locator(repo, token, other),
            "--idempotency-key",
            payload["unitId"],
            "--payload",
            write(tmp_path / "p.json", payload),
        ],
    ):
        result = run_cli(*args)
        assert result.code == 1, args
        assert "selector does not match the recorded run" in result.err
    three_dots = run_cli("status", *locator(repo, token, f"{repo.base}...{repo.head}"))
    assert three_dots.code == 1 and "must be <base>..<head>" in three_dots.err
    assert_unchanged(run_cli, repo, token, 1)


# --- finish / status / render ---------------------------------------------------------------


def test_finish_derives_status_from_evidence_and_seals(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    for path in ("keep.py", "new.py", "src/a.py"):
        payload = unit(path)
        assert add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path).code == 0
    accounting = gap("old.py")
    assert add(run_cli, repo, token, "scope", accounting["unitId"], accounting, tmp_path).code == 0

    conflict = run_cli("finish", *locator(repo, token), "--terminal-status", "rejected")
    assert conflict.code == 1
    assert conflict.err.splitlines()[0] == (
        "review-loop verification run terminal status conflicts with the run's recorded evidence"
    )
    assert "the run is unchanged and unsealed" in conflict.err
    assert_unchanged(run_cli, repo, token, 5)

    bad = run_cli("finish", *locator(repo, token), "--terminal-status", "done")
    assert bad.code == 1 and "terminal-status vocabulary" in bad.err

    done = run_cli("finish", *locator(repo, token), "--terminal-status", "approved")
    assert done.code == 0, done.err
    assert done.doc == {
        "runToken": token,
        "terminalStatus": "approved",
        "sealed": True,
        "findingCount": 0,
        "lastSequence": 6,
    }
    assert done.events[0]["type"] == "sh.spx.verify.terminal"
    assert done.events[0]["data"] == {"terminalStatus": "approved"}

    repeat = run_cli("finish", *locator(repo, token), "--terminal-status", "rejected")
    assert repeat.code == 0 and repeat.doc == done.doc and repeat.events == []

    payload = unit("late.py")
    late = add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path)
    assert late.code == 1 and "cannot add evidence to a finished run" in late.err
    repeat_key = add(
        run_cli, repo, token, "scope", unit("new.py")["unitId"], unit("new.py"), tmp_path
    )
    assert repeat_key.code == 1 and "finished run" in repeat_key.err


def test_finish_rejected_with_a_finding_and_missing_skill(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    recorded = unit("src/a.py")
    add(run_cli, repo, token, "scope", recorded["unitId"], recorded, tmp_path)
    report = finding(recorded)
    add(run_cli, repo, token, "finding", finding_key(report), report, tmp_path)
    approved = run_cli("finish", *locator(repo, token), "--terminal-status", "approved")
    assert approved.code == 1 and "conflicts with the run's recorded evidence" in approved.err
    metadata = write(tmp_path / "meta.json", {"actor": "x"})
    with_meta = run_cli(
        "finish",
        *locator(repo, token),
        "--terminal-status",
        "rejected",
        "--terminal-metadata",
        metadata,
    )
    assert with_meta.code == 1
    assert "terminal metadata failed verification-type validation" in with_meta.err
    assert "the verification type seals with no terminal metadata" in with_meta.err
    rejected = run_cli("finish", *locator(repo, token), "--terminal-status", "rejected")
    assert rejected.code == 0 and rejected.doc["findingCount"] == 1


def test_finish_with_no_units_must_reject(
    run_cli: Any, repo: Repo, started: dict[str, Any]
) -> None:
    token = started["runToken"]
    assert run_cli("finish", *locator(repo, token), "--terminal-status", "approved").code == 1
    assert run_cli("finish", *locator(repo, token), "--terminal-status", "rejected").code == 0


def test_status_and_render_projections(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    status = run_cli("status", *locator(repo, token)).doc
    assert status == {
        "runToken": token,
        "verificationType": "audit",
        "scopeType": "changeset",
        "sealed": False,
        "driveMode": "caller",
        "lastSequence": 1,
        "findingCount": 0,
        "nextActions": ["scope add", "finding add", "finish"],
    }
    recorded = unit("src/a.py", note="dropped")
    add(run_cli, repo, token, "scope", recorded["unitId"], recorded, tmp_path)
    run_cli("finish", *locator(repo, token), "--terminal-status", "approved")
    rendered = run_cli("render", *locator(repo, token))
    assert rendered.code == 0 and rendered.events == []
    doc = rendered.doc
    assert list(doc) == [
        "runToken",
        "findingCount",
        "sealed",
        "driveMode",
        "terminalStatus",
        "nextActions",
        "events",
        "auditScopeUnits",
    ]
    assert (
        doc["sealed"] is True and doc["nextActions"] == [] and doc["terminalStatus"] == "approved"
    )
    assert [e["seq"] for e in doc["events"]] == [1, 2, 3]
    assert [u["subject"] for u in doc["auditScopeUnits"]] == ["src/a.py"]
    assert "note" not in doc["auditScopeUnits"][0]
    sealed = run_cli("status", *locator(repo, token)).doc
    assert sealed["sealed"] is True and sealed["terminalStatus"] == "approved"
    assert sealed["nextActions"] == []


def test_help_lists_the_verbs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["help"]) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert any(line.startswith("review-loop verification run scope add") for line in usage)


# --- many processes -------------------------------------------------------------------------


def spawn(repo: Repo, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "review_loop", "verification", "run", *args, "-C", str(repo.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_twenty_scope_add_processes_at_once_all_succeed(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    procs = []
    for index in range(20):
        payload = unit(f"src/m{index}.py")
        path = write(tmp_path / f"u{index}.json", payload)
        procs.append(
            spawn(
                repo,
                "scope",
                "add",
                *locator(repo, token),
                "--idempotency-key",
                payload["unitId"],
                "--payload",
                path,
            )
        )
    results = [(proc.communicate(timeout=120), proc.returncode) for proc in procs]
    assert [code for _, code in results] == [0] * 20, [err for (_, err), _ in results]
    sequences = sorted(json.loads(out)["sequence"] for (out, _), _ in results)
    assert sequences == list(range(2, 22))
    events = run_cli("render", *locator(repo, token)).doc["events"]
    assert [e["seq"] for e in events] == list(range(1, 22))


def test_five_processes_racing_one_key_record_one_event(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    payload = unit("src/a.py")
    path = write(tmp_path / "same.json", payload)
    procs = [
        spawn(
            repo,
            "scope",
            "add",
            *locator(repo, token),
            "--idempotency-key",
            payload["unitId"],
            "--payload",
            path,
        )
        for _ in range(5)
    ]
    outs = [proc.communicate(timeout=60)[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    answers = [json.loads(out) for out in outs]
    assert {a["sequence"] for a in answers} == {2}
    assert sorted(a["idempotent"] for a in answers) == [False, True, True, True, True]
    events = run_cli("render", *locator(repo, token)).doc["events"]
    assert [e["seq"] for e in events] == [1, 2]


# --- the other verification types -----------------------------------------------------------


def test_test_runs_record_modules_and_failures(run_cli: Any, repo: Repo, tmp_path: Path) -> None:
    started = start(run_cli, "test", "file", "src/a.py", write(tmp_path / "i.json", "{}"))
    token = started.doc["runToken"]
    where = [
        "--verification-type",
        "test",
        "--scope-type",
        "file",
        "--scope",
        "src/a.py",
        "--run",
        token,
    ]
    module = write(tmp_path / "m.json", {"moduleId": "tests/test_a.py"})
    failure = write(
        tmp_path / "f.json", {"moduleId": "tests/test_a.py", "testName": "t", "errors": ["boom"]}
    )
    assert run_cli("scope", "add", *where, "--idempotency-key", "m", "--payload", module).code == 0
    assert (
        run_cli("finding", "add", *where, "--idempotency-key", "f", "--payload", failure).code == 0
    )
    passed = run_cli("finish", *where, "--terminal-status", "passed")
    assert passed.code == 1 and "a run sealing as passed recorded no findings" in passed.err
    approved = run_cli("finish", *where, "--terminal-status", "approved")
    assert approved.code == 1 and "one the verification type seals with" in approved.err
    failed = run_cli("finish", *where, "--terminal-status", "failed")
    assert failed.code == 0 and failed.doc["terminalStatus"] == "failed"
    assert run_cli("render", *where).doc["auditScopeUnits"] == []


def test_review_runs_take_terminal_metadata(run_cli: Any, repo: Repo, tmp_path: Path) -> None:
    started = start(run_cli, "review", "changeset", repo.scope, write(tmp_path / "i.json", "{}"))
    token = started.doc["runToken"]
    where = [
        "--verification-type",
        "review",
        "--scope-type",
        "changeset",
        "--scope",
        repo.scope,
        "--run",
        token,
    ]
    scope = {
        "path": "keep.py",
        "commit": repo.head,
        "side": "RIGHT",
        "coverageState": "clean",
        "line": 1,
    }
    assert (
        run_cli(
            "scope",
            "add",
            *where,
            "--idempotency-key",
            "s",
            "--payload",
            write(tmp_path / "s.json", scope),
        ).code
        == 0
    )
    metadata = {
        "actor": "me",
        "state": "approved",
        "body": "",
        "submittedAt": "2026-01-01T00:00:00Z",
        "commit": repo.head,
    }
    done = run_cli(
        "finish",
        *where,
        "--terminal-status",
        "approved",
        "--terminal-metadata",
        write(tmp_path / "m.json", metadata),
    )
    assert done.code == 0, done.err
    assert done.doc["terminalMetadata"] == metadata
    assert run_cli("status", *where).doc["terminalMetadata"] == metadata


# --- the journal heals; seals, read-only runs, links and a full disk (issue 11) -------------


def run_files(started: dict[str, Any]) -> tuple[Path, Path]:
    """The run's log and its directory."""
    log = Path(started["locator"]["runTarget"])
    return log, log.parent


def run_process(repo: Repo, *args: str) -> Result:
    proc = spawn(repo, *args)
    out, err = proc.communicate(timeout=120)
    return Result(proc.returncode, out, err)


def test_a_garbage_last_line_is_moved_aside_and_every_verb_still_works(
    repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    log, _ = run_files(started)
    good = log.read_bytes()
    with log.open("ab") as handle:
        handle.write(b"GARBAGE LINE not json\n")
    status = run_process(repo, "status", *locator(repo, token))
    assert status.code == 0, status.err
    [moved] = status.doc["quarantined"]
    assert moved["path"] == f"{log}.corrupt-1" and moved["bytes"] == 22
    assert Path(moved["path"]).read_bytes() == b"GARBAGE LINE not json\n"
    assert log.read_bytes() == good and status.doc["lastSequence"] == 1
    assert run_process(repo, "render", *locator(repo, token)).doc["events"][0]["seq"] == 1
    payload = unit("src/a.py")
    path = write(tmp_path / "u.json", payload)
    added = run_process(
        repo, "scope", "add", *locator(repo, token), "--idempotency-key", payload["unitId"],
        "--payload", path,
    )  # fmt: skip
    assert added.code == 0 and added.doc == {"sequence": 2, "idempotent": False}
    done = run_process(repo, "finish", *locator(repo, token), "--terminal-status", "approved")
    assert done.code == 0 and done.doc["sealed"] is True and done.doc["lastSequence"] == 3
    assert len(list(log.parent.glob("*.corrupt-*"))) == 1


def test_a_torn_last_line_is_moved_aside(run_cli: Any, repo: Repo, started: dict[str, Any]) -> None:
    token = started["runToken"]
    log, _ = run_files(started)
    with log.open("ab") as handle:
        handle.write(b'{"id":"x","source":"/spx/verify","ty')
    status = run_cli("status", *locator(repo, token))
    assert status.code == 0 and status.doc["lastSequence"] == 1
    assert status.doc["quarantined"][0]["bytes"] == 36
    assert log.read_bytes().endswith(b"\n")
    again = run_cli("status", *locator(repo, token)).doc  # healed once, reported since
    assert len(again["quarantined"]) == 1


def test_a_status_without_anything_moved_keeps_the_spx_shape(
    run_cli: Any, repo: Repo, started: dict[str, Any]
) -> None:
    doc = run_cli("status", *locator(repo, started["runToken"])).doc
    assert "quarantined" not in doc and "ignoredTail" not in doc


def test_garbage_in_the_middle_fails_closed_for_every_verb(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    payload = unit("src/a.py")
    assert add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path).code == 0
    log, runs_dir = run_files(started)
    first, second = log.read_bytes().splitlines(keepends=True)
    corrupt = first + b"GARBAGE LINE not json\n" + second
    log.write_bytes(corrupt)
    other = unit("new.py")
    for args in (
        ["status", *locator(repo, token)],
        ["render", *locator(repo, token)],
        ["finish", *locator(repo, token), "--terminal-status", "rejected"],
        [
            "scope", "add", *locator(repo, token), "--idempotency-key", other["unitId"],
            "--payload", write(tmp_path / "o.json", other),
        ],
    ):  # fmt: skip
        result = run_cli(*args)
        assert result.code == 1 and result.out == "", args
        assert result.err.startswith("JOURNAL_CORRUPT: ") and "at byte" in result.err
    assert log.read_bytes() == corrupt
    assert list(runs_dir.glob("*.corrupt-*")) == []


def test_finish_succeeds_when_the_runs_directory_is_read_only(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    token = started["runToken"]
    log, runs_dir = run_files(started)
    with read_only(runs_dir, writable=log):
        done = run_cli("finish", *locator(repo, token), "--terminal-status", "rejected")
        assert done.code == 0, done.err
        assert done.doc["sealed"] is True and done.doc["terminalStatus"] == "rejected"
        assert done.events[0]["type"] == "sh.spx.verify.terminal"
        [warning] = [line for line in done.err.splitlines() if not line.startswith("{")]
        assert warning.startswith(
            "review-loop verification run finish: warning: the run is sealed by its terminal "
            "event (seq 2); its seal marker, a cache, could not be written: "
        )
        assert "Read-only file system" in warning
        status = run_cli("status", *locator(repo, token)).doc
        assert status["sealed"] is True and status["nextActions"] == []
        payload = unit("src/a.py")
        late = add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path)
        assert late.code == 1 and "cannot add evidence to a finished run" in late.err
    assert not log.with_name(log.name + ".sealed").exists()
    again = run_cli("finish", *locator(repo, token), "--terminal-status", "rejected")
    assert again.code == 0 and again.doc == done.doc  # the marker is made now
    assert log.with_name(log.name + ".sealed").exists()


def test_an_archived_read_only_run_reads(run_cli: Any, repo: Repo, started: dict[str, Any]) -> None:
    token = started["runToken"]
    assert run_cli("finish", *locator(repo, token), "--terminal-status", "rejected").code == 0
    log, runs_dir = run_files(started)
    log.with_name(log.name + ".lock").unlink()  # an archive copied without its lock
    with read_only(runs_dir):
        status = run_cli("status", *locator(repo, token))
        assert status.code == 0, status.err
        assert status.doc["sealed"] is True and status.doc["terminalStatus"] == "rejected"
        rendered = run_cli("render", *locator(repo, token))
        assert rendered.code == 0 and [e["seq"] for e in rendered.doc["events"]] == [1, 2]
        assert run_cli("input", *locator(repo, token)).code == 0


def test_a_forged_snapshot_answers_for_nothing(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path
) -> None:
    """F9: a cache with the right inode and size and a fake key index, unsigned."""
    token = started["runToken"]
    log, _ = run_files(started)
    payload = unit("src/a.py")
    body = {
        "schema": "spx-verify/1",
        "stream": log.name,
        "ino": log.stat().st_ino,
        "offset": log.stat().st_size,
        "seq": 76,
        "sealedSeq": None,
        "keys": {"sh.spx.verify.scope": {payload["unitId"]: 77}},
        "view": {},
    }
    for header in ({"v": 2, "mac": "0" * 64}, {"v": 1}):
        log.with_name(log.name + ".state").write_text(json.dumps(header) + "\n" + json.dumps(body))
        assert run_cli("status", *locator(repo, token)).doc["lastSequence"] == 1
    result = add(run_cli, repo, token, "scope", payload["unitId"], payload, tmp_path)
    assert result.code == 0 and result.doc == {"sequence": 2, "idempotent": False}
    body["sealedSeq"] = 1
    log.with_name(log.name + ".state").write_text(json.dumps({"v": 2}) + "\n" + json.dumps(body))
    assert run_cli("status", *locator(repo, token)).doc["sealed"] is False


@pytest.mark.parametrize("which", ["jsonl", "jsonl.lock", "input"])
def test_linked_run_files_are_refused(
    run_cli: Any, repo: Repo, started: dict[str, Any], tmp_path: Path, which: str
) -> None:
    token = started["runToken"]
    log, runs_dir = run_files(started)
    victim = tmp_path / "victim"
    target = runs_dir / f"input-{token}.json" if which == "input" else log.with_suffix(f".{which}")
    victim.write_bytes(target.read_bytes())
    before = victim.read_bytes()
    target.unlink()
    target.symlink_to(victim)
    payload = unit("src/a.py")
    for args in (
        ["status", *locator(repo, token)],
        ["render", *locator(repo, token)],
        [
            "scope", "add", *locator(repo, token), "--idempotency-key", payload["unitId"],
            "--payload", write(tmp_path / "p.json", payload),
        ],
    ):  # fmt: skip
        result = run_cli(*args)
        assert result.code == 1, (args, result.err)
        assert "symbolic link" in result.err
    assert victim.read_bytes() == before


def test_a_linked_handoff_directory_gets_no_run(run_cli: Any, repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.root / ".review-handoff").symlink_to(outside)
    result = run_cli(
        "start", "--verification-type", "audit", "--scope-type", "changeset", "--scope",
        repo.scope, "--input", write(tmp_path / "in.json", "{}"),
    )  # fmt: skip
    assert result.code == 1 and "JOURNAL_UNSAFE_PATH" in result.err
    assert ".review-handoff is a symbolic link" in result.err
    assert list(outside.iterdir()) == []


def test_a_full_disk_loses_no_acknowledged_event(run_cli: Any, repo: Repo, tmp_path: Path) -> None:
    where = ["--verification-type", "test", "--scope-type", "file", "--scope", "src/a.py"]
    with tmpfs(repo.root / ".review-handoff", "256k"):
        started = run_cli("start", *where, "--input", write(tmp_path / "i.json", "{}"))
        assert started.code == 0, started.err
        token = started.doc["runToken"]
        module = write(tmp_path / "m.json", {"moduleId": "tests/test_a.py"})
        scope = run_cli(
            "scope", "add", *where, "--run", token, "--idempotency-key", "m", "--payload", module
        )
        assert scope.code == 0, scope.err
        acknowledged: dict[str, int] = {}
        refusals: list[str] = []
        for index in range(30):
            key = f"f{index}"
            failure = {"moduleId": "tests/test_a.py", "testName": key, "errors": ["e" * 20_000]}
            result = run_cli(
                "finding", "add", *where, "--run", token, "--idempotency-key", key,
                "--payload", write(tmp_path / f"{key}.json", failure),
            )  # fmt: skip
            if result.code == 0:
                acknowledged[key] = result.doc["sequence"]
            else:
                refusals.append(result.err.strip())
        assert acknowledged and refusals
        assert set(refusals) == {
            "review-loop verification run could not append the evidence event: "
            "No space left on device"
        }
        events = run_cli("render", *where, "--run", token).doc["events"]
        recorded = {e["id"]: e["seq"] for e in events if e["type"] == "sh.spx.verify.finding"}
        assert recorded == acknowledged  # 0 acknowledged events lost, none unacknowledged
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        log = Path(started.doc["locator"]["runTarget"])
        assert log.read_bytes().endswith(b"\n")
        assert not [p for p in log.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_start_that_fills_the_disk_leaves_no_run(
    run_cli: Any, repo: Repo, tmp_path: Path
) -> None:
    where = ["--verification-type", "test", "--scope-type", "file", "--scope", "src/a.py"]
    big = write(tmp_path / "big.json", json.dumps({"blob": "b" * 100_000}))
    with tmpfs(repo.root / ".review-handoff", "64k") as store:
        result = run_cli("start", *where, "--input", big)
        assert result.code == 1 and result.out == ""
        assert result.err.strip() == (
            "review-loop verification run could not persist the recorded run input: "
            "No space left on device"
        )
        runs_dir = store / "verification" / "branch"
        leftovers = [p.name for p in runs_dir.rglob("*") if p.is_file() and "runs" in p.parts]
        assert leftovers == []
