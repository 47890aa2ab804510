"""A real pseudo-terminal for process tests: a shell command line run as a person runs it.

:func:`on_terminal` starts ``bash -c COMMAND`` as the session leader of a new pseudo-terminal
that is its controlling terminal (the terminal's foreground process group is the shell's, as
for a command typed at a prompt), with stdin, stdout and stderr on the terminal unless the
command line redirects them. It returns the exit code and every byte the terminal received;
:func:`screen` replays those bytes through a terminal emulator (pyte) and returns what a
person would see, one string per row.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping
from pathlib import Path

import pyte

COLUMNS = 120
ROWS = 200  # tall enough that nothing scrolls off: the whole session stays on screen

# Run by the child before the shell: make the new session's terminal its controlling one.
_LAUNCHER = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def open_terminal() -> tuple[int, int]:
    """A new pseudo-terminal of :data:`COLUMNS` x :data:`ROWS`: ``(master, slave)``."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    return master, slave


def controlling(argv: list[str]) -> list[str]:
    """``argv`` run with its stdin's terminal as its controlling terminal (the process is
    the same: the launcher execs it). Start it with ``start_new_session=True``."""
    return [sys.executable, "-c", _LAUNCHER, *argv]


def on_terminal(
    command: str, *, cwd: Path, env: Mapping[str, str], timeout: float = 120
) -> tuple[int, bytes]:
    """Run ``bash -c command`` on a fresh pseudo-terminal; its exit code and the bytes shown."""
    master, slave = open_terminal()
    full_env = dict(env)
    full_env.update({"TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)})
    try:
        proc = subprocess.Popen(
            controlling(["bash", "--norc", "--noprofile", "-c", command]),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=full_env,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:  # drain the terminal while the command runs (a full pty would block it)
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end is gone
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, b"".join(chunks)


def screen(data: bytes) -> list[str]:
    """The rows a person sees after the terminal received ``data`` (trailing blanks cut)."""
    emulator = pyte.Screen(COLUMNS, ROWS)
    pyte.ByteStream(emulator).feed(data)
    rows = [row.rstrip() for row in emulator.display]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def contains_block(rows: list[str], block: list[str]) -> bool:
    """Whether ``block`` stands on the screen whole: consecutive rows, in order."""
    return any(rows[start : start + len(block)] == block for start in range(len(rows)))
