"""Process tests: on a terminal, reviewers' progress is a live table on stderr.

The command runs with stderr on a pseudo-terminal and stdout on a pipe, as a person who
redirects the JSON document sees it: stdout stays exactly the JSON document; stderr shows
the table (reviewer, status, elapsed); ``REVIEW_LOOP_PLAIN=1`` keeps the plain lines.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from tests.test_cli import git_repo


def run_on_terminal(repo: Path, extra_env: dict[str, str]) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key != "REVIEW_LOOP_PLAIN"}
    env.update({"TERM": "xterm", "COLUMNS": "100", **extra_env})
    argv = ["consult", "--repo", str(repo), "--peer", "simulated", "--question", "Ship?"]
    with subprocess.Popen(
        [sys.executable, "-m", "review_loop", *argv],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=env,
    ) as proc:
        os.close(slave)
        chunks: list[bytes] = []
        while True:  # drain the terminal while the command runs (a full pty would block it)
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        stdout = proc.stdout.read() if proc.stdout else b""
        code = proc.wait(timeout=60)
    os.close(master)
    return code, stdout.decode(), b"".join(chunks).decode(errors="replace")


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
