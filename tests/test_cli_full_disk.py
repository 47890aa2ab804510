"""Process tests: the commands that write one user file leave nothing half-written on a full disk.

``review-loop shim spx`` and ``review-loop lessons write`` run as real processes whose every
file write fails (``RLIMIT_FSIZE`` of 0, ``SIGXFSZ`` ignored: ``EFBIG`` on the first byte,
as a full disk's ``ENOSPC`` would be). Each must exit 1 with one JSON document naming the
file it could not write, and leave the target directory exactly as it was: no partial
file, no temp file.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path


def _no_file_may_grow() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def review_loop_on_a_full_disk(tmp_path: Path, *argv: str) -> tuple[int, dict[str, object]]:
    env = {
        **os.environ,
        "REVIEW_LOOP_HOME": str(tmp_path / "home"),
        "AGENT_LESSONS_DIR": str(tmp_path / "lessons"),
    }
    command = [sys.executable, "-m", "review_loop", *argv]
    limits = {"preexec_fn": _no_file_may_grow, "timeout": 120}
    done = subprocess.run(command, env=env, capture_output=True, text=True, **limits)  # type: ignore[call-overload]
    document: dict[str, object] = json.loads(done.stdout)
    return done.returncode, document


def test_process_shim_on_a_full_disk_names_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    shims = tmp_path / "bin"
    shims.mkdir()
    code, doc = review_loop_on_a_full_disk(
        tmp_path, "shim", "spx", "--dir", str(shims), "--allow-shadow"
    )
    assert code == 1 and doc["ok"] is False, doc
    assert str(shims / "spx") in str(doc["error"]) and "File too large" in str(doc["error"])
    assert list(shims.iterdir()) == []


def test_process_lessons_write_on_a_full_disk_names_the_file_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    argv = ("lessons", "write", "--slug", "s1", "--cue", "c", "--lesson", "l", "--evidence", "e")
    code, doc = review_loop_on_a_full_disk(tmp_path, *argv)
    assert code == 1 and doc["ok"] is False, doc
    folder = tmp_path / "lessons" / "task-completion-loop"
    assert str(folder / "s1.md") in str(doc["error"])
    assert list(folder.iterdir()) == []
