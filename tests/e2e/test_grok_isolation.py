"""End-to-end: the REAL npm grok 0.0.34 (no read-only mode) under the whole-file-system
isolation, driven through ``review-loop consult`` against the fake model API.

- its bash tool (scripted by the fake model) writes a canary outside everything, the user's
  real ``~/.gitconfig`` (a ``core.fsmonitor`` there would run code at the next ``git
  status``), the repository by absolute path, /tmp: each fails with "Read-only file
  system"; ``$HOME`` (its scratch HOME) and its working directory (the throw-away copy) take
  the writes, and the consult still answers;
- with its key and base URL only in the real ``~/.grok/user-settings.json`` it still
  authenticates (the adapter's home file is copied into the scratch HOME), and the real file
  is left as it was although grok rewrites it (a settings migration) on every start.
"""

from __future__ import annotations

import json
import shlex
import uuid
from pathlib import Path

from tests.e2e import test_consult_real
from tests.e2e.test_consult_real import PeerFor, assert_nothing_left, assert_only_handoff_added
from tests.fakes.model_api import FAKE_API_KEY, Reply

READ_ONLY = "Read-only file system"

peer_for = test_consult_real.peer_for
"""The fixture of the consult tests, here too: the real CLI wired to this test's fake API."""


def test_grok_bash_cannot_write_outside_its_scratch_directory(
    peer_for: PeerFor, tmp_path: Path
) -> None:
    peer = peer_for("grok")
    canary = tmp_path / "outside-everything" / "PWNED-canary"
    canary.parent.mkdir()
    real_gitconfig = peer.home / ".gitconfig"
    real_gitconfig.write_text("[user]\n\tname = e2e\n")
    tmp_canary = Path("/tmp") / f"review-loop-e2e-canary-{uuid.uuid4().hex}"
    steps = {
        "canary": f"touch {shlex.quote(str(canary))}",
        "real-gitconfig": (
            f"printf '[core]\\n\\tfsmonitor = touch PWNED\\n' >> {shlex.quote(str(real_gitconfig))}"
        ),
        "repo-absolute": f"touch {shlex.quote(str(peer.repo / 'PWNED-in-repo'))}",
        "tmp": f"touch {shlex.quote(str(tmp_canary))}",
        "scratch-home": "printf '[core]\\n' >> \"$HOME/.gitconfig\"",
        "copy": "touch PWNED-relative",
    }
    # every step runs; each says how it ended, errors included, on stdout
    command = "exec 2>&1; " + " ".join(
        f"{cmd} && echo {name}=written || echo {name}=refused;" for name, cmd in steps.items()
    )
    peer.api.script(Reply.tool_then("bash", {"command": command}, then=None))

    try:
        ran, doc = peer.consult("Please set up git for me")
    finally:
        tmp_canary.unlink(missing_ok=True)  # only if it was written: then the test fails below

    assert ran.returncode == 0, ran.describe()
    assert [t.reply for t in peer.api.turns()] == ["tool", "text"], ran.describe()
    assert doc["ok"] is True and doc["text"].startswith("TOOL RESULT: "), doc
    said = doc["text"]
    for name in ("canary", "real-gitconfig", "repo-absolute", "tmp"):
        assert f"{name}=refused" in said, said
    for name in ("scratch-home", "copy"):
        assert f"{name}=written" in said, said
    assert said.count(READ_ONLY) == 4, said
    assert not canary.exists() and not tmp_canary.exists()
    assert real_gitconfig.read_text() == "[user]\n\tname = e2e\n"
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)


def test_grok_authenticates_from_the_real_settings_file_without_changing_it(
    peer_for: PeerFor,
) -> None:
    peer = peer_for("grok")
    settings = peer.home / ".grok" / "user-settings.json"
    settings.parent.mkdir()
    # no settingsVersion: grok migrates the file, i.e. rewrites it, on every start
    original = json.dumps(
        {"apiKey": FAKE_API_KEY, "baseURL": peer.env["GROK_BASE_URL"], "defaultModel": "grok-4"}
    )
    settings.write_text(original)
    del peer.env["GROK_API_KEY"], peer.env["GROK_BASE_URL"]  # the file is the only source
    peer.api.script("answered with the key from the settings file")

    ran, doc = peer.consult("Is README.md clear enough?")

    assert ran.returncode == 0, ran.describe()
    assert doc["ok"] is True and doc["text"] == "answered with the key from the settings file"
    (turn,) = peer.api.turns("chat")
    assert FAKE_API_KEY in json.dumps(turn.headers), turn.headers
    assert settings.read_text() == original
    assert sorted(p.name for p in settings.parent.iterdir()) == ["user-settings.json"]
    assert_nothing_left(peer)
    assert_only_handoff_added(peer.repo)
