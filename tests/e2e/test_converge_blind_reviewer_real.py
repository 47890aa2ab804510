"""End-to-end tests: with round A standing in for preflight, the real blind-review Claude is proven.

Seed 004: "Every Peer must be launchable under the adapter's read-only control; likewise for
the Claude used for blind review." With no preflight recorded, ``converge`` (as a process of
the console script) asks the real ``claude`` CLI, wired to the fake model API on 127.0.0.1,
for the preflight round trip alongside round A; the peers are fake CLIs. A Claude the
provider refuses (HTTP 401) stops the loop with ``MISSING_DEPENDENCIES`` naming the blind
reviewer; a Claude that answers leaves the preflight recorded ``via: round A``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.conftest import GIT_ENV, ROOT
from tests.e2e.helpers import run
from tests.fakes import FakeCLIs
from tests.fakes.model_api import FakeModelAPI, Reply, cli_env

POSITION = "position\n\n## Disagreements\n- none\n\n## Human decisions\n- none\n\nPosition: AGREE"


def converge(
    cli_bin: Callable[[str], Path],
    model_api: FakeModelAPI,
    cli_home: Path,
    git_repo: Path,
    tmp_path: Path,
) -> dict[str, Any]:
    """``converge`` round A with host Claude: real claude (blind reviewer), fake peers."""
    env = cli_env("claude", model_api, cli_home)
    env["PATH"] = f"{cli_bin('claude').parent}{os.pathsep}{env['PATH']}"
    fakes = FakeCLIs(tmp_path / "fakes", ("codex", "grok"))  # first on PATH: the peers
    fakes.script(any_=[{"mode": "ok", "text": POSITION}])
    env = fakes.env(env)
    env["REVIEW_LOOP_HOME"] = os.environ["REVIEW_LOOP_HOME"]  # per test (tests/conftest)
    env["REVIEW_LOOP_SKILL_DIRS"] = os.environ["REVIEW_LOOP_SKILL_DIRS"]
    env["PYTHONPATH"] = str(ROOT)
    env.update(GIT_ENV)
    plan = tmp_path / "plan.md"
    plan.write_text("# Plan\n\n- T1: say hello\n")
    argv = [sys.executable, "-m", "review_loop", "converge", "--repo", str(git_repo)]
    ran = run(
        [*argv, "--plan", str(plan), "--host", "claude", "--run", "n1"],
        env=env,
        cwd=git_repo,
        timeout=240,
    )
    doc = ran.json()
    assert isinstance(doc, dict), ran.describe()
    assert sorted(c["product"] for c in fakes.calls()) == ["codex", "grok"]  # round A ran
    return doc


def test_a_refused_blind_review_claude_stops_the_loop(
    cli_bin: Callable[[str], Path],
    model_api: FakeModelAPI,
    cli_home: Path,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    model_api.default = Reply.error(401, "fake 401 bad key")
    doc = converge(cli_bin, model_api, cli_home, git_repo, tmp_path)
    assert (doc["ok"], doc["status"]) == (False, "MISSING_DEPENDENCIES"), doc
    [problem] = [m for m in doc["missing"] if m.startswith("Blind reviewer (claude):")]
    assert "no real round trip" in problem and "auth_failed" in problem, problem
    assert "- Stop point: before discussion, Goal activation, and source changes" in doc["block"]
    assert model_api.turns()  # the real claude's request reached the provider


def test_an_answering_blind_review_claude_is_the_preflight(
    cli_bin: Callable[[str], Path],
    model_api: FakeModelAPI,
    cli_home: Path,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    model_api.default = Reply.answer("PREFLIGHT OK")
    doc = converge(cli_bin, model_api, cli_home, git_repo, tmp_path)
    assert (doc["ok"], doc["status"]) == (True, "awaiting_host_position"), doc
    assert (doc["preflight"]["ready"], doc["preflight"]["via"]) == (True, "round A"), doc
    turns = model_api.turns()
    assert turns and all(t.reply == "text" for t in turns)  # claude's round trip answered
