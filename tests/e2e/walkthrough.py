"""The host agent of the seed walkthroughs: runs each command as a host would type it.

Every command is the installed console script (``review-loop``, or the ``spx`` launcher
``review-loop shim spx`` writes) started as a real process, with the fake reviewer CLIs
first on PATH (``tests.fakes``). A walkthrough stops at the first non-zero exit where its
seed says to stop: :meth:`Host.ok` fails the test there, naming the command and its stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes import FakeCLIs

REVIEW_LOOP = Path(sys.executable).with_name("review-loop")


@dataclass
class Done:
    """One command as it ended: its exit code, stdout and stderr."""

    argv: list[str]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        """The command's one JSON document (the last line for spx's compact form)."""
        return json.loads(self.out)


class Host:
    """Runs the commands of a seed in ``cwd``, each a process of its own, in order."""

    def __init__(self, fakes: FakeCLIs, cwd: Path, extra_path: Path | None = None) -> None:
        self.fakes = fakes
        self.cwd = cwd
        self.env = fakes.env()
        if extra_path is not None:
            self.env["PATH"] = f"{extra_path}:{self.env['PATH']}"
        self.history: list[Done] = []

    def run(self, *argv: str, stdin: str | None = None) -> Done:
        """Run ``argv`` (``review-loop …`` means the console script) and record it."""
        command = [str(REVIEW_LOOP), *argv[1:]] if argv[0] == "review-loop" else list(argv)
        done = subprocess.run(
            command,
            cwd=self.cwd,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
        )
        result = Done(list(argv), done.returncode, done.stdout, done.stderr)
        self.history.append(result)
        return result

    def ok(self, *argv: str, stdin: str | None = None) -> Done:
        """Run ``argv``; a non-zero exit stops the walkthrough (the seed's rule)."""
        done = self.run(*argv, stdin=stdin)
        assert done.code == 0, f"{' '.join(argv)} exited {done.code}:\n{done.err[-3000:]}"
        return done
