"""Process tests: what a person sees of ``review-loop doctor`` on a real pseudo-terminal.

With the document sent to a file (``review-loop doctor > doctor.json``) or a pipe (``|
jq``), the person at the terminal still sees the table on stderr — before, a redirected
stdout left the screen empty and only the exit code said anything — and the file holds the
one JSON document. Each product not known to be logged in says why, in the table's words;
with no reviewer at all, the last line points to the offline demo.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.fakes import FakeCLIs
from tests.terminal import on_terminal, screen


def _env(fakes: FakeCLIs, tmp_path: Path) -> dict[str, str]:
    env = fakes.env(path_only=True)
    env.update(REVIEW_LOOP_HOME=str(tmp_path / "state"), HOME=str(tmp_path / "home"))
    return env


def test_process_doctor_shows_its_table_when_the_document_goes_to_a_file(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    saved = tmp_path / "doctor.json"
    command = f"{shlex.quote(sys.executable)} -m review_loop doctor > {shlex.quote(str(saved))}"
    code, shown = on_terminal(command, cwd=tmp_path, env=_env(fakes, tmp_path))
    rows = screen(shown)
    assert code == 0, rows
    assert any(row.startswith("reviewer   version  login") for row in rows), rows
    assert any(row.startswith("gemini login logged-out: no auth method") for row in rows)
    assert json.loads(saved.read_text())["ok"] is True  # the one document, in the file
    assert not any(row.startswith("{") for row in rows)  # and not on the screen


def test_process_doctor_shows_its_table_above_what_jq_prints(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    script = "import json, sys; print(json.load(sys.stdin)['status'])"
    reader = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"
    command = f"{shlex.quote(sys.executable)} -m review_loop doctor | {reader}"
    code, shown = on_terminal(command, cwd=tmp_path, env=_env(fakes, tmp_path))
    rows = screen(shown)
    assert code == 0, rows
    header = next(i for i, row in enumerate(rows) if row.startswith("reviewer   version  login"))
    assert rows.index("ready") > header  # the reader's line below the table, not covered


def test_process_doctor_with_no_reviewer_points_a_newcomer_to_the_offline_demo(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": f"{empty}:/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    env["REVIEW_LOOP_HOME"] = str(tmp_path / "state")
    command = f"{shlex.quote(sys.executable)} -m review_loop doctor > /dev/null"
    code, shown = on_terminal(command, cwd=tmp_path, env=env)
    rows = screen(shown)
    assert code == 2, rows
    joined = "".join(rows)  # the line is wider than the terminal: it wraps
    assert "meanwhile `review-loop demo` (and --peer simulated) works offline" in joined
