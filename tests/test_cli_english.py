"""Contract and process tests: what a person reads is English or explained where it appears,
and each event is said once on stderr.

- The review packet keeps the original's Chinese column names and severity tokens (reviewers
  write them; clients and the packet's reader key on them); every such token in a rendered
  stage is explained in English in that stage.
- An event that a progress line already says (a fallback) is not printed a second time by the
  command's stderr handler; a host's own logging handlers still receive it.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys

from review_loop.agents.review import (
    Finding,
    Ledger,
    Reassessment,
    ReviewAnswer,
    Verdict,
)
from review_loop.agents.review_packet import review_stage
from review_loop.orchestrator.log import LOGGER_NAME, log_event

_CJK = re.compile(r"\[?[\u3400-\u9fff\uff08\uff09]+\]?")


def _finding(fid: str, severity: str, blocking: bool) -> Finding:
    return Finding(
        id=fid,
        severity=severity,
        title="crash on empty input",
        evidence="a.py:3",
        targetFiles=["a.py"],
        requiredFix="guard it",
        acceptanceCheck="test passes",
        blocking=blocking,
    )


def _stage(answer: ReviewAnswer) -> str:
    text, _ = review_stage(
        answer=answer,
        ledger=Ledger(),
        reviewer="codex",
        session_id=None,
        base_sha="0" * 40,
        evidence_path="e.json",
        digest="d",
        fix_handoff=False,
        completion="pass",
    )
    return text


def _unexplained(text: str) -> list[str]:
    """The CJK tokens of ``text`` that no line of it explains as ``TOKEN = english``."""
    explained = "\n".join(line for line in text.splitlines() if "=" in line)
    return [
        token
        for token in sorted(set(_CJK.findall(text)))
        if not re.search(re.escape(token) + r" = [A-Za-z]", explained)
    ]


def test_contract_a_findings_stage_explains_its_chinese_tokens() -> None:
    answer = ReviewAnswer(
        round=1,
        verdict=Verdict.BLOCKED,
        findings=[_finding("F1", "[阻塞]", True), _finding("F2", "[非阻塞]", False)],
        coverage=["a.py"],
    )
    text = _stage(answer)
    assert "[阻塞]" in text and "严重度" in text  # the original's tokens are kept
    assert _unexplained(text) == []


def test_contract_a_re_review_stage_explains_its_chinese_tokens() -> None:
    answer = ReviewAnswer(
        round=2,
        verdict=Verdict.BLOCKED,
        findings=[_finding("F3", "[阻塞]", True)],
        reassessments=[Reassessment(id="F1", status="resolved", evidence="guarded")],
        coverage=["a.py"],
        regressionSurface="none",
    )
    text = _stage(answer)
    assert "状态" in text and "复核证据" in text
    assert _unexplained(text) == []


def test_process_an_echoed_event_is_printed_once_by_the_command_line() -> None:
    script = (
        "from review_loop.orchestrator.log import to_stderr, log_event\n"
        "to_stderr()\n"
        "log_event('fallback', level='warning', echoed=True, to='grok')\n"
        "log_event('reaped', level='warning', pid=1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and '"event": "reaped"' in lines[0], lines
    assert "review_loop_echoed" not in lines[0]  # the mark is never rendered


def test_contract_a_hosts_handler_still_gets_an_echoed_event() -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger(LOGGER_NAME)
    handler = Keep()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        log_event("fallback", level="warning", echoed=True, to="grok")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    (record,) = records
    # a structured record (docs/embedding.md, "Diagnostics"), not a pre-rendered string
    assert vars(record)["event"] == "fallback" and vars(record)["to"] == "grok"
    assert record.getMessage() == "fallback to=grok"
    assert "review_loop_echoed" not in record.getMessage()
    assert "review_loop_echoed" not in vars(record)["fields"]
