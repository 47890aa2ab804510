"""``review-loop close``: archive a PASS_WITH_CONCERNS packet the user accepted."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop close [--repo DIR] --packet P --reason accept-concerns"]
OUTPUT = "json"
IGNORES_UNKNOWN = True  # as the original: a word it does not know is ignored (and said)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare close's options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--packet", "--packet-path", dest="packet")
    parser.add_argument("--reason")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Append the Decision Closure and archive."""
    from review_loop.agents.errors import InputError
    from review_loop.orchestrator.cli.common import repo_from
    from review_loop.orchestrator.workflows.review_run import close_packet

    if not args.packet:
        raise InputError("--packet", "required", "the packet path or id")
    if args.reason is None:
        raise InputError("--reason", "required", "accept-concerns")
    return close_packet(repo_from(args), args.packet, args.reason)
