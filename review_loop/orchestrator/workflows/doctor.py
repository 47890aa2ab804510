"""``review-loop doctor``: which reviewers can be asked here, safely, and why not.

For every registered product (and every prefs alias), from the installed CLI itself:

- the executable found on PATH (its path), and its version (the adapter's probe; for a
  CLI whose probe tells none, its installed package's file, the adapter's ``package_file``);
- its login state, where the CLI can tell without a model call (the adapter's
  ``login_args``; ``unknown`` otherwise);
- whether this version lists every flag that keeps it read-only or locked down, probed from
  its own ``--help`` (the adapter's ``required_flags``; :mod:`..sandbox.flags`), the same check
  every consult makes before it asks;
- whether it is usable: found, no flag missing, and the protection it needs can be set up
  here (the reviewer sandbox's private mount namespace; a throw-away copy for a CLI with no
  read-only mode).

Then whether the repository-code lockdown can be set up on this machine, and where the
loop's skills (the ones ``preflight`` requires) were found. The login state is reported,
not judged: a key in the environment works without a stored login.

Every probe runs in a new empty directory, never in a repository: a CLI asked for its login
may read the project's settings of the directory it runs in. The offline stand-in
(``simulated``) is listed but never counted as a usable reviewer.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import anyio

from review_loop.adapters.base import (
    LoginState,
    RequiredFlag,
    describe_missing,
    login_from,
    login_state,
    package_file,
    package_version,
)
from review_loop.adapters.registry import OFFLINE, product_names
from review_loop.prefs.model import Prefs

LOGIN_DEADLINE_S = 60.0
"""How long a login command may take. A person waits here anyway, and a Node CLI's start
on a loaded machine is slow (``opencode auth list``: 17 s at load 13 on 2 cores)."""


def _flag_document(flag: RequiredFlag) -> dict[str, Any]:
    return {"flag": flag.flag, "purpose": flag.purpose, "helpArgs": list(flag.help_args)}


def _read_only_mode(adapter: object, capabilities: Any, flags: tuple[RequiredFlag, ...]) -> str:
    """How this product is kept read-only, in words."""
    from review_loop.orchestrator.sandbox import reviewer as sandbox

    if sandbox.exempt(adapter):  # type: ignore[arg-type]
        return "reads only its prompt (review-loop's own offline stand-in)"
    if capabilities.isolate_in_copy:
        return "no read-only mode: run in a throw-away copy of the repository"
    return "its own read-only flags" if flags else "no flag required by its adapter"


async def _login(
    adapter: object, command: tuple[str, ...], cwd: Path, env: Any, capabilities: Any
) -> dict[str, str]:
    """The CLI's own account of its login: its ``login_args`` command, else its reading of
    the environment it would get and of its ``login_files`` (``unknown`` without either)."""
    from review_loop.agents.models import Invocation
    from review_loop.orchestrator.process.run import run_process

    args_of = getattr(adapter, "login_args", None)
    args = args_of() if callable(args_of) else None
    if not args and callable(getattr(adapter, "login_files", None)):
        state = await anyio.to_thread.run_sync(
            _login_read, adapter, command, cwd, env, capabilities
        )
        return {"state": state.state, "detail": state.detail}
    if not args:
        state = login_state(adapter, "", None)
        return {"state": state.state, "detail": state.detail}
    probe = Invocation(argv=(*command, *args), cwd=cwd, pass_env=env)
    done = await run_process(probe, deadline=LOGIN_DEADLINE_S, grace=1.0)
    output = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
    if done.timed_out:
        return {
            "state": "unknown",
            "detail": f"`{' '.join(args)}` did not answer in {LOGIN_DEADLINE_S:.0f} s: "
            "ask doctor again when the machine is less busy",
        }
    state = login_state(adapter, output, done.returncode)
    return {"state": state.state, "detail": state.detail}


def _login_read(
    adapter: Any, command: tuple[str, ...], cwd: Path, env: Any, capabilities: Any
) -> LoginState:
    """``login_from`` on the environment a reviewer of this product gets (the allow-list's
    answer for this caller) and the text of its ``login_files`` in the user's home."""
    from review_loop.agents.models import Invocation
    from review_loop.orchestrator.process.environment import child_environment
    from review_loop.orchestrator.sandbox.user_config import user_file_texts

    seen = child_environment(Invocation(argv=command, cwd=cwd, pass_env=env), {})
    home = Path(os.environ.get("HOME") or Path.home())
    texts = user_file_texts(adapter.login_files(seen, home))
    return login_from(adapter, seen, texts, capabilities)


async def _product(
    name: str, prefs: Prefs, cwd: Path, protection: dict[str, Any]
) -> dict[str, Any]:
    """One product's row (see the module docstring)."""
    from review_loop.orchestrator.dispatcher import resolve_peer, reviewer_env
    from review_loop.orchestrator.sandbox import reviewer as sandbox
    from review_loop.orchestrator.sandbox.flags import (
        HELP_DEADLINE_S,
        cached_probe,
        check_flags,
        executable_of,
    )

    peer = resolve_peer(name, prefs)
    adapter = peer.adapter
    row: dict[str, Any] = {"name": name, "product": peer.product, "command": list(peer.command)}
    row["offline"] = peer.product in OFFLINE
    executable = executable_of(peer.command)
    row["executable"] = executable
    if executable is None:
        searched = os.environ.get("PATH", "")
        absent = f"{peer.command[0]!r} is not in any directory on PATH ({searched})"
        return {**row, "version": None, "usable": False, "why": absent}
    env = reviewer_env(peer, prefs, cwd)
    probe_args = adapter.probe_args()
    output = None
    if probe_args is not None:  # a person waits here anyway: a slow start is no failure
        probed = await cached_probe(
            peer.command, probe_args, cwd=cwd, pass_env=env, deadline=HELP_DEADLINE_S
        )
        output = probed.output if probed is not None else None
        if probed is not None and not probed.ok:
            row["versionProbe"] = f"`{' '.join(probe_args)}`: {probed.failure}"
    capabilities = adapter.capabilities(output)
    checked = await check_flags(adapter, peer.command, capabilities, cwd=cwd, pass_env=env)
    row["version"] = capabilities.version or await anyio.to_thread.run_sync(
        _package_version, adapter, executable
    )
    row["variant"] = capabilities.variant
    row["readOnly"] = _read_only_mode(adapter, capabilities, checked.required)
    if row["offline"]:
        row["login"] = {"state": "not-needed", "detail": "an offline stand-in: no account"}
    else:
        row["login"] = await _login(adapter, peer.command, cwd, env, capabilities)
    row["flags"] = {
        "required": [_flag_document(flag) for flag in checked.required],
        "missing": [_flag_document(flag) for flag in checked.missing],
    }
    why: str | None = None
    if checked.missing:
        why = describe_missing(
            peer.product, capabilities.version, checked.missing, unread=checked.unread
        )
    elif capabilities.isolate_in_copy and not protection["isolatedCopy"]["available"]:
        why = "it needs a throw-away copy in a read-only mount namespace, which cannot be made here"
    elif not sandbox.exempt(adapter) and not protection["reviewerSandbox"]["usable"]:
        why = protection["reviewerSandbox"]["why"]
    return {**row, "usable": why is None, "why": why}


PACKAGE_FILE_LIMIT = 1 << 20
"""Bytes of a CLI's package file read at most: a ``package.json`` is a few kilobytes."""


def _package_version(adapter: object, executable: str) -> str | None:
    """The version in the installed CLI's package file (the adapter's ``package_file``,
    from the executable's real path), for a CLI whose probe told none; ``None`` when the
    adapter names no file or it cannot be read."""
    where = package_file(adapter, Path(os.path.realpath(executable)))
    if where is None:
        return None
    try:
        with where.open("rb") as file:
            data = file.read(PACKAGE_FILE_LIMIT)
    except OSError:
        return None
    return package_version(adapter, data.decode("utf-8", "replace"))


async def _protection(prefs: Prefs) -> dict[str, Any]:
    """Whether the reviewer sandbox and the isolated copy can be set up on this machine."""
    from review_loop.orchestrator.sandbox import isolation
    from review_loop.orchestrator.sandbox import reviewer as sandbox

    why = await sandbox.unavailable()
    copy = await isolation.namespace_available()
    allowed = prefs.allowUnprotected
    return {
        "reviewerSandbox": {
            "available": why is None,
            "why": why,
            "allowUnprotected": allowed,
            "usable": why is None or allowed,
            "allow": None if why is None else sandbox.ALLOW_COMMAND,
        },
        "isolatedCopy": {"available": copy},
    }


def _skills(repo: Path | None, prefs: Prefs) -> list[dict[str, Any]]:
    """Where each skill the loop's ``preflight`` requires was found (``found``: a path)."""
    from review_loop.orchestrator.workflows.skills import resolve_skills

    root = repo if repo is not None else Path.cwd()
    checks = resolve_skills(root, host=None, extra_dirs=prefs.skillDirs)
    return [check.model_dump() for check in checks]


async def diagnose(*, prefs: Prefs, repo: Path | None) -> dict[str, Any]:
    """The ``doctor`` document: ``ok`` when at least one reviewer (not the offline
    stand-in) is usable. ``repo``: the checkout whose skill locations count (else none)."""
    names = [*product_names(), *sorted(prefs.peerCommands)]
    protection = await _protection(prefs)
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="review-loop-doctor-") as scratch:
        cwd = Path(scratch)

        async def one(name: str) -> None:
            rows[name] = await _product(name, prefs, cwd, protection)

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)
    products = [rows[name] for name in names]
    usable = [row["name"] for row in products if row["usable"] and not row["offline"]]
    return {
        "ok": bool(usable),
        "status": "ready" if usable else "no-reviewer",
        "usable": usable,
        "products": products,
        "lockdown": protection,
        "skills": _skills(repo, prefs),
        "message": (
            f"usable reviewers: {', '.join(usable)}"
            if usable
            else (
                "no reviewer can be asked here: install one, or see each product's 'why'; "
                "meanwhile `review-loop demo` (and --peer simulated) works offline"
            )
        ),
    }
