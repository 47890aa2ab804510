"""Contract tests of start-up for the commands that run reviewers (``consult`` first).

A list, not a timer (``docs/performance.md``): the help pages are imported only by a command
line that asks for help; the TOML parser only when there is a prefs file; the deadline flag
and the prefs reader build no pydantic model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from tests.test_startup_imports import PYDANTIC, imported_modules, world  # noqa: F401

MANUAL = "review_loop.orchestrator.cli.manual"


@pytest.mark.parametrize("extra", [[], ["--timeout", "600"]], ids=["consult", "consult --timeout"])
def test_contract_consult_imports_no_help_pages_and_no_toml_parser_without_a_file(
    extra: list[str],
    world: tuple[Path, dict[str, str]],  # noqa: F811
) -> None:
    repo, env = world
    imported = imported_modules(
        ["consult", "--peer", "codex", "--question", "q", *extra], repo, env
    )
    assert "review_loop.orchestrator.cli.stops" in imported  # it did run as a reviewer command
    assert MANUAL not in imported
    assert "tomllib" not in imported  # no prefs file here: the defaults, nothing to parse


def test_contract_help_words_still_reach_the_manual(world: tuple[Path, dict[str, str]]) -> None:  # noqa: F811
    repo, env = world
    # ``-h`` as the value of --question is the question, not a request for help
    imported = imported_modules(["consult", "--peer", "codex", "--question", "-h"], repo, env)
    assert MANUAL in imported


def test_contract_the_deadline_flag_and_the_prefs_reader_need_no_pydantic(
    user_state: Path,
) -> None:
    (user_state / "prefs.toml").write_text(
        tomli_w.dumps({"order": ["codex", "claude"], "timeoutMs": 60_000})
    )
    code = (
        "import json, sys\n"
        "from review_loop.orchestrator.cli.common import load_user_prefs, "
        "positive_seconds\n"
        "view = load_user_prefs()\n"
        "print(json.dumps({'ms': positive_seconds('600', '--timeout'), 'order': view.order,"
        " 'models': sorted(set(sys.argv[1:]) & set(sys.modules))}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *PYDANTIC], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == {"ms": 600_000, "order": ["codex", "claude"], "models": []}
