"""Record the originals' REAL outputs on the surface scenarios as golden files (run by hand).

    python -m tests.differential.record_surface --spx /path/to/spx/bin/spx.js [NAME ...]
    python -m tests.differential.record_surface --rl /path/to/review-loop.mjs [NAME ...]

``--spx`` plays :mod:`tests.differential.spx_surface` against spx 0.6.25 (built as
:mod:`tests.differential.record_spx` says) into ``golden/spx_surface/<scenario>.json``;
``--rl`` plays :mod:`tests.differential.rl_surface` against the original Node
``review-loop`` (fetched by ``scripts/fetch-original``) into
``golden/rl_surface/<scenario>.json``. Without names every scenario is recorded; with names
only those (one file per scenario, the others are kept). CI never runs
this: the tests compare review-loop against the files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.differential import record_spx, spx_surface
from tests.differential.scenarios import GOLDEN
from tests.differential.spx_scenarios import play

SPX_GOLDEN = GOLDEN / "spx_surface"


def _node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()


def record_spx_surface(spx: Path, names: list[str]) -> None:
    """Play the spx surface scenarios against the real spx at ``spx``, one file each."""
    version = subprocess.run(["node", str(spx), "--version"], capture_output=True, text=True)
    SPX_GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in names or list(spx_surface.SCENARIOS):
        with tempfile.TemporaryDirectory() as work:
            home = Path(work) / "home"
            home.mkdir()
            invoke = record_spx._invoker(spx, home)
            steps = play(name, invoke, Path(work) / "run", spx_surface.SCENARIOS)
        recorded = {
            "original": record_spx.ORIGIN,
            "spx": version.stdout.strip(),
            "node": _node_version(),
            "steps": steps,
        }
        path = SPX_GOLDEN / f"{name}.json"
        path.write_text(json.dumps(recorded, indent=2, ensure_ascii=False) + "\n")
        print(name, [step["exit"] for step in steps], file=sys.stderr)


def record_rl_surface(script: Path, names: list[str]) -> None:
    """Play the review-loop surface scenarios against the original at ``script``."""
    from tests.differential import rl_surface

    out = rl_surface.GOLDEN_DIR
    out.mkdir(parents=True, exist_ok=True)
    for scenario in rl_surface.SCENARIOS:
        if names and scenario.name not in names:
            continue
        with tempfile.TemporaryDirectory() as work:
            steps = rl_surface.play(scenario, rl_surface.node_invoker(script), Path(work))
        recorded = {
            "original": rl_surface.ORIGIN,
            "node": _node_version(),
            "steps": steps,
        }
        path = out / f"{scenario.name}.json"
        path.write_text(json.dumps(recorded, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
        print(path.name, [step["exit"] for step in steps], file=sys.stderr)


def main(argv: list[str]) -> int:
    """``--spx PATH`` or ``--rl PATH``, then optional scenario names."""
    if len(argv) < 2 or argv[0] not in ("--spx", "--rl"):
        print(__doc__, file=sys.stderr)
        return 1
    target = Path(argv[1]).resolve()
    if argv[0] == "--spx":
        record_spx_surface(target, argv[2:])
    else:
        record_rl_surface(target, argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
