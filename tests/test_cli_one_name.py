"""Contract and process tests: one name for one thing across the commands.

- Every command that takes a repository accepts ``--repo DIR`` (and ``-C DIR``), besides
  the forms the originals use (``audit``'s positional ``DIR``, ``verification``'s
  ``-C``/``--directory``).
- Every command that names reviewers accepts ``--reviewer``, ``--peer`` and ``--executor``
  as one flag (the originals' spellings keep working: ``tests/differential``).
- An unknown product is exit 1 naming the accepted ones, on every command (``sessions``
  included: ``tests/orchestrator/test_sessions_output.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from review_loop.orchestrator.cli import COMMANDS, load_command, new_parser
from review_loop.orchestrator.cli.verification import parse_verb
from tests.test_cli import git_repo

# The commands that work on no repository: preferences, a launcher file, the MCP server
# (its tools take ``repo``), and the agents' help document.
NO_REPOSITORY = {"prefs", "shim", "mcp", "help", "demo"}  # demo makes its own repository
# What each command needs besides the repository to parse.
REQUIRED: dict[str, list[str]] = {"scope": ["resolve", "HEAD"], "audit": ["HEAD"]}
REVIEWER_COMMANDS = ["consult", "run", "verify-diff", "converge", "preflight", "blind-review"]


def _parsed(name: str, words: list[str]) -> argparse.Namespace:
    parser = new_parser(f"review-loop {name}")
    load_command(name).configure(parser)
    return parser.parse_args(words)


def _repo_of(name: str, words: list[str]) -> str | None:
    args = _parsed(name, words)
    if name == "verification":
        verb = ["run", "status", "--verification-type", "review", "--scope-type", "file"]
        args = parse_verb([*verb, "--scope", "a.py", "--run", "r", *args.rest], args.root)
        return str(args.root)
    return str(getattr(args, "repo", None) or getattr(args, "directory", None))


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - NO_REPOSITORY))
@pytest.mark.parametrize("spelling", ["--repo", "-C"])
def test_contract_every_repository_command_takes_repo(name: str, spelling: str) -> None:
    words = [*REQUIRED.get(name, []), spelling, "/some/checkout"]
    if name == "verification":  # its options follow the verb
        words = [spelling, "/some/checkout"]
    assert _repo_of(name, words) == "/some/checkout"


def test_contract_the_originals_repository_forms_still_parse() -> None:
    assert _parsed("audit", ["HEAD", "/checkout"]).directory == "/checkout"
    assert _repo_of("verification", ["--directory", "/checkout"]) == "/checkout"
    assert _parsed("run", ["--repo-root", "/checkout"]).repo == "/checkout"


@pytest.mark.parametrize("name", REVIEWER_COMMANDS)
def test_contract_one_reviewer_flag_with_its_aliases(name: str) -> None:
    chosen = set()
    for spelling in ("--reviewer", "--peer", "--executor"):
        args = vars(_parsed(name, [spelling, "simulated"]))
        chosen.add(json.dumps({k: v for k, v in args.items() if v not in (None, [], False)}))
    assert len(chosen) == 1, chosen  # the same namespace whichever spelling named it


def _run(*argv: str, cwd: Path) -> tuple[int, dict[str, object], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "review_loop", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "REVIEW_LOOP_TIMEOUT_MS": "20000"},
        timeout=120,
    )
    return (
        proc.returncode,
        json.loads(proc.stdout.splitlines()[-1] if argv[0] == "verification" else proc.stdout),
        proc.stderr,
    )


def test_process_verification_and_audit_take_repo_from_elsewhere(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    start = ["verification", "run", "start", "--repo", str(repo), "--verification-type"]
    (repo / "in.json").write_text("{}")
    code, started, err = _run(
        *start, "review", "--scope-type", "file", "--scope", "README", "--input",
        str(repo / "in.json"), cwd=elsewhere,
    )  # fmt: skip
    assert code == 0, err
    assert str(repo) in json.dumps(started)
    code, audited, err = _run(
        "audit", "HEAD", "--repo", str(repo), "--driver", "self", cwd=elsewhere
    )
    assert code in (0, 2), err  # the workflow ran on the repository (not a usage error)
    assert str(repo) in json.dumps(audited)
    code, refused, _ = _run("audit", "HEAD", str(repo), "--repo", str(elsewhere), cwd=elsewhere)
    assert code == 1 and str(refused["error"]).startswith("--repo: ")


def test_process_verify_diff_takes_reviewer_and_run_takes_peer(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "README").write_text("changed\n")
    code, ran, err = _run("run", "--peer", "simulated", cwd=repo)
    assert code == 0 and ran["reviewer"] == "simulated", err
    code, verified, err = _run(
        "verify-diff", "--reviewer", "simulated", "--description", "d", "--fix-direction", "f",
        "--target", "README", cwd=repo,
    )  # fmt: skip
    assert code in (0, 2) and "executor" not in str(verified.get("error", "")), (verified, err)


UNKNOWN_PRODUCT = {
    "consult": ["consult", "--peer", "kodex", "--question", "q"],
    "run": ["run", "--reviewer", "kodex"],
    "verify-diff": [
        "verify-diff",
        "--executor",
        "kodex",
        "--description",
        "d",
        "--fix-direction",
        "f",
        "--target",
        "README",
    ],
    "blind-review": ["blind-review", "--reviewer", "kodex"],
    "sessions": ["sessions", "--product", "kodex"],
    "fallback": ["consult", "--peer", "simulated", "--fallback", "kodex", "--question", "q"],
}


@pytest.mark.parametrize("case", list(UNKNOWN_PRODUCT))
def test_process_an_unknown_product_is_exit_1_naming_the_accepted_ones(
    case: str, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "repo")
    code, document, err = _run(*UNKNOWN_PRODUCT[case], cwd=repo)
    assert code == 1 and document["ok"] is False, document
    assert "'kodex' (accepted: claude, codex, " in str(document["error"])
    assert err.splitlines()[-1].endswith("(did you mean codex?)")
