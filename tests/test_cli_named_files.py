"""Process tests: a file named on the command line inside the reviewed repository is read
through no link.

The repository commits ``docs/input.md`` as a symbolic link to a file outside it that
holds a canary (a key the user keeps elsewhere). A host that names that path as a
question, a plan, a body, a scenarios file or a driver would send the canary to the
reviewers: each command refuses it, naming the flag and the link, before any reviewer
is asked or anything is written. The real path of the same file (outside the repository)
is the caller's own choice and is read as given; a regular file of the repository is read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.test_cli import git_repo, run_cli

CANARY = "canary-named-file-9a7e21"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    return FakeCLIs(tmp_path / "fakes")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "input.md"
    victim.parent.mkdir()
    victim.write_text(f"Please review. {CANARY}\n")
    return victim


def planted(repo: Path, outside: Path) -> Path:
    link = repo / "docs" / "input.md"
    link.parent.mkdir()
    link.symlink_to(outside)
    return link


COMMANDS = {
    "consult --question-file": ["consult", "--peer", "claude", "--question-file", "{file}"],
    "converge --plan": ["converge", "--plan", "{file}", "--host-position", "{file}"],
    "fix-completion --body-file": ["fix-completion", "--packet", "p", "--body-file", "{file}"],
    "verify-diff --scenarios-file": [
        "verify-diff", "--description", "d", "--fix-direction", "f", "--target", "README",
        "--scenarios-file", "{file}",
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", COMMANDS)
def test_a_link_inside_the_repository_is_refused_naming_the_flag(
    name: str, repo: Path, outside: Path, fakes: FakeCLIs
) -> None:
    link = planted(repo, outside)
    argv = [part.replace("{file}", str(link)) for part in COMMANDS[name]]
    code, doc, stderr = run_cli(argv[0], "--repo", str(repo), *argv[1:], fakes=fakes)
    assert code == 1, (doc, stderr)
    flag = name.split()[1]
    assert doc["error"].startswith(f"{flag}: "), doc
    assert "docs/input.md is a symbolic link" in doc["error"]
    assert CANARY not in f"{doc}{stderr}"
    assert fakes.calls() == []
    assert not (repo / ".review-handoff").exists()


def test_a_relative_path_through_a_linked_directory_is_refused(
    repo: Path, outside: Path, fakes: FakeCLIs
) -> None:
    (repo / "docs").symlink_to(outside.parent)
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "claude", "--question-file", "docs/input.md",
        fakes=fakes, cwd=repo,
    )  # fmt: skip
    assert code == 1 and "docs is a symbolic link" in doc["error"]
    assert fakes.calls() == []


def test_audit_driver_inside_the_repository_is_refused(
    repo: Path, outside: Path, fakes: FakeCLIs
) -> None:
    outside.write_text('{"canary": "' + CANARY + '"}\n')
    link = planted(repo, outside)
    code, doc, _ = run_cli("audit", "HEAD", str(repo), "--driver", str(link), fakes=fakes)
    assert code == 1 and doc["error"].startswith("--driver: ")
    assert "symbolic link" in doc["error"] and CANARY not in str(doc)


def test_the_real_path_outside_is_the_callers_choice(
    repo: Path, outside: Path, fakes: FakeCLIs
) -> None:
    planted(repo, outside)
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "claude", "--question-file", str(outside),
        fakes=fakes,
    )  # fmt: skip
    assert code == 0, doc
    assert CANARY in fakes.calls()[0]["stdin"]


def test_a_regular_file_of_the_repository_is_read(repo: Path, fakes: FakeCLIs) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "q.md").write_text("What about the README?\n")
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "claude", "--question-file", "docs/q.md",
        fakes=fakes, cwd=repo,
    )  # fmt: skip
    assert code == 0, doc
    assert "What about the README?" in fakes.calls()[0]["stdin"]


def test_git_config_named_inside_the_repository_is_refused(repo: Path, fakes: FakeCLIs) -> None:
    config = repo / ".git" / "config"
    code, doc, _ = run_cli(
        "consult", "--repo", str(repo), "--peer", "claude", "--question-file", str(config),
        fakes=fakes,
    )  # fmt: skip
    assert code == 1 and "inside .git/" in doc["error"] and doc["error"].startswith("--question")
    assert fakes.calls() == []
