"""End-to-end: ``review-loop consult`` / ``sessions`` with the real opencode and Qwen Code.

The real ``opencode`` 1.18.33 and ``qwen`` 0.24.4 from npm (``scripts/install-clis``), each
talking OpenAI-compatible chat completions (streamed) to the fake model API, configured in
the throw-away HOME only (``tests.fakes.model_api.prepare_home``). For each:

- ``consult`` returns the scripted answer, a session id, tokens; ``sessions`` lists the
  session with its resume commands, the read-only ones included (qwen's also from its own
  store); ``consult --resume`` reaches the same session (the model sees the first turn);
- a scripted HTTP 401 of the first request is ``auth_failed``, ``NOT_SUBMITTED`` (the run
  proves nothing was processed; ``tests/e2e/test_refusals_new_clis_real.py``), exit 2, the
  session id kept;
- a model that asks for a write or shell tool leaves the repository, ``.git/`` included,
  byte for byte unchanged, even when the user's own settings of that CLI allow the tool
  (opencode: a per-agent ``allow`` in its user config; qwen: ``permissions.allow`` and
  ``yolo`` in its user settings).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import run
from tests.e2e.test_consult_real import (  # noqa: F401  (peer_for is a fixture)
    Peer,
    PeerFor,
    assert_nothing_left,
    assert_only_handoff_added,
    peer_for,
    said_by,
)
from tests.fakes.model_api import Reply

NEW_CLIS = ("opencode", "qwen")
pytestmark = pytest.mark.timeout(900)
"""opencode alone takes a minute to start on a loaded machine (a 185 MB Bun executable);
the default per-test bound (120 s) is for the fake CLIs."""


OURS = Path(".git/info/exclude")
"""Where review-loop itself ignores its ``.review-handoff/`` (not the reviewer's write)."""


def digest(repo: Path) -> dict[str, str]:
    """Every file of ``repo`` but review-loop's ``.review-handoff/``, ``.git/`` included."""
    found = {}
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo)
        if relative.parts[0] == ".review-handoff" or not path.is_file() or path.is_symlink():
            continue
        if relative == OURS:
            continue
        found[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.mark.parametrize("product", NEW_CLIS)
def test_consult_lists_and_resumes_the_session(product: str, peer_for: PeerFor) -> None:  # noqa: F811
    peer = peer_for(product)
    api, repo = peer.api, peer.repo
    api.script(f"first answer from {product}", f"second answer from {product}")

    ran, first = peer.consult("Is README.md clear enough? (first question)")

    assert ran.returncode == 0, ran.describe()
    assert (first["ok"], first["product"]) == (True, product), first
    assert first["text"] == f"first answer from {product}"
    sid = first["sessionId"]
    assert isinstance(sid, str) and sid, first
    assert first["usage"]["input_tokens"] == 10 and first["usage"]["output_tokens"] == 5
    (turn,) = api.turns()
    assert "(first question)" in turn.last_user_text

    (entry,) = peer.sessions()
    assert (entry["product"], entry["sessionId"], entry["cwd"]) == (product, sid, str(repo))
    assert entry["source"] == "review-loop", entry
    assert sid in entry["resume"]["headless"] and sid in entry["resume"]["interactive"]
    read_only = entry["resumeReadOnly"]
    assert read_only["unavailable"] is None and sid in read_only["headless"], read_only
    if product == "qwen":  # its own store, read by the adapter
        runtime = repo / ".review-handoff" / "runtime"
        aside = repo.parent / "runtime-aside"
        runtime.rename(aside)
        try:
            (stored,) = peer.sessions()
        finally:
            aside.rename(runtime)
        assert (stored["sessionId"], stored["source"]) == (sid, "cli-store"), stored

    ran, second = peer.consult("And the second point? (second question)", "--resume", sid)

    assert ran.returncode == 0, ran.describe()
    assert (second["ok"], second["text"]) == (True, f"second answer from {product}"), second
    assert second["sessionId"] == sid and "degraded" not in second, second
    _, resumed = api.turns()
    assert said_by(resumed.messages, "user", "(first question)"), resumed.messages
    assert said_by(resumed.messages, "assistant", f"first answer from {product}")
    assert_nothing_left(peer)
    assert_only_handoff_added(repo)


def test_opencode_read_only_resume_command_keeps_the_rules(peer_for: PeerFor) -> None:  # noqa: F811
    # The printed read-only headless command, run as a shell would split it: the resumed
    # session offers only the reading tools, although the user's own config allows bash.
    peer = peer_for("opencode")
    allow_every_tool(peer)
    peer.api.script("first", "resumed")
    ran, first = peer.consult("first question")
    assert ran.returncode == 0, ran.describe()
    command = first["resumeReadOnly"]["headless"].replace('"<prompt>"', "'go on'")
    words = shlex.split(command)
    env = dict(peer.env)
    while "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    words[0] = str(Path(peer.env["PATH"].split(":")[0]) / "opencode")

    resumed = run([*words, "--format", "json"], env=env, cwd=peer.repo)

    assert resumed.returncode == 0, resumed.describe()
    turn = peer.api.turns()[-1]
    offered = sorted(tool["function"]["name"] for tool in turn.body.get("tools") or [])
    assert offered and set(offered) <= {"glob", "grep", "read", "list"}, offered
    assert said_by(turn.messages, "user", "first question")


@pytest.mark.parametrize("product", NEW_CLIS)
def test_http_401_is_auth_failed_and_not_submitted(
    product: str,
    peer_for: PeerFor,  # noqa: F811
) -> None:
    peer = peer_for(product)
    peer.api.default = Reply.error(401, "fake 401 bad key")

    ran, doc = peer.consult("anything")

    assert ran.returncode == 2, ran.describe()
    assert (doc["ok"], doc["delivery"], doc["code"]) == (False, "NOT_SUBMITTED", "auth_failed"), doc
    assert "fake 401 bad key" in doc["error"], doc
    assert isinstance(doc["sessionId"], str) and doc["sessionId"], doc
    assert peer.api.turns() and all(t.reply == "error 401" for t in peer.api.turns())
    assert_nothing_left(peer)


def allow_every_tool(peer: Peer) -> None:
    """The user's own settings of the CLI allow writing tools, as a user might."""
    if peer.product == "opencode":
        path = peer.home / ".config" / "opencode" / "opencode.json"
        config = json.loads(path.read_text())
        everything = {"bash": "allow", "edit": "allow", "write": "allow", "*": "allow"}
        config["permission"] = everything
        config["agent"] = {"build": {"permission": everything}}
    else:
        path = peer.home / ".qwen" / "settings.json"
        config = json.loads(path.read_text())
        config["permissions"] = {"allow": ["write_file", "run_shell_command", "edit"]}
        config["tools"] = {"approvalMode": "yolo"}
    path.write_text(json.dumps(config))


def write_attempts() -> list[Any]:
    def case(product: str, tool: str, args: Callable[[Path], Any]) -> Any:
        return pytest.param(product, tool, args, id=f"{product}-{tool}")

    return [
        case("opencode", "bash", lambda t: {"command": f"touch {t}", "description": "make it"}),
        case("opencode", "write", lambda t: {"filePath": str(t), "content": "pwned\n"}),
        case("opencode", "task", lambda t: {"description": "x", "prompt": f"touch {t}"}),
        case("qwen", "write_file", lambda t: {"file_path": str(t), "content": "pwned\n"}),
        case("qwen", "run_shell_command", lambda t: {"command": f"touch {t}"}),
        case("qwen", "enter_worktree", lambda t: {"name": "evil"}),
        case("qwen", "tool_call", lambda t: {"name": "write_file", "arguments": {"file_path": f"{t}"}}),  # noqa: E501
    ]  # fmt: skip


@pytest.mark.parametrize(("product", "tool", "arguments"), write_attempts())
def test_a_write_attempt_leaves_the_repo_and_git_unchanged(
    product: str,
    tool: str,
    arguments: Callable[[Path], dict[str, Any]],
    peer_for: PeerFor,  # noqa: F811
) -> None:
    peer = peer_for(product)
    allow_every_tool(peer)
    target = peer.repo / "pwned.txt"
    peer.api.script(Reply.tool_then(tool, arguments(target), then=None))  # then: quote result
    before = digest(peer.repo)

    ran, doc = peer.consult("Please create pwned.txt")

    assert ran.returncode == 0, ran.describe()
    assert [t.reply for t in peer.api.turns()] == ["tool", "text"], ran.describe()
    assert doc["ok"] is True and doc["text"].startswith("TOOL RESULT: "), doc
    offered = {t["function"]["name"] for t in peer.api.turns()[0].body.get("tools") or []}
    assert tool not in offered, offered  # the tool was not even offered
    assert not target.exists(), f"{tool} wrote the file; the model was told: {doc['text']}"
    assert digest(peer.repo) == before
    assert_only_handoff_added(peer.repo)


READ_TOOL = {
    "opencode": ("read", lambda path: {"filePath": str(path)}),
    "qwen": ("read_file", lambda path: {"file_path": str(path)}),
}


@pytest.mark.parametrize("product", NEW_CLIS)
def test_a_read_of_a_secret_store_finds_nothing(product: str, peer_for: PeerFor) -> None:  # noqa: F811
    # The sandbox hides the user's secret stores and review-loop's state from every reviewer
    # (the env allow-list keeps the caller's secrets out of its environment): the model asks
    # for them, then for the repository's README, which it gets.
    peer = peer_for(product)
    ssh_key = peer.home / ".ssh" / "id_rsa"
    ssh_key.parent.mkdir()
    ssh_key.write_text("SSH-KEY-CANARY\n")
    state_secret = Path(peer.env["REVIEW_LOOP_HOME"]) / "state-secret"
    state_secret.parent.mkdir(parents=True, exist_ok=True)
    state_secret.write_text("STATE-SECRET-CANARY\n")
    tool, arguments = READ_TOOL[product]
    peer.api.script(
        Reply.tool(tool, arguments(ssh_key)),
        Reply.tool(tool, arguments(state_secret)),
        Reply.tool(tool, arguments(peer.repo / "README.md")),
        Reply("text", text=None),
    )

    ran, doc = peer.consult("Read those files")

    assert ran.returncode == 0 and doc["ok"] is True, ran.describe()
    assert [t.reply for t in peer.api.turns()] == ["tool", "tool", "tool", "text"]
    assert "hello from the e2e repo" in doc["text"], doc["text"]  # the README was read
    for request in peer.api.requests:
        body = request.raw_body.decode("utf-8", "replace")
        assert "SSH-KEY-CANARY" not in body and "STATE-SECRET-CANARY" not in body
    assert_nothing_left(peer)
