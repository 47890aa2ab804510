"""Contract tests: the repository's own concern file cannot name a prompt outside it.

``.review-loop/audit-concerns.json`` belongs to the reviewed (untrusted) repository. A prompt
file it names becomes text sent to a reviewer, so an absolute path or a link out of the
repository would hand the user's files (a key) to the model; a FIFO would hang the audit.
Real files, links and a FIFO; the real loader.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from review_loop.orchestrator.workflows.audit import Blocked, load_concern_agents

SECRET = "-----BEGIN PRIVATE KEY----- the user's\n"


def planted(tmp_path: Path, prompt: str) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    (repo / ".review-loop").mkdir(parents=True)
    document = {"concerns": {"*": {"product": "claude", "prompt": prompt}}}
    (repo / ".review-loop" / "audit-concerns.json").write_text(json.dumps(document))
    (tmp_path / "id_key").write_text(SECRET)
    return repo, {"REVIEW_LOOP_HOME": str(tmp_path / "state")}


def test_contract_an_absolute_prompt_outside_the_repository_is_refused(tmp_path: Path) -> None:
    repo, env = planted(tmp_path, str(tmp_path / "id_key"))
    with pytest.raises(Blocked, match="inside the repository"):
        load_concern_agents(repo, None, env)


def test_contract_a_prompt_linked_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    repo, env = planted(tmp_path, "prompt.md")
    (repo / ".review-loop" / "prompt.md").symlink_to(tmp_path / "id_key")
    with pytest.raises(Blocked, match="inside the repository"):
        load_concern_agents(repo, None, env)


def test_contract_a_fifo_prompt_is_refused_not_waited_on(tmp_path: Path) -> None:
    repo, env = planted(tmp_path, "prompt.md")
    os.mkfifo(repo / ".review-loop" / "prompt.md")
    with pytest.raises(Blocked, match="regular file"):
        load_concern_agents(repo, None, env)


def test_contract_a_prompt_inside_the_repository_is_read(tmp_path: Path) -> None:
    repo, env = planted(tmp_path, "prompt.md")
    (repo / ".review-loop" / "prompt.md").write_text("Audit carefully.\n")
    agents = load_concern_agents(repo, None, env)
    assert agents["*"].prompt == "Audit carefully.\n"
