"""Contract test: the ``evidence`` command's plain fields are the pydantic model's dump.

``evidence_document`` prints what it computed without building the model
(``docs/performance.md``); it must give exactly what ``attest_evidence(...).model_dump()`` gives:
the same keys in the same order, the same values, and a document the model accepts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from review_loop.agents.evidence import Evidence
from review_loop.orchestrator.workflows.evidence import attest_evidence, evidence_document
from tests.gitrepo import committed_repo


@pytest.mark.parametrize("paths", [None, "app.py", "new.txt,app.py", ["app.py"]])
def test_contract_evidence_document_is_the_models_dump(
    tmp_path: Path, paths: str | list[str] | None
) -> None:
    repo = committed_repo(tmp_path / "repo", {"app.py": "print(1)\n", "lib.py": "x = 1\n"})
    (repo / "app.py").write_text("print(2)\n")
    (repo / "new.txt").write_text("new\n")
    document = evidence_document(repo, "HEAD", paths)
    model = attest_evidence(repo, "HEAD", paths)
    assert json.dumps(document) == json.dumps(model.model_dump())
    assert Evidence.model_validate(document) == model
