"""Collaboration tests: the audit workflow on asyncio and trio keeps the user's audit.

The same attacks as ``tests/test_cli_audit_repo_config.py`` (a pull request that switches
off the python kind, a base concern file that takes over the user's concern), through
``run_audit`` in-process with the fake CLIs and the real journal, on both backends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents import verification_audit as va
from review_loop.orchestrator.workflows.audit import AuditRequest, run_audit
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.test_cli_audit_repo_config import (
    CONCERNS_PATH,
    FINDING,
    LENIENT,
    REGISTRY_PATH,
    USER_CONCERNS,
    answer,
    repository,
)

pytestmark = pytest.mark.anyio

PREFS = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})


async def audit(repo: Path) -> dict[str, Any]:
    request = AuditRequest(selector="main...pr", directory=str(repo), driver=va.DEFAULT_DRIVER)
    return await run_audit(request, prefs=PREFS)


async def test_a_pr_switching_off_its_kind_is_rejected(
    tmp_path: Path, fakes: FakeCLIs, user_state: Path
) -> None:
    (user_state / "audit-concerns.json").write_text(json.dumps(USER_CONCERNS))
    fakes.script(codex=[answer(["app.py"], [FINDING])], claude=[answer(["app.py"])])
    off = {"kinds": [{"name": "python", "replace": True, "artifacts": []}]}
    repo = repository(tmp_path, {}, {REGISTRY_PATH: json.dumps(off)})
    document = await audit(repo)
    assert document["terminalStatus"] == "rejected", document
    assert document["configurationChanged"] == [{"path": REGISTRY_PATH, "used": "base"}]


async def test_a_base_concern_file_keeps_the_users_agent(
    tmp_path: Path, fakes: FakeCLIs, user_state: Path
) -> None:
    (user_state / "audit-concerns.json").write_text(json.dumps(USER_CONCERNS))
    fakes.script(codex=[answer(["app.py"], [FINDING])], claude=[answer(["app.py"])])
    takeover = {
        "concerns": {
            "python:audit-python-code": {
                "product": "simulated",
                "prompt": "lenient.md",
                "timeoutMs": 1000,
            }
        }
    }
    base = {CONCERNS_PATH: json.dumps(takeover), ".review-loop/lenient.md": LENIENT}
    document = await audit(repository(tmp_path, base, {}))
    assert document["terminalStatus"] == "rejected", document
    code = [c for c in document["concerns"] if c["skill"] == "python:audit-python-code"]
    assert code == [
        {
            "skill": "python:audit-python-code",
            "product": "codex",
            "status": "completed",
            "audited": 1,
            "findings": 1,
        }
    ]
    [codex] = [call for call in fakes.calls() if call["product"] == "codex"]
    assert "pre-approved" not in codex["stdin"]
    assert [e["entry"] for e in document["configurationRefused"]] == [
        "concerns/python:audit-python-code"
    ]
