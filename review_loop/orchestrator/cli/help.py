"""``review-loop help``: JSON usage. Spawns nothing, writes nothing."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop help"]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """``help`` takes no options; everything after it is ignored."""
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Collect every command's usage lines."""
    from review_loop.orchestrator.cli import COMMANDS, load_command
    from review_loop.prefs import DEFAULT_GRACE_MS, DEFAULT_ORDER, DEFAULT_TIMEOUT_MS

    usage: list[str] = []
    for name in COMMANDS:
        usage.extend(load_command(name).USAGE)
    return {
        "ok": True,
        "usage": usage,
        "commands": list(COMMANDS),
        "defaults": {
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
