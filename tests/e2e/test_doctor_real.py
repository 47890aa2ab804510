"""End-to-end tests of ``review-loop doctor`` against the real CLIs from npm: their own
``--version``, ``--help`` and login commands, no model call.

Each pinned CLI is found, its version read, and every flag its adapter requires is listed
by its real help page (claude ``--help``, codex ``exec --help``, gemini ``--help``; the npm
grok has no read-only mode and is run in a copy; its version is its package's, the one
thing that tells it). Claude's login is read from ``claude auth
status`` (an API key in its environment: logged in); codex's from ``codex login status``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tests.e2e.helpers import run
from tests.fakes.model_api import FakeModelAPI, cli_env

PRODUCTS = ("claude", "codex", "gemini", "grok")


def test_doctor_reads_every_real_cli_version_flags_and_login(
    cli_bin: Any, model_api: FakeModelAPI, tmp_path: Path
) -> None:
    env = cli_env("claude", model_api, tmp_path / "home")  # ANTHROPIC_API_KEY: a key login
    bins = [str(Path(cli_bin(product)).parent) for product in PRODUCTS]
    env["PATH"] = os.pathsep.join([*dict.fromkeys(bins), env["PATH"]])
    env["REVIEW_LOOP_HOME"] = str(tmp_path / "state")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    ran = run([sys.executable, "-m", "review_loop", "doctor"], env=env, cwd=tmp_path, timeout=180)
    assert ran.returncode == 0, ran.describe()
    document = ran.json()
    rows = {row["name"]: row for row in document["products"]}
    for product in PRODUCTS:
        row = rows[product]
        assert row["executable"] and Path(row["executable"]).name == product, row
        assert row["flags"]["missing"] == [], row
        assert row["usable"] is True, row
    for product in ("claude", "codex", "gemini"):
        assert rows[product]["version"], rows[product]
        assert rows[product]["flags"]["required"], rows[product]
    assert rows["grok"]["variant"] == "vibe-0.0.34" and rows["grok"]["flags"]["required"] == []
    # the npm grok's help names no version and its --version says 1.0.1: its package tells
    assert rows["grok"]["version"] == "0.0.34", rows["grok"]
    assert rows["claude"]["login"]["state"] == "logged-in", rows["claude"]
    assert rows["codex"]["login"]["state"] in ("logged-in", "logged-out"), rows["codex"]
    assert rows["gemini"]["login"]["state"] == "logged-out"  # no GEMINI_API_KEY, no settings
    assert set(PRODUCTS) <= set(document["usable"])
