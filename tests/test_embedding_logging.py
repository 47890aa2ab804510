"""Collaboration tests: review-loop's events reach a host's logging as data, not strings.

A host's stdlib ``logging`` gets one record per event whose fields are in ``extra`` and
which its own formatter renders (a JSON formatter, structlog's ``ProcessorFormatter``); a
host that configured structlog gets native structlog events; the command line still
prints one JSON object per event on stderr. A refused request is retried once, which logs
a ``retry`` event (the simulated reviewer refuses a resume id starting with ``-``).
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import structlog

from review_loop import PeerRequest, open_dispatcher
from review_loop.orchestrator import log
from review_loop.prefs import Prefs
from tests.test_cli import git_repo

pytestmark = pytest.mark.anyio


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


@pytest.fixture
def host_handler() -> Iterator[tuple[logging.Handler, io.StringIO]]:
    """A handler of the host's own on the ``review_loop`` logger (removed afterwards)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("review_loop")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler, stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def _retry_once(repo: Path) -> None:
    async with open_dispatcher(repo=repo, prefs=Prefs(), progress=lambda _: None) as d:
        await d.consult(PeerRequest(peer="simulated", prompt="x", resume_session_id="-x"))


class _JSONFormatter(logging.Formatter):
    """A host's JSON formatter: the message plus every ``extra`` attribute."""

    standard: ClassVar[set[str]] = set(vars(logging.makeLogRecord({})))

    def format(self, record: logging.LogRecord) -> str:
        extra = {k: v for k, v in vars(record).items() if k not in self.standard}
        return json.dumps({"message": record.getMessage(), **extra}, default=str)


async def test_collaboration_a_hosts_formatter_renders_the_fields(
    repo: Path, host_handler: tuple[logging.Handler, io.StringIO]
) -> None:
    handler, stream = host_handler
    handler.setFormatter(_JSONFormatter())
    await _retry_once(repo)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    retry = next(line for line in lines if line.get("event") == "retry")
    assert retry["peer"] == "simulated"
    assert retry["why"] == "not submitted"
    assert retry["fields"]["peer"] == "simulated"
    assert Path(retry["recordDir"]).parent == repo / ".review-handoff" / "runtime" / "embedded"
    # the message is readable text, not a JSON document inside a string
    assert retry["message"].startswith("retry peer=simulated ")
    assert not retry["message"].lstrip().startswith("{")


async def test_collaboration_structlogs_processor_formatter_gets_a_native_event(
    repo: Path, host_handler: tuple[logging.Handler, io.StringIO]
) -> None:
    """structlog's documented bridge for stdlib records (``ProcessorFormatter`` with
    ``ExtraAdder``) makes each event a native event dict."""
    handler, _ = host_handler
    events: list[dict[str, Any]] = []

    def keep(_: Any, __: str, event_dict: dict[str, Any]) -> str:
        events.append({k: v for k, v in event_dict.items() if not k.startswith("_")})
        return "kept"

    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.ExtraAdder()], processors=[keep]
        )
    )
    await _retry_once(repo)
    retry = next(event for event in events if event["event"] == "retry")
    assert retry["peer"] == "simulated" and retry["why"] == "not submitted"


async def test_collaboration_a_host_that_configured_structlog_gets_native_events(
    repo: Path,
) -> None:
    assert not structlog.is_configured()  # review-loop configures nothing itself
    try:
        with structlog.testing.capture_logs() as captured:  # configures structlog
            await _retry_once(repo)
    finally:
        structlog.reset_defaults()  # unconfigured again, for the other tests
    retry = next(event for event in captured if event["event"] == "retry")
    assert retry["peer"] == "simulated" and retry["log_level"] == "info"


def test_contract_a_field_named_like_a_record_attribute_is_kept_aside() -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("review_loop")
    logger.addHandler(handler)
    level = logger.level
    # setLevel, never ``logger.level = ``: only setLevel clears the logger's isEnabledFor
    # cache, which an earlier event (INFO not enabled then) may have filled with False.
    logger.setLevel(logging.INFO)
    try:
        log.log_event("probe", name="x", process=3, message="m", peer="p")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    (record,) = records
    assert record.name == "review_loop" and record.process != 3
    assert vars(record)["field_name"] == "x" and vars(record)["field_process"] == 3
    assert vars(record)["peer"] == "p"
    assert record.getMessage() == "probe name=x process=3 message=m peer=p"


def test_contract_the_command_lines_handler_prints_one_json_object_per_event() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("review_loop")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    real, sys.stderr = sys.stderr, stream
    try:
        log.to_stderr()
        log.log_event("retry", level="warning", peer="codex", reason="spawn failed")
    finally:
        sys.stderr = real
        log._cli_stderr = False
        logger.handlers[:], logger.propagate = saved[0], saved[2]
        logger.setLevel(saved[1])  # clears the isEnabledFor cache to_stderr's level filled
    (line,) = stream.getvalue().splitlines()
    document = json.loads(line)
    assert document["event"] == "retry" and document["peer"] == "codex"
    assert document["level"] == "warning" and document["logger"] == "review_loop"
    assert document["reason"] == "spawn failed" and "timestamp" in document
