"""``review-loop shim spx --dir DIR``: an opt-in ``spx`` launcher that is review-loop.

``shim resolve_scope --dir DIR`` writes ``DIR/scripts/resolve_scope.py``, the resolver the
audit seed runs from its skill directory, so a host following the seed literally (with
``CLAUDE_SKILL_DIR=DIR``) runs ``review-loop scope resolve``.

``shim spx`` writes ``DIR/spx`` and nothing else; never replaces a file and never shadows
another spx on PATH without ``--allow-shadow``
(:mod:`review_loop.orchestrator.cli.spx_launcher`, docs/compatibility.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = [
    "review-loop shim spx --dir DIR [--allow-shadow]   (writes DIR/spx; never overwrites)",
    "review-loop shim resolve_scope --dir DIR   (writes DIR/scripts/resolve_scope.py, the "
    "audit seed's resolver, for CLAUDE_SKILL_DIR=DIR: it runs review-loop scope resolve)",
]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """``shim NAME --dir DIR [--allow-shadow]``."""
    parser.add_argument("name")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--allow-shadow", action="store_true")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Install the launcher (or the audit seed's resolver script)."""
    from review_loop.orchestrator.cli.spx_launcher import RESOLVER, install_resolver, install_shim

    if args.name in (RESOLVER, f"{RESOLVER}.py"):
        return install_resolver(args.dir)
    return install_shim(args.name, args.dir, allow_shadow=args.allow_shadow)
