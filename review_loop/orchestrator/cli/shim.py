"""``review-loop shim spx --dir DIR``: an opt-in ``spx`` launcher that is review-loop.

Writes ``DIR/spx`` and nothing else; never replaces a file and never shadows another spx on
PATH without ``--allow-shadow`` (:mod:`review_loop.orchestrator.cli.spx_launcher`,
docs/compatibility.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop shim spx --dir DIR [--allow-shadow]   (writes DIR/spx; never overwrites)"]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """``shim NAME --dir DIR [--allow-shadow]``."""
    parser.add_argument("name")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--allow-shadow", action="store_true")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Install the launcher."""
    from review_loop.orchestrator.cli.spx_launcher import install_shim

    return install_shim(args.name, args.dir, allow_shadow=args.allow_shadow)
