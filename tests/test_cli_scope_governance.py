"""Contract tests: ``review-loop scope governance``, stage 3 ("Load") for a host (seed 002).

A host driving the journal by hand has to "discover governing nodes from the resolved
paths through the product-tree evidence links and declared audit ownership, load their
context read-only, and pass that discovered context to the concern skills". The command
prints that context as one JSON document: the overlays (from the base), the nodes (from
the head) with the paths each names or owns, the ungoverned paths and the coverage-gap unit
each gets; its ``--help`` lists those fields. A node or overlay the working tree adds is
not read: git only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from review_loop.orchestrator import cli
from tests.orchestrator.workflows.test_audit_governance import on_base
from tests.orchestrator.workflows.test_scope import Remote, commit

FIELDS = (
    "base",
    "head",
    "paths",
    "overlays",
    "overlaysByKind",
    "nodes",
    "ungoverned",
    "coverageGaps",
)


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "git")


def governed(remote: Remote) -> str:
    """Governance on the base (an overlay) and the head (two nodes); returns the head."""
    on_base(remote, {"spx/local/python.md": "PYTHON OVERLAY\n"})
    head = commit(
        remote.work,
        {
            "spx/10-core/20-guard.adr.md": "# Guard\nDecision: a.py guards empty input.\n",
            "spx/20-web/10-app.md": "---\naudits:\n  - web/\n---\n# Web\n",
        },
        "governance",
    )
    (remote.work / "spx" / "planted.md").write_text("names notes.txt\n")  # not committed
    return head


def governance(remote: Remote, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    with pytest.raises(SystemExit) as ended:
        cli.run(["scope", "governance", *argv, "--repo", str(remote.work)])
    out = capsys.readouterr().out
    assert ended.value.code == 0, out
    return json.loads(out)


def test_governance_prints_the_nodes_overlays_and_gaps(
    remote: Remote, capsys: pytest.CaptureFixture[str]
) -> None:
    head = governed(remote)
    document = governance(remote, capsys, "HEAD")
    assert document["ok"] is True and set(FIELDS) <= set(document)
    assert document["head"] == head
    assert [o["path"] for o in document["overlays"]] == ["spx/local/python.md"]
    assert document["overlaysByKind"]["python"] == ["spx/local/python.md"]
    nodes = {n["path"]: n for n in document["nodes"]}
    assert nodes["spx/10-core/20-guard.adr.md"]["names"] == ["a.py"]
    assert nodes["spx/20-web/10-app.md"]["owns"] == ["web/app.ts"]
    assert "Decision: a.py guards" in nodes["spx/10-core/20-guard.adr.md"]["text"]
    assert "spx/planted.md" not in nodes  # the working tree is never read
    assert document["ungoverned"] == ["notes.txt", "tests/test_a.py"]
    assert document["coverageGaps"][0] == {
        "unitId": "implementation:governance:coverage-gap:notes.txt",
        "subject": "notes.txt",
    }


def test_governance_of_an_advisory_selector_covers_the_live_paths(
    remote: Remote, capsys: pytest.CaptureFixture[str]
) -> None:
    governed(remote)
    (remote.work / "web" / "extra.ts").write_text("y\n")
    document = governance(remote, capsys, "worktree:HEAD")
    assert "web/extra.ts" in document["paths"]
    nodes = {n["path"]: n for n in document["nodes"]}
    assert nodes["spx/20-web/10-app.md"]["owns"] == ["web/app.ts", "web/extra.ts"]


def test_governance_help_lists_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["scope", "governance", "--help"]) == 0
    text = capsys.readouterr().out
    assert "review-loop scope governance" in text
    for name in FIELDS:
        assert f"  {name}" in text or f", {name}" in text, name


def test_governance_outside_a_repository_is_ok_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.run(["scope", "governance", "HEAD", "--repo", str(tmp_path)])
    assert ended.value.code == 2
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False and document["error"]
