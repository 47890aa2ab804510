"""How the process tests run the wrapper without privileges, as review-loop does for a user.

As root, the unprivileged path is run as ``nobody`` with an interpreter anyone can run
(the venv's may live under ``/root``) and a copy of the standalone wrapper (stdlib only):
nobody cannot read a checkout under a private (0700) directory, as a fresh clone in
``mktemp -d`` is.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from review_loop.orchestrator.sandbox import isolation

NOBODY = 65534
UNSHARE_AS_USER = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def nobody_launcher() -> tuple[list[str], str]:
    """(the launcher of a user namespace as ``nobody``, an interpreter nobody can run);
    skips the test where this is not root (the other tests run unprivileged already) or
    ``setpriv`` / ``/usr/bin/python3`` are missing."""
    if os.geteuid() != 0:
        pytest.skip("run as a user without privileges already: the other tests cover it")
    python = shutil.which("python3", path="/usr/bin:/bin")
    setpriv = shutil.which("setpriv")
    if python is None or setpriv is None:
        pytest.skip("needs /usr/bin/python3 and setpriv to act as nobody")
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    return [*prefix, *UNSHARE_AS_USER], python


def wrapper_copy(directory: Path) -> Path:
    """A copy of the wrapper that nobody can read, in ``directory``."""
    wrapper = directory / isolation.WRAPPER.name
    shutil.copyfile(isolation.WRAPPER, wrapper)
    wrapper.chmod(0o644)
    return wrapper
