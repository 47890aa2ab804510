"""Contract tests: a write by temporary file and rename that fails leaves nothing behind.

The three writers that replace a file through a temporary one (``handoff.files.
atomic_write_bytes``, ``handoff.tree_files.write_tree_file`` and the journal's
``Directory.write_atomic``) share ``handoff.files.replace_by_temp``. When the write fails
(here a real ``EFBIG``: the process's file-size limit is set below the data), the error
reaches the caller, the file keeps its old content and no temporary file is left in its
directory.
"""

from __future__ import annotations

import errno
import resource
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from review_loop.orchestrator.handoff.files import atomic_write_bytes
from review_loop.orchestrator.handoff.tree_files import write_tree_file
from review_loop.orchestrator.journal.dirs import Directory

OLD = b"the old content\n"
NEW = b"x" * 64 * 1024


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Writes past ``limit`` bytes fail with EFBIG (SIGXFSZ ignored meanwhile)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def _handoff(repo: Path) -> None:
    atomic_write_bytes(repo / ".review-handoff" / "state.json", NEW)


def _tree(repo: Path) -> None:
    write_tree_file(repo, "src/a.py", NEW)


def _journal(repo: Path) -> None:
    store = repo / ".review-handoff" / "journal"
    with Directory.open(store, anchor=repo) as directory:
        directory.write_atomic("log.json", NEW)


WRITERS: dict[str, tuple[Callable[[Path], None], str]] = {
    "handoff": (_handoff, ".review-handoff/state.json"),
    "tree": (_tree, "src/a.py"),
    "journal": (_journal, ".review-handoff/journal/log.json"),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_failed_write_keeps_the_file_and_leaves_no_temporary(tmp_path: Path, writer: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write, relative = WRITERS[writer]
    target = repo / relative
    target.parent.mkdir(parents=True)
    target.write_bytes(OLD)
    with file_size_limit(1024), pytest.raises(OSError, match="File too large") as raised:
        write(repo)
    assert raised.value.errno == errno.EFBIG
    assert target.read_bytes() == OLD
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]
