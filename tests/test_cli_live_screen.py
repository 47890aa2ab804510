"""Process tests: the live table never covers what it did not draw, on a real terminal.

Each command line runs in a shell on a fresh pseudo-terminal that is its controlling
terminal (:mod:`tests.terminal`), as a person types it; the bytes the terminal received are
replayed through a terminal emulator and the test reads the screen a person would see.

- ``review-loop consult ... | reader``: another program shares the terminal, so progress is
  append-only lines; no byte moves the cursor up or erases a line, and every line the
  reader printed is on screen.
- ``review-loop consult ...`` with stdout on the terminal: the table's last frame stands
  once above the document, the document starts on a line of its own, nothing is drawn
  after it, and the whole document reads back from the screen as JSON.
- stdin from a pipe, or the command in a background job: append-only lines too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

from tests.terminal import contains_block, on_terminal, screen
from tests.test_cli import git_repo

# Escape sequences that redraw: cursor up, cursor to a row, erase in line or display.
_REDRAW = re.compile(rb"\x1b\[\d*[AFHJKf]|\x1b\[\d*;\d*[Hf]")
READER = (
    "import json, sys; document = json.load(sys.stdin); "
    "[print(f'reader line {n}: {document[\"status\"]}') for n in range(12)]"
)


def _consult(repo: Path) -> str:
    words = [sys.executable, "-m", "review_loop", "consult", "--repo", str(repo)]
    return shlex.join([*words, "--peer", "simulated", "--question", "Ship it?"])


def test_process_a_piped_document_and_its_reader_stay_on_screen(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    command = f"{_consult(repo)} | {shlex.join([sys.executable, '-c', READER])}"
    code, shown = on_terminal(command, cwd=repo, env=os.environ)
    assert code == 0, shown.decode(errors="replace")
    assert _REDRAW.search(shown) is None, shown  # append-only: nothing drawn over
    rows = screen(shown)
    assert contains_block(rows, [f"reader line {n}: advisory" for n in range(12)]), rows
    assert "[review-loop] reviewer=simulated status=answered elapsed=00:00" in rows


def test_process_a_document_on_the_terminal_stands_whole_below_the_table(
    tmp_path: Path,
) -> None:
    repo = git_repo(tmp_path / "repo")
    code, shown = on_terminal(_consult(repo), cwd=repo, env=os.environ)
    assert code == 0, shown.decode(errors="replace")
    # The document starts on a line of its own (the cursor, hidden while the table was
    # live, shown again before it).
    found = re.search(rb"\r\n(?:\x1b\[\?25h)?\{\r\n", shown)
    assert found is not None, shown
    start = found.start() + 2
    assert _REDRAW.search(shown, start) is None, shown[start:]  # nothing redrawn after it
    assert _REDRAW.search(shown[:start]) is not None  # the table was live before it
    rows = screen(shown)
    top = rows.index("{")
    assert rows[-1] == "}"
    document = json.loads("".join(rows[top:]))  # every row of the document is on screen
    assert document["ok"] is True and document["peer"] == "simulated"
    frames = [n for n, row in enumerate(rows) if row.startswith("┏")]
    assert len(frames) == 1 and frames[0] < top  # the last frame, once, above the document
    assert rows[top - 1].startswith("└")
    assert any(row.startswith("│ simulated") and "answered" in row for row in rows[:top])


def test_process_stdin_from_a_pipe_gets_append_only_lines(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    out = tmp_path / "out.json"
    command = f"true | {_consult(repo)} > {shlex.quote(str(out))}"
    code, shown = on_terminal(command, cwd=repo, env=os.environ)
    assert code == 0, shown.decode(errors="replace")
    assert _REDRAW.search(shown) is None, shown
    assert b"[review-loop] reviewer=simulated status=answered" in shown
    assert json.loads(out.read_text())["ok"] is True


def test_process_a_background_job_gets_append_only_lines(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    out = tmp_path / "out.json"
    # set -m: job control, so the job runs in its own process group, not the terminal's.
    command = f"set -m; {_consult(repo)} > {shlex.quote(str(out))} & wait $!"
    code, shown = on_terminal(command, cwd=repo, env=os.environ)
    assert code == 0, shown.decode(errors="replace")
    assert _REDRAW.search(shown) is None, shown
    assert b"[review-loop] reviewer=simulated status=answered" in shown
    assert json.loads(out.read_text())["ok"] is True
