"""Process tests: the defaults and promises the help pages state, proven by behaviour.

Each test reads the documented default from the help pages themselves
(``review_loop/orchestrator/cli/manual.py``), then runs the command without the flag and
shows the behaviour the help states: ``--packet`` required where it is, ``consult --peer``,
``run --rounds`` (3), ``--scope`` (auto-loop), the packet as a file, ``--repo`` (the git top
level of the cwd), ``--base`` (HEAD), ``--paths`` (every changed path), ``--timeout`` (20
minutes), the ACTION defaults of prefs, lessons and ledger, ``verify-diff --max-iterations``
and ``sessions --product``; and the offline section of ``docs/cli.md`` against what the
simulated reviewer does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator.cli.manual import PAGES, command_help
from tests.test_cli import git_repo, run_cli
from tests.test_simulated_replies import BLOCKED, FIX

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def documented(command: str, spelling: str) -> str:
    """The default the help page of ``command`` states for the flag ``spelling``."""
    for flag in PAGES[command].flags:
        if flag.spelling == spelling:
            return flag.default
    raise AssertionError(f"{command} documents no {spelling}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = git_repo(tmp_path / "repo")
    (path / "README").write_text("changed\n")
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([BLOCKED] * 4, ensure_ascii=False))
    return {
        "REVIEW_LOOP_HOME": str(tmp_path / "state"),
        "REVIEW_LOOP_SIMULATED_REPLIES": str(replies),
    }


def _cli(*args: str, env: dict[str, str], cwd: Path | None = None) -> tuple[int, Any, str]:
    return run_cli(*args, env=env, cwd=cwd)


@pytest.mark.parametrize("command", ["fix-completion", "close"])
def test_packet_is_required_where_the_help_says_so(
    command: str, repo: Path, env: dict[str, str]
) -> None:
    assert documented(command, "--packet PATH") == "none"
    assert "required:" in command_help(command, ["x"])
    assert "latest packet" not in command_help(command, ["x"])
    extra = ["--body", "text"] if command == "fix-completion" else ["--reason", "accept-concerns"]
    code, doc, _ = _cli(command, "--repo", str(repo), *extra, env=env)
    assert code == 1 and doc["error"].startswith("--packet: required"), doc


def test_consult_peer_default_names_no_peer_unless_the_host_is_skipped(
    repo: Path, env: dict[str, str]
) -> None:
    default = documented("consult", "--reviewer P")
    assert default.startswith("none") and "give --host H for the first two" in default
    code, doc, _ = _cli("consult", "--repo", str(repo), "--question", "hi", env=env)
    assert code == 1 and "--host H --skip-host" in doc["error"], doc
    # with --host and --skip-host: the prefs order without the host
    code, _, stderr = _cli("prefs", "set", "order", "codex,simulated", env=env)
    assert code == 0, stderr
    code, doc, stderr = _cli(
        "consult", "--repo", str(repo), "--question", "hi", "--host", "codex", "--skip-host",
        env=env,
    )  # fmt: skip
    assert code == 0, stderr
    assert doc["product"] == "simulated"


def test_run_defaults_rounds_scope_and_the_packet_is_a_file(
    repo: Path, env: dict[str, str]
) -> None:
    (repo / "sub").mkdir()
    # round 1 blocks (scripted); the re-review is the built-in one (PASS)
    Path(env["REVIEW_LOOP_SIMULATED_REPLIES"]).write_text(json.dumps([BLOCKED]))
    code, doc, stderr = _cli("run", "--reviewer", "simulated", env=env, cwd=repo / "sub")
    assert code == 0, stderr
    packet = Path(doc["packetPath"])
    # --repo: the git top level of the cwd (run from a subdirectory)
    assert documented("run", "--repo DIR") == "the git top level of the cwd"
    assert packet.is_relative_to(repo / ".review-handoff" / "active")
    # --packet: the file 'run' printed as packetPath (.review-handoff/active/<branch>/<name>.md)
    assert packet.is_file() and packet.suffix == ".md" and packet.parent.parent.name == "active"
    # --scope: auto-loop
    assert documented("run", "--scope SLUG") == "auto-loop"
    assert packet.name.endswith("-auto-loop.md")
    # --rounds: 3
    state = repo / ".review-handoff" / "runtime" / doc["packetId"] / "auto-run-state.json"
    assert json.loads(state.read_text())["roundsBudget"] == int(documented("run", "--rounds N|+N"))
    # --packet with --continue: the scope's latest active packet
    assert documented("run", "--packet PATH") == "with --continue, the scope's latest active packet"
    (repo / "fix.md").write_text(FIX)
    code, fixed, stderr = _cli(
        "fix-completion", "--repo", str(repo), "--packet", str(packet), "--body-file",
        str(repo / "fix.md"), env=env,
    )  # fmt: skip
    assert code == 0, (fixed, stderr)
    code, again, stderr = _cli("run", "--repo", str(repo), "--continue", env=env)
    assert code == 0 and again["packetId"] == doc["packetId"] and again["round"] == 2, stderr


def test_run_synopsis_names_any_reviewer_and_simulated_is_one(
    repo: Path, env: dict[str, str]
) -> None:
    from review_loop.orchestrator.cli.review_run import USAGE

    assert "[--reviewer P]" in " ".join(USAGE)
    code, doc, stderr = _cli("run", "--repo", str(repo), "--reviewer", "simulated", env=env)
    assert code == 0 and doc["reviewer"] == "simulated", (doc, stderr)


def test_evidence_base_and_paths_defaults(repo: Path, env: dict[str, str]) -> None:
    assert documented("evidence", "--base REF") == "HEAD"
    assert documented("evidence", "--paths a,b") == "every changed path"
    (repo / "new.txt").write_text("new\n")
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    code, doc, stderr = _cli("evidence", "--repo", str(repo), env=env)
    assert code == 0, stderr
    assert doc["evidence"]["baseSha"] == head
    assert doc["evidence"]["coveredPaths"] == ["README", "new.txt"]


def test_timeout_default_is_twenty_minutes(repo: Path, env: dict[str, str]) -> None:
    assert documented("consult", "--timeout SECONDS").startswith("prefs timeoutMs (20 minutes)")
    code, doc, _ = _cli("prefs", env=env)
    assert code == 0 and doc["defaults"]["timeoutMs"] == 20 * 60 * 1000, doc
    environ = {k: v for k, v in os.environ.items() if k != "REVIEW_LOOP_TIMEOUT_MS"}
    environ["REVIEW_LOOP_HOME"] = env["REVIEW_LOOP_HOME"]
    argv = [sys.executable, "-m", "review_loop", "consult", "--repo", str(repo)]
    argv += ["--peer", "simulated", "--question", "hi"]
    ran = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and "timeout=20:00" in ran.stderr, ran.stderr


@pytest.mark.parametrize(
    ("command", "explicit"),
    [("prefs", ["show"]), ("lessons", ["list"]), ("ledger", ["show"])],
)
def test_action_defaults(
    command: str, explicit: list[str], repo: Path, env: dict[str, str]
) -> None:
    assert documented(command, "ACTION") == explicit[0]
    where = [] if command == "prefs" else ["--repo", str(repo)]
    code, implicit_doc, _ = _cli(command, *where, env=env)
    code_explicit, explicit_doc, _ = _cli(command, *explicit, *where, env=env)
    assert (code, implicit_doc) == (code_explicit, explicit_doc)


def test_sessions_product_default_is_every_product(repo: Path, env: dict[str, str]) -> None:
    assert documented("sessions", "--product P") == "every product"
    quiet = {k: v for k, v in env.items() if k != "REVIEW_LOOP_SIMULATED_REPLIES"}
    code, _, _ = _cli(
        "consult", "--repo", str(repo), "--peer", "simulated", "--question", "hi", env=quiet
    )
    assert code == 0
    code, doc, _ = _cli("sessions", "--repo", str(repo), env=quiet)
    assert code == 0 and [s["product"] for s in doc["sessions"]] == ["simulated"], doc


def test_verify_diff_max_iterations_default_is_one(repo: Path, env: dict[str, str]) -> None:
    assert documented("verify-diff", "--max-iterations N") == "1"
    quiet = {k: v for k, v in env.items() if k != "REVIEW_LOOP_SIMULATED_REPLIES"}
    code, doc, stderr = _cli(
        "verify-diff", "--repo", str(repo), "--executor", "simulated",
        "--description", "README says changed", "--fix-direction", "edit it",
        "--target", "README", env=quiet,
    )  # fmt: skip
    assert code == 0, stderr
    assert doc["iterations_used"] == 1, doc


def test_the_offline_docs_say_what_the_simulated_reviewer_does(
    repo: Path, env: dict[str, str]
) -> None:
    text = re.sub(r"\s+", " ", DOCS.read_text(encoding="utf-8"))
    # blind review: the docs say it is refused, and it is
    assert "`blind-review` (and the blind reviewer of `preflight`) needs a real Claude" in text
    assert "blind review `CLEAN`" not in text
    code, doc, _ = _cli("blind-review", "--repo", str(repo), "--reviewer", "simulated", env=env)
    assert code == 1 and doc["error"].startswith("--reviewer: 'simulated' is not a claude")
    # the prefs order: used only if the user put it there (and then it is)
    assert "only if you put it in the prefs order yourself" in text
    code, _, _ = _cli("prefs", "set", "order", "simulated,claude", env=env)
    code, doc, stderr = _cli("run", "--repo", str(repo), env=env)
    assert code == 0 and doc["reviewer"] == "simulated", (doc, stderr)


def test_consult_resume_and_fallback_defaults(repo: Path, env: dict[str, str]) -> None:
    assert documented("consult", "--resume SESSION_ID") == "a new session"
    assert documented("consult", "--fallback F|auto") == "no fallback"
    quiet = {k: v for k, v in env.items() if k != "REVIEW_LOOP_SIMULATED_REPLIES"}
    ask = ["consult", "--repo", str(repo), "--peer", "simulated", "--question", "hi"]
    code, first, _ = _cli(*ask, env=quiet)
    code_again, second, _ = _cli(*ask, env=quiet)
    assert code == code_again == 0 and first["sessionId"] != second["sessionId"]
    # a peer that is not installed, no --fallback: nobody else is asked
    missing = {**quiet, "PATH": "/usr/bin:/bin"}
    code, doc, _ = _cli("consult", "--repo", str(repo), "--peer", "codex", "--question", "hi",
                        env=missing)  # fmt: skip
    assert code == 2 and doc["fallbacks"] == [] and doc["delivery"] == "NOT_SUBMITTED", doc


@pytest.mark.parametrize("command", ["evidence", "sessions"])
def test_repo_default_is_the_git_top_level_of_the_cwd(
    command: str, repo: Path, env: dict[str, str]
) -> None:
    assert documented(command, "--repo DIR") == "the git top level of the cwd"
    (repo / "deep" / "er").mkdir(parents=True)
    code, from_below, _ = _cli(command, env=env, cwd=repo / "deep" / "er")
    code_top, at_top, _ = _cli(command, "--repo", str(repo), env=env)
    assert code == code_top == 0 and from_below == at_top


def test_blind_review_reviewer_default_is_claude(repo: Path, env: dict[str, str]) -> None:
    assert documented("blind-review", "--reviewer P") == "claude"
    code, doc, _ = _cli("blind-review", "--repo", str(repo), env={**env, "PATH": "/usr/bin:/bin"})
    text = json.dumps(doc)
    assert code == 2 and "claude" in text and "executable not found: claude" in text, doc
