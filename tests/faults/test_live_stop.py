"""Process tests: a signal during the live table gives the terminal back.

``review-loop consult`` runs with stderr on a pseudo-terminal (so the live table of
reviewers is on, and hides the cursor while it redraws) and one fake reviewer that hangs.
Once the table shows the reviewer, the command gets SIGINT (Ctrl-C) or SIGTERM. It must
exit 128 + the signal with one JSON document on stdout, and the last thing the table did
to the terminal must be to show the cursor again: the person's shell is not left without
one. (SIGKILL runs no code, so nothing can restore the cursor then; ``reset`` does.)
"""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import WAIT_S, Scanner, consult_args, launch, one_document

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
    sig: signal.Signals, repo: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> None:
    fakes.script(codex=[{"mode": "hang"}])
    env = {key: value for key, value in env.items() if key != "REVIEW_LOOP_PLAIN"}
    env.update({"TERM": "xterm", "COLUMNS": "100"})
    master, slave = pty.openpty()
    proc = launch(consult_args(repo, "codex"), env, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while HIDE not in b"".join(chunks) or b"codex" not in b"".join(chunks):
            assert time.monotonic() < deadline, b"".join(chunks)[-2000:]
            assert _read(master, chunks, 0.5), b"".join(chunks)[-2000:]
        proc.send_signal(sig)
        stdout, _ = proc.communicate(timeout=WAIT_S)
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
    assert one_document(stdout)["ok"] is False
    assert terminal.rfind(SHOW) > terminal.rfind(HIDE), terminal[-2000:]
    assert b"Traceback" not in terminal, terminal[-2000:]
