"""The converge run on disk: its directory, the ledger file, the call journal, one call.

Layout, under ``<repo>/.review-handoff/runtime/``::

    converge/<run>/ledger.json          the task ledger (read and updated by every command)
    converge/<run>/journal.jsonl        every call: a ``call.start`` line before the prompt
                                        is sent, a ``call.end`` line (with the whole reply)
                                        the moment it arrives; fsynced, append-only
    converge/<run>/convergence.{md,json}    the last "Three-party Convergence" record
    converge/<run>/blind-review-<n>.md  each blind review and the evidence id it saw
    converge/<run>/task-completion-result.md
    converge-sessions/<run>--<call>/    the dispatcher's record of each call
                                        (``reviewer-session.json``), so ``review-loop
                                        sessions`` lists every converge session

Trust (``docs/authenticated-state.md``): ``ledger.json`` and every journal line carry a MAC
made with the per-user secret (:mod:`review_loop.orchestrator.handoff.state_auth`; purposes
:data:`LEDGER_PURPOSE` and :data:`JOURNAL_PURPOSE`). A ledger without a valid MAC is read as
an empty ledger, a journal line without one is skipped; both are reported as untrusted
(:mod:`review_loop.orchestrator.handoff.trust`), so no forged answer, gate or blind review is ever
reused: the calls run again.

A call is identified by a *key* (stage, side and the sha256 of its base prompt). A key
that already has a delivered ``call.end`` is never asked again: an interrupted run picks up
exactly the calls that have no answer, and a side whose answer never arrived continues in
the session handle its last attempt left (from ``call.end``, or from the record written
before launch when the run died mid-call).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from review_loop.agents.errors import InputError, StateError
from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.handoff.files import (
    append_line,
    atomic_write_json,
    read_bytes,
    utc_now,
)
from review_loop.orchestrator.handoff.trust import note_repo, note_untrusted

if TYPE_CHECKING:  # ``ledger`` reads and writes the store without the dispatcher's imports
    from review_loop.agents.converge import CheckoutSnapshot, Ledger
    from review_loop.agents.outcomes import Delivery
    from review_loop.orchestrator.dispatcher import Dispatcher

# MAC purposes: a MAC made for one kind of document never authenticates another.
LEDGER_PURPOSE = "review-loop/converge-ledger/v1"
JOURNAL_PURPOSE = "review-loop/converge-journal/v1"
RUN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")
PROTOCOL_ACTIONS = (
    ".review-handoff/** written (ledger, journal, records under runtime/converge/<run>/, "
    "sessions under runtime/converge-sessions/); /.review-handoff/ in "
    "$GIT_COMMON_DIR/info/exclude; review-loop made no git add/commit/push, branch, PR "
    "or external write"
)


def sha256_text(text: str) -> str:
    """Hex sha256 of ``text`` as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_run(repo: Path) -> str:
    """One converge run per branch: the branch slug, as the review packets use."""
    from review_loop.agents.branch import branch_identity, branch_slug
    from review_loop.orchestrator.handoff.git import current_branch, rev_parse

    return branch_slug(branch_identity(current_branch(repo), rev_parse(repo, "HEAD")))


def check_run(name: str) -> str:
    """Validate a ``--run`` name."""
    if not RUN_RE.match(name):
        raise InputError("--run", f"{name!r} is not a run name", RUN_RE.pattern)
    return name


@dataclass(frozen=True, slots=True)
class RunPaths:
    """Where one converge run keeps its files."""

    repo: Path
    run: str

    @property
    def dir(self) -> Path:
        """``runtime/converge/<run>``."""
        return self.repo / ".review-handoff" / "runtime" / "converge" / self.run

    @property
    def journal(self) -> Path:
        """The append-only call journal."""
        return self.dir / "journal.jsonl"

    @property
    def ledger(self) -> Path:
        """The task ledger."""
        return self.dir / "ledger.json"

    def call_dir(self, call_id: str) -> Path:
        """The dispatcher's record directory of one call (listed by ``sessions``)."""
        return (
            self.repo
            / ".review-handoff"
            / "runtime"
            / "converge-sessions"
            / (f"{self.run}--{call_id}")
        )


@contextmanager
def run_lock(paths: RunPaths) -> Iterator[str]:
    """Hold the run's lock (a dead owner's lock is reclaimed)."""
    from review_loop.orchestrator.workflows.review_store import packet_lock

    with packet_lock(paths.dir) as token:
        yield token


#: Where ``consult``'s answered round trips are kept for the preflight: a run of its own
#: (signed journal lines, one per answered peer), so any loop run of the repository finds
#: the seed's recipe ("consult … then sessions") as its preflight evidence.
ROUND_TRIPS_RUN = "consult-round-trips"
ROUND_TRIP_EVENT = "consult.round-trip"
#: How long a kept round trip counts as preflight evidence. Preflight is a liveness proof
#: (the CLI still runs, is still logged in, its session is still there): a day-old answer
#: no longer proves that, and the seed's recipe is meant to run right before the loop.
ROUND_TRIP_FRESH_SECONDS = 24 * 60 * 60
#: A kept line dated later than now by more than this is not believed (a clock set back).
_CLOCK_SKEW_SECONDS = 5 * 60


def record_round_trip(repo: Path, product: str, session_id: str) -> None:
    """Keep one answered consult (``product``, its resumable ``session_id``), signed.

    The line names the repository root it was asked in, so a line copied to another
    checkout proves nothing there (:func:`round_trips`). One ``O_APPEND`` line, so
    concurrent consults need no lock (and ``consult`` loads no model: its start-up stays
    small, docs/performance.md).
    """
    from review_loop.orchestrator.handoff.files import make_dirs

    paths = RunPaths(repo, ROUND_TRIPS_RUN)
    make_dirs(paths.dir, anchor=repo)
    entry = {
        "at": utc_now(),
        "event": ROUND_TRIP_EVENT,
        "product": product,
        "repo": _root_text(repo),
    }
    append_line(paths.journal, state_auth.sign(JOURNAL_PURPOSE, {**entry, "sessionId": session_id}))


def round_trips(repo: Path) -> list[dict[str, Any]]:
    """Every kept consult round trip that still proves something here, oldest first.

    Counted: a line whose MAC verifies (planted: skipped), asked in this repository root
    (copied from another checkout: skipped), at most :data:`ROUND_TRIP_FRESH_SECONDS` old.
    """
    import time

    paths = RunPaths(repo, ROUND_TRIPS_RUN)
    try:
        lines = read_bytes(paths.journal).decode("utf-8", "replace").splitlines()
    except OSError:  # none kept yet, or not a regular file reached without a link
        return []
    root = _root_text(repo)
    clock = time.time()
    kept = []
    for line in lines:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not (
            state_auth.verify(JOURNAL_PURPOSE, entry)
            and entry.get("event") == ROUND_TRIP_EVENT
            and entry.get("repo") == root
        ):
            continue
        at = _epoch(entry.get("at"))
        if at is not None and -_CLOCK_SKEW_SECONDS <= clock - at <= ROUND_TRIP_FRESH_SECONDS:
            kept.append(entry)
    return kept


def _root_text(repo: Path) -> str:
    """The repository root as the round-trip lines name it (links resolved)."""
    return str(Path(repo).resolve())


def _epoch(value: object) -> float | None:
    """``utc_now()``'s text as seconds after the epoch; ``None`` when it is not that."""
    from datetime import datetime

    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def load_ledger(paths: RunPaths) -> Ledger:
    """The run's ledger; an empty one when there is no file yet or it is untrusted.

    A file without a valid MAC (committed, copied, forged) is reported as untrusted and
    read as an empty ledger: none of its items, gates or reviews is believed.

    Raises:
        StateError: ``LEDGER_INVALID`` — a ledger this user's review-loop signed does not
            have the ledger's shape (names the file and the key).
    """
    # the models here, not at import: ``ledger show`` reads this module without pydantic
    from pydantic import ValidationError

    from review_loop.agents.converge import Ledger

    note_repo(paths.repo)
    try:
        data = read_bytes(paths.ledger)
    except FileNotFoundError:
        return Ledger()
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        note_untrusted(paths.ledger, f"not JSON ({error}); no valid MAC")
        return Ledger()
    if not state_auth.verify(LEDGER_PURPOSE, document):
        note_untrusted(paths.ledger, "no valid MAC")
        return Ledger()
    body = {k: v for k, v in document.items() if k != state_auth.MAC_FIELD}
    try:
        return Ledger.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise StateError("LEDGER_INVALID", f"{paths.ledger}: key {key!r}: {first['msg']}") from None


def checkout_snapshot(repo: Path) -> CheckoutSnapshot:
    """The repository root, branch, HEAD and working tree now (seed 004, Phase 0)."""
    from review_loop.agents.converge import CheckoutSnapshot
    from review_loop.orchestrator.handoff.files import HANDOFF_DIR
    from review_loop.orchestrator.handoff.git import current_branch, git

    head = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip()
    status = git(
        repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".",
        f":(exclude){HANDOFF_DIR}", check=False,
    ).stdout  # fmt: skip
    changed, entries = 0, iter(status.split(b"\0"))
    for entry in entries:  # -z entries "XY path"; a rename's or copy's source follows it
        if entry:
            changed += 1
            if entry[:1] in (b"R", b"C"):
                next(entries, None)
    return CheckoutSnapshot(
        root=str(repo),
        branch=current_branch(repo) or "(detached)",
        head=head.decode("ascii", "replace") or "(no commit)",
        workingTree="clean" if not changed else f"{changed} changed path(s)",
        at=utc_now(),
    )


def save_ledger(paths: RunPaths, ledger: Ledger) -> Ledger:
    """Sign and write the ledger atomically (stamping ``updated``); returns what was written.

    The first write also records the checkout the loop started in (:func:`checkout_snapshot`).
    """
    if ledger.checkout is None:
        ledger = ledger.model_copy(update={"checkout": checkout_snapshot(paths.repo)})
    stamped = ledger.model_copy(update={"updated": utc_now()})
    document = stamped.model_dump(mode="json", by_alias=True)
    atomic_write_json(paths.ledger, state_auth.sign(LEDGER_PURPOSE, document))
    return stamped


@dataclass(frozen=True, slots=True)
class Handle:
    """A resumable session left by an earlier call of a side."""

    peer: str
    product: str
    session_id: str


class Journal:
    """The run's call journal: append-only JSON lines, each with the next ``seq``.

    Only the process holding the run lock writes, so the sequence is contiguous. A torn
    last line (a crash mid-write) is ignored when reading. Every line carries a MAC; a line
    without a valid one is skipped (reported once per file as untrusted), so a planted
    ``call.end`` can never stand in for an answer.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        try:
            # invalid UTF-8 (planted) decodes to U+FFFD: that line's MAC then fails
            lines = read_bytes(path).decode("utf-8", "replace").splitlines()
        except FileNotFoundError:
            lines = []
        untrusted: list[int] = []
        self.seq = 0
        for number, line in enumerate(lines, start=1):
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                entry = None
            if not isinstance(entry, dict):
                if number < len(lines) and line.strip():  # a torn last line is a crash
                    untrusted.append(number)
                continue
            seq = entry.get("seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                self.seq = max(self.seq, seq)  # keep numbering past any line, trusted or not
            if state_auth.verify(JOURNAL_PURPOSE, entry) and isinstance(entry.get("event"), str):
                self.entries.append(entry)
            else:
                untrusted.append(number)
        if untrusted:
            shown = ", ".join(map(str, untrusted[:10])) + (" ..." if len(untrusted) > 10 else "")
            note_untrusted(path, f"{len(untrusted)} line(s) without a valid MAC skipped: {shown}")

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one signed entry durably (fsync) and return it."""
        self.seq += 1
        entry = state_auth.sign(
            JOURNAL_PURPOSE, {"seq": self.seq, "at": utc_now(), "event": event, **fields}
        )
        append_line(self.path, entry)
        self.entries.append(entry)
        return entry

    def answered(self, key: str) -> dict[str, Any] | None:
        """The delivered ``call.end`` of ``key``, unless a later entry voided it."""
        for entry in reversed(self.entries):
            if entry.get("key") != key:
                continue
            if entry["event"] == "call.void":
                return None
            if entry["event"] == "call.end" and entry.get("state") == "DELIVERED":
                found: dict[str, Any] = entry
                return found
        return None

    def handle(self, side: str, *, key: str | None = None) -> Handle | None:
        """The newest session handle a call of ``side`` left (only calls of ``key`` if given).

        From a ``call.end`` with a session id, or — for a call the run died in — from the
        record the dispatcher wrote before launch.
        """
        for entry in reversed(self.entries):
            if entry.get("side") != side or (key is not None and entry.get("key") != key):
                continue
            if entry["event"] == "call.end" and entry.get("sessionId"):
                return Handle(entry["answeredBy"], entry["product"], entry["sessionId"])
            if entry["event"] == "call.start" and entry.get("recordDir"):
                record = _read_record(Path(entry["recordDir"]))
                if record is not None:
                    return Handle(entry["peer"], record[0], record[1])
        return None

    def calls(self) -> list[dict[str, Any]]:
        """Every ``call.end`` entry, in order."""
        return [e for e in self.entries if e["event"] == "call.end"]


def _read_record(record_dir: Path) -> tuple[str, str] | None:
    from review_loop.agents.constants import SESSION_FILE

    try:
        record = json.loads(read_bytes(record_dir / SESSION_FILE))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    if isinstance(record, dict) and record.get("sessionId") and record.get("product"):
        return str(record["product"]), str(record["sessionId"])
    return None


def answered_by(delivery: Delivery) -> str:
    """The peer name that answered: the last fallback's, else the requested one."""
    return delivery.fallbacks[-1].to if delivery.fallbacks else delivery.peer


async def journaled_call(
    dispatcher: Dispatcher,
    journal: Journal,
    paths: RunPaths,
    *,
    stage: str,
    side: str,
    key: str,
    peer: str,
    prompt: str,
    resume: str | None = None,
    fallback: tuple[str, ...] = (),
    avoid: tuple[str, ...] = (),
    timeout_ms: int | None = None,
    isolate: bool = False,
) -> dict[str, Any]:
    """Ask one peer; journal the start before the prompt is sent and the end on arrival."""
    from review_loop.orchestrator.dispatcher import PeerRequest

    call_id = f"{journal.seq + 1:04d}-{stage}-{side}".replace(" ", "-").lower()
    record_dir = paths.call_dir(call_id)
    journal.append(
        "call.start",
        stage=stage,
        side=side,
        key=key,
        peer=peer,
        resume=resume,
        recordDir=str(record_dir),
        promptSha256=sha256_text(prompt),
        # the chosen deadline (seed 004: set one per external call; the host may shorten it)
        deadlineMs=timeout_ms if timeout_ms is not None else dispatcher.prefs.timeoutMs,
        deadlineFrom="--timeout" if timeout_ms is not None else "prefs timeoutMs",
    )
    delivery = await dispatcher.consult(
        PeerRequest(
            peer=peer,
            prompt=prompt,
            record_dir=record_dir,
            resume_session_id=resume,
            fallback=fallback,
            avoid=avoid,
            timeout_ms=timeout_ms,
            isolate=isolate,
        )
    )
    last = delivery.attempts[-1] if delivery.attempts else None
    return journal.append(
        "call.end",
        stage=stage,
        side=side,
        key=key,
        peer=peer,
        answeredBy=answered_by(delivery),
        product=delivery.product,
        sessionId=delivery.sessionId,
        resumed=bool(last and last.resumed),
        state=delivery.state.value,
        reason=delivery.reason,
        detail=delivery.detail,
        timedOut=any(a.timedOut for a in delivery.attempts),
        attempts=len(delivery.attempts),
        fallbacks=[f.document() | {"stage": stage} for f in delivery.fallbacks],
        degraded=delivery.degradedReason,
        elapsedMs=delivery.elapsedMs,
        recordDir=str(record_dir),
        text=delivery.reply.text if delivery.reply else None,
    )
