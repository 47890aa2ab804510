"""Mounts for the journal's fault-injection tests (not a test module).

Root ignores file modes, so "read-only" and "disk full" are made real with mounts: a
read-only bind mount of a directory, and a tiny tmpfs. Where mounting is impossible (not
root, no ``CAP_SYS_ADMIN``, no ``mount`` binary) the test is skipped with that reason.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    if shutil.which("mount") is None:
        pytest.skip("mounting is impossible here: no mount binary")
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(
            f"mounting is impossible here (needs root / CAP_SYS_ADMIN): {done.stderr.strip()}"
        )


def _umount(target: Path) -> None:
    done = subprocess.run(["umount", str(target)], capture_output=True, check=False)
    if done.returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


@contextlib.contextmanager
def read_only(directory: Path, *, writable: Path | None = None) -> Iterator[Path]:
    """``directory`` read-only (a bind mount of itself), optionally keeping one file writable.

    ``writable``: a file inside ``directory`` that stays writable (bound onto itself first,
    then carried by a recursive bind under the read-only top): a read-only directory
    holding a writable log, as ``chmod 555`` on the directory makes it for a normal user.
    """
    mounted: list[Path] = []
    try:
        if writable is not None:
            _mount("--bind", str(writable), str(writable))
            mounted.append(writable)
        _mount("--rbind", str(directory), str(directory))
        mounted.append(directory)
        _mount("-o", "remount,bind,ro", str(directory))
        yield directory
    finally:
        for target in reversed(mounted):
            _umount(target)
        if writable is not None:  # --rbind carried a second copy of the file mount
            while subprocess.run(["mountpoint", "-q", str(writable)], check=False).returncode == 0:
                _umount(writable)


@contextlib.contextmanager
def tmpfs(directory: Path, size: str = "256k") -> Iterator[Path]:
    """A ``size`` tmpfs mounted on ``directory`` (made if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory))
    try:
        yield directory
    finally:
        _umount(directory)
