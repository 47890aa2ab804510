"""Real temporary git repositories for tests (no global git config is read or written)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

TEMPLATES: list[Path] = []
"""Where :func:`committed_repo` keeps the repositories it built, to copy (set for a test
process by ``tests/conftest.py``; empty, every repository is built)."""
_built: dict[tuple[object, ...], Path] = {}


def git(repo: Path, *args: str) -> str:
    """Run ``git -C repo args...``; returns stdout, raises on failure."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def empty_repo(root: Path) -> Path:
    """A new, empty repository at ``root`` (``git init``, nothing committed)."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    return root


def committed_repo(root: Path, files: dict[str, str]) -> Path:
    """A new repository at ``root`` on branch ``main`` with ``files`` in one commit.

    The repository is built once per test process for the same files and the same git
    environment, and copied after that: a copy of the five git processes' work is half
    their CPU, and hundreds of tests start from one. Only where git would read a user's
    configuration (a ``~/.gitconfig`` a test wrote, ``GIT_CONFIG_*``) is it built anew.
    """
    key = _template_key(files)
    if key is None or not TEMPLATES:
        return _build(root, files)
    template = _built.get(key)
    if template is None:
        template = _build(TEMPLATES[0] / str(len(_built)), files)
        _built[key] = template
    shutil.copytree(template, root, symlinks=True)
    return root


def _template_key(files: dict[str, str]) -> tuple[object, ...] | None:
    """What the built repository depends on: the files and git's variables (an identity, a
    date); ``None`` where git would read configuration outside the repository."""
    home = Path(os.environ.get("HOME", "/nonexistent"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    if (home / ".gitconfig").exists() or (xdg / "git" / "config").exists():
        return None
    variables = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_")))
    if any(name.startswith("GIT_CONFIG") for name, _ in variables):
        return None
    return (tuple(files.items()), variables)


def _build(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", *files)
    git(root, "commit", "-qm", "init")
    return root


def guarded_change(root: Path) -> Path:
    """A new repository at ``root`` with ``app.py`` committed unguarded (``x[0]``) and the
    guard (``x[0] if x else None``) left uncommitted: a small change to review."""
    committed_repo(root, {"app.py": "def f(x):\n    return x[0]\n"})
    (root / "app.py").write_text("def f(x):\n    return x[0] if x else None\n")
    return root
