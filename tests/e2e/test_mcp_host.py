"""End to end: the real claude CLI is the MCP client of ``review-loop mcp``.

claude is registered with the server through ``--mcp-config`` (``--strict-mcp-config``: no
other server), with ``MCP_CONNECTION_NONBLOCKING=0`` (``claude -p`` otherwise connects MCP
servers in the background, and on a loaded machine the model's call found the server "still
connecting"), and the fake model API makes it call the ``consult`` tool. The server runs
the real dispatcher, which asks a fake reviewer CLI (``tests/fakes``); the reviewer's answer
comes back through the protocol, into claude's next model turn, and out as claude's result.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from tests.e2e.helpers import run
from tests.fakes import FakeCLIs
from tests.fakes.model_api import FakeModelAPI, Reply, cli_env
from tests.faults.harness import write_prefs

CliBin = Callable[[str], Path]
TOOL = "mcp__review-loop__consult"
HOST_RUN_S = 300.0
"""A hang-catching bound on one host run (several interpreters start in it), not a speed."""


def test_claude_calls_consult_over_mcp_and_gets_the_reviewers_answer(
    cli_bin: CliBin,
    model_api: FakeModelAPI,
    cli_home: Path,
    git_repo: Path,
    user_state: Path,
    tmp_path: Path,
) -> None:
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": "the fake codex says: ship it"}])
    write_prefs(user_state)
    config = tmp_path / "mcp.json"
    server_env = fakes.env(path_only=True)
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "review-loop": {
                        "command": sys.executable,
                        "args": ["-m", "review_loop", "mcp"],
                        "env": server_env,
                    }
                }
            }
        )
    )
    arguments = {
        "repo": str(git_repo),
        "question": "Is the README right?",
        "peers": ["codex"],
        "wait_seconds": 120,  # the server's most: the reviewer's answer, not a job to poll
    }
    model_api.script(Reply.tool_then(TOOL, arguments, then=None))
    argv = [cli_bin("claude"), "-p", "--output-format", "json"]
    argv += ["--mcp-config", str(config), "--strict-mcp-config", "--allowedTools", TOOL]
    # Wait for the server's tools before the first model turn, and give a loaded machine
    # time to start it (claude gives a server 5 s to connect by default).
    # Nor may claude's wait for the tool's result end first (MCP_TOOL_TIMEOUT).
    wait = {
        "MCP_CONNECTION_NONBLOCKING": "0",
        "MCP_CONNECT_TIMEOUT_MS": "60000",
        "MCP_TOOL_TIMEOUT": "300000",
    }
    env = cli_env("claude", model_api, cli_home, extra=wait)
    # Our bound on the whole run: claude's start, the server's, the consult job (its own
    # interpreter, the reviewer) and a second model turn; 60 s was missed on a loaded machine.
    ran = run(argv, env=env, cwd=git_repo, stdin="review", timeout=HOST_RUN_S)

    assert ran.returncode == 0, ran.describe()
    result = ran.json()["result"]
    assert "the fake codex says: ship it" in result, result
    assert [t.reply for t in model_api.turns("anthropic")] == ["tool", "text"]
    assert [call["product"] for call in fakes.calls()] == ["codex"]
    offered = json.dumps(model_api.turns("anthropic")[0].body)
    assert TOOL in offered  # claude listed the server's tools to the model
