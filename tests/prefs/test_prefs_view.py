"""Contract tests of the plain runtime prefs value (``PrefsView``) and its loader.

``consult`` reads the user's prefs as a :class:`PrefsView` (no pydantic). Held to the model:
for every valid file (defaults, every field set, aliases, env overrides) the view the plain
path loads equals the pydantic model's view and carries the model's values under the same
attribute names; every file or override the model refuses raises the very error
``load_prefs`` raises; and the rules both answer (``reviewers_for``, ``standard_peers``,
``default_reviewer``) agree.
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
from review_loop.prefs import (
    PeerCommandView,
    Prefs,
    PrefsView,
    as_view,
    load_prefs,
    load_prefs_view,
)
from tests.prefs.test_plain_prefs import ALIAS, KNOWN, ODD, VALID

FULL: dict[str, Any] = {
    "order": ["gemini", "codex", "claude"],
    "skipHost": True,
    "peerCommands": {"codex002": ALIAS, "cc002": {"product": "claude", "command": ["cc"]}},
    "timeoutMs": 60_000,
    "graceMs": 250,
    "livenessMs": 9_000,
    "envPassthrough": ["AWS_PROFILE"],
    "skillDirs": ["/opt/skills", "~/skills"],
}
ENVS: list[dict[str, str]] = [
    {},
    {"REVIEW_LOOP_TIMEOUT_MS": "7000"},
    {"REVIEW_LOOP_TIMEOUT_MS": ""},
]
FIELDS = ("order", "skipHost", "timeoutMs", "graceMs", "livenessMs", "envPassthrough", "skillDirs")


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "prefs.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def assert_reads_as(view: PrefsView, model: Prefs) -> None:
    """``view`` answers every attribute the runtime reads with the model's value."""
    assert type(view) is PrefsView
    for name in FIELDS:
        assert getattr(view, name) == getattr(model, name), name
        assert type(getattr(view, name)) is type(getattr(model, name)), name
    assert view.peerCommands.keys() == model.peerCommands.keys()
    for alias, peer in model.peerCommands.items():
        assert view.peerCommands[alias].product == peer.product
        assert view.peerCommands[alias].command == peer.command
        assert type(view.peerCommands[alias].command) is tuple
    assert view == model.view()


@pytest.mark.parametrize("env", ENVS, ids=repr)
@pytest.mark.parametrize("data", [*VALID, FULL], ids=repr)
def test_contract_the_plain_view_is_the_models_view(
    tmp_path: Path, data: dict[str, Any], env: dict[str, str]
) -> None:
    path = write(tmp_path, data)
    assert_reads_as(
        load_prefs_view(KNOWN, path=path, env=env), load_prefs(KNOWN, path=path, env=env)
    )


def test_contract_no_file_is_the_defaults(tmp_path: Path) -> None:
    view = load_prefs_view(KNOWN, path=tmp_path / "none.toml", env={})
    assert_reads_as(view, Prefs())
    assert view == PrefsView() == Prefs().view()


def test_contract_the_env_override_replaces_the_files_deadline(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    view = load_prefs_view(KNOWN, path=path, env={"REVIEW_LOOP_TIMEOUT_MS": " 7000 "})
    assert view.timeoutMs == 7_000
    assert view.graceMs == FULL["graceMs"]


def model_refusal(path: Path) -> PrefsError | None:
    """What ``load_prefs`` raises for the file at ``path`` (no env override), if anything."""
    try:
        load_prefs(KNOWN, path=path, env={})
    except PrefsError as error:
        return error
    return None


@pytest.mark.parametrize("data", ODD, ids=repr)
def test_contract_odd_files_load_as_the_model_loads_them(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    path = write(tmp_path, data)
    expected = model_refusal(path)
    if expected is None:
        assert_reads_as(
            load_prefs_view(KNOWN, path=path, env={}), load_prefs(KNOWN, path=path, env={})
        )
        return
    with pytest.raises(PrefsError) as got:
        load_prefs_view(KNOWN, path=path, env={})
    assert str(got.value) == str(expected)
    assert (got.value.field, got.value.accepted) == (expected.field, expected.accepted)


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ("order = [", {}),
        (b"order = ['\xff']", {}),
        ("timeoutMs = 0", {}),
        ('[peerCommands.codex]\nproduct = "codex"\ncommand = ["x"]', {}),
        ("", {"REVIEW_LOOP_TIMEOUT_MS": "soon"}),
        ("", {"REVIEW_LOOP_TIMEOUT_MS": "999"}),
        ("graceMs = 7", {"REVIEW_LOOP_TIMEOUT_MS": "86400001"}),
        ("graceMs = -1", {"REVIEW_LOOP_TIMEOUT_MS": "soon"}),  # the file's error comes first
        (None, {}),  # unreadable: a directory where the file should be
    ],
)
def test_contract_refusals_are_load_prefs_refusals(
    tmp_path: Path, text: str | bytes | None, env: dict[str, str]
) -> None:
    path = tmp_path / "prefs.toml"
    if text is None:
        path.mkdir()
    else:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(PrefsError) as expected:
        load_prefs(KNOWN, path=path, env=env)
    with pytest.raises(PrefsError) as got:
        load_prefs_view(KNOWN, path=path, env=env)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("data", [{}, FULL, {"order": ["codex"], "skipHost": True}], ids=repr)
def test_contract_the_view_answers_the_rules_as_the_model(data: dict[str, Any]) -> None:
    model = Prefs.model_validate(data)
    view = model.view()
    for host in (None, "claude", "codex", "gemini", "grok"):
        for skip in (None, True, False):
            assert view.reviewers_for(host, skip_host=skip) == model.reviewers_for(
                host, skip_host=skip
            )
        assert view.standard_peers(host) == model.standard_peers(host)
        assert view.default_reviewer(host) == model.default_reviewer(host)


def test_contract_as_view_and_with_alias() -> None:
    model = Prefs.model_validate(FULL)
    view = as_view(model)
    assert as_view(view) is view
    peer = PeerCommandView(product="grok", command=("grok002",))
    added = view.with_alias("grok002", peer)
    assert added.peerCommands["grok002"] is peer
    assert "grok002" not in view.peerCommands  # the original is left as it was
    alias = {"product": "grok", "command": ["grok002"]}
    copied = Prefs.model_validate(
        FULL | {"peerCommands": {**FULL["peerCommands"], "grok002": alias}}
    )
    assert added == copied.view()
    with pytest.raises(AttributeError):
        view.order = ("codex",)  # type: ignore[misc]


def test_contract_consult_loads_plain_prefs_without_pydantic(user_state: Path) -> None:
    (user_state / "prefs.toml").write_text(tomli_w.dumps(FULL))
    code = (
        "import json, sys\n"
        "from review_loop.adapters import known_products\n"
        "from review_loop.prefs import load_prefs_view\n"
        "view = load_prefs_view(known_products())\n"
        "print(json.dumps({'order': view.order, 'aliases': sorted(view.peerCommands),"
        " 'pydantic': 'pydantic' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {
        "order": FULL["order"],
        "aliases": ["cc002", "codex002"],
        "pydantic": False,
    }
