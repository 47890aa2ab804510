"""``review-loop fix-completion``: record the fixer's ``# Fix Completion`` on a packet."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop fix-completion [--repo DIR] --packet P (--body-file F | --body TEXT)"]
OUTPUT = "json"
IGNORES_UNKNOWN = True  # as the original: a word it does not know is ignored (and said)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare fix-completion's options."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)
    parser.add_argument("--packet", "--packet-path", dest="packet")
    parser.add_argument("--body-file", "--bodyFile", dest="body_file")
    parser.add_argument("--body")


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Check the body, then append it under the packet lock."""
    from review_loop.agents.errors import InputError
    from review_loop.agents.review_packet import PacketFormatError
    from review_loop.orchestrator.cli.common import repo_from
    from review_loop.orchestrator.cli.named_files import read_named_text
    from review_loop.orchestrator.workflows.review_run import fix_completion

    if not args.packet:
        raise InputError("--packet", "required", "the packet path or id")
    if (args.body_file is None) == (args.body is None):
        raise InputError("--body-file", "give exactly one of --body-file or --body")
    field = "--body-file" if args.body_file is not None else "--body"
    body = args.body
    if args.body_file is not None:  # inside the repository: read through no link
        body = read_named_text(args.body_file, field, args.repo)
    try:
        return fix_completion(repo_from(args), args.packet, body)
    except PacketFormatError as error:
        raise InputError(field, str(error)) from None
