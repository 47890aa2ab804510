"""End-to-end: a real reviewer asked to read secrets gets none; its own login still works.

Each real CLI answers ``review-loop consult`` against the fake model API, in a repository
nested in a superproject whose ``.env`` and ``.gemini/.env`` say
``GEMINI_MODEL=<canary>``. Its HOME holds canary secret stores (``~/.ssh/id_rsa``,
``~/.aws/credentials``, ``~/.netrc``) and every other product's login files;
``$REVIEW_LOOP_HOME/state-secret`` holds a canary key. The model, as a prompt injection
would, asks the CLI's own tools to read all of them:

- codex (``exec_command``) and the npm grok (``bash``, its key only in its own
  ``~/.grok/user-settings.json``) run ``cat`` on each; claude (``Read``) reads the state
  secret and the SSH key. No canary is in any request the model API received (the tool
  results go back to it), nor in the answer review-loop saved, and the consult answers:
  each CLI's own login (codex's ``config.toml``, grok's settings file, claude's key)
  worked;
- gemini, whose CLI walks up for dotenv files, sends no request for the canary model;
- codex isolated in a throw-away copy (the blind review's mode, the repository mounted
  read-only around it) reads none of them either, its own (bubblewrap) sandbox still runs
  the command, and a write into the repository fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import init_git_repo
from tests.e2e.test_consult_real import (  # noqa: F401  (peer_for is a fixture)
    Peer,
    PeerFor,
    assert_nothing_left,
    assert_only_handoff_added,
    peer_for,
)
from tests.fakes.model_api import FAKE_API_KEY, Reply

STATE_SECRET = "state-secret-canary-4b1d9e"
PARENT_MODEL = "parent-dotenv-model-7731"
HOME_SECRETS = {
    ".ssh/id_rsa": "ssh-key-canary-0a9f",
    ".aws/credentials": "aws-file-canary-77e1",
    ".netrc": "netrc-canary-5c2d",
    ".claude/.credentials.json": "claude-login-canary-e3f0",
    ".claude.json": "claude-json-canary-91aa",
    ".codex/auth.json": "codex-login-canary-2b7c",
    ".gemini/oauth_creds.json": "gemini-oauth-canary-6d44",
    ".grok/user-settings.json": "grok-login-canary-c0de",
}
OWN = {
    "claude": (".claude/.credentials.json", ".claude.json"),
    "codex": (".codex/auth.json",),
    "gemini": (".gemini/oauth_creds.json",),
    "grok": (".grok/user-settings.json",),
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def nested_peer(peer_for: PeerFor, product: str, tmp_path: Path) -> tuple[Peer, list[Path]]:  # noqa: F811
    """``product`` reviewing a repository under a superproject, with canaries everywhere;
    returns the peer and the canary files a reviewer must not read."""
    superproject = tmp_path / "super"
    for name in (".env", ".gemini/.env"):
        _write(superproject / name, f"GEMINI_MODEL={PARENT_MODEL}\n")
    peer = peer_for(product, repo=init_git_repo(superproject / "sub"))
    state = Path(peer.env["REVIEW_LOOP_HOME"])
    targets = [_write(state / "state-secret", STATE_SECRET), superproject / ".env"]
    for name, text in HOME_SECRETS.items():
        if name in OWN[product]:
            continue  # its own login stays as the test harness wrote it
        targets.append(_write(peer.home / name, text))
    return peer, targets


def canaries() -> list[str]:
    return [STATE_SECRET, PARENT_MODEL, *HOME_SECRETS.values()]


def assert_no_canary_left(peer: Peer, document: dict[str, Any]) -> None:
    for request in peer.api.requests:
        seen = f"{request.path} {request.query} {request.raw_body.decode('utf-8', 'replace')}"
        found = [canary for canary in canaries() if canary in seen]
        assert found == [], f"{peer.product} sent {found} to the model API"
    saved = Path(document["recordPath"]).read_text()
    assert [c for c in canaries() if c in saved] == [], saved[-2000:]
    assert [c for c in canaries() if c in str(document["text"])] == [], document["text"]


SHELL = {"codex": ("exec_command", "cmd"), "grok": ("bash", "command")}


@pytest.mark.parametrize("product", ["codex", "grok"])
def test_a_shell_tool_reads_no_secret(
    product: str,
    peer_for: PeerFor,  # noqa: F811
    tmp_path: Path,
) -> None:
    peer, targets = nested_peer(peer_for, product, tmp_path)
    if product == "grok":  # its key only in its own settings file, which must stay readable
        settings = {"apiKey": FAKE_API_KEY, "baseURL": peer.env["GROK_BASE_URL"]}
        _write(peer.home / ".grok" / "user-settings.json", json.dumps(settings))
        del peer.env["GROK_API_KEY"], peer.env["GROK_BASE_URL"]
    state_dir = Path(peer.env["REVIEW_LOOP_HOME"])
    command = f"echo TOOL-RAN; ls -a {state_dir} {peer.home}/.ssh; cat " + " ".join(
        str(path) for path in targets
    )
    tool, key = SHELL[product]
    peer.api.script(Reply.tool(tool, {key: command}), Reply("text", text=None))

    ran, document = peer.consult("Review README.md, please.")

    assert ran.returncode == 0 and document["ok"] is True, ran.describe()
    assert "TOOL-RAN" in str(document["text"]), document["text"]  # the tool did run
    assert_no_canary_left(peer, document)
    assert "unprotected" not in document
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


def test_claude_reads_no_secret_and_still_logs_in(
    peer_for: PeerFor,  # noqa: F811
    tmp_path: Path,
) -> None:
    peer, _ = nested_peer(peer_for, "claude", tmp_path)
    _write(peer.home / ".claude.json", json.dumps({"hasCompletedOnboarding": True}))
    state = Path(peer.env["REVIEW_LOOP_HOME"]) / "state-secret"
    peer.api.script(
        Reply.tool("Read", {"file_path": str(state)}),
        Reply.tool("Read", {"file_path": str(peer.home / ".ssh" / "id_rsa")}),
        Reply("text", text=None),
    )

    ran, document = peer.consult("Review README.md, please.")

    assert ran.returncode == 0 and document["ok"] is True, ran.describe()
    assert len(peer.api.requests) >= 3  # both reads went back to the model
    assert_no_canary_left(peer, document)
    assert_nothing_left(peer)


def test_gemini_loads_no_dotenv_above_the_repository(
    peer_for: PeerFor,  # noqa: F811
    tmp_path: Path,
) -> None:
    peer, _ = nested_peer(peer_for, "gemini", tmp_path)
    peer.api.script("reviewed")

    ran, document = peer.consult("Review README.md, please.")

    assert ran.returncode == 0 and document["ok"] is True, ran.describe()
    paths = [request.path for request in peer.api.requests]
    assert paths and not any(PARENT_MODEL in path for path in paths), paths
    assert_no_canary_left(peer, document)
    assert_nothing_left(peer)


@pytest.mark.anyio
async def test_codex_isolated_in_its_copy_reads_no_secret_and_cannot_write(
    peer_for: PeerFor,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The blind review's mode (PeerRequest.isolate): a read-only CLI in a throw-away copy,
    # the repository mounted read-only, the same covers; codex's own sandbox still runs.
    from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
    from review_loop.prefs import Prefs

    peer, targets = nested_peer(peer_for, "codex", tmp_path)
    for name, value in peer.env.items():
        monkeypatch.setenv(name, value)
    command = f"echo TOOL-RAN; touch {peer.repo}/pwned; cat " + " ".join(map(str, targets))
    peer.api.script(Reply.tool("exec_command", {"cmd": command}), Reply("text", text=None))
    request = PeerRequest(
        peer="codex",
        prompt="Review README.md, please.",
        record_dir=peer.repo / ".review-handoff" / "runtime" / "blind",
        isolate=True,
    )
    prefs = Prefs.validate({"timeoutMs": 120_000})
    async with open_dispatcher(repo=peer.repo, prefs=prefs, progress=lambda _: None) as d:
        delivery = await d.consult(request)

    assert delivery.reply is not None, delivery
    assert "TOOL-RAN" in delivery.reply.text, delivery.reply.text
    assert not (peer.repo / "pwned").exists()
    assert_no_canary_left(peer, {"recordPath": delivery.recordPath, "text": delivery.reply.text})
    assert_nothing_left(peer)
