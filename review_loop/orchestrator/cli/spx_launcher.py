"""An opt-in ``spx`` launcher that is review-loop, for skills that call ``spx verification run``.

Nothing is ever installed implicitly: only ``review-loop shim spx --dir DIR`` writes one
file, ``DIR/spx``, a two-line ``sh`` script that runs this installation's review-loop with
the same arguments (``spx -C <root> verification run ...`` works as spx's global ``-C``).
It never replaces a file (the launcher is published with a hard link, which fails if the
name exists) and refuses a directory that would put it on ``PATH`` in front of another
``spx`` — a real spx is never shadowed unless the caller says ``--allow-shadow``.
Removing it is ``rm DIR/spx``.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from review_loop.agents.errors import InputError

SHIM_NAMES = ("spx",)
MARKER = "# review-loop shim: spx verification run -> review-loop verification run"


def launcher_text(python: str = sys.executable) -> str:
    """The launcher: this interpreter runs ``review_loop`` with the caller's arguments."""
    return f'#!/bin/sh\n{MARKER}\nexec {shlex.quote(python)} -m review_loop "$@"\n'


def is_shim(path: Path) -> bool:
    """Whether ``path`` is a launcher this module wrote."""
    try:
        with path.open("rb") as handle:
            return MARKER.encode() in handle.read(4096)
    except OSError:
        return False


def _on_path(env: Mapping[str, str]) -> list[Path]:
    return [Path(p).resolve() for p in env.get("PATH", "").split(os.pathsep) if p]


def _others(name: str, directory: Path, path_dirs: list[Path]) -> tuple[list[str], bool]:
    """Other executables named ``name`` on PATH, and whether ``directory`` comes first."""
    others: list[str] = []
    ahead = False
    for entry in path_dirs:
        candidate = entry / name
        if entry == directory:
            ahead = not others
            continue
        if candidate.is_file() and os.access(candidate, os.X_OK) and not is_shim(candidate):
            others.append(str(candidate))
    return others, ahead


def install_shim(
    name: str, directory: str, *, allow_shadow: bool = False, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Write ``directory/name`` (never over an existing file); returns the result document.

    Raises:
        InputError: an unknown name, a missing directory, an existing file, or a directory
            that would shadow another ``spx`` on PATH without ``allow_shadow``.
    """
    if name not in SHIM_NAMES:
        raise InputError(
            "name", f"{name!r} is not a shim review-loop provides", "spx, resolve_scope"
        )
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        raise InputError("--dir", f"{folder} is not a directory", "an existing directory")
    folder = folder.resolve()
    target = folder / name
    if target.exists() or target.is_symlink():
        raise InputError(
            "--dir",
            f"{target} already exists; review-loop never replaces it",
            "remove it yourself or choose another --dir",
        )
    others, ahead = _others(name, folder, _on_path(os.environ if env is None else env))
    if others and ahead and not allow_shadow:
        raise InputError(
            "--dir",
            f"{folder} comes before {others[0]} on PATH: {target} would shadow that spx",
            "a directory after it on PATH, or --allow-shadow",
        )
    _publish(target, launcher_text())
    on_path = folder in _on_path(os.environ if env is None else env)
    return {
        "ok": True,
        "status": "installed",
        "name": name,
        "path": str(target),
        "runs": [sys.executable, "-m", "review_loop"],
        "onPath": on_path,
        "otherSpx": others,
        "remove": f"rm {shlex.quote(str(target))}",
        "note": f"'{name} verification run ...' now runs review-loop"
        + ("" if on_path else f"; put {folder} on PATH to use it"),
    }


def _publish(target: Path, text: str) -> None:
    """Write ``target`` (mode 755) through a temporary file and a hard link: a name that
    exists, or appears meanwhile, is never replaced.

    Raises:
        InputError: ``target`` exists.
        OSError: the write failed (named after ``target``).
    """
    temp = target.parent / f".{target.name}.review-loop-{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(temp, 0o755)
        try:
            os.link(temp, target)  # fails if the name appeared meanwhile: nothing replaced
        except FileExistsError:
            raise InputError(
                "--dir", f"{target} already exists; review-loop never replaces it"
            ) from None
    except OSError as error:  # a full disk: a write error carries no file name of its own
        if error.filename is not None:
            raise
        raise OSError(error.errno, error.strerror, str(target)) from error
    finally:
        temp.unlink(missing_ok=True)


RESOLVER = "resolve_scope"
RESOLVER_MARKER = "# review-loop shim: scripts/resolve_scope.py -> review-loop scope resolve"


def resolver_text(python: str = sys.executable) -> str:
    """The seed's ``scripts/resolve_scope.py``: this interpreter runs ``review-loop scope
    resolve`` with the caller's arguments (same flags, output and exit codes)."""
    return (
        "#!/usr/bin/env python3\n"
        f"{RESOLVER_MARKER}\n"
        "import os\n"
        "import sys\n\n"
        f"PYTHON = {python!r}\n"
        'os.execv(PYTHON, [PYTHON, "-m", "review_loop", "scope", "resolve", *sys.argv[1:]])\n'
    )


def install_resolver(directory: str) -> dict[str, Any]:
    """Write ``directory/scripts/resolve_scope.py``, the path the audit seed runs as
    ``python3 "${CLAUDE_SKILL_DIR}/scripts/resolve_scope.py"`` (with
    ``CLAUDE_SKILL_DIR=directory``); never over an existing file or through a link.

    Raises:
        InputError: a missing directory, a ``scripts`` that is a link or no directory, or
            an existing ``resolve_scope.py``.
    """
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        raise InputError("--dir", f"{folder} is not a directory", "an existing directory")
    folder = folder.resolve()
    scripts = folder / "scripts"
    if scripts.is_symlink() or (scripts.exists() and not scripts.is_dir()):
        raise InputError("--dir", f"{scripts} is a link or not a directory", "a plain directory")
    scripts.mkdir(exist_ok=True)
    target = scripts / f"{RESOLVER}.py"
    if target.exists() or target.is_symlink():
        raise InputError(
            "--dir",
            f"{target} already exists; review-loop never replaces it",
            "remove it yourself or choose another --dir",
        )
    _publish(target, resolver_text())
    return {
        "ok": True,
        "status": "installed",
        "name": RESOLVER,
        "path": str(target),
        "runs": [sys.executable, "-m", "review_loop", "scope", "resolve"],
        "skillDir": str(folder),
        "remove": f"rm {shlex.quote(str(target))}",
        "note": f"with CLAUDE_SKILL_DIR={shlex.quote(str(folder))}, the audit seed's "
        f'python3 "${{CLAUDE_SKILL_DIR}}/scripts/{RESOLVER}.py" runs review-loop scope resolve',
    }
