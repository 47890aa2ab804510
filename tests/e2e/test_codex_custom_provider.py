"""End-to-end: a codex user's own custom provider keeps working through review-loop.

The REAL codex from npm, the fake model API on 127.0.0.1, a throw-away HOME whose
``~/.codex/config.toml`` names a custom provider reading its key from ``MY_PROVIDER_KEY``
(``env_key``, as Azure, OpenRouter or a local server are set up). Nothing passes that
name by hand (no ``envPassthrough``, no ``REVIEW_LOOP_ENV_PASSTHROUGH`` entry for it):
review-loop reads the user's own configuration. With the variable set, the consult
answers and the model API sees the key; with it unset, the refusal names the variable and
the prefs command that passes it, after one attempt and no request to the model.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_consult_real import Peer, PeerFor, assert_only_handoff_added, peer_for
from tests.fakes.model_api import FAKE_API_KEY

__all__ = ["peer_for"]  # the fixture, shared with test_consult_real

VARIABLE = "MY_PROVIDER_KEY"


def custom_provider(peer_for: PeerFor) -> Peer:
    """Real codex whose user configuration reads the key from :data:`VARIABLE`."""
    peer = peer_for("codex")
    config = peer.home / ".codex" / "config.toml"
    text = config.read_text()
    assert 'env_key = "FAKE_API_KEY"' in text
    config.write_text(text.replace('env_key = "FAKE_API_KEY"', f'env_key = "{VARIABLE}"'))
    peer.env.pop("FAKE_API_KEY")
    listed = peer.env["REVIEW_LOOP_ENV_PASSTHROUGH"].split()
    peer.env["REVIEW_LOOP_ENV_PASSTHROUGH"] = " ".join(n for n in listed if n != "FAKE_API_KEY")
    return peer


def test_the_custom_providers_key_reaches_codex(peer_for: PeerFor) -> None:
    peer = custom_provider(peer_for)
    peer.env[VARIABLE] = FAKE_API_KEY
    peer.api.script("answer through the user's own provider")

    ran, doc = peer.consult("Is README.md clear?")

    assert ran.returncode == 0, ran.describe()
    assert (doc["ok"], doc["text"]) == (True, "answer through the user's own provider"), doc
    (turn,) = peer.api.turns()
    assert turn.headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert_only_handoff_added(peer.repo)


def test_an_unset_key_is_refused_naming_it_once(peer_for: PeerFor) -> None:
    peer = custom_provider(peer_for)
    peer.env.pop(VARIABLE, None)
    peer.api.script("never asked")

    ran, doc = peer.consult("Is README.md clear?")

    assert ran.returncode == 2, ran.describe()
    assert (doc["ok"], doc["delivery"]) == (False, "NOT_SUBMITTED"), doc
    assert doc["code"] == "missing credentials", doc
    assert VARIABLE in doc["error"], doc
    assert f"review-loop prefs set envPassthrough {VARIABLE}" in doc["hint"], doc
    assert len(doc["attempts"]) == 1, doc  # not retried
    assert peer.api.requests == []  # nothing reached the model
    assert re.search(rf"Missing environment variable: .{VARIABLE}.", doc["error"]), doc  # codex's


@pytest.mark.parametrize("where", ["CODEX_HOME"])
def test_codex_home_elsewhere_is_read_too(peer_for: PeerFor, tmp_path: Path, where: str) -> None:
    peer = custom_provider(peer_for)
    moved = tmp_path / "codex-home"
    (peer.home / ".codex").rename(moved)
    peer.env[where] = str(moved)
    peer.env[VARIABLE] = FAKE_API_KEY
    peer.api.script("answer from a moved CODEX_HOME")

    ran, doc = peer.consult("Is README.md clear?")

    assert ran.returncode == 0, ran.describe()
    assert doc["text"] == "answer from a moved CODEX_HOME", doc
