"""Process tests: a signal during the live table gives the terminal back.

``review-loop consult`` runs with stdin and stderr on a pseudo-terminal that is its
controlling terminal and stdout in a file (so the live table of reviewers is on, and hides
the cursor while it redraws: :mod:`review_loop.orchestrator.cli.live`) and one fake
reviewer that hangs.
Once the table shows the reviewer, the command gets SIGINT (Ctrl-C) or SIGTERM. It must
exit 128 + the signal with one JSON document on stdout, and the last thing the table did
to the terminal must be to show the cursor again: the person's shell is not left without
one. (SIGKILL runs no code, so nothing can restore the cursor then; ``reset`` does.)
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import WAIT_S, Scanner, consult_args, one_document
from tests.terminal import controlling, open_terminal

HIDE, SHOW = b"\x1b[?25l", b"\x1b[?25h"


def _read(master: int, chunks: list[bytes], wait: float) -> bool:
    """Read what the terminal has within ``wait`` seconds; False once the child closed it."""
    ready, _, _ = select.select([master], [], [], wait)
    if not ready:
        return True
    try:
        data = os.read(master, 65536)
    except OSError:  # every writer closed its end
        return False
    chunks.append(data)
    return bool(data)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_process_a_signal_during_the_live_table_shows_the_cursor_again(
    sig: signal.Signals,
    repo: Path,
    fakes: FakeCLIs,
    env: dict[str, str],
    scanner: Scanner,
    tmp_path: Path,
) -> None:
    fakes.script(codex=[{"mode": "hang"}])
    env = {key: value for key, value in env.items() if key != "REVIEW_LOOP_PLAIN"}
    env.update({"TERM": "xterm", "COLUMNS": "100"})
    master, slave = open_terminal()
    out = tmp_path / "out.json"
    with out.open("w") as document:
        proc = subprocess.Popen(
            controlling([sys.executable, "-m", "review_loop", *consult_args(repo, "codex")]),
            stdin=slave,
            stdout=document,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
    os.close(slave)
    chunks: list[bytes] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while HIDE not in b"".join(chunks) or b"codex" not in b"".join(chunks):
            assert time.monotonic() < deadline, b"".join(chunks)[-2000:]
            assert _read(master, chunks, 0.5), b"".join(chunks)[-2000:]
        proc.send_signal(sig)
        proc.wait(timeout=WAIT_S)
        while _read(master, chunks, 0.5) and proc.poll() is None:
            pass
        _read(master, chunks, 0.5)  # whatever was left in the terminal's buffer
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        os.close(master)
    terminal = b"".join(chunks)
    assert proc.returncode == 128 + sig, terminal[-2000:]
    assert one_document(out.read_text())["ok"] is False
    assert terminal.rfind(SHOW) > terminal.rfind(HIDE), terminal[-2000:]
    assert b"Traceback" not in terminal, terminal[-2000:]
