"""Record the REAL spx's ``verification run`` outputs as golden files (run by hand).

    python -m tests.differential.record_spx /path/to/spx/bin/spx.js

spx is outcomeeng/spx 0.6.25 at 5af72b12bb11, built from source outside this repository
(``git archive 5af72b12bb11 | tar -x``; ``pnpm install --frozen-lockfile --ignore-scripts
--config.manage-package-manager-versions=false`` with pnpm 10; ``./node_modules/.bin/tsup``)
and run with ``node`` (20 was used; spx declares >= 24, every verb used here works). Each
scenario of :mod:`tests.differential.spx_scenarios` runs in a fresh git repository with its
own ``HOME``; exit codes, stdout documents and stderr lines are written, normalised, to
``golden/spx/recorded.json``. CI never runs this: the tests compare review-loop against it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.differential import spx_scenarios as sc
from tests.differential.scenarios import GOLDEN

ORIGIN = "outcomeeng/spx@5af72b12bb11 (package 0.6.25), bin/spx.js built with tsup"


def _invoker(spx: Path, home: Path) -> sc.Invoke:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}

    def invoke(argv: list[str], stdin: str | None) -> tuple[int, str, str]:
        done = subprocess.run(
            ["node", str(spx), *argv],
            cwd=home,
            env=env,
            input=stdin or "",
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode, done.stdout, done.stderr

    return invoke


def main(argv: list[str]) -> int:
    """Record every scenario against the spx launcher at ``argv[0]``."""
    spx = Path(argv[0]).resolve()
    version = subprocess.run(["node", str(spx), "--version"], capture_output=True, text=True)
    recorded: dict[str, Any] = {
        "original": ORIGIN,
        "spx": version.stdout.strip(),
        "node": subprocess.run(
            ["node", "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "scenarios": {},
    }
    for name in sc.SCENARIOS:
        with tempfile.TemporaryDirectory() as work:
            home = Path(work) / "home"
            home.mkdir()
            steps = sc.play(name, _invoker(spx, home), Path(work) / "run")
        recorded["scenarios"][name] = steps
        print(name, [step["exit"] for step in steps], file=sys.stderr)
    out = GOLDEN / "spx" / "recorded.json"
    out.write_text(json.dumps(recorded, indent=2, ensure_ascii=False) + "\n")
    print(out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
