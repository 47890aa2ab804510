"""End-to-end tests of ``review-loop doctor``'s login column for gemini, grok, opencode and
qwen, against the real CLIs from npm in a throw-away HOME, no model call, no key of the
developer's.

With nothing set up, each says how it stands: opencode (its own ``opencode auth list``) and
gemini and grok (what the CLI itself requires before a first request) are logged out, qwen
is unknown and says why. Once a login is where each CLI keeps it — a credential in
opencode's ``auth.json``, ``GEMINI_API_KEY`` in ``~/.gemini/.env``, ``apiKey`` in
``~/.grok/user-settings.json`` — doctor reports it logged in; qwen stays unknown.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.e2e.helpers import run

PRODUCTS = ("gemini", "grok", "opencode", "qwen")
ROOT = Path(__file__).resolve().parents[2]


def _logins(cli_bin: Any, home: Path, state: Path) -> dict[str, dict[str, str]]:
    bins = [str(Path(cli_bin(product)).parent) for product in PRODUCTS]
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([*dict.fromkeys(bins), os.environ["PATH"]]),
        "REVIEW_LOOP_HOME": str(state),
        "PYTHONPATH": str(ROOT),
        "LANG": "C.UTF-8",
    }
    ran = run([sys.executable, "-m", "review_loop", "doctor"], env=env, cwd=home, timeout=300)
    assert ran.returncode in (0, 2), ran.describe()
    rows = {row["name"]: row for row in ran.json()["products"]}
    for product in PRODUCTS:
        assert rows[product]["executable"], rows[product]
    return {product: rows[product]["login"] for product in PRODUCTS}


def test_doctor_reads_the_login_of_gemini_grok_opencode_and_qwen(
    cli_bin: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    before = _logins(cli_bin, home, tmp_path / "state")
    assert before["opencode"] == {
        "state": "logged-out",
        "detail": "opencode auth list: 0 stored credential(s) (log in with: opencode auth login)",
    }
    assert before["gemini"]["state"] == "logged-out", before
    assert before["gemini"]["detail"].startswith("no auth method"), before
    assert before["grok"]["state"] == "logged-out", before
    assert before["qwen"]["state"] == "unknown" and "qwen auth" in before["qwen"]["detail"]

    auth = home / ".local" / "share" / "opencode" / "auth.json"
    auth.parent.mkdir(parents=True, exist_ok=True)
    auth.write_text(json.dumps({"anthropic": {"type": "api", "key": "sk-test"}}))
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / ".env").write_text("GEMINI_API_KEY=test-key\n")
    (home / ".grok").mkdir(exist_ok=True)
    (home / ".grok" / "user-settings.json").write_text(json.dumps({"apiKey": "xai-test"}))
    after = _logins(cli_bin, home, tmp_path / "state")
    assert after["opencode"] == {
        "state": "logged-in",
        "detail": "opencode auth list: 1 stored credential(s)",
    }
    assert after["gemini"]["state"] == "logged-in", after
    assert after["grok"] == {
        "state": "logged-in",
        "detail": "api key from ~/.grok/user-settings.json",
    }
    assert after["qwen"]["state"] == "unknown"
