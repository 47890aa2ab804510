"""Contract tests of the plain prefs path (``prefs show`` without pydantic).

The plain path may only be stricter than the pydantic model: whatever it accepts, the model
accepts with the same JSON form (same keys, same order, same values); whatever the model
refuses, the plain path refuses too, so the model words the error. And it does accept the
ordinary files, or it would save nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from review_loop.agents.errors import PrefsError
from review_loop.prefs import Prefs, load_prefs
from review_loop.prefs.plain import defaults, plain_prefs
from review_loop.prefs.store import load_prefs_document, parse_prefs

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
    # keys in another order than the model's fields: the JSON form keeps the model's order
    {"skillDirs": [], "livenessMs": 5, "order": ["gemini", "codex"], "graceMs": 7},
]
ODD: list[dict[str, Any]] = [
    {"colour": 1},
    {"order": []},
    {"order": ["claude", "claude"]},
    {"order": ["claude", "bard"]},
    {"order": "claude"},
    {"order": ["claude", 3]},
    {"skipHost": 1},
    {"skipHost": "true"},
    {"timeoutMs": 999},
    {"timeoutMs": 86_400_001},
    {"timeoutMs": "600000"},
    {"timeoutMs": True},
    {"timeoutMs": 1.5e6},
    {"graceMs": -1},
    {"livenessMs": 0},
    {"envPassthrough": ["A-B"]},
    {"envPassthrough": ["A", "A"]},
    {"envPassthrough": ["1A"]},
    {"skillDirs": ["relative/dir"]},
    {"skillDirs": ["~user/dir"]},
    {"skillDirs": ["/a\0b"]},
    {"peerCommands": {"codex": ALIAS}},
    {"peerCommands": {"-bad": ALIAS}},
    {"peerCommands": {"x" * 65: ALIAS}},
    {"peerCommands": {"b": {"product": "bard", "command": ["b"]}}},
    {"peerCommands": {"b": {"product": "codex", "command": []}}},
    {"peerCommands": {"b": {"product": "codex", "command": [""]}}},
    {"peerCommands": {"b": {"product": "codex"}}},
    {"peerCommands": {"b": {"product": "codex", "command": ["c"], "env": {}}}},
    {"peerCommands": {"b": ["codex", "c"]}},
    {"peerCommands": []},
]


def model_form(data: dict[str, Any]) -> dict[str, Any] | None:
    """The pydantic model's JSON form of ``data``, or None when it refuses it."""
    try:
        return parse_prefs(data, source="test", known=KNOWN).model_dump(mode="json")
    except PrefsError:
        return None


def test_contract_defaults_are_the_models_defaults() -> None:
    assert json.dumps(defaults()) == json.dumps(Prefs().model_dump(mode="json"))


@pytest.mark.parametrize("data", VALID, ids=repr)
def test_contract_ordinary_prefs_take_the_plain_path_with_the_models_form(
    data: dict[str, Any],
) -> None:
    plain = plain_prefs(data, KNOWN)
    assert plain is not None, "an ordinary prefs file must not need pydantic"
    assert json.dumps(plain) == json.dumps(model_form(data))  # same keys, order and values


@pytest.mark.parametrize("data", ODD, ids=repr)
def test_contract_the_plain_path_is_never_looser_than_the_model(data: dict[str, Any]) -> None:
    plain = plain_prefs(data, KNOWN)
    model = model_form(data)
    if model is None:
        assert plain is None, "the plain path accepted what the model refuses"
    elif plain is not None:
        assert json.dumps(plain) == json.dumps(model)


def test_contract_document_equals_load_prefs_with_the_env_override(tmp_path: Path) -> None:
    path = tmp_path / "prefs.toml"
    path.write_text(tomli_w.dumps(VALID[4] | {"timeoutMs": 5_000}))
    env = {"REVIEW_LOOP_TIMEOUT_MS": "7000"}
    document = load_prefs_document(KNOWN, path=path, env=env)
    assert document == load_prefs(KNOWN, path=path, env=env).model_dump(mode="json")
    assert document["timeoutMs"] == 7_000


@pytest.mark.parametrize("text", ["timeoutMs = 0", 'order = ["bard"]', "colour = 1", "x ="])
def test_contract_document_errors_are_load_prefs_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "prefs.toml"
    path.write_text(text)
    with pytest.raises(PrefsError) as expected:
        load_prefs(KNOWN, path=path, env={})
    with pytest.raises(PrefsError) as got:
        load_prefs_document(KNOWN, path=path, env={})
    assert str(got.value) == str(expected.value)


def test_contract_prefs_show_reads_a_plain_file_without_pydantic(user_state: Path) -> None:
    (user_state / "prefs.toml").write_text(tomli_w.dumps(VALID[4] | {"order": ["codex"]}))
    code = (
        "import json, sys\n"
        "from review_loop.orchestrator.cli import run\n"
        "out = []\n"
        "code = run(['prefs', 'show'], stdout=out.append)\n"
        "print(json.dumps({'code': code, 'doc': json.loads(out[0]),"
        " 'pydantic': 'pydantic' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    assert result["code"] == 0
    assert result["pydantic"] is False
    assert result["doc"]["prefs"] == load_prefs(KNOWN).model_dump(mode="json")
    assert result["doc"]["prefs"]["order"] == ["codex"]
