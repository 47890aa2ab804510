"""End-to-end tests (process, fake CLIs on PATH): ``sessions`` and ``consult`` print resume
commands that keep the read-only flags the reviewer ran with, beside the original's bare ones.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.adapters.test_contract import READ_ONLY
from tests.fakes import FakeCLIs
from tests.test_cli import git_repo, run_cli
from tests.test_cli_help import run_text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "a 'quoted' repo")


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


def has_run(argv: list[str], flags: tuple[str, ...]) -> bool:
    return any(tuple(argv[i : i + len(flags)]) == flags for i in range(len(argv)))


@pytest.mark.parametrize("product", ["codex", "claude"])
def test_sessions_and_consult_print_read_only_resume_commands(
    product: str, repo: Path, fakes: FakeCLIs
) -> None:
    code, consulted, stderr = run_cli(
        "consult", "--repo", str(repo), "--peer", product, "--question", "Q", fakes=fakes
    )
    assert code == 0, stderr
    session_id = consulted["sessionId"]
    code, listed, stderr = run_cli(
        "sessions", "--repo", str(repo), "--product", product, fakes=fakes
    )
    assert code == 0, stderr
    (entry,) = listed["sessions"]
    read_only = entry["resumeReadOnly"]
    assert read_only == consulted["resumeReadOnly"]
    assert read_only["unavailable"] is None
    for key in ("interactive", "headless"):
        argv = shlex.split(read_only[key])
        assert argv[0] == product and session_id in argv
        flags = READ_ONLY[product]
        assert has_run(argv, flags), f"{read_only[key]} lacks {flags}"
        # The original's bare command is unchanged and still has none of them.
        assert not has_run(shlex.split(entry["resume"][key]), flags)
        shell = entry["resumeReadOnlyInShell"][key]
        assert shell == f"cd {shlex.quote(str(repo))} && {read_only[key]}"
    assert shlex.split(read_only["headless"])[-1] == "<prompt>"


def test_sessions_help_names_the_read_only_resume_commands() -> None:
    code, text = run_text("sessions", "--help")
    assert code == 0
    text = " ".join(text.split())  # the page is wrapped to the terminal width
    assert "resumeReadOnly" in text and "WITHOUT the read-only flags" in text
