"""``review-loop help``: JSON usage. Spawns nothing, writes nothing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

USAGE = ["review-loop help"]
OUTPUT = "json"
AUTO_LOOP = "single visible Fixer; headless read-only Reviewer; zero mid-loop human"
# Verbs of the original's older protocol; neither it nor review-loop has them.
REMOVED = [
    "open/bind/next/wait/append-eof/complete/board/resolve/gate/disarm/blind-submit/h1-probe",
    "removed in the original's auto-loop v2; use run, fix-completion and close",
]


def configure(parser: argparse.ArgumentParser) -> None:
    """``help`` takes no options; everything after it is ignored."""
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Collect every command's usage lines."""
    from review_loop.adapters import product_names
    from review_loop.agents.constants import DEFAULT_ROUNDS
    from review_loop.orchestrator.cli import COMMANDS, load_command
    from review_loop.prefs import DEFAULT_GRACE_MS, DEFAULT_ORDER, DEFAULT_TIMEOUT_MS

    usage: list[str] = []
    for name in COMMANDS:
        usage.extend(load_command(name).USAGE)
    return {
        "ok": True,
        # The original's keys (docs/compatibility.md): where the launcher lives, the mode,
        # the verbs the original removed (still unknown commands here).
        "skillScriptsDir": str(Path(sys.argv[0]).resolve().parent),
        "mode": "auto-loop",
        "usage": usage,
        "removed": REMOVED,
        "commands": list(COMMANDS),
        "defaults": {
            "autoLoop": AUTO_LOOP,
            "reviewer": "|".join(product_names()),
            "rounds": DEFAULT_ROUNDS,
            # run --completion: PASS_WITH_CONCERNS waits for the user, as the original
            "completion": "review (PASS_WITH_CONCERNS waits for the user; pass: fix them)",
            "reviewerOrder": ",".join(DEFAULT_ORDER),
            "reviewerTimeout": f"{DEFAULT_TIMEOUT_MS // 60000} minutes "
            "(REVIEW_LOOP_TIMEOUT_MS override)",
            "terminationGrace": f"{DEFAULT_GRACE_MS} ms between SIGTERM and SIGKILL",
            "reviewerProgress": "every 30 seconds on stderr while a reviewer runs",
            "sandbox": "every reviewer runs read-only; no flag turns that off",
            "stateHome": "REVIEW_LOOP_HOME (default: $XDG_CONFIG_HOME/review-loop)",
        },
        "exitCodes": {"0": "success", "2": "result ok:false", "1": "usage error or crash"},
    }
