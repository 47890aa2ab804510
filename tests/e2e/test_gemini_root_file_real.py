"""end-to-end: without root, gemini reads its bound from the reviewer's own root.

The real ``gemini`` 0.61 from npm, run by a user without privileges (``nobody``, when the
tests run as root; else this user) through review-loop's own sandbox (``unshare --user
--map-root-user`` and the wrapper with ``--root-file``), its system defaults in that
user's own install under a directory anyone may write: every place gemini skips a system
file, for there ``/`` itself appears as the overflow uid. The fake model API answers a
daily quota (Google's own 429), which unbounded 0.61 meets by falling back between the two
models of its ``auto`` chain without end (thousands of requests a minute). With the copy
placed in the reviewer's root it sends one request and exits, naming gemini's own
``TerminalQuotaError``; the run's limit (:data:`RUN_LIMIT`) is far past that, so an
unbounded gemini fails the test.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from review_loop.adapters.gemini import READ_ONLY_POLICY, RETRY_DEFAULTS, SYSTEM_DEFAULTS_VARIABLE
from review_loop.orchestrator.sandbox import isolation
from review_loop.orchestrator.sandbox.wrapper import root_file_path
from tests.e2e.test_consult_real import CliBin
from tests.fakes.model_api import FakeModelAPI, Reply, cli_env

RUN_LIMIT = 90.0
NOBODY = 65534


@pytest.fixture
def world() -> Iterator[Path]:
    """A tree outside pytest's (0700) temp root that the unprivileged user owns."""
    root = Path(tempfile.mkdtemp(prefix="review-loop-gemini-root-file-"))
    root.chmod(0o1777)  # as /tmp: others may write it
    yield root
    shutil.rmtree(root)


def _as_user(world: Path) -> tuple[list[str], str, int | None]:
    """(launcher, python, uid): nobody when root, else this user, in a user namespace."""
    unshare = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        return unshare, "python3", None
    python, setpriv = shutil.which("python3", path="/usr/bin:/bin"), shutil.which("setpriv")
    if python is None or setpriv is None:
        pytest.skip("needs /usr/bin/python3 and setpriv to act as nobody")
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    return [*prefix, *unshare], python, NOBODY


def _skip_unless_others_can_run(gemini: Path) -> None:
    """Skip where nobody cannot reach the pinned gemini: a checkout in a ``mktemp -d``
    directory (0700, as CI's clone) installs it there."""
    for each in gemini.parents:
        if not os.stat(each).st_mode & stat.S_IXOTH:
            pytest.skip(
                f"nobody cannot reach the pinned gemini: {each} is not searchable by others"
            )


def _chown_tree(root: Path, uid: int) -> None:
    for path in [root, *root.rglob("*")]:
        os.chown(path, uid, uid, follow_symlinks=False)


def test_a_daily_quota_ends_at_once_without_root(
    world: Path, cli_bin: CliBin, model_api: FakeModelAPI
) -> None:
    launcher, python, uid = _as_user(world)
    install = world / "install"  # the user's own install of review-loop's files
    install.mkdir()
    defaults = Path(shutil.copy(RETRY_DEFAULTS, install))
    policy = Path(shutil.copy(READ_ONLY_POLICY, install))
    wrapper = Path(shutil.copy(isolation.WRAPPER, install))
    home, repo = world / "home", world / "repo"
    home.mkdir()
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    env = cli_env("gemini", model_api, home)
    (home / "tmp").mkdir(exist_ok=True)
    env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
    env[SYSTEM_DEFAULTS_VARIABLE] = root_file_path(str(defaults))
    for path in (install, home, repo):
        path.chmod(0o755)
        if uid is not None:
            _chown_tree(path, uid)
    model_api.default = Reply.refuse("quota")
    gemini = os.path.realpath(cli_bin("gemini"))  # not through a private checkout
    if uid is not None:
        _skip_unless_others_can_run(Path(gemini))
    argv = [
        *launcher, python, "-I", "-S", str(wrapper), "--root-file", str(defaults), "--",
        gemini, "-o", "json", "--approval-mode", "plan", "--admin-policy", str(policy),
        "--skip-trust", "-p", "", "--session-id", str(uuid.uuid4()),
    ]  # fmt: skip

    process = subprocess.Popen(
        argv, cwd=repo, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        _, stderr = process.communicate(b"Review README.md", timeout=RUN_LIMIT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # unbounded: fail, leave nothing
            process.wait()

    said = stderr.decode("utf-8", "replace")
    assert process.returncode not in (0, None), said
    assert "TerminalQuotaError" in said, said[-2000:]
    turns = model_api.turns()
    assert [t.reply for t in turns] == ["refusal quota"], len(turns)  # no retry, no fallback
    assert "Skipping system defaults" not in said
