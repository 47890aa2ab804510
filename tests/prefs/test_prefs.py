"""Contract tests of prefs: defaults, validation that names the key, env overrides, atomic save."""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.agents.errors import PrefsError
from review_loop.prefs import DEFAULT_ORDER, Prefs, load_prefs, prefs_path, save_prefs, state_home

KNOWN = ("claude", "codex", "gemini", "grok")


def test_defaults_when_no_file(tmp_path: Path) -> None:
    prefs = load_prefs(KNOWN, path=tmp_path / "none.toml", env={})
    assert prefs.order == DEFAULT_ORDER == ("claude", "codex", "grok")
    assert prefs.timeoutMs == 1_200_000
    assert prefs.skipHost is False


def test_one_env_var_relocates_all_state(tmp_path: Path) -> None:
    env = {"REVIEW_LOOP_HOME": str(tmp_path / "state")}
    assert state_home(env) == tmp_path / "state"
    assert prefs_path(env) == tmp_path / "state" / "prefs.toml"
    assert state_home({"HOME": "/h"}) == Path("/h/.config/review-loop")
    assert state_home({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == Path("/x/review-loop")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('order = ["claude", "bard"]', "order[1]: unknown product 'bard'"),
        ('order = ["claude", "claude"]', "order: order must not repeat a product"),
        ("order = []", "order"),
        ("timeoutMs = 0", "timeoutMs"),
        ("skipHost = 3", "skipHost"),
        ("colour = 1", "colour"),
        (
            '[peerCommands.codex002]\nproduct = "nope"\ncommand = ["x"]',
            "peerCommands.codex002.product",
        ),
        ('[peerCommands.codex]\nproduct = "codex"\ncommand = ["x"]', "must not shadow"),
        ('[peerCommands."bad name"]\nproduct = "codex"\ncommand = ["x"]', "alias 'bad name'"),
        ("order = [", "not valid TOML"),
    ],
)
def test_invalid_file_names_the_key(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "prefs.toml"
    path.write_text(text)
    with pytest.raises(PrefsError) as caught:
        load_prefs(KNOWN, path=path, env={})
    assert needle in str(caught.value)
    assert str(path) in str(caught.value)


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "prefs.toml"
    path.mkdir()
    with pytest.raises(PrefsError, match="cannot read prefs file"):
        load_prefs(KNOWN, path=path, env={})


def test_timeout_env_override(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    # Any positive number, as the original's Number(); a fraction is rounded up.
    for value, ms in (
        ("1500", 1500),
        ("500", 500),
        ("1e3", 1000),
        ("1500.5", 1501),
        (" 800 ", 800),
        ("0x1f4", 500),
        ("100000000", 100_000_000),
    ):
        env = {"REVIEW_LOOP_TIMEOUT_MS": value}
        assert load_prefs(KNOWN, path=path, env=env).timeoutMs == ms, value
    for bad in ("0", "-3", "soon", "Infinity", "NaN", "1_000", "1e400"):
        with pytest.raises(PrefsError, match="REVIEW_LOOP_TIMEOUT_MS"):
            load_prefs(KNOWN, path=path, env={"REVIEW_LOOP_TIMEOUT_MS": bad})


def test_save_is_atomic_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "prefs.toml"
    prefs = Prefs.validate(
        {
            "order": ["codex", "grok"],
            "skipHost": True,
            "peerCommands": {"codex002": {"product": "codex", "command": ["/opt/c002", "--x"]}},
        }
    )
    save_prefs(prefs, path=path)
    assert load_prefs(KNOWN, path=path, env={}) == prefs
    assert [p.name for p in path.parent.iterdir()] == ["prefs.toml"]  # no temp file left


def test_reviewers_for_removes_the_host_only_when_skipping() -> None:
    prefs = Prefs()
    assert prefs.reviewers_for("claude", skip_host=True) == ["codex", "grok"]
    assert prefs.reviewers_for("claude") == ["claude", "codex", "grok"]
    assert Prefs(skipHost=True).reviewers_for("codex") == ["claude", "grok"]
