"""Contract tests: the journal finds the product root from anywhere inside a repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.orchestrator.journal.layout import locate_product
from tests.gitrepo import committed_repo, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = committed_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    (root / "src" / "deep").mkdir(parents=True)
    return root


@pytest.mark.parametrize("inside", [".", "src", "src/deep"])
def test_contract_product_root_from_a_subdirectory(repo: Path, inside: str) -> None:
    product = locate_product(repo / inside)
    assert product.root == repo.resolve()  # spx: the store stays in the repository
    assert product.worktree == repo.resolve()
    assert product.branch_dir().parent == repo.resolve() / ".review-handoff/verification/branch"


def test_contract_linked_worktree_shares_the_main_root(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    (linked / "sub").mkdir()
    for where in (linked, linked / "sub"):
        product = locate_product(where)
        assert (product.root, product.worktree) == (repo.resolve(), linked.resolve())
        assert product.branch_identity == "side"
