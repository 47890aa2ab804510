"""Running a real CLI from an e2e test: bounded in time, never leaving a process behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Ran:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.argv)}\nrc={self.returncode} after {self.seconds:.1f}s\n"
            f"--- stdout (tail)\n{self.stdout[-3000:]}\n--- stderr (tail)\n{self.stderr[-3000:]}"
        )

    def json(self) -> Any:
        """stdout as one JSON document."""
        try:
            return json.loads(self.stdout)
        except ValueError:
            pytest.fail(f"stdout is not one JSON document\n{self.describe()}")

    def stderr_json(self) -> Any:
        """stderr's JSON document (gemini reports errors there, after warning lines)."""
        text = "\n" + self.stderr
        start = text.rfind("\n{")  # the last top-level object; stack dumps come before it
        try:
            return json.loads(text[start:]) if start >= 0 else None
        except ValueError:
            pytest.fail(f"stderr holds no JSON document\n{self.describe()}")

    def jsonl(self) -> list[Any]:
        """stdout as JSON lines (non-JSON lines are skipped)."""
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run(
    argv: Sequence[str | Path],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdin: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Ran:
    """Run ``argv`` in its own session; on timeout kill its whole process group and fail.

    Without ``stdin`` the child gets /dev/null (claude waits 3 s on a silent open pipe).
    """
    args = [str(a) for a in argv]
    started = time.monotonic()
    proc = subprocess.Popen(
        args,
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate()
        ran = Ran(args, proc.returncode, out, err, time.monotonic() - started)
        pytest.fail(f"timed out after {timeout}s; process group killed\n{ran.describe()}")
    except BaseException:
        kill_group(proc.pid)
        proc.communicate()
        raise
    return Ran(args, proc.returncode, out, err, time.monotonic() - started)
