"""End-to-end: a link in the reviewed tree never carries a file to the real CLIs' model.

The hostile repository of :func:`tests.e2e.hostile.build_hostile_repo` gains a skill
whose ``SKILL.md`` a pull request replaced by a committed symbolic link: to
``/proc/self/environ`` (review-loop's own environment, which holds the caller's canary
secrets), to a file outside the repository holding a canary, or to ``../../.git/config``.
``review-loop verify-diff`` then runs with each real CLI as the executor against the fake
model API, which records every request:

- auto-derive: no canary is in any request the model API received, nor in ``prompt.md``
  (or any record) under ``.review-handoff/``; the result names the link in
  ``skipped_files``; the model saw that the file was not read;
- with a suggested edit through the ``.git/config`` link, ``.git/config`` stays
  byte-identical and the result names the edit in ``refused_edits``;
- ``--target`` the link: ``missing target`` naming the link, and no request at all.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.hostile import HostileRepo, build_hostile_repo, commit_all
from tests.e2e.test_consult_real import (  # noqa: F401  (peer_for is a fixture)
    EVERY_CLI,
    RUN_TIMEOUT,
    Peer,
    PeerFor,
    assert_nothing_left,
    peer_for,
)

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "canary-aws-read-5b0d7e",
    "GITHUB_TOKEN": "canary-gh-read-a41f09",
}
FILE_CANARY = "canary-outside-file-e2e-77c3"
SKILL = "---\nname: x\ndescription: a skill\n---\nbody\n"
FSMONITOR = '\tbare = false\n\tfsmonitor = "touch PWNED-fsmonitor; false"\n'


def linked_skill(hostile: HostileRepo, link_to: str) -> None:
    """``main`` gets a real ``skills/x``; branch ``pr`` links its SKILL.md to ``link_to``."""
    repo = hostile.repo
    (repo / "skills" / "x").mkdir(parents=True)
    (repo / "skills" / "x" / "SKILL.md").write_text(SKILL)
    (repo / "skills" / "x" / "notes.md").write_text("notes\n")
    commit_all(repo, "a skill")
    subprocess.run(["git", "checkout", "-qb", "pr"], cwd=repo, check=True, timeout=30)
    skill = repo / "skills" / "x" / "SKILL.md"
    skill.unlink()
    skill.symlink_to(link_to)
    (repo / "skills" / "x" / "notes.md").write_text("notes\nmore notes\n")
    commit_all(repo, "pr: the skill is a link now")


def verify_diff(peer: Peer, *args: str) -> dict[str, Any]:
    ran = peer.review_loop(
        "verify-diff", "--repo", str(peer.repo), "--base", "main", "--executor", peer.product,
        *args, timeout=RUN_TIMEOUT,
    )  # fmt: skip
    document = ran.json()
    assert ran.returncode == 0 and isinstance(document, dict), ran.describe()
    return document


def auto_answer(edits: list[dict[str, str]]) -> str:
    verdict = {
        "inferred_intent": "x, better",
        "objective_met": "partial" if edits else "yes",
        "remaining_gaps": ["gap"] if edits else [],
        "regressions": [],
        "suggested_edits": edits,
        "confidence": "high",
    }
    return f"Executed.\n\n```json\n{json.dumps(verdict)}\n```\n"


def seen_by_model(peer: Peer) -> str:
    return "\n".join(
        f"{r.path} {r.query} {r.raw_body.decode('utf-8', 'replace')}" for r in peer.api.requests
    )


def records(repo: Path) -> str:
    root = repo / ".review-handoff"
    return "".join(p.read_text("utf-8", "replace") for p in root.rglob("*") if p.is_file())


@pytest.fixture
def hostile(tmp_path: Path) -> HostileRepo:
    return build_hostile_repo(tmp_path / "hostile-repo", outside=tmp_path / "outside")


@pytest.mark.parametrize("product", EVERY_CLI)
@pytest.mark.parametrize("link", ["environ", "outside"])
def test_auto_a_linked_skill_never_reaches_the_model(
    product: str,
    link: str,
    peer_for: PeerFor,  # noqa: F811  (the fixture imported above)
    hostile: HostileRepo,
) -> None:
    outside_file = hostile.outside / "secret.md"
    outside_file.write_text(f"{SKILL}{FILE_CANARY}\n")
    target = "/proc/self/environ" if link == "environ" else str(outside_file)
    linked_skill(hostile, target)
    peer = peer_for(product, repo=hostile.repo)
    peer.env.update(SECRETS)
    peer.api.script(auto_answer([]))

    document = verify_diff(peer)

    seen = seen_by_model(peer)
    assert peer.api.requests, "the executor never reached the model"
    prompt_files = list((hostile.repo / ".review-handoff").rglob("prompt.md"))
    assert prompt_files, "no prompt.md recorded"
    for leak in (*SECRETS.values(), FILE_CANARY):
        assert leak not in seen, f"{product} sent {leak} to the model"
        assert leak not in records(hostile.repo), f"{leak} is in a record under .review-handoff"
    assert "(not read by review-loop: skills/x/SKILL.md is a symbolic link" in seen
    (skipped,) = document["skipped_files"]
    assert skipped["path"] == "skills/x/SKILL.md"
    assert skipped["reason"].startswith(f"skills/x/SKILL.md is a symbolic link (to {target})")
    assert hostile.fired() == []
    assert_nothing_left(peer)


@pytest.mark.parametrize("product", EVERY_CLI)
def test_auto_an_edit_through_a_link_to_git_config_is_refused(
    product: str,
    peer_for: PeerFor,  # noqa: F811
    hostile: HostileRepo,
) -> None:
    linked_skill(hostile, "../../.git/config")
    config = hostile.repo / ".git" / "config"
    before = config.read_bytes()
    peer = peer_for(product, repo=hostile.repo)
    edit = {"file": "skills/x/SKILL.md", "old_string": "\tbare = false\n", "new_string": FSMONITOR}
    peer.api.script(auto_answer([{**edit, "rationale": "r"}]))

    document = verify_diff(peer)

    assert config.read_bytes() == before
    assert document["applied_edits_count_total"] == 0
    (refused,) = document["refused_edits"]
    assert refused["path"] == "skills/x/SKILL.md"
    assert "symbolic link (to ../../.git/config)" in refused["reason"]
    assert "repositoryformatversion" not in seen_by_model(peer)  # .git/config was not read
    subprocess.run(["git", "status"], cwd=hostile.repo, check=True, capture_output=True)
    assert not list(hostile.repo.glob("PWNED-fsmonitor*"))
    assert_nothing_left(peer)


def test_target_a_linked_skill_sends_nothing(
    peer_for: PeerFor,  # noqa: F811
    hostile: HostileRepo,
) -> None:
    linked_skill(hostile, "/proc/self/environ")
    peer = peer_for("claude", repo=hostile.repo)
    peer.env.update(SECRETS)
    framing = ["--description", "d", "--fix-direction", "f", "--target", "skills/x/SKILL.md"]

    document = verify_diff(peer, *framing)

    assert peer.api.requests == []
    assert not (hostile.repo / ".review-handoff" / "runtime" / "verify-diff").exists()
    assert all(leak not in json.dumps(document) for leak in SECRETS.values())
    assert document["reason"] == "missing target"
    assert document["skipped_files"][0]["path"] == "skills/x/SKILL.md"


def test_target_a_regular_skill_reaches_the_model_unchanged(
    peer_for: PeerFor,  # noqa: F811
    hostile: HostileRepo,
) -> None:
    # the control: the same repository, the skill a real file: its text reaches the model
    linked_skill(hostile, "/proc/self/environ")
    skill = hostile.repo / "skills" / "x" / "SKILL.md"
    skill.unlink()
    skill.write_text(SKILL + f"{FILE_CANARY}\n")
    peer = peer_for("claude", repo=hostile.repo)
    peer.api.script(auto_answer([]))
    framing = ["--description", "d", "--fix-direction", "f", "--target", "skills/x/SKILL.md"]
    scenarios = hostile.outside / "scenarios.json"
    scenarios.write_text(
        json.dumps(
            {
                "scenarios": [
                    {
                        "kind": "median",
                        "title": "t",
                        "description": "d",
                        "checklist": ["[critical] a", "b", "c"],
                    }
                ]
            }
        )
    )

    document = verify_diff(peer, *framing, "--scenarios-file", str(scenarios))

    assert "skipped_files" not in document, document
    assert FILE_CANARY in seen_by_model(peer)
    assert_nothing_left(peer)
