"""Real temporary git repositories for tests (no global git config is read or written)."""

from __future__ import annotations

import subprocess
from pathlib import Path


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
    """A new repository at ``root`` on branch ``main`` with ``files`` in one commit."""
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
