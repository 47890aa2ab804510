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


def test_blind_review_with_real_claude_sees_no_earlier_record(
    api: FakeModelAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real claude runs the blind review in a copy without ``.review-handoff/``.

    The model asks to list the working directory (a read-only tool call); the listing that
    comes back must show the code but not the records of the earlier positions.
    """
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def f(x):\n    return x[0]\n")
    git_env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "app.py"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=git_env, check=True, timeout=30)
    secret = repo / ".review-handoff" / "runtime" / "converge" / "e2e" / "position-a.md"
    secret.parent.mkdir(parents=True)
    secret.write_text("Peer A said: ship it\n")
    (repo / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    home = tmp_path / "home"
    for key, value in {**cli_env("claude", api, home)}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{bin_dir()}:{os.environ['PATH']}")
    review = "## Findings\n\nNone\n\nVerdict: CLEAN"
    api.script(Reply.tool_then("Glob", {"pattern": "**/*"}, then=review))
    out: list[str] = []
    code = cli_run(
        ["blind-review", "--repo", str(repo), "--run", "e2e", "--timeout", "120"],
        stdout=out.append,
    )
    doc = json.loads(out[0])
    assert code == 0, doc
    # the request after the tool call carries the Glob result: the files the reviewer saw
    listing = [block for t in api.turns("anthropic") for block in _tool_results(t.body)]
    assert any("app.py" in text for text in listing), "the Glob listing never came back"
    assert not any("position-a" in text or ".review-handoff" in text for text in listing)
    assert secret.read_text() == "Peer A said: ship it\n"


def _tool_results(body: object) -> list[str]:
    """The text of every ``tool_result`` block in an Anthropic request body."""
    found: list[str] = []
    messages = body.get("messages", []) if isinstance(body, dict) else []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(json.dumps(block.get("content")))
    return found
