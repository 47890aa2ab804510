"""Process tests: a CLI that writes into the repository on its own runs with it read-only.

opencode caches a project id in ``.git/`` and qwen rewrites its ``.qwen/settings.json`` on
every start, whatever their tools may do; their adapters ask for the repository read-only
(``Invocation.read_only_repository``). A shell stands in for the CLI, run through the real
sandbox setup (:func:`sandbox.protect`) and process layer: its writes into the work tree and
into ``.git/`` fail, the repository's hidden configuration stays covered under the
read-only bind, and where no namespace can be made it is refused, even when unprotected
runs are allowed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest

from review_loop.adapters import get_adapter
from review_loop.agents.models import Invocation
from review_loop.orchestrator.process.run import run_process
from review_loop.orchestrator.sandbox import reviewer as sandbox
from tests.gitrepo import committed_repo, git

SCRIPT = (
    'touch "$1/pwned.txt" 2>/dev/null && echo wrote-tree; '
    'touch "$1/.git/opencode" 2>/dev/null && echo wrote-git; '
    'echo x >> "$1/.qwen/settings.json" 2>/dev/null && echo wrote-settings; '
    'cat "$1/.qwen/settings.json"; echo read-done'
)


def _digest(repo: Path) -> dict[str, str]:
    """Every file of ``repo`` (``.git`` included) and a hash of its bytes."""
    found = {}
    for path in sorted(repo.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(repo))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = committed_repo(tmp_path / "repo", {"README.md": "hello\n"})
    (root / ".qwen").mkdir()
    (root / ".qwen" / "settings.json").write_text('{"hooks": "HOSTILE-SETTINGS"}\n')
    git(root, "add", ".qwen")
    git(root, "commit", "-qm", "its settings")
    return root


def _invocation(repo: Path, *, read_only: bool) -> Invocation:
    sh = shutil.which("sh")
    assert sh is not None
    return Invocation(
        argv=(sh, "-c", SCRIPT, "sh", str(repo)),
        cwd=repo,
        hidden_paths=(".qwen",),
        read_only_repository=read_only,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "control"])
async def test_process_the_repository_and_its_git_dir_take_no_write(
    repo: Path, read_only: bool
) -> None:
    if sys.platform != "linux" or shutil.which("unshare") is None:
        pytest.skip("no mount namespaces on this system")
    before = _digest(repo)
    adapter = get_adapter("qwen")

    protected = await sandbox.protect(
        _invocation(repo, read_only=read_only), adapter, repo=repo, allow_unprotected=False
    )
    assert isinstance(protected, Invocation), protected
    done = await run_process(protected, deadline=30, grace=1)

    said = done.stdout.decode()
    assert done.returncode == 0 and "read-done" in said, done
    assert "HOSTILE-SETTINGS" not in said and "wrote-settings" not in said  # covered
    if read_only:
        assert "wrote-tree" not in said and "wrote-git" not in said, said
        assert _digest(repo) == before
    else:  # the control: without it the same shell writes both
        assert "wrote-tree" in said and "wrote-git" in said, said


@pytest.fixture
def failing_unshare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``unshare`` first on PATH that fails as it does where user namespaces are off."""
    bin_dir = tmp_path / "bin-unshare-fails"
    bin_dir.mkdir()
    tool = bin_dir / "unshare"
    tool.write_text("#!/bin/sh\necho 'unshare: Operation not permitted' >&2\nexit 1\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.anyio
@pytest.mark.usefixtures("failing_unshare")
@pytest.mark.parametrize("product", ["opencode", "qwen"])
async def test_process_without_a_namespace_it_is_refused_even_when_allowed(
    repo: Path, product: str
) -> None:
    shutil.rmtree(repo / ".qwen")  # nothing to hide: only the writes matter
    adapter = get_adapter(product)

    refused = await sandbox.protect(
        _invocation(repo, read_only=True), adapter, repo=repo, allow_unprotected=True
    )

    assert isinstance(refused, str)
    assert "writes into the repository on its own" in refused and product in refused
    allowed = await sandbox.protect(
        _invocation(repo, read_only=False), adapter, repo=repo, allow_unprotected=True
    )
    assert isinstance(allowed, Invocation)  # the control: the same run, no such need
