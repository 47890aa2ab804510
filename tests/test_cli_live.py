"""Process tests: on a terminal, reviewers' progress is a live table on stderr.

The command runs in a shell on a pseudo-terminal (:mod:`tests.terminal`) with stdout
redirected to a file, as a person who keeps the JSON document sees it: the file holds
exactly the JSON document; the terminal shows the table (reviewer, status, elapsed);
``REVIEW_LOOP_PLAIN=1`` keeps the plain lines. (With stdout on a pipe, or on the terminal
itself: ``tests/test_cli_live_screen.py``.)
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from tests.terminal import on_terminal
from tests.test_cli import git_repo


def run_on_terminal(repo: Path, extra_env: dict[str, str]) -> tuple[int, str, str]:
    env = {key: value for key, value in os.environ.items() if key != "REVIEW_LOOP_PLAIN"}
    env.update(extra_env)
    out = repo.parent / "out.json"
    argv = ["consult", "--repo", str(repo), "--peer", "simulated", "--question", "Ship?"]
    command = (
        f"{shlex.join([sys.executable, '-m', 'review_loop', *argv])} > {shlex.quote(str(out))}"
    )
    code, shown = on_terminal(command, cwd=repo, env=env)
    return code, out.read_text(), shown.decode(errors="replace")


def test_process_a_terminal_gets_a_live_table_and_stdout_stays_json(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    code, stdout, terminal = run_on_terminal(repo, {})
    assert code == 0, terminal
    assert json.loads(stdout)["ok"] is True  # nothing but the document on stdout
    assert "reviewer" in terminal and "elapsed" in terminal  # the table's header
    assert "simulated" in terminal and "answered" in terminal
    assert "[review-loop] reviewer=simulated status=answered" not in terminal


def test_process_plain_lines_on_request(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    code, stdout, terminal = run_on_terminal(repo, {"REVIEW_LOOP_PLAIN": "1"})
    assert code == 0, terminal
    assert json.loads(stdout)["ok"] is True
    assert "[review-loop] reviewer=simulated status=answered" in terminal
