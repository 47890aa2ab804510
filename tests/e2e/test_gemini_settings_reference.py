"""End-to-end: a variable the user's own gemini settings reference reaches the real gemini.

Gemini resolves ``$NAME`` / ``${NAME}`` in every string of its settings files when it
loads them. A throw-away HOME whose ``~/.gemini/settings.json`` takes the model name from
``${MY_GEMINI_MODEL}`` (as a user keeps an API key or a header there): review-loop reads
that file and passes the variable, so the REAL gemini's request to the fake model API
names that model. The repository's own ``.gemini/settings.json`` is hidden from gemini
anyway, and is never read for this.
"""

from __future__ import annotations

import json

from tests.e2e.test_consult_real import PeerFor, peer_for

__all__ = ["peer_for"]  # the fixture, shared with test_consult_real

MODEL = "gemini-2.5-flash-lite"


def test_a_settings_reference_is_resolved_by_gemini(peer_for: PeerFor) -> None:
    peer = peer_for("gemini")
    settings_path = peer.home / ".gemini" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["model"] = {"name": "${MY_GEMINI_MODEL}"}
    settings_path.write_text(json.dumps(settings))
    peer.env["MY_GEMINI_MODEL"] = MODEL
    peer.api.script("answer from the model the user's settings name")

    ran, doc = peer.consult("Is README.md clear?")

    assert ran.returncode == 0, ran.describe()
    assert doc["text"] == "answer from the model the user's settings name", doc
    (turn,) = peer.api.turns()
    assert f"/models/{MODEL}:" in turn.path, turn.path
