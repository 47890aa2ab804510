"""End to end: ``converge`` with two real CLIs (claude, codex) against the fake model API.

Marked ``e2e`` (needs ``scripts/install-clis``; ``REVIEW_LOOP_SKIP_E2E=1`` skips it on
purpose). The host is grok, so Peer A is the real ``claude`` and Peer B the real ``codex``;
round B must really resume each peer's own session (the model sees the round-A turn again).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from review_loop.orchestrator.cli import run as cli_run
from tests.e2e.conftest import GIT_ENV, SKIP_ENV, bin_dir
from tests.fakes.model_api import FakeModelAPI, Reply, cli_env, serve_model_api

pytestmark = pytest.mark.e2e

ANSWER = (
    "Scope is T1 only; app.py owns it; verify with pytest.\n\n"
    "## Disagreements\n- none\n\n## Human decisions\n- none\n\nPosition: AGREE"
)


@pytest.fixture
def api() -> Iterator[FakeModelAPI]:
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: e2e tier skipped")
    for product in ("claude", "codex"):
        path = bin_dir() / product
        if not (path.is_file() and os.access(path, os.X_OK)) or shutil.which("node") is None:
            pytest.fail(f"the real `{product}` CLI (and node) are needed: run scripts/install-clis")
    with serve_model_api() as served:
        yield served


def test_converge_with_real_claude_and_codex(
    api: FakeModelAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def f(x):\n    return x[0]\n")
    git_env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "app.py"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=git_env, check=True, timeout=30)
    home = tmp_path / "home"
    env = {**cli_env("claude", api, home), **cli_env("codex", api, home)}
    env["PATH"] = f"{bin_dir()}:{env['PATH']}"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    api.default = Reply.answer(ANSWER)
    plan, host = tmp_path / "plan.md", tmp_path / "host.md"
    plan.write_text("# Plan\n\n- T1: guard empty input in app.f\n")
    host.write_text("## Scope\nT1\n\n" + ANSWER + "\n")

    out: list[str] = []
    code = cli_run(
        [
            "converge", "--repo", str(repo), "--plan", str(plan), "--host-position", str(host),
            "--host", "grok", "--run", "e2e", "--timeout", "120",
        ],
        stdout=out.append,
    )  # fmt: skip
    doc = json.loads(out[0])
    assert code == 0, doc
    assert doc["status"] == "converged" and doc["rounds"] == 1
    assert (doc["peers"]["A"]["product"], doc["peers"]["B"]["product"]) == ("claude", "codex")
    turns = api.turns()
    assert {t.api for t in turns} >= {"anthropic", "responses"}
    for wire in ("anthropic", "responses"):
        b_turn = next(t for t in api.turns(wire) if "round B1" in t.last_user_text)
        # resumed: the model sees this peer's own round-A exchange again
        assert any("This is round A" in text for _, text in b_turn.messages)
        assert "Scope is T1 only" in b_turn.last_user_text  # the host's and other's positions
    assert doc["peers"]["A"]["sessionId"] and doc["peers"]["B"]["sessionId"]
