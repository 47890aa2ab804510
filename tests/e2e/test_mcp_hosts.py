"""End to end: the real codex and gemini CLIs are MCP hosts of ``review-loop mcp``; npm grok
is not one (documented in docs/mcp.md, and shown here).

Each host is registered with the server by its own ``mcp add`` command, exactly the line
``docs/mcp.md`` gives (the server's command is this interpreter's ``-m review_loop mcp``, with
the fake reviewers' environment). The fake model API makes the host's model call the
``consult`` tool; the server runs the real dispatcher, which asks a fake reviewer CLI
(``tests/fakes``); the reviewer's answer comes back through the protocol, into the host's
next model turn (which quotes the tool result), and out as the host's answer. The claude
host is ``test_mcp_host.py``.

npm grok (``@vibe-kit/grok-cli``): its MCP servers live in ``.grok/settings.json`` of its
working directory, which ``grok mcp add`` writes there; in headless mode (``-p``) it never
offers an MCP tool to its model. Here that project file is written in a scratch directory
(never in a repository) and the model's first request is shown to carry only grok's own
tools.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.e2e.helpers import kill_group, run
from tests.fakes import FakeCLIs
from tests.fakes.model_api import FakeModelAPI, Reply, cli_env
from tests.faults.harness import wait_until, write_prefs

CliBin = Callable[[str], Path]
ANSWER = "the fake codex says: ship it"
SERVER = [sys.executable, "-m", "review_loop", "mcp"]
HOST_RUN_S = 300.0
"""A hang-catching bound on one host run (the host's start, the server's, the consult job in
its own interpreter, two model turns), not a speed: 60 s was missed on a loaded machine."""
WAIT_S = 110
"""The consult tool's ``wait_seconds`` (the server allows 120): the reviewer's answer comes
back in the tool's result, not a job left to poll, however slow the machine."""
# What the server needs of this test's environment (a user's server needs none of it):
# the fake reviewers first on PATH, their script and log, review-loop's state directory
# and the test's process tag.
SERVER_ENV = (
    "PATH",
    "FAKE_AGENT_SCRIPT",
    "FAKE_AGENT_LOG",
    "REVIEW_LOOP_HOME",
    "REVIEW_LOOP_TEST_TOKEN",
    "REVIEW_LOOP_ENV_PASSTHROUGH",
    "REVIEW_LOOP_SKILL_DIRS",
)


def _reviewer(tmp_path: Path, user_state: Path) -> tuple[FakeCLIs, dict[str, str]]:
    """The fake codex reviewer, and the environment the server is registered with."""
    fakes = FakeCLIs(tmp_path / "fakes")
    fakes.script(codex=[{"mode": "ok", "text": ANSWER}])
    write_prefs(user_state)
    env = fakes.env(path_only=True)
    return fakes, {name: env[name] for name in SERVER_ENV if name in env}


def _arguments(repo: Path) -> dict[str, object]:
    return {"repo": str(repo), "question": "Is the README right?", "peers": ["codex"]}


def test_codex_calls_consult_over_mcp_and_gets_the_reviewers_answer(
    cli_bin: CliBin,
    model_api: FakeModelAPI,
    cli_home: Path,
    git_repo: Path,
    user_state: Path,
    tmp_path: Path,
) -> None:
    fakes, server_env = _reviewer(tmp_path, user_state)
    env = cli_env("codex", model_api, cli_home)
    codex = str(cli_bin("codex"))
    with_env = [word for name, value in server_env.items() for word in ("--env", f"{name}={value}")]
    added = run(
        [codex, "mcp", "add", "review-loop", *with_env, "--", *SERVER], env=env, cwd=tmp_path
    )
    assert added.returncode == 0, added.describe()
    # codex offers an MCP server's tools as the namespace mcp__<server> (- becomes _)
    call = Reply.tool_then(
        "consult", {**_arguments(git_repo), "wait_seconds": WAIT_S}, namespace="mcp__review_loop"
    )
    model_api.script(call)
    # required: codex exec waits for the server's tools before its first model turn
    required = ["-c", "mcp_servers.review-loop.required=true"]
    required += ["-c", "mcp_servers.review-loop.startup_timeout_sec=60"]  # a loaded machine
    # codex's own wait for a tool's result (60 s by default) outlasts the server's wait
    required += ["-c", f"mcp_servers.review-loop.tool_timeout_sec={WAIT_S + 60}"]
    ask = [codex, "exec", *required, "Is the README right? Ask a reviewer."]
    ran = run(ask, env=env, cwd=git_repo, timeout=HOST_RUN_S)

    assert ran.returncode == 0, ran.describe()
    assert ANSWER in ran.stdout, ran.describe()
    assert [t.reply for t in model_api.turns("responses")] == ["tool", "text"]
    assert [c["product"] for c in fakes.calls()] == ["codex"]
    offered = json.dumps(model_api.turns("responses")[0].body)
    assert "mcp__review_loop" in offered and "consult" in offered


def test_gemini_calls_consult_over_mcp_and_gets_the_reviewers_answer(
    cli_bin: CliBin,
    model_api: FakeModelAPI,
    cli_home: Path,
    git_repo: Path,
    user_state: Path,
    tmp_path: Path,
) -> None:
    fakes, server_env = _reviewer(tmp_path, user_state)
    env = cli_env("gemini", model_api, cli_home)
    gemini = str(cli_bin("gemini"))
    with_env = [word for name, value in server_env.items() for word in ("-e", f"{name}={value}")]
    add = [gemini, "mcp", "add", "-s", "user", "--trust", *with_env, "review-loop", *SERVER]
    added = run(add, env=env, cwd=tmp_path)
    assert added.returncode == 0, added.describe()
    call = Reply.tool_then(
        "mcp_review-loop_consult", {**_arguments(git_repo), "wait_seconds": WAIT_S}
    )
    model_api.script(call)
    argv = [gemini, "-p", "Is the README right? Ask a reviewer.", "-o", "json"]
    ran = run(argv, env=env, cwd=git_repo, timeout=HOST_RUN_S)

    assert ran.returncode == 0, ran.describe()
    assert ANSWER in ran.json()["response"], ran.describe()
    assert [t.reply for t in model_api.turns("gemini")] == ["tool", "text"]
    assert [c["product"] for c in fakes.calls()] == ["codex"]
    offered = json.dumps(model_api.turns("gemini")[0].body)
    assert "mcp_review-loop_consult" in offered


def test_npm_grok_offers_its_model_no_mcp_tool_headless_so_it_is_no_host(
    cli_bin: CliBin,
    model_api: FakeModelAPI,
    cli_home: Path,
    git_repo: Path,
    user_state: Path,
    tmp_path: Path,
) -> None:
    """The registration grok reads (``.grok/settings.json`` of its working directory, as
    ``grok mcp add-json`` writes it), in a scratch project: ``grok -p`` connects the server
    in the background (it is launched) and sends its one model turn with its own tools only.
    It does not exit afterwards (the server's connection holds it), so it is ended here.
    Nothing is written into the repository."""
    _, server_env = _reviewer(tmp_path, user_state)
    project = tmp_path / "grok-project"  # never a repository: grok would write .grok/ there
    (project / ".grok").mkdir(parents=True)
    launched = tmp_path / "server-launched"
    wrapper = tmp_path / "review-loop-mcp"  # notes that grok launched the server, then is it
    wrapper.write_text(f"#!/bin/sh\n: > '{launched}'\nexec {' '.join(SERVER)}\n")
    wrapper.chmod(0o755)
    transport = {"type": "stdio", "command": str(wrapper), "args": [], "env": server_env}
    servers = {"review-loop": {"name": "review-loop", "transport": transport}}
    (project / ".grok" / "settings.json").write_text(json.dumps({"mcpServers": servers}))
    model_api.script(Reply.answer("grok answered on its own"))
    env = cli_env("grok", model_api, cli_home)
    argv = [str(cli_bin("grok")), "-p", "Ask the review-loop consult tool: is the README right?"]
    proc = subprocess.Popen(
        argv,
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # hang-catching bounds, not speeds: a node CLI's start takes seconds on a loaded machine
        def turned() -> object:
            return model_api.turns("chat") or proc.poll() is not None

        wait_until("grok's model turn", turned, timeout=HOST_RUN_S)
        wait_until("grok launching the server", launched.exists, timeout=HOST_RUN_S)
        still_running = proc.poll() is None
    finally:
        kill_group(proc.pid)
        proc.wait()
    (turn,) = model_api.turns("chat")
    offered = [tool["function"]["name"] for tool in turn.body.get("tools", [])]
    assert offered, turn.body  # grok's own tools ...
    assert not [name for name in offered if "review" in name or "consult" in name], offered
    assert still_running  # it answered, and did not exit
    assert not (git_repo / ".grok").exists()
