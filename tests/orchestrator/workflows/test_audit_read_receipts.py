"""Collaboration tests: the run driver checks that each audited body was read completely
(seed 002, stage "Inspect", A49).

Each concern gives, per audited path, the read receipt of the body it read: its line count
and its last non-blank line, which a read cut short cannot know. The driver computes the
same from the true body (the blob at the head; the working-tree file for a live path of an
advisory audit) and compares. A missing or wrong receipt is a partial read: it is
re-issued to that concern once, in its session; still partial, the path is recorded as not
inspected, so the run is BLOCKED naming its unit instead of approved (A65's rule).

Concern agents are fake CLIs that read their cwd as a reviewer with a Read tool would,
through the real dispatcher and process layer; the run is the real journal. Async tests
run on asyncio and trio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from review_loop.agents import verification_audit as va
from review_loop.orchestrator.journal import runs
from tests.fakes import FakeCLIs
from tests.orchestrator.workflows.test_audit import audit, concerns_file, remote, reply, subjects
from tests.orchestrator.workflows.test_scope import Remote, commit, git

__all__ = ["remote"]  # a pytest fixture shared with test_audit (fakes: tests/conftest.py)

pytestmark = pytest.mark.anyio

CODE = "python:audit-python-code"
LONG = "".join(f"line {n}\n" for n in range(1, 121))


def long_body(remote: Remote) -> None:
    """``a.py`` at the head: 120 lines (a read capped at 50 misses the end)."""
    remote.head = commit(remote.work, {"a.py": LONG}, "long a.py")


async def test_a_truncated_read_is_re_issued_and_a_complete_one_approves(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    long_body(remote)
    fakes.script(claude=[reply(audited=["a.py"], receipts=50), reply(audited=["a.py"])])
    document = await audit(remote, concerns_file(tmp_path, {CODE: "claude"}))
    assert document["ok"] is True, document
    calls = fakes.calls()
    assert len(calls) == 2
    assert (
        "Your read of these bodies was truncated" in calls[1]["stdin"]
        and "- a.py" in calls[1]["stdin"]
    )
    assert "line 120" not in calls[1]["stdin"]  # the expected receipt is never sent
    assert ("scope", "a.py", "audited") in subjects(document)


async def test_a_read_still_partial_is_not_inspected_and_blocks(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    long_body(remote)
    fakes.script(claude=[reply(audited=["a.py"], receipts=50)])  # repeats: partial again
    document = await audit(remote, concerns_file(tmp_path, {CODE: "claude"}))
    assert document["ok"] is False and document["status"] == "BLOCKED", document
    assert "not inspected" in document["stderr"]
    assert "implementation:python:code:a.py" in document["stderr"]
    assert "50 lines ending 'line 50'" in document["stderr"]
    assert "120 lines ending 'line 120'" in document["stderr"]
    assert len(fakes.calls()) == 2  # re-issued once, then recorded as not inspected
    scope = f"{remote.base}..{remote.head}"
    run = runs.address(remote.work, "audit", "changeset", scope, document["runToken"])
    assert runs.status(run)["sealed"] is False  # never finished approved


async def test_a_reply_without_receipts_is_a_partial_read(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    fakes.script(claude=[reply(audited=["a.py"], receipts=False)])
    document = await audit(remote, concerns_file(tmp_path, {CODE: "claude"}))
    assert document["status"] == "BLOCKED", document
    assert "no read receipt (the body has 1 lines ending 'a2')" in document["stderr"]


async def test_the_head_blob_is_the_body_not_the_working_tree(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    """A committed audit judges the head: a reviewer that read an edited working file
    read a different version (the seed: "never silently audit a different version")."""
    (remote.work / "a.py").write_text("a2\nedited in the working tree\n")
    fakes.script(claude=[reply(audited=["a.py"])])
    document = await audit(remote, concerns_file(tmp_path, {CODE: "claude"}))
    assert document["status"] == "BLOCKED", document
    assert "the body has 1 lines ending 'a2'" in document["stderr"]


async def test_an_advisory_live_path_is_checked_against_the_working_file(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    (remote.work / "a.py").write_text("a2\nlive edit\n")
    fakes.script(claude=[reply(audited=["a.py"])])
    document = await audit(remote, concerns_file(tmp_path, {CODE: "claude"}), "worktree:HEAD")
    assert document["ok"] is True, document
    assert len(fakes.calls()) == 1


def test_receipt_of_counts_lines_as_an_editor_numbers_them() -> None:
    assert va.receipt_of(b"a\nb\n") == va.ReadReceipt(2, "b")
    assert va.receipt_of(b"a\nb") == va.ReadReceipt(2, "b")
    assert va.receipt_of(b"a\n  last  \n\n\n") == va.ReadReceipt(4, "last")
    assert va.receipt_of(b"") == va.ReadReceipt(0, "")
    assert va.receipt_of(b"\x00binary") is None
    assert va.receipt_of(b"\xff\xfe") is None


def test_partial_reads_need_a_matching_receipt_for_each_audited_text_body() -> None:
    concern = va.Concern("python", "code", "python", "audit-python-code", ("a.py", "b.py", "c"))
    expected = {"a.py": va.ReadReceipt(3, "x"), "b.py": va.ReadReceipt(1, "y"), "c": None}
    result = va.parse_concern_reply(
        '{"status": "completed", "audited": ["a.py", "b.py", "c"],'
        ' "read": {"a.py": {"lines": 3, "lastLine": " x "}, "b.py": {"lines": "1"}}}'
    )
    assert va.partial_reads(concern, result, expected) == {
        "b.py": "no read receipt (the body has 1 lines ending 'y')"
    }
    assert va.without_paths(result, ["b.py"]).audited == ("a.py", "c")


def test_the_builtin_prompt_and_contract_ask_for_the_receipt() -> None:
    assert '"read"' in va.RESPONSE_CONTRACT and "lastLine" in va.RESPONSE_CONTRACT
    assert "read receipt" in va.BUILTIN_PROMPT


async def test_a_head_body_the_driver_cannot_read_blocks_naming_it(
    remote: Remote, fakes: FakeCLIs, tmp_path: Path
) -> None:
    """No read goes unchecked: a body git cannot read is the seed's unreadable subject."""
    blob = git(remote.work, "rev-parse", f"{remote.head}:a.py")
    (remote.work / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    fakes.script(claude=[reply(audited=["a.py"], receipts=False)])
    document = await audit(remote, concerns_file(tmp_path, {CODE: "claude"}))
    assert document["status"] == "BLOCKED", document
    assert f"cat-file --batch: {remote.head}:a.py" in document["command"]
    assert document["runToken"] != "not-started"
    assert fakes.calls() == []  # stopped before any concern judged an unchecked read
