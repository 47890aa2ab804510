"""Contract tests: ``sessions`` asks git which records are committed only when it found one.

git runs as a logging wrapper put first on PATH, so each test counts the ``ls-files`` calls
the listing made (the real git answers them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from review_loop.orchestrator.sessions.listing import list_sessions


def _logging_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    real = shutil.which("git")
    assert real is not None
    log = tmp_path / "git.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(real).parent}")
    return log


def _ls_files_calls(log: Path) -> int:
    lines = log.read_text().splitlines() if log.exists() else []
    return sum("ls-files" in line for line in lines)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_a_runtime_without_records_asks_git_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    (repo / ".review-handoff" / "runtime" / "main" / "p1").mkdir(parents=True)
    log = _logging_git(tmp_path, monkeypatch)

    assert list_sessions(repo, "codex", env={"HOME": str(tmp_path / "home")}) == []
    assert _ls_files_calls(log) == 0


def test_a_record_is_checked_against_git_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    record = repo / ".review-handoff" / "runtime" / "main" / "p1" / "reviewer-session.json"
    record.parent.mkdir(parents=True)
    session = {"product": "codex", "sessionId": "s-1", "updated": "2026-11-29T10:00:00.000Z"}
    record.write_text(json.dumps(session))
    log = _logging_git(tmp_path, monkeypatch)

    listed = list_sessions(repo, "codex", env={"HOME": str(tmp_path / "home")})
    assert [item.session.session_id for item in listed] == ["s-1"]
    assert _ls_files_calls(log) == 1
