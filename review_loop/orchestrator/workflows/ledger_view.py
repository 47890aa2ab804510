"""``ledger show`` without pydantic: a signed ledger shown exactly as the model shows it.

The converge ledger is authenticated state (``docs/authenticated-state.md``): a file whose
MAC verifies was written by this user's review-loop, through the ``Ledger`` model
(:func:`~review_loop.orchestrator.workflows.converge_store.save_ledger`). Showing it needs
no second validation, and importing pydantic alone (about 200 ms on a loaded machine, where
``ledger show`` takes about 100-180 ms) would put the command above the original tool's
whole ``help`` (``scripts/bench_startup.py``). So :func:`ledger_show` reads the file (without
following a link, as the store does), checks its MAC with the stdlib ``hmac``, and prints
the document built from the verified JSON: the same keys, in the model's field order, with
the same values as ``Ledger.model_dump(mode="json", by_alias=True)``.

The plain reading may only ever be *stricter* than the model, never looser
(:func:`plain_ledger`): it accepts a body only when every object has exactly the keys the
model writes, every value has its field's JSON type (text is a ``str``, a number an
``int`` and never a ``bool`` or ``float``), every enumerated value is one the model knows,
and the model's own rules hold (item ids, cited evidence, unique ids, the goal, a proven
gate's proof). Anything else — no MAC, a bad or foreign MAC, not JSON, a key it does not
know, a key missing (a ledger an older review-loop wrote, which the model fills with
defaults), a link or a FIFO where the file should be — goes to the model path
(``converge_gates.ledger_show``), which alone words errors and reports untrusted state.
Writing a ledger always goes through the model. ``tests/orchestrator/
test_ledger_view_contract.py`` holds the two paths together.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.handoff.files import read_bytes
from review_loop.orchestrator.handoff.trust import note_repo, reporting
from review_loop.orchestrator.workflows.converge_store import LEDGER_PURPOSE, RunPaths

# The model's vocabulary (``review_loop.agents.converge``), as plain values: a contract test
# checks each against its enum or Literal, so a value the model drops fails the test, and a
# value the model adds is refused here (the model path shows it).
ITEM_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
STATUSES = ("VERIFIED_DONE", "PENDING", "OBSOLETE", "EXCLUDED", "HUMAN_DECISION")
CITED_STATUSES = frozenset({"VERIFIED_DONE", "OBSOLETE", "EXCLUDED"})
GATES = ("verification", "agentic-review", "architecture-hardening", "blind-review", "goal-gate")
PROVENANCES = ("proven", "self-reported")
PROOF_KINDS = ("review-packet", "blind-review", "skill-report")
VERDICTS = ("FIX", "CLEAN")
FINDING_CLASSES = ("Fix", "Backlog", "Reject")
GOALS = ("completed", "active-checkpoint", "not-created", "deferred-conflict")


def empty_ledger() -> dict[str, Any]:
    """``Ledger().model_dump(mode="json", by_alias=True)``: ``show`` with no file yet."""
    return {
        "version": 1,
        "task": "",
        "items": [],
        "gates": [],
        "blindReviews": [],
        "blindBudgetFrom": 0,
        "convergence": None,
        "preflight": None,
        "goal": "not-created",
        "implemented": "",
        "lessons": "",
        "updated": "",
        "checkout": None,
    }


class _Unusual(Exception):
    """The body is not plainly a ledger the model wrote: the model path decides."""


Check = Callable[[Any], Any]


def _text(value: Any) -> str:
    if type(value) is not str:
        raise _Unusual
    return value


def _int(value: Any) -> int:
    if type(value) is not int:  # a bool is an int to Python, not to this check
        raise _Unusual
    return value


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise _Unusual
    return value


def _one_of(*accepted: str) -> Check:
    def check(value: Any) -> str:
        text = _text(value)
        if text not in accepted:
            raise _Unusual
        return text

    return check


def _matching(pattern: re.Pattern[str]) -> Check:
    def check(value: Any) -> str:
        text = _text(value)
        if not pattern.match(text):
            raise _Unusual
        return text

    return check


def _optional(inner: Check) -> Check:
    def check(value: Any) -> Any:
        return None if value is None else inner(value)

    return check


def _list(inner: Check) -> Check:
    def check(value: Any) -> list[Any]:
        if type(value) is not list:
            raise _Unusual
        return [inner(element) for element in value]

    return check


def _object(
    *fields: tuple[str, Check], rule: Callable[[dict[str, Any]], bool] | None = None
) -> Check:
    """Exactly these keys (all of them), each checked; the result in this order."""
    names = frozenset(name for name, _ in fields)

    def check(value: Any) -> dict[str, Any]:
        if type(value) is not dict or value.keys() != names:
            raise _Unusual
        document = {name: inner(value[name]) for name, inner in fields}
        if rule is not None and not rule(document):
            raise _Unusual
        return document

    return check


# One check per model, its fields in the model's order (``agents/converge.py``,
# ``agents/evidence_model.py``); each ``rule`` is the model's validator.
_EVIDENCE = _object(
    ("baseSha", _text),
    ("pathFilter", _optional(_list(_text))),
    ("digest", _text),
    ("coveredPaths", _list(_text)),
    ("sourceRound", _optional(_int)),
)
_ITEM = _object(
    ("id", _matching(ITEM_ID_RE)),
    ("title", _text),
    ("status", _one_of(*STATUSES)),
    ("evidence", _text),
    ("updated", _text),
    rule=lambda item: item["status"] not in CITED_STATUSES or bool(item["evidence"].strip()),
)
_PROOF = _object(
    ("kind", _one_of(*PROOF_KINDS)),
    ("ref", _text),
    ("path", _text),
    ("round", _optional(_int)),
    ("reviewer", _optional(_text)),
    ("sessionId", _optional(_text)),
    ("sha256", _optional(_text)),
    ("skill", _optional(_text)),
    ("skillSha256", _optional(_text)),
)
_GATE = _object(
    ("gate", _one_of(*GATES)),
    ("result", _text),
    ("evidence", _EVIDENCE),
    ("session", _optional(_text)),
    ("detail", _text),
    ("recordedAt", _text),
    ("provenance", _one_of(*PROVENANCES)),
    ("proof", _optional(_PROOF)),
    rule=lambda gate: (gate["provenance"] == "proven") == (gate["proof"] is not None),
)
_FINDING = _object(
    ("id", _text),
    ("class", _one_of(*FINDING_CLASSES)),
    ("title", _text),
    ("evidence", _text),
    ("requiredFix", _text),
)
_BLIND_REVIEW = _object(
    ("round", _int),
    ("verdict", _one_of(*VERDICTS)),
    ("evidence", _EVIDENCE),
    ("product", _text),
    ("sessionId", _optional(_text)),
    ("findings", _list(_FINDING)),
    ("recordPath", _text),
    ("at", _text),
)
_CONVERGENCE = _object(
    ("status", _text),
    ("decision", _text),
    ("rounds", _int),
    ("recordPath", _text),
    ("at", _text),
    ("hostExclusions", _list(_text)),
)
_CHECKOUT = _object(
    ("root", _text),
    ("branch", _text),
    ("head", _text),
    ("workingTree", _text),
    ("at", _text),
)
_PREFLIGHT = _object(
    ("ready", _bool),
    ("missing", _list(_text)),
    ("at", _text),
    ("via", _text),
)


def _version(value: Any) -> int:
    number = _int(value)
    if number != 1:  # ``Literal[1]``
        raise _Unusual
    return number


def _unique_ids(ledger: dict[str, Any]) -> bool:
    ids = [item["id"] for item in ledger["items"]]
    return len(set(ids)) == len(ids)


_LEDGER = _object(
    ("version", _version),
    ("task", _text),
    ("items", _list(_ITEM)),
    ("gates", _list(_GATE)),
    ("blindReviews", _list(_BLIND_REVIEW)),
    ("blindBudgetFrom", _int),
    ("convergence", _optional(_CONVERGENCE)),
    ("preflight", _optional(_PREFLIGHT)),
    ("goal", _one_of(*GOALS)),
    ("implemented", _text),
    ("lessons", _text),
    ("updated", _text),
    ("checkout", _optional(_CHECKOUT)),
    rule=_unique_ids,
)


def plain_ledger(body: Any) -> dict[str, Any] | None:
    """The JSON form the ``Ledger`` model gives ``body`` (its MAC removed), or ``None``.

    ``None`` whenever ``body`` is not plainly such a ledger (see the module docstring):
    only the model then decides whether it is one, and words why not.
    """
    try:
        document: dict[str, Any] = _LEDGER(body)
    except _Unusual:
        return None
    return document


def verified_ledger(path: Path) -> dict[str, Any] | None:
    """The ledger at ``path`` as the model would show it, when plainly trusted; else ``None``.

    A missing file is the empty ledger (as the store reads it). ``None`` for anything the
    model path must decide: unreadable (a link, a FIFO), not JSON, no valid MAC, not plainly
    a ledger.
    """
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return empty_ledger()
    except OSError:
        return None  # a link or a FIFO under .review-handoff/: the store names it
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not state_auth.verify(LEDGER_PURPOSE, document):
        return None
    return plain_ledger({k: v for k, v in document.items() if k != state_auth.MAC_FIELD})


@reporting
def ledger_show(repo: Path, run: str) -> dict[str, Any]:
    """The ``ledger show`` document: the plain reading when it holds, the model's otherwise."""
    paths = RunPaths(repo, run)
    note_repo(repo)  # first, as the store's reading does: the tracked files are reported
    ledger = verified_ledger(paths.ledger)
    if ledger is None:
        from review_loop.orchestrator.workflows.converge_gates import ledger_show as shown

        return shown(repo, run)
    return {
        "ok": True,
        "run": run,
        "ledgerPath": str(paths.ledger),
        "exists": paths.ledger.exists(),
        "ledger": ledger,
    }
