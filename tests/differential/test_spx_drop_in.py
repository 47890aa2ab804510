"""Differential (contract) tests: ``review-loop verification run`` is a drop-in for spx's.

spx 0.6.25 could not be run on this machine (not on the npm registry it reaches; a source
build needs pnpm and tsup), so ``golden/spx/documented.json`` holds the outputs the
differential run against the REAL spx documented for these steps, their texts checked
against spx's source at 5af72b12bb11 (the file says which). Each test runs spx's command
line, in spx's argument order, through review-loop's CLI entry point and compares exit
code, stdout and the error text.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator import cli
from tests.differential.scenarios import GOLDEN
from tests.orchestrator.journal.payloads import finding, unit
from tests.test_cli_verification import Repo, Result, locator, write

DOCUMENTED: dict[str, Any] = json.loads((GOLDEN / "spx" / "documented.json").read_text())["steps"]
Run = Callable[..., Result]


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


@pytest.fixture
def spx(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run a whole spx-style argv (``-C`` wherever the client put it)."""

    def invoke(*argv: str, stdin: str | None = None) -> Result:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = cli.run(list(argv))
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return invoke


def _start(spx: Run, repo: Repo, tmp_path: Path, kind: str = "audit") -> str:
    source = write(tmp_path / f"start-{kind}.json", {"changed_paths": ["keep.py", "new.py"]})
    started = spx(
        *("-C", str(repo.root), "verification", "run", "start"),
        *("--verification-type", kind, "--scope-type", "changeset", "--scope", repo.scope),
        *("--input", source),
    )
    assert started.code == 0, started.err
    token: str = started.doc["runToken"]
    return token


def _add(spx: Run, repo: Repo, token: str, verb: str, key: str, payload: Any, path: Path) -> Result:
    return spx(
        *("-C", str(repo.root), "verification", "run", verb, "add", *locator(repo, token)),
        *("--idempotency-key", key, "--payload", write(path, payload)),
    )


def test_contract_directory_before_verification(spx: Run, repo: Repo, tmp_path: Path) -> None:
    token = _start(spx, repo, tmp_path)
    where = ["verification", "run", "status", *locator(repo, token)]
    after = spx(*where, "-C", str(repo.root))
    assert after.code == 0, after.err
    for name, option in (
        ("A53_C_before_verification", ["-C", str(repo.root)]),
        ("A56_directory_before_verification", ["--directory", str(repo.root)]),
        ("A56_directory_before_verification", [f"--directory={repo.root}"]),
    ):
        before = spx(*option, *where)
        assert before.code == DOCUMENTED[name]["exit"], (name, before.out, before.err)
        assert before.doc == after.doc and before.err == after.err == ""
    assert spx("verification", "--directory", str(repo.root), *where[1:]).doc == after.doc


def test_contract_keys_rules_and_extra_fields_as_spx(spx: Run, repo: Repo, tmp_path: Path) -> None:
    token = _start(spx, repo, tmp_path)
    recorded = unit("keep.py")
    steps: list[tuple[str, str, str, Any]] = [
        ("A59_scope_key_of_the_clients_choice", "scope", "scope-00", recorded),
        ("A63_scope_key_reused_as_a_finding_key", "finding", "scope-00", finding(recorded)),
        ("A60_extra_id_field", "scope", "idem-1", {**unit("new.py"), "id": "legacy"}),
        (
            "A61_extra_subjectPaths_field",
            "scope",
            "idem-2",
            {**unit("src/a.py"), "subjectPaths": ["src/a.py"]},
        ),
        ("A64_rule_with_a_colon", "finding", "f-colon", finding(recorded, rule="style:naming")),
    ]
    for i, (name, verb, key, payload) in enumerate(steps):
        done = _add(spx, repo, token, verb, key, payload, tmp_path / f"p{i}.json")
        assert done.code == DOCUMENTED[name]["exit"], (name, done.err)
        assert done.doc == DOCUMENTED[name]["stdout"], name
    rendered = spx("verification", "run", "render", *locator(repo, token), "-C", str(repo.root))
    kept = [event["data"] for event in rendered.doc["events"] if "unitId" in event["data"]]
    assert not any("id" in data or "subjectPaths" in data for data in kept)  # dropped, as spx


def test_contract_observed_in_place_of_evidence(spx: Run, repo: Repo, tmp_path: Path) -> None:
    documented = DOCUMENTED["A37_observed_in_place_of_evidence"]
    token = _start(spx, repo, tmp_path)
    recorded = unit("keep.py")
    assert _add(spx, repo, token, "scope", "u", recorded, tmp_path / "u.json").code == 0
    payload = finding(recorded)
    payload["observed"] = payload.pop("evidence")["observed"]
    done = _add(spx, repo, token, "finding", "f-observed", payload, tmp_path / "f.json")
    assert done.code == documented["exit"] and done.out == ""
    assert documented["stderr_contains"] in done.err


@pytest.mark.parametrize("verb", ["status", "render", "finish"])
def test_contract_unknown_run_names_its_input_record(
    spx: Run, repo: Repo, tmp_path: Path, verb: str
) -> None:
    documented = DOCUMENTED["A51_unknown_token_target"]
    _start(spx, repo, tmp_path)
    bogus = "2026-01-01_00-00-00-000-000000000000"
    extra = ["--terminal-status", "approved"] if verb == "finish" else []
    done = spx("-C", str(repo.root), "verification", "run", verb, *locator(repo, bogus), *extra)
    assert done.code == documented["exit"]
    namespace = done.err.split("namespace=")[1].split()[0]
    expected = documented["stderr_ends_with"].replace("<runs>", namespace)
    assert done.err.rstrip("\n").endswith(expected.replace("<token>", bogus)), done.err


def test_contract_path_like_token(spx: Run, repo: Repo, tmp_path: Path) -> None:
    documented = DOCUMENTED["A52_path_like_token"]
    _start(spx, repo, tmp_path)
    done = spx("-C", str(repo.root), "verification", "run", "status", *locator(repo, "../x"))
    assert (done.code, done.out, done.err) == (documented["exit"], "", documented["stderr"] + "\n")


def test_contract_review_metadata_reason(spx: Run, repo: Repo, tmp_path: Path) -> None:
    documented = DOCUMENTED["A81_review_metadata_without_state"]
    token = _start(spx, repo, tmp_path, "review")
    where = [
        *("--verification-type", "review", "--scope-type", "changeset", "--scope", repo.scope),
        *("--run", token),
    ]
    metadata = write(
        tmp_path / "m.json",
        {"actor": "me", "body": "", "submittedAt": "2026-01-01T00:00:00Z", "commit": repo.head},
    )
    done = spx(
        *("-C", str(repo.root), "verification", "run", "finish", *where),
        *("--terminal-status", "approved", "--terminal-metadata", metadata),
    )
    assert done.code == documented["exit"]
    reasons = [line.split(None, 1)[1] for line in done.err.splitlines() if "reason" in line[:9]]
    assert reasons == [documented["stderr_reason"]], done.err
