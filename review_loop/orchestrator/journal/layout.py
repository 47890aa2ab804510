"""Where verification runs live: the product root, the branch slug, run tokens, file names.

``<product>/.review-handoff/verification/branch/<slug>/<type>/runs/``::

    run-<token>.jsonl            the append-only event log (CloudEvents lines)
    run-<token>.jsonl.lock       the stream's flock
    run-<token>.jsonl.state      snapshot of the fold (a MAC-signed cache, rebuilt when
                                 stale, forged or unsigned)
    run-<token>.jsonl.sealed     marker: the run is finished (a cache; the terminal event
                                 is the seal)
    run-<token>.jsonl.corrupt-N  a torn or garbage tail moved aside (never overwritten)
    input-<token>.json           {scopeIdentity, scopeType, source, digest, content}

Every one of them is opened no-follow below the product root (``journal/dirs.py``).

``<product>`` is the root of the repository's *common* git dir, so every worktree of a
repository shares one store, as spx's ``.spx/`` does. The tree lives under
``.review-handoff/`` (excluded through ``$GIT_COMMON_DIR/info/exclude``), not under
``.spx/``: our log format differs from spx's per-sequence files, and two tools writing one
run would split its history.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Final, NamedTuple

from review_loop.agents.errors import InputError, NotAGitRepositoryError
from review_loop.agents.verification import branch_slug
from review_loop.orchestrator.handoff import git_lockdown

STORE_DIR: Final = (".review-handoff", "verification")
BRANCH_ENVS: Final = ("REVIEW_LOOP_VERIFY_BRANCH", "SPX_VERIFY_BRANCH")
BACKEND_IDENTITY: Final = "local"


class Product(NamedTuple):
    """A repository as the journal addresses it.

    Attributes:
        root: the common-dir product root (shared by every worktree).
        worktree: the work tree the command runs in (git commands run here).
        branch_identity: the branch name, or ``detached-<sha12>``.
        slug: the branch directory name.
        head: the checked-out commit, if any.
    """

    root: Path
    worktree: Path
    branch_identity: str
    slug: str
    head: str | None

    def branch_dir(self) -> Path:
        """``<root>/.review-handoff/verification/branch/<slug>``."""
        return self.root.joinpath(*STORE_DIR, "branch", self.slug)

    def runs_dir(self, verification_type: str) -> Path:
        """The storage namespace of one verification type."""
        return self.branch_dir() / verification_type / "runs"


def run_git(cwd: Path, *args: str) -> tuple[int, bytes, bytes]:
    """``git -C cwd args...`` → ``(exit code, stdout, stderr)``, for short commands.

    Locked down as every git review-loop runs (:mod:`..git_lockdown`); only commands that
    convert no work tree content come here.
    """
    if git_lockdown.needs_driver_overrides(args):
        raise ValueError(f"run_git is for commands that read no work tree content: {args}")
    try:
        done = subprocess.run(
            git_lockdown.argv(cwd, args),
            env=git_lockdown.environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise InputError("git", "the git executable is not on PATH", "an installed git") from None
    return done.returncode, done.stdout, done.stderr


def locate_product(cwd: Path, *, env: dict[str, str] | None = None) -> Product:
    """Resolve the product root, the branch and its slug from one git call.

    Raises:
        NotAGitRepositoryError: ``cwd`` is not inside a work tree.
    """
    environ = os.environ if env is None else env
    if not cwd.is_dir():
        raise NotAGitRepositoryError(str(cwd), "no such directory")
    code, stdout, _ = run_git(
        cwd,
        "rev-parse",
        "--show-toplevel",
        "--git-common-dir",
        "HEAD",
        "--symbolic-full-name",
        "HEAD",
    )
    lines = stdout.decode("utf-8", "surrogateescape").splitlines()
    head: str | None = None
    symbolic = "HEAD"
    if code == 0 and len(lines) >= 4:
        top, common, head, symbolic = lines[:4]
    else:  # no commit yet: HEAD does not resolve
        code, stdout, stderr = run_git(cwd, "rev-parse", "--show-toplevel", "--git-common-dir")
        parts = stdout.decode("utf-8", "surrogateescape").splitlines()
        if code != 0 or len(parts) < 2:
            raise NotAGitRepositoryError(str(cwd), stderr.decode("utf-8", "replace"))
        top, common = parts[:2]
        _, ref, _ = run_git(cwd, "symbolic-ref", "--quiet", "HEAD")
        symbolic = ref.decode("utf-8", "surrogateescape").strip() or "HEAD"
    worktree = Path(top)
    # git prints a relative --git-common-dir relative to cwd (``../.git`` from a subdirectory),
    # not to the top level: resolved against the top level, the store landed outside the repo.
    common_dir = Path(common) if Path(common).is_absolute() else (cwd / common).resolve()
    root = common_dir.parent if common_dir.name == ".git" else worktree
    branch = next((environ[name] for name in BRANCH_ENVS if environ.get(name)), None)
    if branch is None and symbolic.startswith("refs/heads/"):
        branch = symbolic.removeprefix("refs/heads/")
    if branch is None:
        branch = f"detached-{(head or 'unborn')[:12].lower()}"
    return Product(
        root=root, worktree=worktree, branch_identity=branch, slug=branch_slug(branch), head=head
    )


def new_run_token(now: float | None = None) -> str:
    """``YYYY-MM-DD_HH-MM-SS-mmm-<12 hex>`` in UTC."""
    moment = time.time() if now is None else now
    whole = int(moment)
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.gmtime(whole))
    return f"{stamp}-{int((moment - whole) * 1000):03d}-{os.urandom(6).hex()}"


def run_file(runs_dir: Path, token: str) -> Path:
    """``run-<token>.jsonl``."""
    return runs_dir / f"run-{token}.jsonl"


def input_record(runs_dir: Path, token: str) -> Path:
    """``input-<token>.json``."""
    return runs_dir / f"input-{token}.json"
