"""Contract tests of the one prefs reader: what a file may say, and how a refusal is worded.

Every way to make prefs (the file through ``load_prefs``, ``Prefs.validate``, the
constructor) goes through the same checks (``review_loop/prefs/document.py``); ``prefs
show`` prints the checked JSON form without building a ``Prefs``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from review_loop.agents.errors import PrefsError
from review_loop.prefs import PeerCommand, Prefs, load_prefs, save_prefs
from review_loop.prefs.document import KEYS, checked, defaults
from review_loop.prefs.store import load_prefs_document

KNOWN = ("claude", "codex", "gemini", "grok")
ALIAS = {"product": "codex", "command": ["codex", "--profile", "b"]}
VALID: list[dict[str, Any]] = [
    {},
    {"order": ["codex", "claude"]},
    {"order": ["grok"], "skipHost": True},
    {"skipHost": False},
    {"peerCommands": {"codex002": ALIAS, "c.c-1_2": {"product": "claude", "command": ["c"]}}},
    {"timeoutMs": 1_000, "graceMs": 0, "livenessMs": 1},
    {"timeoutMs": 86_400_000, "graceMs": 86_400_000, "livenessMs": 86_400_000},
    {"envPassthrough": ["AWS_PROFILE", "_X1"], "skillDirs": ["/opt/skills", "~/s", "~"]},
    {"allowUnprotected": True},
    # keys in another order than the fields': the JSON form keeps the fields' order
    {"skillDirs": [], "livenessMs": 5, "order": ["gemini", "codex"], "graceMs": 7},
]
# each refused, the field naming the key (and below it, where the fault is)
REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"colour": 1}, "colour"),
    ({"order": []}, "order"),
    ({"order": ["claude", "claude"]}, "order"),
    ({"order": ["claude", "bard"]}, "order[1]"),
    ({"order": "claude"}, "order"),
    ({"order": ["claude", 3]}, "order.1"),
    ({"skipHost": 3}, "skipHost"),
    ({"skipHost": "maybe"}, "skipHost"),
    ({"timeoutMs": 999}, "timeoutMs"),
    ({"timeoutMs": 86_400_001}, "timeoutMs"),
    ({"timeoutMs": True}, "timeoutMs"),
    ({"timeoutMs": 1.5}, "timeoutMs"),
    ({"timeoutMs": "soon"}, "timeoutMs"),
    ({"graceMs": -1}, "graceMs"),
    ({"graceMs": 10**25}, "graceMs"),
    ({"livenessMs": 0}, "livenessMs"),
    ({"envPassthrough": ["A-B"]}, "envPassthrough"),
    ({"envPassthrough": ["A", "A"]}, "envPassthrough"),
    ({"envPassthrough": ["1A"]}, "envPassthrough"),
    ({"skillDirs": ["relative/dir"]}, "skillDirs"),
    ({"skillDirs": ["~user/dir"]}, "skillDirs"),
    ({"skillDirs": ["/a\0b"]}, "skillDirs"),
    ({"allowUnprotected": "sometimes"}, "allowUnprotected"),
    ({"peerCommands": {"codex": ALIAS}}, "peerCommands.codex"),
    ({"peerCommands": {"-bad": ALIAS}}, "peerCommands"),
    ({"peerCommands": {"x" * 65: ALIAS}}, "peerCommands"),
    ({"peerCommands": {"b": {"product": "bard", "command": ["b"]}}}, "peerCommands.b.product"),
    ({"peerCommands": {"b": {"product": "codex", "command": []}}}, "peerCommands.b.command"),
    ({"peerCommands": {"b": {"product": "codex", "command": [""]}}}, "peerCommands.b.command"),
    ({"peerCommands": {"b": {"product": "codex", "command": [7]}}}, "peerCommands.b.command.0"),
    ({"peerCommands": {"b": {"product": "codex"}}}, "peerCommands.b.command"),
    ({"peerCommands": {"b": {"product": 7, "command": ["c"]}}}, "peerCommands.b.product"),
    (
        {"peerCommands": {"b": {"product": "codex", "command": ["c"], "env": {}}}},
        "peerCommands.b.env",
    ),
    ({"peerCommands": {"b": ["codex", "c"]}}, "peerCommands.b"),
    ({"peerCommands": []}, "peerCommands"),
]


@pytest.mark.parametrize("data", VALID, ids=repr)
def test_contract_valid_prefs_read_as_their_json_form_in_the_fields_order(
    data: dict[str, Any],
) -> None:
    document = checked(data, source="test", known=KNOWN)
    assert list(document) == list(KEYS)
    assert document == defaults() | json.loads(json.dumps(data))
    prefs = Prefs.validate(data, known=KNOWN)
    assert json.dumps(prefs.document()) == json.dumps(document)  # same keys, order, values
    assert Prefs.from_document(document) == prefs


def test_contract_the_defaults_are_the_empty_file() -> None:
    assert json.dumps(Prefs().document()) == json.dumps(defaults())
    assert Prefs.validate({}) == Prefs()


@pytest.mark.parametrize(("data", "where"), REFUSED, ids=repr)
def test_contract_a_refusal_names_the_key_what_was_wrong_and_what_is_accepted(
    data: dict[str, Any], where: str
) -> None:
    with pytest.raises(PrefsError) as caught:
        checked(data, source="test", known=KNOWN)
    assert caught.value.field == f"test: {where}"
    assert caught.value.problem and caught.value.accepted
    with pytest.raises(PrefsError):
        Prefs.validate(data, known=KNOWN)


def test_contract_refusals_word_exactly() -> None:
    def refusal(data: dict[str, Any]) -> str:
        with pytest.raises(PrefsError) as caught:
            checked(data, source="f.toml", known=KNOWN)
        return str(caught.value)

    assert refusal({"colour": 1}) == (
        "f.toml: colour: unknown key (accepted: order, skipHost, peerCommands, timeoutMs, "
        "graceMs, livenessMs, stallMs, envPassthrough, skillDirs, allowUnprotected)"
    )
    assert refusal({"timeoutMs": 0}) == (
        "f.toml: timeoutMs: 0 is out of range (accepted: an integer of milliseconds from 1000"
        " (1 s) to 86400000 (1 day))"
    )
    assert refusal({"order": ["bard"]}) == (
        "f.toml: order[0]: unknown product 'bard' (accepted: claude, codex, gemini, grok)"
    )
    assert refusal({"peerCommands": {"codex": ALIAS}}) == (
        "f.toml: peerCommands.codex: an alias must not shadow a product name"
        " (accepted: a new name such as codex002)"
    )


@pytest.mark.parametrize(
    ("data", "key", "value"),
    [
        ({"skipHost": 1}, "skipHost", True),
        ({"skipHost": "true"}, "skipHost", True),
        ({"allowUnprotected": "no"}, "allowUnprotected", False),
        ({"timeoutMs": "600000"}, "timeoutMs", 600_000),
        ({"timeoutMs": 1.5e6}, "timeoutMs", 1_500_000),
    ],
)
def test_contract_a_hand_edited_file_s_spellings_are_read_as_before(
    data: dict[str, Any], key: str, value: object
) -> None:
    document = checked(data, source="test", known=KNOWN)
    assert document[key] == value and type(document[key]) is type(value)


def test_contract_the_constructor_checks_as_the_reader_does() -> None:
    for bad in ({"order": ()}, {"graceMs": -1}, {"envPassthrough": ("A-B",)}):
        with pytest.raises(PrefsError, match=f"Prefs: {next(iter(bad))}"):
            Prefs(**bad)
    alias = PeerCommand(product="codex", command=("c",))
    assert Prefs.validate({"peerCommands": {"c2": alias}}).peerCommands == {"c2": alias}


def test_contract_prefs_are_frozen_and_with_alias_leaves_them_as_they_were() -> None:
    prefs = Prefs.validate(VALID[4])
    peer = PeerCommand(product="grok", command=("grok002",))
    added = prefs.with_alias("grok002", peer)
    assert added.peerCommands["grok002"] is peer
    assert "grok002" not in prefs.peerCommands
    with pytest.raises(dataclasses.FrozenInstanceError):
        prefs.order = ("codex",)  # type: ignore[misc]


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "prefs.toml"
    path.write_text(tomli_w.dumps(data))
    return path


@pytest.mark.parametrize("data", VALID, ids=repr)
def test_contract_a_saved_file_loads_as_it_was(tmp_path: Path, data: dict[str, Any]) -> None:
    prefs = Prefs.validate(data, known=KNOWN)
    path = save_prefs(prefs, path=tmp_path / "prefs.toml")
    assert load_prefs(KNOWN, path=path, env={}) == prefs
    assert load_prefs_document(KNOWN, path=path, env={}) == prefs.document()


@pytest.mark.parametrize(
    "env", [{}, {"REVIEW_LOOP_TIMEOUT_MS": " 7000 "}, {"REVIEW_LOOP_TIMEOUT_MS": ""}]
)
def test_contract_the_env_override_replaces_only_the_file_s_deadline(
    tmp_path: Path, env: dict[str, str]
) -> None:
    path = write(tmp_path, {"timeoutMs": 5_000, "graceMs": 250})
    prefs = load_prefs(KNOWN, path=path, env=env)
    assert prefs.timeoutMs == (7_000 if env.get("REVIEW_LOOP_TIMEOUT_MS") else 5_000)
    assert prefs.graceMs == 250
    assert load_prefs_document(KNOWN, path=path, env=env) == prefs.document()


@pytest.mark.parametrize(
    ("text", "env", "needle"),
    [
        (b"order = ['\xff']", {}, "not valid TOML"),
        ("", {"REVIEW_LOOP_TIMEOUT_MS": "0"}, "REVIEW_LOOP_TIMEOUT_MS: '0' is not a positive"),
        ("graceMs = 7", {"REVIEW_LOOP_TIMEOUT_MS": "soon"}, "REVIEW_LOOP_TIMEOUT_MS"),
        ("graceMs = -1", {"REVIEW_LOOP_TIMEOUT_MS": "soon"}, "graceMs"),  # the file's first
    ],
)
def test_contract_load_refusals(
    tmp_path: Path, text: str | bytes, env: dict[str, str], needle: str
) -> None:
    path = tmp_path / "prefs.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    for load in (load_prefs, load_prefs_document):
        with pytest.raises(PrefsError) as caught:
            load(KNOWN, path=path, env=env)
        assert needle in str(caught.value)


def test_contract_a_refused_file_says_how_to_start_over(tmp_path: Path) -> None:
    path = write(tmp_path, {"timeoutMs": 0})
    with pytest.raises(PrefsError) as caught:
        load_prefs(KNOWN, path=path, env={})
    assert caught.value.field == f"{path}: timeoutMs"
    assert str(caught.value.accepted).endswith("review-loop prefs reset")
