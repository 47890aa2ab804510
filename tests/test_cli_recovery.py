"""Process tests, end to end, of the errors a person can act on, and of each recovery.

A missing CLI says which executable, where it was looked for (PATH) and what to set
(``prefs alias``), is tried once and never reported ``active``; a STOP file is named with
the command that removes it; a broken ``prefs.toml`` names the file and the repairing
command, and that command (``prefs reset``) works.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from tests.fakes import FakeCLIs
from tests.test_cli import git_repo, run_cli


def test_missing_cli_names_the_executable_path_and_the_alias(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    bare_path = os.pathsep.join(["/usr/bin", "/bin"])
    code, doc, stderr = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Hi?",
        env={"PATH": bare_path},
    )  # fmt: skip
    assert code == 2
    assert doc["status"] == "DELIVERY_UNKNOWN"  # the original's contract for every failure
    assert doc["delivery"] == "NOT_SUBMITTED"
    assert doc["summary"].startswith("NOT_SUBMITTED: the question never reached codex")
    assert "'codex' is not in any directory on PATH (/usr/bin:/bin)" in doc["hint"]
    assert "review-loop prefs alias codex2 codex /path/to/codex" in doc["hint"]
    assert len(doc["attempts"]) == 1  # not retried: it is still missing a moment later
    assert "status=active" not in stderr  # nothing was started
    assert "reviewer=codex status=not-started why='executable not found: codex'" in stderr
    assert '"event": "retry"' not in stderr


def test_stop_file_is_named_with_the_command_that_removes_it(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    fakes = FakeCLIs(tmp_path / "fakes")
    stop = repo / ".review-handoff" / "STOP"
    stop.parent.mkdir()
    stop.write_text("")
    code, doc, stderr = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Hi?", fakes=fakes
    )
    assert code == 2
    assert doc["code"] == "STOP interrupt (pre-spawn)"
    assert f"rm {stop}" in doc["error"] and f"rm {stop}" in doc["hint"]
    assert len(doc["attempts"]) == 1
    assert "status=active" not in stderr
    assert fakes.calls() == []
    stop.unlink()  # the recovery the message gives
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "codex", "--question", "Hi?", fakes=fakes
    )
    assert code == 0 and doc["ok"] is True


def test_a_broken_prefs_file_names_itself_and_prefs_reset_repairs_it(
    tmp_path: Path, user_state: Path
) -> None:
    repo = git_repo(tmp_path / "repo")
    prefs_file = user_state / "prefs.toml"
    prefs_file.write_text("order = [claude\n")
    for argv in (
        ("consult", "--repo", str(repo), "--peer", "codex", "--question", "Hi?"),
        ("prefs", "show"),
    ):
        code, doc, _ = run_cli(*argv)
        assert code == 1
        assert str(prefs_file) in doc["error"] and "not valid TOML" in doc["error"]
        assert "review-loop prefs reset" in doc["error"]
    code, doc, _ = run_cli("prefs", "reset")
    assert code == 0, doc
    assert doc["changed"] is True
    assert tomllib.loads(prefs_file.read_text()) == doc["defaults"]
    code, doc, _ = run_cli("prefs", "show")
    assert code == 0 and doc["prefs"]["order"] == doc["defaults"]["order"]


def test_a_prefs_file_with_a_bad_value_offers_the_reset(user_state: Path) -> None:
    (user_state / "prefs.toml").write_text('order = ["kodex"]\n')
    code, doc, _ = run_cli("prefs")
    assert code == 1
    assert "order" in doc["error"] and "'kodex'" in doc["error"]
    assert "review-loop prefs reset" in doc["error"]
    assert run_cli("prefs", "reset")[0] == 0


def test_an_unreadable_state_home_names_the_variable(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    code, doc, _ = run_cli("prefs", env={"REVIEW_LOOP_HOME": str(not_a_directory)})
    assert code == 1
    assert f"REVIEW_LOOP_HOME={not_a_directory}" in doc["error"]
