"""Process tests: every command that runs reviewers is cancelled by a signal the same way.

``consult`` has the full matrix and ``run`` its own test (``test_signals.py``,
``test_stops.py``); here ``converge``, ``verify-diff``, ``blind-review``, ``preflight``
and ``audit`` each get SIGTERM while their reviewers hang: exit 143, one JSON document
(``ok: false``, ``interrupted`` naming the reviewers), no traceback, no record left
``running`` or ``starting``, no process left.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import (
    Scanner,
    finish,
    launch,
    one_document,
    records,
    stopped_on_failure,
    unfinished,
    wait_until,
)
from tests.gitrepo import committed_repo
from tests.orchestrator.workflows.test_scope import Remote

Setup = Callable[[Path], tuple[Path, list[str]]]


def _converge(root: Path) -> tuple[Path, list[str]]:
    repo = committed_repo(root / "repo", {"a.txt": "hello\n"})
    (root / "plan.md").write_text("Ship the greeting change.\n")
    (root / "host.md").write_text("The host thinks it is right.\n")
    args = ["--plan", str(root / "plan.md"), "--host-position", str(root / "host.md")]
    return repo, ["converge", "--repo", str(repo), *args, "--host", "claude"]


def _verify_diff(root: Path) -> tuple[Path, list[str]]:
    repo = committed_repo(root / "repo", {"a.txt": "hello\n"})
    (repo / "a.txt").write_text("hello, world\n")
    framing = ["--description", "greet", "--fix-direction", "say hello", "--target", "a.txt"]
    return repo, ["verify-diff", "--repo", str(repo), "--executor", "codex", *framing]


def _blind_review(root: Path) -> tuple[Path, list[str]]:
    repo = committed_repo(root / "repo", {"a.txt": "hello\n"})
    return repo, ["blind-review", "--repo", str(repo)]


def _preflight(root: Path) -> tuple[Path, list[str]]:
    repo = committed_repo(root / "repo", {"a.txt": "hello\n"})
    return repo, ["preflight", "--repo", str(repo), "--host", "grok"]


def _audit(root: Path) -> tuple[Path, list[str]]:
    remote = Remote(root / "git")
    concerns = root / "concerns.json"
    concerns.write_text(json.dumps({"concerns": {"*": {"product": "claude", "prompt": "builtin"}}}))
    return remote.work, [
        "audit",
        "HEAD",
        str(remote.work),
        "--concerns",
        str(concerns),
        "--driver",
        "self",
    ]


COMMANDS: dict[str, Setup] = {
    "converge": _converge,
    "verify-diff": _verify_diff,
    "blind-review": _blind_review,
    "preflight": _preflight,
    "audit": _audit,
}


def _reviewers_running(repo: Path) -> bool:
    states = [r.get("status") for r in records(repo).values()]
    return "running" in states and "starting" not in states


@pytest.mark.parametrize("command", COMMANDS)
def test_process_sigterm_cancels_every_command_that_runs_reviewers(
    command: str, tmp_path: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> None:
    fakes.script(any_=[{"mode": "hang"}])
    repo, args = COMMANDS[command](tmp_path)
    proc = launch(args, env)
    with stopped_on_failure(proc):
        wait_until(
            f"{command}'s reviewers to run",
            lambda: proc.poll() is not None or _reviewers_running(repo),
            describe=lambda: f"records={records(repo)}",
        )
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    stdout, stderr = finish(proc)
    assert proc.returncode == 128 + signal.SIGTERM, (stdout[-1000:], stderr[-2000:])
    assert "Traceback" not in stderr
    document = one_document(stdout)
    assert document["ok"] is False and document["status"] == "interrupted"
    assert document["signal"] == "SIGTERM" and document["interrupted"]
    ended = [r for r in records(repo).values() if r["status"] == "interrupted"]
    # a reviewer cancelled before its launch (while its CLI was probed) has no record
    assert ended and {r["peer"] for r in ended} <= set(document["interrupted"])
    assert unfinished(repo) == []
    assert scanner.survivors() == []
