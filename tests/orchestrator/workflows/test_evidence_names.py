"""Contract tests: a path whose name is not UTF-8 is in the digest, by its bytes.

The original decodes every name git lists as UTF-8 with U+FFFD; a name that is not UTF-8
then names no file (``lstat`` fails, the pathspec matches nothing) and its content is in
neither the diff nor the digest. Here such a path gets a chunk of its own (git's diff of
that path given as its bytes, ``core.quotePath`` on, full blob ids) and is listed C-quoted.
Everything else stays byte-equal to the original: the texts below are the oracle's
(:func:`tests.orchestrator.workflows.test_evidence.reference_evidence`) with exactly that chunk
added.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from review_loop.orchestrator.workflows.evidence import snapshot_evidence
from tests.orchestrator.workflows.test_evidence import Repo, reference_evidence
from tests.orchestrator.workflows.test_evidence import (
    isolated_git as isolated_git,  # autouse fixture
)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path / "repo")
    made.write("README.md", "# readme\n")
    made.write("src/app.py", "print('hi')\n")
    made.commit("init")
    return made


def exact_chunk(repo: Repo, *args: str | bytes) -> str:
    """git's own output for the added chunk, rstripped as every chunk is."""
    argv = [b"git", b"-c", b"core.quotePath=true", *(os.fsencode(a) for a in args)]
    done = subprocess.run(argv, cwd=repo.path, capture_output=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.decode("utf-8", "replace").rstrip()


def digest_of(repo: Repo) -> str:
    return snapshot_evidence(repo.path).evidence.digest


def test_path_name_quotes_only_names_that_are_not_utf8() -> None:
    from review_loop.orchestrator.workflows.evidence import path_name

    assert path_name('日本 "x".py'.encode()) == '日本 "x".py'  # as the original lists it
    assert path_name(b"evil\xff.py") == '"evil\\377.py"'
    assert path_name(b'\xc3\xa9\xff\n"\\') == '"\\303\\251\\377\\n\\"\\\\"'


def test_untracked_name_that_is_not_utf8(repo: Repo) -> None:
    repo.write(b"latin-\xe9-name", "x\n")
    repo.write(b"ok", "y\n")
    expected, oracle_text = reference_evidence(repo.path)
    added = exact_chunk(
        repo, "diff", "--no-index", "--full-index", "--", "/dev/null", b"latin-\xe9-name"
    )
    assert added.startswith('diff --git "a/latin-\\351-name" "b/latin-\\351-name"\n')
    snap = snapshot_evidence(repo.path, keep_text=True)
    # git lists latin-\xe9-name before ok: its chunk comes first, the rest is the original's
    assert snap.diff_text == added + "\n\n" + oracle_text
    assert snap.evidence.digest == hashlib.sha256(snap.diff_text.encode()).hexdigest()
    assert snap.evidence.coveredPaths == ['"latin-\\351-name"', "ok"]
    assert expected["coveredPaths"] == ["latin-\ufffd-name", "ok"]  # the original's listing
    exact = snapshot_evidence(repo.path, keep_text=True, fast=False)
    assert exact.diff_text == snap.diff_text


@pytest.mark.parametrize("content", [b"y\n", b"\xff\n", b"\x00binary", b""])
def test_its_content_and_its_name_change_the_digest(repo: Repo, content: bytes) -> None:
    repo.write(b"evil\xff.py", b"x\n")
    before = digest_of(repo)
    repo.write(b"evil\xff.py", content)
    swapped = digest_of(repo)
    assert swapped != before
    # The same content under a name that decodes to the same text (evil\ufffd.py).
    root = os.fsencode(repo.path)
    os.rename(os.path.join(root, b"evil\xff.py"), os.path.join(root, b"evil\xfe.py"))
    assert digest_of(repo) not in (before, swapped)


def test_invalid_bytes_in_content_are_bound_by_the_full_blob_id(repo: Repo) -> None:
    # Both contents decode to the same text; the chunk's full blob id tells them apart.
    repo.write(b"evil\xff.py", b"\xfe\n")
    first = digest_of(repo)
    repo.write(b"evil\xff.py", b"\xfd\n")
    assert digest_of(repo) != first


def test_symlink_whose_name_is_not_utf8(repo: Repo) -> None:
    repo.symlink(b"link\xff", b"target\xfe")
    snap = snapshot_evidence(repo.path, keep_text=True)
    assert snap.diff_text == (
        "review-evidence untracked-symlink-v1\npath-bytes 5\n"
        '"\\"link\\\\377\\""\ntarget-bytes 7\n"\\"target\\\\376\\""\n'
    )
    assert snap.evidence.coveredPaths == ['"link\\377"']


def test_tracked_name_that_is_not_utf8(repo: Repo) -> None:
    repo.write(b"bad-\xff.txt", "before\n")
    repo.commit("bad name")
    repo.write(b"bad-\xff.txt", "after\n")
    repo.write("fine.txt", "x\n")
    _, oracle_text = reference_evidence(repo.path)
    assert "after" not in oracle_text  # the original's pathspec bad-\ufffd.txt matched nothing
    snap = snapshot_evidence(repo.path, keep_text=True)
    assert snap.stats.tracked_mode == "exact"
    added = exact_chunk(
        repo, "--literal-pathspecs", "diff", "--full-index", "HEAD", "--", b"bad-\xff.txt"
    )
    assert "+after" in added
    # The tracked chunk (the original's: empty here), this path's chunk, then the untracked.
    assert snap.diff_text == added + "\n\n" + oracle_text
    assert snap.evidence.coveredPaths == ['"bad-\\377.txt"', "fine.txt"]
    assert snapshot_evidence(repo.path, keep_text=True, fast=False).diff_text == snap.diff_text
    before = snap.evidence.digest
    repo.write(b"bad-\xff.txt", "swapped\n")
    assert digest_of(repo) != before


def test_a_tree_of_utf8_names_is_unchanged(repo: Repo) -> None:
    repo.write("plain.py", "x\n")
    repo.write("src/app.py", "changed\n")
    expected, oracle_text = reference_evidence(repo.path)
    snap = snapshot_evidence(repo.path, keep_text=True)
    assert snap.diff_text == oracle_text
    assert snap.evidence.model_dump() == expected


def test_a_summarised_prompt_names_it_as_covered_paths_does(repo: Repo) -> None:
    from review_loop.agents.review_prompt import diff_view, split_diff

    repo.write(b"evil\xff.py", "x\n")
    repo.write("src/app.py", "changed\n")
    snap = snapshot_evidence(repo.path, keep_text=True)
    assert snap.diff_text is not None
    covered = snap.evidence.coveredPaths
    assert [chunk.path for chunk in split_diff(snap.diff_text)] == ["src/app.py", covered[0]]
    view = diff_view(snap.diff_text, covered, budget=10)  # nothing fits: every path named
    assert sorted(view.summarised) == sorted(covered) == ['"evil\\377.py"', "src/app.py"]
    assert '"evil\\377.py"' in view.text
