"""Contract tests: the plain reading of a prefs file is ``tomllib``'s, or nothing.

``review_loop/prefs/plain_toml.py`` reads the prefs file as ``review-loop prefs`` writes it
without importing ``tomllib``. Whatever it reads, ``tomllib.loads`` must read to the same
value; whatever ``tomllib`` refuses, it must leave to ``tomllib`` (which words the error).
Held over files ``tomli_w`` writes for thousands of generated prefs-like documents, over
random mutations of them, and over the TOML forms the subset leaves out.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from review_loop.prefs.plain_toml import plain_toml

WORDS = ["codex", "claude", "grok", "gemini", "cc002", "", "a b", "é", "日本", "#", "x=y", "[z]"]
HARD_WORDS = ['"', "\\", "\t", "a\nb", "\x7f", "'", "💡\\"]  # escaped by tomli_w
KEYS = ["order", "skipHost", "timeoutMs", "graceMs", "livenessMs", "envPassthrough"]
KEYS += ["skillDirs", "other", "x-y", "9"]
HARD_KEYS = ["a.b", "é", "with space"]  # quoted by tomli_w


def word(chooser: random.Random) -> str:
    return chooser.choice(HARD_WORDS if chooser.random() < 0.03 else WORDS)


def same_reading(text: str) -> bool:
    """Hold the two readings together for ``text``; True when the plain one read it."""
    plain = plain_toml(text.encode("utf-8", "surrogatepass"))
    try:
        expected: dict[str, Any] | None = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        expected = None
    if plain is None:
        return False
    assert expected is not None, f"read plainly, refused by tomllib: {text!r}"
    assert json.dumps(plain, sort_keys=True) == json.dumps(expected, sort_keys=True), text
    assert plain == expected, text
    return True


def scalar(chooser: random.Random) -> Any:
    kind = chooser.randrange(5)
    if kind == 0:
        return word(chooser)
    if kind == 1:
        return chooser.choice([0, 1, 7, 5000, 1_200_000, 86_400_000, 10**17, 10**19, -3])
    if kind == 2:
        return chooser.random() < 0.5
    if kind == 3:
        return 1.5 if chooser.random() < 0.1 else chooser.randrange(100)
    return [word(chooser) for _ in range(chooser.randrange(4))]


def document(chooser: random.Random) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key in chooser.sample(KEYS, chooser.randrange(len(KEYS))):
        data[key] = scalar(chooser)
    if chooser.random() < 0.1:
        data[chooser.choice(HARD_KEYS)] = scalar(chooser)
    if chooser.random() < 0.6:
        data["peerCommands"] = {
            chooser.choice(["cc002", "k2", "x_y", "9"] if chooser.random() < 0.9 else HARD_KEYS): {
                "product": word(chooser),
                "command": [word(chooser) for _ in range(chooser.randrange(1, 4))],
            }
            for _ in range(chooser.randrange(1, 3))
        }
    return data


def written(chooser: random.Random) -> str:
    return tomli_w.dumps(document(chooser))


def test_contract_files_review_loop_writes_are_read_plainly_as_tomllib_reads_them() -> None:
    chooser = random.Random(20261201)
    read = sum(same_reading(written(chooser)) for _ in range(3000))
    assert read > 1000  # the plain reader really reads most files


def test_contract_the_prefs_file_of_prefs_set_and_alias_is_read_plainly() -> None:
    text = tomli_w.dumps(
        {
            "order": ["codex", "claude"],
            "skipHost": False,
            "timeoutMs": 1200000,
            "graceMs": 5000,
            "livenessMs": 30000,
            "envPassthrough": ["A_KEY"],
            "skillDirs": [],
            "peerCommands": {"cc002": {"product": "claude", "command": ["cc002", "--x"]}},
        }
    )
    assert same_reading(text)
    assert same_reading('order = ["codex", "claude"]\ntimeoutMs = 60000\n')  # by hand


def test_contract_mutated_files_are_read_as_tomllib_reads_them_or_left_to_it() -> None:
    chooser = random.Random(14)
    pieces = [*"\"[]=.,#\\\n \t'{}01-+_eaxtrufl", "true", "false", "\r\n", "\ufeff", "é"]
    read = 0
    for _ in range(6000):
        text = written(chooser)
        for _ in range(chooser.randint(1, 3)):
            at = chooser.randrange(len(text) + 1)
            cut = chooser.choice([0, 0, 1, 2])
            text = text[:at] + chooser.choice([*pieces, ""]) + text[at + cut :]
        read += same_reading(text)
    assert read > 300


@pytest.mark.parametrize(
    "text",
    [
        "a = 1 # a comment\n",
        "# a comment\na = 1\n",
        '"a" = 1\n',
        "a.b = 1\n",
        "a = 'literal'\n",
        'a = """multi"""\n',
        'a = "esc\\n"\n',
        "a = 1.5\n",
        "a = 1e3\n",
        "a = 1_000\n",
        "a = 0x1F\n",
        "a = +1\n",
        "a = -1\n",
        "a = 01\n",
        "a = 1979-05-27\n",
        "a = {b = 1}\n",
        "[[a]]\nb = 1\n",
        "a = [[1], [2]]\n",
        "a = 1\r\n",
        "\ufeffa = 1\n",
        "a = 1\na = 2\n",
        "[a]\n[a]\n",
        "a = 1\n[a]\n",
        "[a]\nb = 1\n[a.b]\n",
        'a = "tab\there"\n',
        "a = 1234567890123456789\n",
    ],
)
def test_contract_what_the_subset_leaves_out_goes_to_tomllib(text: str) -> None:
    assert plain_toml(text.encode()) is None
    same_reading(text)


def test_contract_tables_in_any_order_toml_allows() -> None:
    assert same_reading("[a.b]\nc = 1\n[a]\nd = 2\n")
    assert same_reading("[a]\nd = 2\n[a.b]\nc = 1\n[ a . e ]\n")
    assert same_reading('\n\n  a = [\n  1,\n  "x",\n]\n\n')
    assert plain_toml(b"") == {} and plain_toml(b"\n \n") == {}
    assert plain_toml(b"\xff") is None


def test_process_consult_reads_a_written_prefs_file_without_tomllib(
    tmp_path: Path, user_state: Path
) -> None:
    (user_state / "prefs.toml").write_text(
        tomli_w.dumps({"order": ["codex", "claude"], "timeoutMs": 60000})
    )
    probe = (
        "import sys\n"
        "from review_loop.orchestrator.cli.common import load_user_prefs_view\n"
        "view = load_user_prefs_view()\n"
        "print(view.order, view.timeoutMs, 'tomllib' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    assert done.stdout.split() == ["('codex',", "'claude')", "60000", "False"]
