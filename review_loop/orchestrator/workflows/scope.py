"""Scope resolution and reconciliation (the audit skill's ``resolve_scope.py``).

``resolve`` turns a selector (``HEAD``, a branch, or ``<base>...<head>``) into
``{base, head, changed_paths}`` — full commit ids and the three-dot changed paths — after
refusing a head that is behind its base (``StaleBaseError``, its own exit code). The audit
input is merged *beneath* the resolved keys, so a caller cannot forge the scope, and each
path gets the artifact registry's selection.

``reconcile_run`` reads a run's sealed start input and its recorded scope units straight
from the journal and compares them with the freshly resolved scope.

Exit codes (as the original): 0 ok or reconciled; 1 a readable run that does not reconcile
(and, in resolve mode, a refused caller input such as a file outside ``--scratch-dir``);
2 a command failure; 3 the stale-base refusal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from review_loop.agents.errors import ReviewLoopError
from review_loop.agents.scope_rules import (
    RegistryError,
    check_registry,
    merge_registries,
    reconcile,
    select_artifacts,
)
from review_loop.orchestrator.handoff.git import git
from review_loop.prefs.home import state_home

EXIT_OK: Final = 0
EXIT_UNRECONCILED: Final = 1
EXIT_INPUT: Final = 1
EXIT_COMMAND_FAILURE: Final = 2
EXIT_STALE_BASE: Final = 3

ERROR_PREFIX: Final = "error: implementation scope resolution failed"
RECONCILE_PREFIX: Final = "error: implementation audit reconciliation failed"
RESOLVED_KEYS: Final = ("base", "head", "changed_paths")
SELECTION_KEY: Final = "artifact_selection"
LIVE_PATHS_KEY: Final = "live_paths"
REGISTRY_ENV: Final = "REVIEW_LOOP_ARTIFACT_REGISTRY"
REGISTRY_NAME: Final = "artifact-registry.json"


class ScopeResolutionError(ReviewLoopError):
    """The selector cannot be resolved (exit 2)."""


class ScopeInputError(ReviewLoopError):
    """A caller input the resolver refuses: a file outside the scratch dir, bad JSON (exit 1)."""


class RunReadError(ScopeResolutionError):
    """The run named for reconciliation cannot be read (exit 2)."""


class StaleBaseError(ReviewLoopError):
    """The head does not contain the (fetched) base tip: merging it would not be this tree."""

    def __init__(self, behind: int, merge_base: str, tip: str) -> None:
        self.behind, self.merge_base, self.tip = behind, merge_base, tip
        super().__init__(f"stale base: {behind} commit(s) on {tip} are not in the head")

    def diagnostic(self) -> dict[str, Any]:
        """The sorted JSON object printed on stderr."""
        return {
            "behind": self.behind,
            "merge_base": self.merge_base,
            "status": "stale-base",
            "tip": self.tip,
        }


# --- git ------------------------------------------------------------------------------------


def _git_text(repo: Path, *args: str) -> str:
    result = git(repo, *args, check=False)
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip() or f"exit {result.returncode}"
        raise ScopeResolutionError(f"git {' '.join(args)}: {detail}")
    return result.stdout.decode("utf-8", "surrogateescape").strip()


def _commit(repo: Path, ref: str) -> str:
    if ref.startswith("-"):
        raise ScopeResolutionError(f"{ref!r} is not a revision")
    result = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if result.returncode != 0:
        raise ScopeResolutionError(f"{ref!r} does not name a commit in {repo}")
    return result.stdout.decode("ascii").strip()


def default_base(repo: Path) -> str:
    """``origin/<default branch>`` from ``refs/remotes/origin/HEAD`` (never a guess)."""
    result = git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", check=False)
    line = result.stdout.decode("utf-8", "replace").strip()
    if result.returncode != 0 or not line.startswith("refs/remotes/origin/"):
        raise ScopeResolutionError(
            f"refs/remotes/origin/HEAD is not set in {repo}; pass an explicit <base>...<head>"
        )
    return "origin/" + line.removeprefix("refs/remotes/origin/")


def require_current_base(repo: Path, base_ref: str, head: str) -> str:
    """Fetch an ``origin/`` base, then refuse a head that lacks the base tip; returns the tip.

    Raises:
        StaleBaseError: the merge base of tip and head is not the tip.
        ScopeResolutionError: the fetch or a revision failed.
    """
    if base_ref.startswith("origin/"):
        bare = base_ref.removeprefix("origin/")
        if bare == "HEAD":
            bare = default_base(repo).removeprefix("origin/")
        _git_text(
            repo, "fetch", "--quiet", "origin", f"+refs/heads/{bare}:refs/remotes/origin/{bare}"
        )
    tip = _commit(repo, base_ref)
    merge_base = _git_text(repo, "merge-base", tip, head)
    if merge_base != tip:
        behind = int(_git_text(repo, "rev-list", "--count", f"{merge_base}..{tip}"))
        raise StaleBaseError(behind, merge_base, tip)
    return tip


def changed_paths(repo: Path, base: str, head: str) -> list[str]:
    """``git diff --name-only <base>...<head>``; a rename contributes both of its paths."""
    out = git(
        repo,
        "-c",
        "core.quotepath=off",
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        f"{base}...{head}",
        "--",
        check=False,
    )
    if out.returncode != 0:
        raise ScopeResolutionError(out.stderr.decode("utf-8", "replace").strip())
    return [name for name in out.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def resolve_committed_scope(repo: Path, selector: str) -> dict[str, Any]:
    """``{base, head, changed_paths}`` for a committed selector.

    ``<base>...<head>`` names both ends; anything else is the head, against
    ``origin/<default branch>``. The base must be an ancestor of the head (stale-base
    refusal otherwise), so the three-dot set equals the two-dot set a run start records.

    Raises:
        ScopeResolutionError: a malformed selector or a git failure.
        StaleBaseError: the head is behind its base.
    """
    if selector.startswith("worktree:"):
        raise ScopeResolutionError(
            "the resolver takes the committed selector: remove the worktree: prefix and "
            "pass the live paths under live_paths in the audit input"
        )
    if "..." in selector:
        base_ref, _, head_ref = selector.partition("...")
        if not base_ref or not head_ref or "..." in head_ref:
            raise ScopeResolutionError(f"{selector!r} is not <base>...<head>")
    elif ".." in selector:
        raise ScopeResolutionError(
            f"{selector!r} is a two-dot range; a selector is HEAD, a branch, or <base>...<head>"
        )
    elif not selector:
        raise ScopeResolutionError("the selector is empty")
    else:
        base_ref, head_ref = default_base(repo), selector
    head = _commit(repo, head_ref)
    tip = require_current_base(repo, base_ref, head)
    return {"base": tip, "head": head, "changed_paths": changed_paths(repo, tip, head)}


# --- the registry ---------------------------------------------------------------------------


def registry_sources(repo: Path, env: Mapping[str, str] | None = None) -> list[Path]:
    """The trusted registry files: the built-in, the user's, then ``$REVIEW_LOOP_...``.

    ``repo`` is unused: the repository's own registry is never a file read from its tree,
    only the base commit's (:func:`load_registry`).
    """
    del repo
    environ = os.environ if env is None else env
    builtin = Path(__file__).resolve().parents[2] / "agents" / "data" / REGISTRY_NAME
    sources = [builtin]
    user = state_home(environ) / REGISTRY_NAME
    if user.is_file():
        sources.append(user)
    for item in environ.get(REGISTRY_ENV, "").split(os.pathsep):
        if item:
            sources.append(Path(item))
    return sources


def load_registry(
    repo: Path,
    env: Mapping[str, str] | None = None,
    *,
    base: str | None = None,
    refused: list[dict[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """The merged registry's kinds: the trusted layers, then (with ``base``) the
    repository's ``.review-loop/artifact-registry.json`` as it is in commit ``base``, which
    may only add kinds (its refused kinds are appended to ``refused``).

    Raises:
        ScopeResolutionError: a registry file is unreadable or malformed (names the file).
    """
    from review_loop.agents.scope_rules import add_repository_kinds
    from review_loop.orchestrator.workflows import repo_config

    layers = []
    for source in registry_sources(repo, env):
        try:
            document = json.loads(source.read_text(encoding="utf-8"))
            layers.append(check_registry(document, str(source)))
        except RegistryError as error:
            raise ScopeResolutionError(f"artifact registry {error}") from None
        except (OSError, ValueError) as error:
            raise ScopeResolutionError(f"artifact registry {source}: {error}") from None
    kinds = merge_registries(layers)
    if base is None:
        return kinds
    path = repo_config.config_path(REGISTRY_NAME)
    try:
        text = repo_config.read_at(repo, base, path)
        if text is None:
            return kinds
        ours = check_registry(json.loads(text), f"{path} (base {base[:12]})")
    except RegistryError as error:
        raise ScopeResolutionError(f"artifact registry {error}") from None
    except repo_config.RepoConfigError as error:
        raise ScopeResolutionError(f"artifact registry {error}") from None
    except ValueError as error:
        raise ScopeResolutionError(
            f"artifact registry {path} (base {base[:12]}): {error}"
        ) from None
    kinds, refusals = add_repository_kinds(kinds, ours, path)
    if refused is not None:
        refused.extend(refusals)
    return kinds


# --- resolve --------------------------------------------------------------------------------


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


def _scratch(scratch_dir: str | None) -> Path | None:
    if scratch_dir is None:
        return None
    directory = Path(scratch_dir)
    if not directory.is_dir():
        raise ScopeInputError(f"--scratch-dir: {scratch_dir} is not a directory")
    return directory


def read_audit_input(value: str, scratch: Path | None) -> dict[str, Any]:
    """The audit-input object: a file (inside ``scratch`` when given) or, without a scratch
    dir, inline JSON (the original's form).

    Raises:
        ScopeInputError: outside the scratch dir, unreadable, not JSON, or not an object.
    """
    if scratch is None and value.lstrip().startswith("{"):
        text, where = value, "--audit-input"
    else:
        path = Path(value)
        if scratch is not None and not _inside(path, scratch):
            raise ScopeInputError(
                f"--audit-input: {value} resolves outside --scratch-dir {scratch} "
                "(accepted: a file inside the session scratch directory)"
            )
        from review_loop.orchestrator.handoff.input_files import read_text

        try:
            text = read_text(path)  # bounded: an endless file ends at the limit
        except (OSError, UnicodeDecodeError) as error:
            raise ScopeInputError(f"--audit-input: cannot read {value}: {error}") from None
        where = f"--audit-input {value}"
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ScopeInputError(f"{where} must be a JSON object: {error}") from None
    if not isinstance(document, dict):
        raise ScopeInputError(f"{where} must be a JSON object, not {type(document).__name__}")
    return document


def check_output(value: str | None, scratch: Path | None) -> Path | None:
    """The ``--output`` path, refused outside the scratch dir.

    Raises:
        ScopeInputError: outside the scratch dir, or its directory does not exist.
    """
    if value is None:
        return None
    path = Path(value)
    if scratch is not None and not _inside(path, scratch):
        raise ScopeInputError(
            f"--output: {value} resolves outside --scratch-dir {scratch} "
            "(accepted: a file inside the session scratch directory)"
        )
    if not path.parent.is_dir():
        raise ScopeInputError(f"--output: directory {path.parent} does not exist")
    return path


def resolve(
    repo: Path,
    selector: str,
    audit_input: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    refused: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The run-start input: the audit input beneath the resolved scope, plus the selection.

    The repository's registry is read from the resolved base; kinds it may not add are
    appended to ``refused`` (see :func:`load_registry`).

    Raises:
        ScopeResolutionError, StaleBaseError: see :func:`resolve_committed_scope`.
    """
    resolved = resolve_committed_scope(repo, selector)
    # The repository's registry as the base has it: the change cannot choose its audit.
    kinds = load_registry(repo, env, base=resolved["base"], refused=refused)
    document: dict[str, Any] = {**(audit_input or {}), **resolved}
    paths = list(resolved["changed_paths"])
    live = document.get(LIVE_PATHS_KEY)
    if isinstance(live, list):
        paths += [p for p in live if isinstance(p, str) and p not in paths]
    # Set after the merge, so no audit-input key displaces the selection.
    document[SELECTION_KEY] = [
        {"path": path, "artifacts": select_artifacts(path, kinds)} for path in paths
    ]
    return document


def dump(document: Any) -> str:
    """The original's output form: ``json.dumps(..., sort_keys=True)``."""
    return json.dumps(document, sort_keys=True)


def write_output(path: Path, text: str) -> None:
    """Write ``text`` atomically (temp file and rename)."""
    from review_loop.orchestrator.journal.store import write_file_atomic

    write_file_atomic(path, (text + "\n").encode("utf-8"))


# --- reconcile ------------------------------------------------------------------------------


def read_run(
    repo: Path, token: str, scope_identity: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run's sealed start input and its validated audit scope units, via the journal.

    Raises:
        RunReadError: the run cannot be read or its input is not a JSON object.
    """
    from review_loop.agents.verification import audit_scope_units
    from review_loop.orchestrator.journal import runs

    try:
        run = runs.address(repo, "audit", "changeset", scope_identity, token)
        content = runs.read_input(run)["content"]
        state = runs.render(run)
    except ReviewLoopError as error:
        raise RunReadError(str(error)) from None
    try:
        recorded = json.loads(content)
    except ValueError as error:
        raise RunReadError(f"recorded start input is not JSON: {error}") from None
    if not isinstance(recorded, dict):
        raise RunReadError("recorded start input is not a JSON object")
    return recorded, audit_scope_units(state["events"])


def reconcile_run(
    repo: Path, selector: str, token: str, scope_identity: str
) -> tuple[dict[str, Any], int]:
    """The verdict and its exit code (0 reconciled, 1 not).

    The run is addressed by its own sealed identity, never the fresh one: a drifted
    selector must surface as ``drifted``, not as a run that cannot be found.

    Raises:
        ScopeResolutionError, StaleBaseError: the selector does not resolve.
        RunReadError: the run cannot be read.
    """
    fresh = resolve_committed_scope(repo, selector)
    recorded, units = read_run(repo, token, scope_identity)
    sealed = recorded.get("changed_paths") or []
    live = recorded.get(LIVE_PATHS_KEY) or []
    if not _string_list(sealed) or not _string_list(live):
        raise RunReadError("recorded start input path lists are not arrays of strings")
    verdict = reconcile(sealed, fresh["changed_paths"], units, live)
    return verdict, EXIT_OK if verdict["reconciled"] else EXIT_UNRECONCILED


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def scope_identity(resolved: Mapping[str, Any]) -> str:
    """``<base>..<head>``: the identity a run is started with."""
    return f"{resolved['base']}..{resolved['head']}"
