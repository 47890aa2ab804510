"""End-to-end: the real claude, codex and gemini accept the read-only resume command ``sessions``
prints, and it continues the consulted session with the read-only flags in force.

``review-loop consult`` (the real CLI under it, the fake model API behind it), then
``review-loop sessions``; the printed ``resumeReadOnly.headless``, split as a shell would and
with ``"<prompt>"`` replaced, is run as is in the session's ``cwd``: it must exit 0, answer
from the same conversation (the model sees the first turn again), and the request it sends
must show the read-only settings (claude: no writing tool offered; codex: the read-only
sandbox in the turn's context, although this user's own codex config is workspace-write;
gemini: plan mode, so no ``enter_plan_mode`` and no writing tool). Run with the bare
``resume.headless`` instead, each check fails (checked by hand).
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.e2e.helpers import run
from tests.e2e.test_consult_real import (
    PeerFor,
    assert_nothing_left,
    assert_only_handoff_added,
    assert_uuid,
    peer_for,
    said_by,
)

__all__ = ["peer_for"]

WRITABLE_CODEX_CONFIG = 'sandbox_mode = "workspace-write"\napproval_policy = "on-request"\n'
GEMINI_WRITING_TOOLS = {"write_file", "replace", "run_shell_command", "save_memory"}
WRITING_TOOLS = {"Write", "Edit", "NotebookEdit", "Bash", "MultiEdit"}


def offered_tools(body: object) -> set[str]:
    """The tool names a request offers the model (Anthropic ``tools``, Gemini declarations)."""
    tools = body.get("tools", []) if isinstance(body, dict) else []
    names = {str(t["name"]) for t in tools if isinstance(t, dict) and "name" in t}
    for group in tools:
        for declaration in group.get("functionDeclarations", []) if isinstance(group, dict) else []:
            names.add(str(declaration.get("name")))
    return names


def assert_read_only_turn(product: str, body: object) -> None:
    """What the resumed request shows of the read-only flags (each fails for the bare one)."""
    if product == "claude":  # --tools / --disallowedTools: nothing that writes is offered
        tools = offered_tools(body)
        assert tools and not tools & WRITING_TOOLS, tools
    elif product == "codex":
        # codex restates its permissions when they change: the latest statement rules.
        modes = re.findall(r"`sandbox_mode` is `([a-z-]+)`", json.dumps(body))
        assert modes and modes[-1] == "read-only", modes
    else:  # gemini: already in plan mode (the bare command offers enter_plan_mode)
        tools = offered_tools(body)
        assert tools and not tools & (GEMINI_WRITING_TOOLS | {"enter_plan_mode"}), tools


@pytest.mark.parametrize("product", ["claude", "codex", "gemini"])
def test_printed_read_only_resume_command_runs_and_keeps_the_flags(
    product: str, peer_for: PeerFor
) -> None:
    peer = peer_for(product)
    if product == "codex":  # a user whose own codex config is writable
        config = peer.home / ".codex" / "config.toml"
        config.write_text(WRITABLE_CODEX_CONFIG + config.read_text())
    peer.api.script(f"first answer from {product}", f"resumed answer from {product}")
    ran, first = peer.consult("Is README.md clear enough? (first question)")
    assert ran.returncode == 0, ran.describe()
    sid = assert_uuid(first["sessionId"])
    (entry,) = peer.sessions()
    assert entry["resumeReadOnly"] == first["resumeReadOnly"]
    command = entry["resumeReadOnly"]["headless"]
    argv = shlex.split(command)
    assert argv[-1] == "<prompt>" and sid in argv
    argv[-1] = "(resumed question)"

    resumed_run = run(argv, env=peer.env, cwd=peer.repo, timeout=180)

    assert resumed_run.returncode == 0, resumed_run.describe()
    assert f"resumed answer from {product}" in resumed_run.stdout, resumed_run.describe()
    _, resumed = peer.api.turns()
    assert said_by(resumed.messages, "user", "(first question)"), resumed.messages
    assert "(resumed question)" in resumed.last_user_text
    assert_read_only_turn(product, resumed.body)
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)
