"""``review-loop scope resolve``: the audit skill's ``resolve_scope.py`` on our journal.

Prints its own output (``json.dumps(..., sort_keys=True)`` on stdout, diagnostics on
stderr) and exits with the resolver's codes: 0 ok/reconciled, 1 unreconciled (or, when
resolving, a refused caller input), 2 command failure, 3 stale base.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from review_loop.agents.errors import ReviewLoopError

USAGE = [
    "review-loop scope resolve <HEAD|branch|base...head> [--repo <dir>] "
    "[--audit-input <file> --scratch-dir <dir> --output <file>]",
    "review-loop scope resolve <selector> [--repo <dir>] --reconcile-run <token> "
    "--scope-identity <base>..<head>",
    "review-loop scope governance <HEAD|branch|base...head|worktree:selector> [--repo <dir>]"
    "   (the governing decisions, specs and spx/local/ overlays of the changed paths)",
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
    governance = verbs.add_parser("governance", add_help=False, allow_abbrev=False)
    governance.add_argument("selector")
    governance.add_argument("--repo", "-C", dest="repo", default=None)


def help_details(words: Sequence[str]) -> str:
    """What ``scope governance`` prints (its fields), beside the resolver's usage."""
    del words
    return "\n".join(
        [
            "scope governance prints one JSON document (exit 0; 2 with ok:false, 3 stale base):",
            "  base, head: the resolved full commit ids",
            "  paths: the changed paths (and the live ones of a worktree: selector)",
            "  overlays: [{path, text}] spx/local/*.md from the BASE (the auditing standard)",
            "  overlaysByKind: {kind: [overlay paths]} for each kind the selection names",
            "  nodes: [{path, names, owns, text}] decisions/specs under spx/ at the HEAD that",
            "    name a path (evidence link) or own it (front matter 'audits:' list)",
            "  ungoverned: paths no node governs",
            "  coverageGaps: [{unitId, subject}] the optional coverage-gap unit per ungoverned",
            "    path (record it with verification run scope add: missing governance is",
            "    coverage evidence)",
            "Read from git only (never the working tree); nothing in it runs.",
        ]
    )


def governance_outcome(args: argparse.Namespace) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of one ``scope governance``."""
    import json

    from review_loop.agents.errors import NotAGitRepositoryError
    from review_loop.orchestrator.workflows import scope
    from review_loop.orchestrator.workflows.audit import live_paths
    from review_loop.orchestrator.workflows.governance import discover, host_document

    def failed(code: int, error: str) -> tuple[int, str, str]:
        text = json.dumps({"ok": False, "error": error}, sort_keys=True)
        return code, text, f"{scope.ERROR_PREFIX}: {error}"

    advisory = args.selector.startswith("worktree:")
    try:
        repo = _repo(args.repo)
        live = live_paths(repo) if advisory else []
        audit_input = {scope.LIVE_PATHS_KEY: live} if advisory else None
        resolved = scope.resolve(repo, args.selector.removeprefix("worktree:"), audit_input)
    except scope.StaleBaseError as error:
        return scope.EXIT_STALE_BASE, "", scope.dump(error.diagnostic())
    except (NotAGitRepositoryError, scope.ScopeResolutionError, OSError) as error:
        return failed(scope.EXIT_COMMAND_FAILURE, str(error))
    except ReviewLoopError as error:  # the live paths could not be read (git status)
        return failed(scope.EXIT_COMMAND_FAILURE, str(error))
    inventory = [
        *resolved["changed_paths"],
        *(p for p in live if p not in resolved["changed_paths"]),
    ]
    selection = resolved[scope.SELECTION_KEY]
    kinds = list(
        dict.fromkeys(a["kind"] for entry in selection for a in entry["artifacts"] if a.get("kind"))
    )
    found = discover(repo, resolved["head"], inventory, overlays_at=resolved["base"])
    document = host_document(
        found, base=resolved["base"], head=resolved["head"], inventory=inventory, kinds=kinds
    )
    return scope.EXIT_OK, scope.dump({"selector": args.selector, **document}), ""


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
    code, out, err = governance_outcome(args) if args.verb == "governance" else outcome(args)
    _emit(code, out, err)


def _emit(code: int, out: str, err: str) -> NoReturn:
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    if err:
        sys.stderr.write(err + "\n")
        sys.stderr.flush()
    raise SystemExit(code)
