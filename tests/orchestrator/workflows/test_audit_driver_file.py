"""Collaboration tests: a malformed run-driver file is the seed's BLOCKED, not a usage error (A4).

Seed 002: "A missing selector or identity field … returns BLOCKED with runToken:
not-started". A ``--driver`` file that lacks identity fields (or is no JSON object) gives
the eight-line BLOCKED diagnostic, exit 2, naming every missing field at once; nothing of
the run is started and no concern is asked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from review_loop.agents import verification_audit as va
from review_loop.orchestrator import cli
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_audit import concerns_file, remote
from tests.orchestrator.workflows.test_scope import Remote

__all__ = ["remote"]  # a pytest fixture shared with test_audit (fakes: tests/conftest.py)


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (
            {"agentName": "x", "producerKind": "skill"},
            [f"'{n}'" for n in va.DRIVER_FIELDS if n not in ("agentName", "producerKind")],
        ),
        ([1, 2], ["the run-driver identity is a JSON object"]),
        ("{not json", ["not JSON"]),
    ],
    ids=["four-fields-missing", "not-an-object", "not-json"],
)
def test_a_malformed_driver_file_blocks_not_started(
    remote: Remote,
    fakes: FakeCLIs,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: object,
    named: list[str],
) -> None:
    driver = tmp_path / "driver.json"
    driver.write_text(content if isinstance(content, str) else json.dumps(content))
    config = concerns_file(tmp_path, {"*": "claude"})
    argv = ["audit", "HEAD", str(remote.work), "--concerns", config, "--driver", str(driver)]
    code = cli.run(argv)
    document = json.loads(capsys.readouterr().out)
    assert code == 2 and document["status"] == "BLOCKED", document
    assert document["runToken"] == "not-started"
    assert document["blocked"].splitlines()[:2] == ["BLOCKED", "runToken: not-started"]
    for text in named:
        assert text in document["stderr"], document["stderr"]
    assert str(driver) in document["stderr"]
    assert not (remote.work / ".review-handoff" / "verification").exists()
    assert fakes.calls() == []
