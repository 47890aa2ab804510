"""``review-loop doctor``: which reviewers are installed, which version, logged in or not,
and whether this version still has the flags that keep it read-only.

One JSON document on stdout (:func:`review_loop.orchestrator.workflows.doctor.diagnose`);
when stderr (or stdout) is a terminal, a readable table on stderr too, so a person sees it
at a glance — also with the document sent to a file or a pipe — and a program still reads
the document. Exit 0 when at least one reviewer is usable, 2 when
none is (``ok: false``). Works outside a git checkout (then the cwd's skill directories count).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

USAGE = ["review-loop doctor [--repo DIR | --cwd D]"]
OUTPUT = "json"


def configure(parser: argparse.ArgumentParser) -> None:
    """``--repo`` (optional): the checkout whose skill locations count."""
    from review_loop.orchestrator.cli.common import add_repo_option

    add_repo_option(parser)


def _repo(args: argparse.Namespace) -> Any:
    """``--repo``'s (or ``--cwd``'s) top level; without either, the cwd's when it is in a
    checkout, else none (doctor works anywhere)."""
    from review_loop.agents.errors import NotAGitRepositoryError
    from review_loop.orchestrator.cli.common import repo_from

    if args.repo is not None or getattr(args, "cwd", None) is not None:
        return repo_from(args)
    try:
        return repo_from(args)
    except NotAGitRepositoryError:
        return None


def _cell(row: Mapping[str, Any]) -> list[str]:
    login = row.get("login") or {}
    flags = row.get("flags") or {}
    missing = [flag["flag"] for flag in flags.get("missing", [])]
    if "flags" not in row:
        checked = "-"
    elif missing:
        checked = "MISSING " + ",".join(missing)
    elif not flags.get("required"):  # kept read-only otherwise (a copy, its prompt only)
        checked = "none needed" + (" (copy)" if "copy" in str(row.get("readOnly")) else "")
    else:
        checked = "ok"
    usable = "yes" if row["usable"] else "no"
    if row.get("offline"):
        usable += " (offline stand-in)"
    return [
        row["name"],
        row.get("version") or "-",
        login.get("state", "-"),
        checked,
        usable,
        row.get("executable") or "not found",
    ]


def table(document: Mapping[str, Any]) -> str:
    """The document as a person reads it: one line per product, then the lockdown, the
    skills and the reasons a product is not usable."""
    header = ["reviewer", "version", "login", "read-only flags", "usable", "executable"]
    rows = [header, *(_cell(row) for row in document["products"])]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines = [line.rstrip() for line in lines]
    sandbox = document["lockdown"]["reviewerSandbox"]
    lines.append("")
    lines.append(
        "repository-code lockdown (private mount namespace): "
        + ("available" if sandbox["available"] else f"NOT available: {sandbox['why']}")
    )
    found = [skill["name"] for skill in document["skills"] if skill["found"]]
    missing = [skill["name"] for skill in document["skills"] if not skill["found"]]
    lines.append(f"loop skills found: {', '.join(found) or 'none'}")
    if missing:
        lines.append(f"loop skills missing (preflight needs them): {', '.join(missing)}")
    for row in document["products"]:
        if not row["usable"] and row.get("why"):
            lines.append(f"{row['name']}: {row['why']}")
    for row in document["products"]:  # why a found reviewer is not (known to be) logged in
        login = row.get("login") or {}
        if login.get("state") in ("logged-out", "unknown") and login.get("detail"):
            lines.append(f"{row['name']} login {login['state']}: {login['detail']}")
    lines.append(document["message"])
    return "\n".join(lines)


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Probe every product (in parallel), then print the table when stdout is a terminal."""
    from review_loop.orchestrator.cli.common import load_user_prefs
    from review_loop.orchestrator.cli.stops import Stop, run_cancellable
    from review_loop.orchestrator.workflows.doctor import diagnose

    repo = _repo(args)
    prefs = load_user_prefs()

    async def body(stop: Stop) -> Mapping[str, Any]:
        return await diagnose(prefs=prefs, repo=repo)

    document = run_cancellable(body)
    # A person reads stderr: with stdout sent to a file or a pipe (`> doctor.json`,
    # `| jq`), the table is still shown, once, before the document is written.
    if _is_terminal(sys.stderr) or _is_terminal(sys.stdout):
        print(table(document), file=sys.stderr, flush=True)
    return document


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
