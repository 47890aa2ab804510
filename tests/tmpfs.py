"""A real small disk for fault tests: a tmpfs mounted for one test (needs root), or a skip."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def used_bytes(root: Path) -> int:
    """Bytes in use on the file system at ``root`` (its blocks, not a walk of its files)."""
    info = os.statvfs(root)
    return (info.f_blocks - info.f_bfree) * info.f_frsize


@contextmanager
def small_disk(root: Path, size: str) -> Iterator[Path]:
    """``root`` as a fresh tmpfs of ``size`` (``30m``) for the block; skips the test where
    this machine does not allow mounting one."""
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    root.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(root)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs failed: {done.stderr.strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True)
