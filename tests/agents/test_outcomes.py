"""Contract tests: one ``Delivery`` (and ``SessionRecord``) per concept, and its JSON form.

``agents/outcomes.py`` defines ``Delivery``/``Attempt``/``Fallback``/``RecordError``/
``SessionRecord`` once, as frozen dataclasses, and the public API returns them. For real
deliveries (made by the real dispatcher over fake CLIs, on asyncio and trio) the JSON form
(``document()``) is what pydantic's description of the same class accepts and reads back as
the same value, so the public JSON Schema (``TypeAdapter(Delivery).json_schema()``) tells
the truth about every document. A session record read back from disk has one reader
(``SessionRecord.read``, by the exact JSON types of ``agents/record_fields.py``): it reads
what the dispatcher writes, ignores keys it does not know, and refuses every other value.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest
from pydantic import TypeAdapter

import review_loop
from review_loop.agents import outcomes, record_fields
from review_loop.agents.constants import SESSION_FILE
from review_loop.agents.models import DeliveryState, EnvPassthrough
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs


def test_contract_the_public_names_are_the_one_definition() -> None:
    for name in ("Attempt", "Delivery", "Fallback"):
        assert getattr(review_loop, name) is getattr(outcomes, name)
    for cls in (outcomes.RecordError, outcomes.Fallback, outcomes.Attempt, outcomes.Delivery):
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen and "__slots__" in vars(cls), cls
    assert outcomes.SESSION_FILE == SESSION_FILE == "reviewer-session.json"


def test_contract_the_record_check_knows_every_field_of_the_record() -> None:
    fields = {f.name: f for f in dataclasses.fields(outcomes.SessionRecord)}
    assert list(record_fields.FIELDS) == list(fields)
    required = {
        name
        for name, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    assert required == record_fields.REQUIRED
    assert set(get_args(outcomes.SessionStatus)) == record_fields.STATUSES
    assert {state.value for state in DeliveryState} == record_fields.STATES


# -- real deliveries ---------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _prefs() -> Prefs:
    return Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})


def _request(repo: Path, name: str, peer: str = "claude", **kw: Any) -> PeerRequest:
    return PeerRequest(
        peer=peer,
        prompt="Is this right?",
        record_dir=repo / ".review-handoff" / "runtime" / "contract" / name,
        **kw,
    )


def _events_is_a_directory(request: PeerRequest) -> None:
    (request.directory / "events.jsonl").mkdir(parents=True)  # every event line fails


CASES: dict[str, tuple[dict[str, Any], dict[str, Any], Callable[[PeerRequest], None] | None]] = {
    "delivered": ({"claude": [{"mode": "ok", "text": "fine"}]}, {}, None),
    "timeout": ({"claude": [{"mode": "hang"}]}, {"timeout_ms": 1000}, None),
    "not-submitted": ({"claude": [{"mode": "not-logged-in"}]}, {}, None),
    "fallback": (
        {"claude": [{"mode": "hang"}], "codex": [{"mode": "ok", "text": "B"}]},
        {"timeout_ms": 1000, "fallback": ("codex",)},
        None,
    ),
    "degraded-resume": (
        {"claude": [{"mode": "session-not-found"}, {"mode": "ok", "text": "fresh"}]},
        {"resume_session_id": "11111111-2222-3333-4444-555555555555"},
        None,
    ),
    "record-error": (
        {"claude": [{"mode": "ok", "text": "kept"}]},
        {},
        _events_is_a_directory,
    ),
}


async def _interrupted(repo: Path, fakes: FakeCLIs) -> outcomes.Delivery:
    fakes.script(claude=[{"mode": "hang"}])
    request = _request(repo, "interrupted", timeout_ms=60_000)
    async with open_dispatcher(repo=repo, prefs=_prefs(), progress=lambda _: None) as d:
        async with anyio.create_task_group() as group:
            group.start_soon(d.consult, request)
            with anyio.fail_after(30):
                while not fakes.calls():
                    await anyio.sleep(0.05)
            await anyio.sleep(0.2)
            group.cancel_scope.cancel()
        return d.outcome_of(request)


def _ordered(value: Any) -> Any:
    """``value`` with every dict as a list of its items and every scalar with its type:
    equality then checks key order, and ``True`` is not ``1`` nor ``1.0``."""
    if isinstance(value, dict):
        return [(key, _ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return (type(value), value)


def _check_delivery(delivery: outcomes.Delivery) -> None:
    document = delivery.document()
    text = json.dumps(document)
    assert TypeAdapter(outcomes.Delivery).validate_python(json.loads(text)) == delivery
    for attempt in delivery.attempts:
        read = TypeAdapter(outcomes.Attempt).validate_python(attempt.document())
        assert read == attempt
    for fallback in delivery.fallbacks:
        assert list(fallback.document()) == ["from", "to", "reason"]
        assert TypeAdapter(outcomes.Fallback).validate_python(fallback.document()) == fallback


@pytest.mark.anyio
@pytest.mark.parametrize("case", [*CASES, "interrupted"])
async def test_contract_real_deliveries_read_back_through_their_description(
    repo: Path, fakes: FakeCLIs, case: str
) -> None:
    if case == "interrupted":
        delivery = await _interrupted(repo, fakes)
        assert delivery.interrupted and delivery.attempts
    else:
        script, changes, prepare = CASES[case]
        fakes.script(**script)
        request = _request(repo, case, **changes)
        if prepare is not None:
            prepare(request)
        async with open_dispatcher(repo=repo, prefs=_prefs(), progress=lambda _: None) as d:
            delivery = await d.consult(request)
    expected = {
        "delivered": lambda: delivery.ok and delivery.reply is not None,
        "timeout": lambda: delivery.attempts[-1].timedOut and not delivery.ok,
        "not-submitted": lambda: delivery.state is DeliveryState.NOT_SUBMITTED,
        "fallback": lambda: delivery.ok and delivery.fallbacks and delivery.product == "codex",
        "degraded-resume": lambda: delivery.ok and delivery.degraded,
        "record-error": lambda: delivery.ok and delivery.recordError is not None,
        "interrupted": lambda: delivery.interrupted,
    }[case]
    assert expected(), delivery
    _check_delivery(delivery)
    record = json.loads(Path(delivery.recordPath or "").read_text())
    read = outcomes.SessionRecord.read(record)
    assert read is not None and _ordered(read.document()) == _ordered(record)


@pytest.mark.anyio
async def test_contract_consult_and_fan_out_return_the_public_delivery(
    repo: Path, fakes: FakeCLIs
) -> None:
    fakes.script(claude=[{"mode": "ok", "text": "same"}], codex=[{"mode": "ok", "text": "b"}])
    async with open_dispatcher(repo=repo, prefs=_prefs(), progress=lambda _: None) as d:
        one = await d.consult(_request(repo, "one"))
        both = await d.fan_out([_request(repo, "two", peer="codex")])
        assert d.outcomes == [one, *both]
    assert type(one) is review_loop.Delivery and type(both[0]) is review_loop.Delivery
    assert all(type(a) is review_loop.Attempt for a in one.attempts)
    assert one.reply is not None and one.reply.text == "same" and one.ok


# -- session records read back -------------------------------------------------------------


def _record(**changes: Any) -> dict[str, Any]:
    base = outcomes.SessionRecord(
        product="claude",
        updated="2026-01-01T00:00:00.000Z",
        cwd="/repo",
        peer="claude",
        command=["claude"],
        ownerPid=os.getpid(),
        ownerStart=1700000000.25,
        startedAt="2026-01-01T00:00:00.000Z",
    ).document()
    base.update(changes)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()

RECORDS = [
    _record(),
    _record(status="running", pid=12, pgid=12, marker="ab" * 16, procStart=1700000001.5),
    _record(status="finished", state="DELIVERED", reason=None, finishedAt="x"),
    _record(sessionId="s", attempt=2, command=[]),
]
REFUSED_RECORDS = [
    _record(pid=True),  # a bool is no pid, whatever JSON-to-int rule a reader might have
    _record(ownerPid=True),
    _record(attempt=False),
    _record(pid="12"),
    _record(ownerPid=1.0),
    _record(procStart=2**60),  # an int past what a float holds exactly
    _record(state="delivered"),
    _record(status="done"),
    _record(command=["a", 1]),
    _record(product=None),
    _record(ownerPid=_DROP),
    {"product": "codex", "sessionId": "s-1", "updated": "2026-11-29T10:00:00Z"},  # original's
    [],
    "record",
]


@pytest.mark.parametrize("raw", RECORDS, ids=range(len(RECORDS)))
def test_contract_a_written_record_reads_back_as_itself(raw: dict[str, Any]) -> None:
    read = outcomes.SessionRecord.read(raw)
    assert read is not None
    assert _ordered(read.document()) == _ordered(raw)
    assert read.state is None or type(read.state) is DeliveryState


def test_contract_a_record_with_fewer_or_more_keys_reads_with_defaults() -> None:
    read = outcomes.SessionRecord.read(_record(command=_DROP, status=_DROP, attempt=_DROP))
    assert read is not None and (read.command, read.status, read.attempt) == ([], "starting", 1)
    newer = outcomes.SessionRecord.read({**_record(), "unknown": {"any": [1]}})
    assert newer == outcomes.SessionRecord.read(_record())
    read = outcomes.SessionRecord.read(_record(procStart=12))
    assert read is not None and type(read.procStart) is float


@pytest.mark.parametrize("raw", REFUSED_RECORDS, ids=range(len(REFUSED_RECORDS)))
def test_contract_any_other_record_is_refused(raw: Any) -> None:
    assert outcomes.SessionRecord.read(raw) is None


def test_contract_an_ended_record_keeps_its_json_form() -> None:
    record = outcomes.SessionRecord(**{**_record(), "state": DeliveryState.NOT_SUBMITTED})
    ended = record.ended("interrupted", DeliveryState.DELIVERY_UNKNOWN, "interrupted", "t")
    for value in (record, ended):
        assert outcomes.SessionRecord.read(json.loads(json.dumps(value.document()))) == value
    assert (ended.status, ended.finishedAt, ended.updated) == ("interrupted", "t", "t")
    assert ended.document()["state"] == "DELIVERY_UNKNOWN"


@pytest.mark.parametrize("word", ["A=B", "*", "", "1X", "A-B"])
def test_contract_env_passthrough_refuses_what_is_no_variable_name(word: str) -> None:
    with pytest.raises(ValueError, match="not a variable name"):
        EnvPassthrough(names=(word,))
    with pytest.raises(ValueError, match="not a variable name"):
        EnvPassthrough(prefixes=("OK_", word))
    assert EnvPassthrough(names=("OK",), prefixes=("LC_",)).allows("LC_ALL")


def test_contract_the_delivery_schema_describes_the_json_form() -> None:
    schema = TypeAdapter(outcomes.Delivery).json_schema()
    assert list(schema["properties"]) == [f.name for f in dataclasses.fields(outcomes.Delivery)]
    assert set(schema["required"]) == {"state", "peer", "product", "attempts", "cwd"}
    reply = schema["$defs"]["Reply"]
    assert list(reply["properties"]) == ["kind", "text", "session_id", "cost_usd", "usage"]
    assert reply["required"] == ["text"]
    assert list(schema["$defs"]["Usage"]["properties"]) == [
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
    ]
    assert list(schema["$defs"]["Fallback"]["properties"]) == ["from", "to", "reason"]
    assert schema["$defs"]["DeliveryState"]["enum"] == [s.value for s in DeliveryState]
