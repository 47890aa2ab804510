"""Contract tests: the reviewed tree is read and written through no link, never in .git.

``review_loop.orchestrator.handoff.tree_files`` is the one primitive every read of the reviewed
repository for a prompt, digest or record and every applied edit goes through. Each case
plants what a pull request (a committed link) or a local agent (a FIFO, a device, a big
file) can plant, and checks the refusal names the path and why, and that nothing outside
the repository, and nothing of git's own, was read or written.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from review_loop.orchestrator.handoff.tree_files import (
    TreeFileRefusedError,
    git_identities,
    read_repo_file,
    read_tree_file,
    remove_tree_file,
    write_tree_file,
)

CANARY = "canary-outside-5e1f0a"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "skills" / "x").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "skills" / "x" / "SKILL.md").write_text("a skill\n")
    return repo


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "secret.txt"
    victim.parent.mkdir()
    victim.write_text(f"{CANARY}\n")
    return victim


def refused(repo: Path, relative: str) -> TreeFileRefusedError:
    with pytest.raises(TreeFileRefusedError) as caught:
        read_tree_file(repo, relative)
    assert caught.value.path == relative
    assert caught.value.to_json() == {"path": relative, "reason": caught.value.reason}
    assert CANARY not in str(caught.value)
    return caught.value


# -- reads -------------------------------------------------------------------------------


def test_a_regular_file_is_read(repo: Path) -> None:
    assert read_tree_file(repo, "skills/x/SKILL.md") == b"a skill\n"
    assert read_repo_file(repo, repo / "skills" / "x" / "SKILL.md") == b"a skill\n"
    assert read_repo_file(repo, Path("skills/x/SKILL.md")) == b"a skill\n"


def test_a_link_out_of_the_repository_is_refused_naming_it(repo: Path, outside: Path) -> None:
    link = repo / "skills" / "x" / "SKILL.md"
    link.unlink()
    link.symlink_to(outside)
    error = refused(repo, "skills/x/SKILL.md")
    assert error.kind == "link"
    assert f"skills/x/SKILL.md is a symbolic link (to {outside})" in error.reason


def test_a_link_inside_the_repository_is_refused_too(repo: Path) -> None:
    (repo / "real.md").write_text("in tree\n")
    (repo / "alias.md").symlink_to("real.md")
    assert refused(repo, "alias.md").kind == "link"


def test_a_dangling_link_is_refused(repo: Path) -> None:
    (repo / "dangling.md").symlink_to("no-such-file")
    assert refused(repo, "dangling.md").kind == "link"


def test_a_linked_directory_on_the_way_is_refused(repo: Path, outside: Path) -> None:
    (repo / "linked").symlink_to(outside.parent)
    error = refused(repo, "linked/secret.txt")
    assert error.kind == "link" and error.reason.startswith("linked is a symbolic link")


def test_proc_self_environ_is_never_read(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANARY_ENV_SECRET", CANARY)
    (repo / "env.md").symlink_to("/proc/self/environ")
    assert refused(repo, "env.md").kind == "link"


def test_a_file_of_proc_is_refused_by_its_device(tmp_path: Path) -> None:
    # a repository at / (or one holding a proc mount) reaches /proc with no link at all
    assert refused(Path("/proc"), "self/status").kind in ("link", "pseudo")
    assert refused(Path("/proc"), "version").kind == "pseudo"


def test_a_fifo_is_refused_without_waiting_for_a_writer(repo: Path) -> None:
    os.mkfifo(repo / "pipe.md")
    error = refused(repo, "pipe.md")
    assert (error.kind, error.reason) == ("special", "not a regular file (a FIFO)")


def test_a_device_is_refused_without_opening_it(repo: Path) -> None:
    # /dev/null stands in for any device: a link to it is a link; the node itself is
    # reached with no link from a repository at /dev
    assert refused(Path("/dev"), "null").reason == "not a regular file (a character device)"


def test_a_socket_is_refused(repo: Path) -> None:
    import socket

    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(repo / "sock"))
        assert refused(repo, "sock").reason == "not a regular file (a socket)"


def test_a_directory_is_refused(repo: Path) -> None:
    assert refused(repo, "skills/x").kind == "directory"


def test_a_file_over_the_limit_is_refused_never_cut(repo: Path) -> None:
    (repo / "big.md").write_bytes(b"x" * 101)
    with pytest.raises(TreeFileRefusedError) as caught:
        read_tree_file(repo, "big.md", limit=100)
    assert caught.value.kind == "too-large" and "larger than 100 bytes (101)" in caught.value.reason
    assert read_tree_file(repo, "big.md", limit=101) == b"x" * 101


@pytest.mark.parametrize("relative", [".git/config", "sub/.git/config", ".GIT/config", ".git"])
def test_git_files_are_never_read(repo: Path, relative: str) -> None:
    assert refused(repo, relative).kind == "git"


@pytest.mark.parametrize("relative", ["", "/etc/passwd", "../outside", "a/../b", "a//b", "./a"])
def test_a_path_that_is_not_plainly_inside_is_refused(repo: Path, relative: str) -> None:
    assert refused(repo, relative).kind == "name"


def test_an_absolute_path_outside_the_repository_is_refused(repo: Path, outside: Path) -> None:
    with pytest.raises(TreeFileRefusedError) as caught:
        read_repo_file(repo, outside)
    assert caught.value.kind == "outside"
    with pytest.raises(TreeFileRefusedError):
        read_repo_file(repo, Path("skills/../../outside/secret.txt"))


def test_a_missing_file_is_file_not_found(repo: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_tree_file(repo, "skills/none.md")
    with pytest.raises(FileNotFoundError):
        read_tree_file(repo, "skills/x/SKILL.md/below")


# -- writes ------------------------------------------------------------------------------


def protected(repo: Path) -> frozenset[tuple[int, int]]:
    return git_identities([repo / ".git"])


def test_a_write_replaces_the_file_keeping_its_mode(repo: Path) -> None:
    skill = repo / "skills" / "x" / "SKILL.md"
    skill.chmod(0o755)
    write_tree_file(repo, "skills/x/SKILL.md", b"new\n", protected=protected(repo))
    assert skill.read_bytes() == b"new\n"
    assert stat.S_IMODE(skill.stat().st_mode) == 0o755
    assert sorted(p.name for p in skill.parent.iterdir()) == ["SKILL.md"]  # no temp file left


def test_a_write_through_a_link_to_git_config_leaves_it_byte_identical(repo: Path) -> None:
    config = repo / ".git" / "config"
    before = config.read_bytes()
    skill = repo / "skills" / "x" / "SKILL.md"
    skill.unlink()
    skill.symlink_to("../../.git/config")
    with pytest.raises(TreeFileRefusedError) as caught:
        write_tree_file(repo, "skills/x/SKILL.md", b"[core]\n\tfsmonitor = x\n")
    assert caught.value.kind == "link"
    assert config.read_bytes() == before
    assert skill.is_symlink()


def test_a_write_through_a_link_out_of_the_repository_is_refused(repo: Path, outside: Path) -> None:
    (repo / "linked").symlink_to(outside.parent)
    with pytest.raises(TreeFileRefusedError):
        write_tree_file(repo, "linked/secret.txt", b"overwritten\n")
    (repo / "file.md").symlink_to(outside)
    with pytest.raises(TreeFileRefusedError):
        write_tree_file(repo, "file.md", b"overwritten\n")
    assert outside.read_text() == f"{CANARY}\n"
    assert sorted(p.name for p in outside.parent.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("relative", [".git/config", ".git/hooks/pre-commit", "a/.Git/x"])
def test_a_write_under_git_is_refused(repo: Path, relative: str) -> None:
    before = (repo / ".git" / "config").read_bytes()
    with pytest.raises(TreeFileRefusedError) as caught:
        write_tree_file(repo, relative, b"x")
    assert caught.value.kind == "git"
    assert (repo / ".git" / "config").read_bytes() == before


def test_a_write_into_the_git_dir_under_another_name_is_refused(tmp_path: Path) -> None:
    # a work tree whose git dir lies inside it under another name (--separate-git-dir)
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(
        ["git", "init", "-q", "--separate-git-dir", str(work / "gitdir"), str(work)], check=True
    )
    before = (work / "gitdir" / "config").read_bytes()
    with pytest.raises(TreeFileRefusedError) as caught:
        write_tree_file(work, "gitdir/config", b"x", protected=git_identities([work / "gitdir"]))
    assert caught.value.kind == "git" and "gitdir is the git directory" in caught.value.reason
    assert (work / "gitdir" / "config").read_bytes() == before


def test_a_write_over_a_fifo_or_directory_is_refused(repo: Path) -> None:
    os.mkfifo(repo / "pipe.md")
    with pytest.raises(TreeFileRefusedError):
        write_tree_file(repo, "pipe.md", b"x")
    with pytest.raises(TreeFileRefusedError):
        write_tree_file(repo, "skills/x", b"x")
    assert stat.S_ISFIFO(os.lstat(repo / "pipe.md").st_mode)


def test_a_hard_links_other_name_keeps_its_content(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-name"
    os.link(repo / "skills" / "x" / "SKILL.md", other)
    write_tree_file(repo, "skills/x/SKILL.md", b"new\n")
    assert other.read_text() == "a skill\n"


def test_remove_refuses_a_link_and_leaves_its_target(repo: Path, outside: Path) -> None:
    (repo / "linked").symlink_to(outside.parent)
    with pytest.raises(TreeFileRefusedError):
        remove_tree_file(repo, "linked/secret.txt")
    assert outside.exists()
    remove_tree_file(repo, "skills/x/SKILL.md")
    remove_tree_file(repo, "skills/x/SKILL.md")  # missing is fine
    assert not (repo / "skills" / "x" / "SKILL.md").exists()


def test_a_file_that_grows_past_the_limit_while_read_is_refused() -> None:
    # the size checked before the read can be out of date (a file still being written):
    # the read itself stops past the limit. A pipe stands in for the growing file.
    from review_loop.orchestrator.handoff.tree_files import _read_bounded

    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"x" * 20)
        os.close(write_end)
        with pytest.raises(TreeFileRefusedError) as caught:
            _read_bounded(read_end, "growing.md", 10)
        assert caught.value.kind == "too-large"
    finally:
        os.close(read_end)
