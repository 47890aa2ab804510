"""Process tests: ``review-loop evidence`` run as a process against real git repositories.

Checks what a skill parses: one JSON document on stdout with ``{ok, status: "attested",
evidence}``, the digest the original tool computes (the oracle in
``tests/orchestrator/workflows/test_evidence.py``), exit 1 with an error naming the flag for a
non-git ``--repo`` or a bad ``--base``, and that nothing is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.orchestrator.workflows.test_evidence import Repo, reference_evidence


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the user's and the system's git configuration out of the test repositories."""
    home = tmp_path_factory.mktemp("git-home")
    config = home / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path / "a 'quoted' repo")
    made.write("README.md", "# readme\n")
    made.write("dir with space/a b.txt", "a b\n")
    made.write('q"uote.txt', "q\n")
    made.commit("init")
    made.write("README.md", "# changed\n")
    made.write("dir with space/a b.txt", "changed\n")
    made.write('q"uote.txt', "changed\n")
    made.write("new file.txt", "new\n")
    made.write("ünï.bin", b"\x00\x01")
    return made


def run_cli(*args: str, cwd: Path | None = None) -> tuple[int, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "review_loop", "evidence", *args],
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )
    return result.returncode, json.loads(result.stdout)


def test_evidence_of_the_whole_tree(repo: Repo) -> None:
    code, document = run_cli("--repo", str(repo.path))
    assert code == 0
    expected, _ = reference_evidence(repo.path)
    assert document == {"ok": True, "status": "attested", "evidence": expected}
    assert document["evidence"]["coveredPaths"] == [
        "README.md",
        "dir with space/a b.txt",
        "new file.txt",
        'q"uote.txt',
        "ünï.bin",
    ]


@pytest.mark.parametrize(
    "paths",
    [
        'dir with space/a b.txt,q"uote.txt',
        ' q"uote.txt , dir with space ,, ',
        "new file.txt",
        "*.txt",
    ],
)
def test_paths_filter_with_spaces_and_quotes(repo: Repo, paths: str) -> None:
    code, document = run_cli("--repo", str(repo.path), "--paths", paths)
    assert code == 0
    expected, _ = reference_evidence(repo.path, "HEAD", paths)
    assert document["evidence"] == expected
    assert document["evidence"]["pathFilter"] == sorted(
        p.strip() for p in paths.split(",") if p.strip()
    )


def test_equals_form_and_base(repo: Repo) -> None:
    repo.commit("second")
    repo.write("README.md", "# third\n")
    code, document = run_cli(f"--repo={repo.path}", "--base=HEAD~1", "--paths=README.md")
    assert code == 0
    expected, _ = reference_evidence(repo.path, "HEAD~1", "README.md")
    assert document["evidence"] == expected


def test_repo_defaults_to_the_toplevel_of_the_cwd(repo: Repo) -> None:
    code, document = run_cli(cwd=repo.path / "dir with space")
    assert code == 0
    expected, _ = reference_evidence(repo.path)
    assert document["evidence"] == expected


def test_a_subdirectory_as_repo_means_its_toplevel(repo: Repo) -> None:
    code, document = run_cli("--repo", str(repo.path / "dir with space"))
    assert code == 0
    assert document["evidence"] == reference_evidence(repo.path)[0]


def test_not_a_git_directory(tmp_path: Path) -> None:
    plain = tmp_path / "not a repo"
    plain.mkdir()
    code, document = run_cli("--repo", str(plain))
    assert code == 1
    assert document["ok"] is False
    assert document["error"].startswith("--repo:")
    assert list(plain.iterdir()) == []


def test_missing_directory(tmp_path: Path) -> None:
    code, document = run_cli("--repo", str(tmp_path / "nope"))
    assert code == 1
    assert "--repo" in document["error"]


@pytest.mark.parametrize("base", ["no-such-ref", "--oops", " "])
def test_bad_base_names_the_flag(repo: Repo, base: str) -> None:
    code, document = run_cli("--repo", str(repo.path), f"--base={base}")
    assert code == 1
    assert document["ok"] is False
    assert document["error"].startswith("--base:")


def test_unknown_option_is_a_usage_error(repo: Repo) -> None:
    code, document = run_cli("--repo", str(repo.path), "--bogus")
    assert code == 1
    assert document["ok"] is False


def test_writes_nothing(repo: Repo) -> None:
    def state() -> dict[str, tuple[int, int]]:
        seen = {}
        for dirpath, _dirs, files in os.walk(repo.path):
            for name in files:
                st = os.lstat(os.path.join(dirpath, name))
                seen[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
        return seen

    before = state()
    code, _ = run_cli("--repo", str(repo.path))
    assert code == 0
    assert state() == before
    assert not (repo.path / ".review-handoff").exists()


def test_help_lists_the_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "review_loop", "help"], capture_output=True, timeout=60
    )
    assert result.returncode == 0
    usage = json.loads(result.stdout)["usage"]
    assert "review-loop evidence [--repo DIR] [--base REF] [--paths a,b]" in usage
