"""``review-loop scope resolve``: the audit skill's ``resolve_scope.py`` on our journal.

Prints its own output (``json.dumps(..., sort_keys=True)`` on stdout, diagnostics on
stderr) and exits with the resolver's codes: 0 ok/reconciled, 1 unreconciled (or, when
resolving, a refused caller input), 2 command failure, 3 stale base.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

USAGE = [
    "review-loop scope resolve <HEAD|branch|base...head> [--repo <dir>] "
    "[--audit-input <file> --scratch-dir <dir> --output <file>]",
    "review-loop scope resolve <selector> [--repo <dir>] --reconcile-run <token> "
    "--scope-identity <base>..<head>",
]
OUTPUT = "line"


def configure(parser: argparse.ArgumentParser) -> None:
    """``scope resolve SELECTOR`` and its options."""
    verbs = parser.add_subparsers(dest="verb", required=True)
    resolve = verbs.add_parser("resolve", add_help=False, allow_abbrev=False)
    resolve.add_argument("selector")
    resolve.add_argument("--repo", "-C", dest="repo", default=None)
    resolve.add_argument("--audit-input", default=None)
    resolve.add_argument("--scratch-dir", default=None)
    resolve.add_argument("--output", default=None)
    resolve.add_argument("--reconcile-run", default=None)
    resolve.add_argument("--scope-identity", default=None)


def _repo(value: str | None) -> Path:
    from review_loop.orchestrator.handoff.git import repo_root

    return repo_root(value)


def outcome(args: argparse.Namespace) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of one ``scope resolve``."""
    from review_loop.agents.errors import NotAGitRepositoryError
    from review_loop.orchestrator.workflows import scope

    reconciling = args.reconcile_run is not None
    prefix = scope.RECONCILE_PREFIX if reconciling else scope.ERROR_PREFIX
    input_code = scope.EXIT_COMMAND_FAILURE if reconciling else scope.EXIT_INPUT
    if reconciling and args.scope_identity is None:
        return (
            scope.EXIT_COMMAND_FAILURE,
            "",
            f"{prefix}: --reconcile-run requires --scope-identity, the sealed <base>..<head> "
            "the run was started with",
        )
    try:
        repo = _repo(args.repo)
    except NotAGitRepositoryError as error:
        return scope.EXIT_COMMAND_FAILURE, "", f"{prefix}: {error}"
    try:
        scratch = scope._scratch(args.scratch_dir)
        output = scope.check_output(args.output, scratch)
        audit_input = (
            scope.read_audit_input(args.audit_input, scratch)
            if args.audit_input is not None and not reconciling
            else None
        )
    except scope.ScopeInputError as error:
        return input_code, "", f"{prefix}: {error}"
    refused: list[dict[str, str]] = []
    try:
        if reconciling:
            verdict, code = scope.reconcile_run(
                repo, args.selector, args.reconcile_run, args.scope_identity
            )
            text = scope.dump(verdict)
            if output is not None:
                scope.write_output(output, text)
            return code, text, ""
        document = scope.resolve(repo, args.selector, audit_input, refused=refused)
    except scope.StaleBaseError as error:
        return scope.EXIT_STALE_BASE, "", scope.dump(error.diagnostic())
    except scope.RunReadError as error:
        return scope.EXIT_COMMAND_FAILURE, "", f"{scope.RECONCILE_PREFIX}: {error}"
    except scope.ScopeResolutionError as error:
        return scope.EXIT_COMMAND_FAILURE, "", f"{scope.ERROR_PREFIX}: {error}"
    except OSError as error:
        return scope.EXIT_COMMAND_FAILURE, "", f"{prefix}: {error}"
    text = scope.dump(document)
    # The repository's registry comes from the base and may only add: say what it may not.
    notes = "\n".join(
        f"note: refused {e['entry']} of the repository's {e['path']}: {e['reason']}"
        for e in refused
    )
    if output is None:
        return scope.EXIT_OK, text, notes
    try:
        scope.write_output(output, text)
    except OSError as error:
        return scope.EXIT_COMMAND_FAILURE, "", f"{prefix}: --output: {error}"
    summary = {
        "base": document["base"],
        "head": document["head"],
        "scope_identity": scope.scope_identity(document),
        "changed_path_count": len(document["changed_paths"]),
        "output": str(output),
    }
    return scope.EXIT_OK, scope.dump(summary), notes


def execute(args: argparse.Namespace) -> Mapping[str, Any]:
    """Print the resolver's output and exit with its code (``SystemExit``)."""
    code, out, err = outcome(args)
    _emit(code, out, err)


def _emit(code: int, out: str, err: str) -> NoReturn:
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    if err:
        sys.stderr.write(err + "\n")
        sys.stderr.flush()
    raise SystemExit(code)
