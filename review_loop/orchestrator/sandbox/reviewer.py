"""What a reviewer may read: its own login and the repository, never your secrets or ours.

Every reviewer process (every product but review-loop's own stand-in, whose adapter says
``reads_only_its_prompt``) runs in a private mount namespace in which these are covered
before its CLI starts (``docs/reviewer-lockdown.md``, "What a reviewer can read"):

- review-loop's own state (``$REVIEW_LOOP_HOME``: the ``state-secret`` HMAC key, prefs,
  pending answers);
- the user's secret stores (:data:`SECRET_STORES` under ``HOME``, and the places the
  environment moves some of them to: ``$XDG_CONFIG_HOME/gh``, ``$DOCKER_CONFIG``,
  ``$KUBECONFIG``);
- every *other* product's login and settings (each adapter's ``own_files``);
- the dotenv files (:data:`DOTENV_FILES`) of every directory above the repository and
  above the working directory (a CLI that walks up for them would load a superproject's);
- the repository's own CLI configuration the adapter names (``Invocation.hidden_paths``).

For a CLI that writes into the repository on its own (``Invocation.read_only_repository``)
the repository and its git common dir are also mounted read-only, and where no namespace
can be made it is refused even when unprotected runs are allowed.

The product's own files (its adapter's ``own_files``) are never covered, so its login
keeps working. The covering is done by :mod:`~review_loop.orchestrator.sandbox.wrapper`
(``--hide`` / ``--keep``), which then drops every capability, so the CLI cannot unmount a
cover; a directory above the working directory is split rather than covered.

Where no such namespace can be made, a reviewer is refused (``NOT_SUBMITTED``) unless the
user allowed unprotected runs (prefs ``allowUnprotected``); an allowed one is named in the
result (``Delivery.unprotected``). Never silently unprotected. Who says so: the check
:func:`unavailable` before an allowed reviewer (it must know before the launch) or where
sessions have no supervisor; otherwise the launch itself, whose failed ``unshare`` is the
supervisor's spawn failure (:func:`launch_refusal`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from review_loop.adapters import Adapter, get_adapter
from review_loop.adapters.registry import BUILTINS
from review_loop.agents.models import Completed, Invocation
from review_loop.orchestrator.process import subreaper
from review_loop.orchestrator.sandbox.masking import checked_paths, unmasked_or_refused
from review_loop.orchestrator.sandbox.wrapper import (
    ISOLATION_FAILED_EXIT,
    MARKER,
    root_file_path,
)

if TYPE_CHECKING:
    from review_loop.orchestrator.process.run import Supervisors

__all__ = [
    "ALLOW_COMMAND",
    "DOTENV_FILES",
    "SECRET_STORES",
    "Exposure",
    "exempt",
    "exposure",
    "hidden_for",
    "hide_options",
    "launch_refusal",
    "own_files",
    "protect",
    "protected_paths",
    "protection_failed",
    "refusal",
    "unavailable",
    "unprotected",
    "wrapped_argv",
]

SECRET_STORES = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".docker/config.json",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".password-store",
    ".local/share/keyrings",
)
"""The user's secret stores, relative to ``HOME``: hidden from every reviewer."""
DOTENV_FILES = (".env",)
"""Hidden in every directory above the repository (and the working directory), with every
adapter's ``ancestor_files`` (what its CLI loads walking up from its working directory)."""
ALLOW_COMMAND = "review-loop prefs set allowUnprotected true"
"""How a user allows reviewers to run where they cannot be protected."""

WRAPPER = Path(__file__).with_name("wrapper.py")
_probed: dict[str | None, str | None] = {}
"""The probe's answer (``None``: protection works) per ``unshare`` found on PATH."""


class Exposure(NamedTuple):
    """What one reviewer must not see (``hide``), and what of it stays (``keep``)."""

    hide: tuple[Path, ...]
    keep: tuple[Path, ...]


def own_files(adapter: Adapter, env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
    """The adapter's ``own_files`` (none when it declares none)."""
    declared = getattr(adapter, "own_files", None)
    return tuple(declared(env, home)) if declared is not None else ()


def _above(path: Path) -> list[Path]:
    return list(path.parents)


def hidden_for(
    product: str,
    *,
    owned: Mapping[str, Sequence[Path]],
    ancestor_files: Sequence[str] = (),
    home: Path,
    env: Mapping[str, str],
    state: Path,
    repo: Path,
    cwd: Path,
    project: Sequence[str] = (),
) -> Exposure:
    """What a ``product`` reviewer must not see. Pure: paths in, paths out.

    ``owned``: every product's ``own_files``; ``ancestor_files``: every product's (hidden
    above the repository with :data:`DOTENV_FILES`); ``state``: ``$REVIEW_LOOP_HOME``;
    ``project``: the adapter's ``hidden_paths`` (relative to ``cwd``).
    """
    hide: list[Path] = [state, *(home / name for name in SECRET_STORES)]
    if env.get("XDG_CONFIG_HOME"):
        hide.append(Path(env["XDG_CONFIG_HOME"]) / "gh")
    if env.get("DOCKER_CONFIG"):
        hide.append(Path(env["DOCKER_CONFIG"]))
    hide.extend(Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p)
    for other, paths in owned.items():
        if other != product:
            hide.extend(paths)
    for directory in dict.fromkeys([*_above(repo), *_above(cwd)]):
        hide.extend(directory / name for name in dict.fromkeys([*DOTENV_FILES, *ancestor_files]))
    hide.extend(checked_paths(cwd, project))
    keep = tuple(dict.fromkeys(owned.get(product, ())))
    visible = [p for p in dict.fromkeys(hide) if p.is_absolute()]
    # A path inside the product's own files is its own (its dotenv file in its own HOME dir).
    return Exposure(
        hide=tuple(p for p in visible if not any(p.is_relative_to(k) for k in keep)),
        keep=keep,
    )


def exposure(adapter: Adapter, *, repo: Path, cwd: Path, project: Sequence[str]) -> Exposure:
    """:func:`hidden_for` this adapter's product, from this process's environment."""
    from review_loop.prefs.home import state_home

    env = dict(os.environ)
    home = Path(env.get("HOME") or Path.home())
    # The built-in products, not every registered one: listing third-party entry points
    # costs each consult a scan of the installed distributions (docs/reviewer-lockdown.md).
    adapters = {name: get_adapter(name) for name in BUILTINS}
    adapters[adapter.name] = adapter  # as the peer resolved it
    owned = {name: own_files(each, env, home) for name, each in adapters.items()}
    walked = [n for each in adapters.values() for n in getattr(each, "ancestor_files", ())]
    return hidden_for(
        adapter.name,
        owned=owned,
        ancestor_files=walked,
        home=home,
        env=env,
        state=state_home(env),
        repo=repo,
        cwd=cwd,
        project=project,
    )


def hide_options(plan: Exposure) -> list[str]:
    """The wrapper's ``--hide``/``--keep`` options for ``plan``."""
    options = [word for path in plan.hide for word in ("--hide", str(path))]
    return options + [word for path in plan.keep for word in ("--keep", str(path))]


def root_files(invocation: Invocation) -> tuple[list[str], dict[str, str]]:
    """The wrapper's ``--root-file`` options for ``invocation.root_files``, and its
    ``env`` with each variable naming the copy placed in the reviewer's own root."""
    options = [word for _, file in invocation.root_files for word in ("--root-file", file)]
    placed = {variable: root_file_path(file) for variable, file in invocation.root_files}
    return options, {**invocation.env, **placed}


def _unshare() -> list[str]:
    if os.geteuid() == 0:
        return ["unshare", "--mount", "--propagation", "private"]
    # Without root, a user namespace grants the mount namespace its own CAP_SYS_ADMIN.
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def wrapped_argv(options: Sequence[str], argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` run by the wrapper with ``options`` in a private mount namespace.

    ``-I -S``: the standard library only; the working directory (the repository) and the
    ``PYTHON*`` variables cannot shadow a module of the wrapper.
    """
    import sys

    return (*_unshare(), sys.executable, "-I", "-S", str(WRAPPER), *options, "--", *argv)


def _unshare_found() -> str | None:
    from review_loop.orchestrator.process.run import resolve_executable

    return resolve_executable("unshare", dict(os.environ))


_PROBE = '! [ -e "$1" ] && ! [ -s "$2" ] && ! umount "$3" 2>/dev/null && ! [ -e "$1" ]'
"""Inside: the hidden directory's file is gone, the hidden file is empty, and the cover of
the directory cannot be taken off (the wrapper leaves the CLI no right to)."""


async def unavailable(supervisors: Supervisors | None = None) -> str | None:
    """Why reviewers cannot be protected here, or ``None`` when they can.

    Checked once per process (per ``unshare`` on PATH) by the real setup: a file and a
    directory are hidden from a shell, which must find neither, nor be able to unmount the
    cover. ``supervisors``: the check runs on the warm spare (no supervisor's start on the
    first session's path) and a new spare is started for the session at once.
    """
    found = _unshare_found()
    if found not in _probed:
        _probed[found] = await _probe(supervisors) if found else "unshare is not on PATH"
    return _probed[found]


async def _probe(supervisors: Supervisors | None) -> str | None:
    from review_loop.orchestrator.process.run import run_process

    tmp = Path(tempfile.mkdtemp(prefix="review-loop-sandbox-check-"))
    secret_dir, secret_file = tmp / "store", tmp / "state-secret"
    try:
        secret_dir.mkdir()
        (secret_dir / "key").write_text("x")
        secret_file.write_text("x")
        options = ["--hide", str(secret_dir), "--hide", str(secret_file)]
        probe = ["sh", "-c", _PROBE, "sh", str(secret_dir / "key"), str(secret_file)]
        probe.append(str(secret_dir))
        done = await run_process(
            Invocation(argv=wrapped_argv(options, probe), cwd=tmp),
            deadline=20,
            grace=1,
            supervisors=supervisors,
            on_started=supervisors.replace if supervisors is not None else None,
        )
    finally:
        for made in (secret_dir / "key", secret_file):
            made.unlink(missing_ok=True)
        for directory in (secret_dir, tmp):
            with contextlib.suppress(OSError):
                directory.rmdir()
    if done.returncode == 0:
        return None
    return _no_namespace(done.stderr.decode("utf-8", "replace").strip().splitlines())


def exempt(adapter: Adapter) -> bool:
    """Whether ``adapter``'s CLI runs without the sandbox (review-loop's own stand-in)."""
    return getattr(adapter, "reads_only_its_prompt", False) is True


def unprotected(adapter: Adapter) -> str | None:
    """Why a reviewer of ``adapter`` ran without protection: the probe's answer, once
    :func:`unavailable` has probed in this process (``None``: protected, or not probed)."""
    if exempt(adapter):
        return None
    return _probed.get(_unshare_found())


async def protect(
    invocation: Invocation,
    adapter: Adapter,
    *,
    repo: Path,
    allow_unprotected: bool,
    supervisors: Supervisors | None = None,
) -> Invocation | str:
    """``invocation`` run with what it must not see covered, or why it must not run.

    An invocation that runs in a throw-away copy is returned as it is: its namespace is
    made with the copy (``runner._isolated``), which hides the same paths
    (:func:`hide_options`). ``argv[0]`` must already be an absolute path. ``supervisors``:
    where :func:`unavailable` runs its check.
    """
    if exempt(adapter) or invocation.isolate_in_copy:
        return invocation
    if allow_unprotected or not subreaper.available():
        why = await unavailable(supervisors)
    else:
        # Refusing needs no check before the launch: the session supervisor's forked start
        # runs unshare before anything of the session and reports its failure as such
        # (:func:`launch_refusal`). Running unprotected instead needs the answer first.
        found = _unshare_found()
        why = _probed.get(found) if found else "unshare is not on PATH"
    if why is None:
        plan = exposure(adapter, repo=repo, cwd=invocation.cwd, project=invocation.hidden_paths)
        options = hide_options(plan)
        if invocation.read_only_repository:
            options += await _read_only_options(repo)
        placing, env = root_files(invocation)
        argv = wrapped_argv([*options, *placing], invocation.argv)
        return dataclasses.replace(invocation, argv=argv, env=env)
    if invocation.read_only_repository or not allow_unprotected:
        return refusal(why, adapter, invocation)
    return unmasked_or_refused(invocation)


def refusal(why: str, adapter: Adapter, invocation: Invocation) -> str:
    """What a reviewer refused for want of a namespace (``why``) tells the user."""
    if invocation.read_only_repository:
        # Its CLI writes into the repository by itself: only a namespace can stop that.
        return (
            f"{why}: {adapter.name} writes into the repository on its own (docs/"
            "reviewer-lockdown.md), and only a private mount namespace can keep the "
            "repository read-only around it, so it is not started"
        )
    return (
        f"{why}: {adapter.name} would run able to read your secret stores (~/.ssh, ~/.aws, "
        "...), other CLIs' logins and review-loop's state secret, so it is not started "
        f"(docs/reviewer-lockdown.md). To run reviewers unprotected anyway: {ALLOW_COMMAND}"
    )


def launch_refusal(completed: Completed, adapter: Adapter, invocation: Invocation) -> str | None:
    """Why a protected reviewer whose launch made no namespace is refused, else ``None``.

    Its launcher failed before anything of the session ran (``run.launcher_failed``): no
    private mount namespace can be made here. Kept as this process's answer (as the
    check's would be), so the next reviewer is refused before its launch.
    """
    from review_loop.orchestrator.process.run import launcher_failed

    if exempt(adapter) or invocation.isolate_in_copy or not launcher_failed(completed):
        return None
    said = [
        line
        for line in completed.stderr.decode("utf-8", "replace").strip().splitlines()
        if not line.startswith(subreaper.FAILURE_PREFIX)
    ]
    why = _probed[_unshare_found()] = _no_namespace(said)
    return refusal(why, adapter, invocation)


def _no_namespace(said: list[str]) -> str:
    return f"no private mount namespace can be made here ({said[-1] if said else 'unshare failed'})"


async def protected_paths(repo: Path) -> list[Path]:
    """The repository, and its git common dir when that lies outside it (worktrees)."""
    import anyio

    from review_loop.orchestrator.handoff.git import common_dir

    paths = [repo]
    common = await anyio.to_thread.run_sync(common_dir, repo)
    if not common.is_relative_to(repo):
        paths.append(common)
    return paths


async def _read_only_options(repo: Path) -> list[str]:
    """The wrapper's ``--read-only`` options for the repository and its git common dir."""
    return [word for path in await protected_paths(repo) for word in ("--read-only", str(path))]


def protection_failed(returncode: int | None, stderr: bytes) -> bool:
    """Whether a run ended because the wrapper could not set up (the CLI never started)."""
    return returncode == ISOLATION_FAILED_EXIT and MARKER.encode() in stderr
