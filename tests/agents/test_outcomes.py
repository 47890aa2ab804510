"""Contract tests: the dispatcher's plain twins (``agents/outcomes.py``) and their models.

The core builds ``outcomes.Delivery``/``Attempt``/``Fallback``/``RecordError``/
``SessionRecord`` without pydantic; the public API returns the pydantic models of
``agents/records.py``. Each twin must be its model's shape exactly: the same field names
in the same order, the same defaults, and for real deliveries (made by the real dispatcher
over fake CLIs, on asyncio and trio) a document the model accepts and dumps back to the
very same JSON, key order included. The boundary's ``public_delivery`` (``model_construct``,
no validation) must equal what validating the document gives. A session record read back
plainly must be read exactly as the model reads it, and anything unusual must go to the
model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from review_loop.agents import outcomes, records
from review_loop.agents.models import DeliveryState, EnvPassthrough
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs

TWINS: list[tuple[type[Any], type[BaseModel]]] = [
    (outcomes.RecordError, records.RecordError),
    (outcomes.Fallback, records.Fallback),
    (outcomes.Attempt, records.Attempt),
    (outcomes.Delivery, records.Delivery),
    (outcomes.SessionRecord, records.SessionRecord),
]


def _default(field: Any) -> object:
    if field.default_factory not in (None, dataclasses.MISSING):
        return field.default_factory()
    return field.default


@pytest.mark.parametrize(("twin", "model"), TWINS, ids=[m.__name__ for _, m in TWINS])
def test_contract_twin_has_the_models_fields_order_and_defaults(
    twin: type[Any], model: type[BaseModel]
) -> None:
    plain = {f.name: f for f in dataclasses.fields(twin)}
    assert list(plain) == list(model.model_fields)
    for name, info in model.model_fields.items():
        required = plain[name].default is dataclasses.MISSING and (
            plain[name].default_factory is dataclasses.MISSING
        )
        assert required == info.is_required(), name
        if not required:
            assert _default(plain[name]) == _default(info), name


def test_contract_twin_constants_are_the_models() -> None:
    from review_loop.agents import record_fields

    assert records.SESSION_FILE == outcomes.SESSION_FILE == "reviewer-session.json"
    # the plain reading checks every field of the twin, and no other
    twin_fields = [f.name for f in dataclasses.fields(outcomes.SessionRecord)]
    assert list(record_fields.FIELDS) == twin_fields


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
            group.start_soon(d.ask, request)
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


def _check_delivery(plain: outcomes.Delivery) -> None:
    document = plain.document()
    validated = records.Delivery.model_validate(document)
    dumped = validated.model_dump(mode="json", by_alias=True)
    assert _ordered(dumped) == _ordered(document)
    assert json.dumps(dumped) == json.dumps(document)
    public = records.public_delivery(plain)
    assert public == validated
    assert _ordered(public.model_dump(mode="json", by_alias=True)) == _ordered(document)
    assert public.ok is plain.ok
    for attempt, model in zip(plain.attempts, public.attempts, strict=True):
        # events.jsonl and consult attempts print the twin's document: the model's own dump
        assert _ordered(attempt.document()) == _ordered(model.model_dump(mode="json"))
    for fallback, model_fallback in zip(plain.fallbacks, public.fallbacks, strict=True):
        assert fallback.document() == model_fallback.model_dump(by_alias=True)


@pytest.mark.anyio
@pytest.mark.parametrize("case", [*CASES, "interrupted"])
async def test_contract_real_deliveries_round_trip_through_their_model(
    repo: Path, fakes: FakeCLIs, case: str
) -> None:
    if case == "interrupted":
        plain = await _interrupted(repo, fakes)
        assert plain.interrupted and plain.attempts
    else:
        script, changes, prepare = CASES[case]
        fakes.script(**script)
        request = _request(repo, case, **changes)
        if prepare is not None:
            prepare(request)
        async with open_dispatcher(repo=repo, prefs=_prefs(), progress=lambda _: None) as d:
            plain = await d.ask(request)
    expected = {
        "delivered": lambda: plain.ok and plain.reply is not None,
        "timeout": lambda: plain.attempts[-1].timedOut and not plain.ok,
        "not-submitted": lambda: plain.state is DeliveryState.NOT_SUBMITTED,
        "fallback": lambda: plain.ok and plain.fallbacks and plain.product == "codex",
        "degraded-resume": lambda: plain.ok and plain.degraded,
        "record-error": lambda: plain.ok and plain.recordError is not None,
        "interrupted": lambda: plain.interrupted,
    }[case]
    assert expected(), plain
    _check_delivery(plain)
    record = json.loads(Path(plain.recordPath or "").read_text())
    assert records.SessionRecord.model_validate(record).model_dump(mode="json") == record


async def _public_and_core(repo: Path, fakes: FakeCLIs) -> tuple[Any, outcomes.Delivery]:
    fakes.script(claude=[{"mode": "ok", "text": "same"}, {"mode": "ok", "text": "same"}])
    async with open_dispatcher(repo=repo, prefs=_prefs(), progress=lambda _: None) as d:
        public = await d.consult(_request(repo, "public"))
        core = await d.ask(_request(repo, "core"))
    return public, core


@pytest.mark.anyio
async def test_contract_public_consult_returns_the_model_of_the_core_twin(
    repo: Path, fakes: FakeCLIs
) -> None:
    public, core = await _public_and_core(repo, fakes)
    assert type(public) is records.Delivery and type(core) is outcomes.Delivery
    assert all(type(a) is records.Attempt for a in public.attempts)
    assert public.reply is not None and core.reply is not None
    assert public.reply.text == core.reply.text == "same" and public.state is core.state


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

PLAIN_RECORDS = [
    _record(),
    _record(status="running", pid=12, pgid=12, marker="ab" * 16, procStart=1700000001),
    _record(status="finished", state="DELIVERED", reason=None, finishedAt="x"),
    _record(sessionId="s", attempt=2, command=[]),
    _record(command=_DROP, status=_DROP, attempt=_DROP),
]
UNUSUAL_RECORDS = [
    _record(pid=True),  # the model reads a bool as 1; the plain path leaves it to the model
    _record(ownerPid=True),
    _record(attempt=False),
    _record(pid="12"),
    _record(ownerPid=1.0),
    _record(unknown="kept out"),  # the model ignores it; the plain path defers
    _record(procStart=2**60),
    _record(state="delivered"),
    _record(status="done"),
    _record(command=["a", 1]),
    _record(product=None),
    _record(ownerPid=_DROP),
    {"product": "codex", "sessionId": "s-1", "updated": "2026-11-29T10:00:00Z"},  # original's
    [],
    "record",
]


@pytest.mark.parametrize("raw", PLAIN_RECORDS)
def test_contract_plain_record_reading_is_the_models(raw: dict[str, Any]) -> None:
    plain = outcomes._plain_record(raw)
    assert plain is not None
    model = records.SessionRecord.model_validate(raw)
    assert _ordered(plain.document()) == _ordered(model.model_dump(mode="json"))
    assert outcomes.SessionRecord.read(raw) == plain


@pytest.mark.parametrize("raw", UNUSUAL_RECORDS, ids=range(len(UNUSUAL_RECORDS)))
def test_contract_unusual_records_go_to_the_model(raw: Any) -> None:
    assert outcomes._plain_record(raw) is None
    read = outcomes.SessionRecord.read(raw)
    try:
        model = records.SessionRecord.model_validate(raw)
    except ValueError:
        assert read is None
    else:
        assert read is not None
        assert _ordered(read.document()) == _ordered(model.model_dump(mode="json"))


def test_contract_session_record_document_is_the_models_dump() -> None:
    record = outcomes.SessionRecord(**{**_record(), "state": DeliveryState.NOT_SUBMITTED})
    ended = record.ended("interrupted", DeliveryState.DELIVERY_UNKNOWN, "interrupted", "t")
    for value in (record, ended):
        model = records.SessionRecord.model_validate(value.document())
        assert _ordered(model.model_dump(mode="json")) == _ordered(value.document())
    assert (ended.status, ended.finishedAt, ended.updated) == ("interrupted", "t", "t")


@pytest.mark.parametrize("word", ["A=B", "*", "", "1X", "A-B"])
def test_contract_env_passthrough_refuses_what_is_no_variable_name(word: str) -> None:
    with pytest.raises(ValueError, match="not a variable name"):
        EnvPassthrough(names=(word,))
    with pytest.raises(ValueError, match="not a variable name"):
        EnvPassthrough(prefixes=("OK_", word))
    assert EnvPassthrough(names=("OK",), prefixes=("LC_",)).allows("LC_ALL")


def test_contract_delivery_schema_still_describes_reply_and_usage() -> None:
    schema = records.Delivery.model_json_schema()
    reply = schema["$defs"]["Reply"]
    assert list(reply["properties"]) == ["kind", "text", "session_id", "cost_usd", "usage"]
    assert reply["required"] == ["text"]
    assert list(schema["$defs"]["Usage"]["properties"]) == [
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
    ]
