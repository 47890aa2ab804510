"""``consult``: ask one or more peers a question, read-only, in parallel; record it all.

Peer selection: the named ``--peer`` values; otherwise the prefs order with the host
removed (``--host H --skip-host``), first two. ``--peer-command NAME`` launches the peer
of NAME's product through that alias or executable. Each peer's session is recorded under
``.review-handoff/runtime/consult-sessions/<stamp>-<peer>/`` before its prompt is sent, so
``sessions`` lists it, and each answer is written to ``runtime/consults/<stamp>-<peer>.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from review_loop.agents.errors import InputError
from review_loop.agents.outcomes import INTERRUPTED, Delivery, RecordError
from review_loop.agents.prompts import consult_prompt
from review_loop.orchestrator.dispatcher import (
    Dispatcher,
    PeerRequest,
    ResolvedPeer,
    resolve_peer,
)
from review_loop.orchestrator.handoff.files import (
    atomic_write_bytes,
    check_name,
    file_stamp,
    make_dir_exclusive,
    utc_now,
)
from review_loop.orchestrator.handoff.recording import RecordingError, record_error
from review_loop.orchestrator.handoff.trust import note_stop, reporting_async
from review_loop.prefs.model import PeerCommand, Prefs

ADVISORY_MESSAGE = (
    "Advisory only: weigh this stance, do not adopt it automatically unless the user "
    'authorised "一致即采纳" ("adopt when the peers agree") for this turn.'
)
CONSULT_SESSIONS_DIR = "consult-sessions"
PEER_COMMAND_ACCEPTED = (
    "an alias set with `review-loop prefs alias NAME PRODUCT COMMAND...` or the name of a "
    "launcher on PATH: no '/', '..' or NUL, not starting with '.' (for a launcher elsewhere, "
    "make it an alias)"
)
MAX_NAME_SUFFIX = 1000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConsultPlan:
    """A validated consult: who is asked what, with which fallbacks."""

    peers: tuple[str, ...]
    question: str
    fallback: tuple[str, ...] = ()
    host: str | None = None
    timeout_ms: int | None = None
    resume_session_id: str | None = None


def with_peer_command(
    prefs: Prefs, peers: list[str], name: str, which: Any
) -> tuple[Prefs, list[str]]:
    """Route the peer of ``name``'s product through the alias or executable ``name``.

    ``which(name)`` finds an executable on PATH (injected for tests). Returns prefs that
    know the alias (the same kind as ``prefs``: the model or its plain view) and the peer
    list with the matching product replaced by it. A launcher
    on PATH that is no alias launches the peer whose product its name starts with
    (``codex002`` for codex) or one of its adapter's ``short_names`` (``cc002`` for
    claude, also with ``--peer claude --peer codex``); failing that, the only peer when
    one is named.

    ``name`` becomes part of the peer's record directory name, so it must be one plain
    file-name component (checked before anything is looked up or written).

    Raises:
        InputError: ``name`` contains ``/``, ``..`` or NUL or starts with ``.``; is neither
            a prefs alias nor an executable on PATH; or no named peer has its product.
    """
    check_name("--peer-command", name, PEER_COMMAND_ACCEPTED)
    alias = prefs.peerCommands.get(name)
    if alias is None:
        if which(name) is None:
            raise InputError(
                "--peer-command",
                f"{name!r} is neither a peer-command alias in prefs nor an executable on PATH",
                "an alias set with `review-loop prefs alias NAME PRODUCT COMMAND...` "
                "or a launcher on PATH",
            )
        product = _launched_product(prefs, peers, name)
        prefs = _with_alias(prefs, name, product)
        alias = prefs.peerCommands[name]
    if alias.product not in peers:
        raise InputError(
            "--peer-command",
            f"{name!r} launches {alias.product}, which is not among the peers {peers}",
            f"--peer {alias.product}",
        )
    return prefs, [name if p == alias.product else p for p in peers]


def _with_alias(prefs: Prefs, name: str, product: str) -> Prefs:
    """``prefs`` with ``name`` bound to the launcher ``name`` of ``product``."""
    return prefs.with_alias(name, PeerCommand(product=product, command=(name,)))


def _launched_product(prefs: Prefs, peers: list[str], name: str) -> str:
    """The product a launcher that is no alias stands for: by its name, else the only peer.

    The name starts with the product (``codex002``) or with one of the adapter's
    ``short_names`` followed by no letter (``cc002`` for claude). The longest such prefix
    among the peers' products decides; a tie between two products, or no match with more
    than one peer, cannot be told apart.
    """
    products = [resolve_peer(p, prefs).product for p in peers]
    matches = {
        product: length
        for product in products
        if (length := _name_prefix(product, name)) is not None
    }
    if matches:
        longest = max(matches.values())
        best = [p for p, length in matches.items() if length == longest]
        if len(best) == 1:
            return best[0]
    elif len(products) == 1:
        return products[0]
    raise InputError(
        "--peer-command",
        f"cannot tell which of the peers {peers} {name!r} launches",
        "a name starting with the peer's product (codex002 for --peer codex) or its short "
        "name (cc002 for --peer claude), one --peer, or an alias in prefs that names its "
        "product",
    )


def _name_prefix(product: str, name: str) -> int | None:
    """How long a prefix of ``name`` names ``product`` (its name or a short name), if any."""
    from review_loop.adapters.registry import get_adapter

    if name.startswith(product):
        return len(product)
    shorts: tuple[str, ...] = getattr(get_adapter(product), "short_names", ())
    found = [
        len(short)
        for short in shorts
        if name.startswith(short) and not name[len(short) : len(short) + 1].isalpha()
    ]
    return max(found, default=None)


def select_peers(
    prefs: Prefs, named: list[str], host: str | None, skip_host: bool | None
) -> list[str]:
    """The named peers, else the first two of the prefs order.

    The host is dropped from the order when ``skip_host`` says so, or, when the flag is
    absent, when the prefs' ``skipHost`` does: ``consult --host H`` with ``skipHost``
    false may ask H's own product (a fresh session) as one of the two.
    """
    if named:
        return named
    if host is None and skip_host is None:
        raise InputError(
            "--peer", "no peer named", "--peer P (repeatable), or --host H --skip-host"
        )
    chosen = prefs.reviewers_for(host, skip_host=skip_host)
    if not chosen:
        raise InputError("--host", f"removing {host!r} leaves no reviewer in prefs order")
    return chosen[:2]


def resolve_fallbacks(
    prefs: Prefs, values: list[str], *, host: str | None = None, peers: Sequence[str] = ()
) -> tuple[str, ...]:
    """``--fallback`` values in order; ``auto`` expands to every product a swap may use.

    ``auto`` is the prefs order, then the other registered products, without the host and
    without the standard peers for this host (:meth:`Prefs.standard_peers`; all of the
    first three of the order when the host is not given): the seed's one-consult-per-peer
    recipe asks each peer in its own call, so the other peer's product is not visible here
    and must never answer in this peer's place. A product named explicitly is refused when
    it is the host's, one of ``peers``' (this call's), or, the host given, a standard peer
    of the host ("do not substitute the product of the other Peer"); otherwise kept as named.

    Raises:
        InputError: an explicit ``--fallback`` that is the host's or a peer's product.
    """
    host_product = resolve_peer(host, prefs, field="--host").product if host else None
    explicit = any(n.strip() not in ("", "auto") for v in values for n in v.split(","))
    taken = {resolve_peer(p, prefs).product: "a peer of this call" for p in peers if explicit}
    if host_product is not None and explicit:
        for product in prefs.standard_peers(host_product):
            taken.setdefault(product, f"Peer A or Peer B for host {host_product}")
        taken[host_product] = "the host"
    automatic: list[str] | None = None  # listed on first ``auto``: it scans for third parties
    out: list[str] = []
    for value in values:
        for name in (part.strip() for part in value.split(",")):
            if not name:
                continue
            if name != "auto":
                product = resolve_peer(name, prefs, field="--fallback").product
                if product in taken:
                    raise InputError(
                        "--fallback",
                        f"{name!r} is {taken[product]}: its answer would not be independent",
                        "an installed product neither peer nor the host uses, or auto",
                    )
                names = [name]
            else:
                if automatic is None:
                    automatic = _automatic_fallbacks(prefs, host_product)
                names = automatic
            for item in names:
                resolve_peer(item, prefs, field="--fallback")
                if item not in out:
                    out.append(item)
    return tuple(out)


def _automatic_fallbacks(prefs: Prefs, host_product: str | None) -> list[str]:
    """What ``auto`` stands for (see :func:`resolve_fallbacks`), in order."""
    from review_loop.adapters.registry import OFFLINE, product_names

    # An offline stand-in is never swapped in for a real reviewer without being named.
    excluded = prefs.standard_peers(host_product) | {host_product} | OFFLINE
    return [p for p in dict.fromkeys((*prefs.order, *product_names())) if p not in excluded]


def _record_text(peer: ResolvedPeer, delivery: Delivery, question: str, created: str) -> str:
    reply = delivery.reply.text if delivery.reply else ""
    return (
        "# DecisionConsult\n\n"
        f"- peer: {delivery.peer}\n"
        f"- product: {delivery.product}\n"
        f"- sessionId: {delivery.sessionId or 'none'}\n"
        "- advisory: true\n"
        f"- created: {created}\n"
        + (
            "- fallbacks: "
            + ", ".join(f"{f.from_} -> {f.to} ({f.reason})" for f in delivery.fallbacks)
            + "\n"
            if delivery.fallbacks
            else ""
        )
        + f"\n## Question\n\n{question.strip()}\n\n## Peer response\n\n{reply.strip()}\n"
    )


def consult_result(delivery: Delivery, record_path: Path | None) -> dict[str, Any]:
    """The per-peer JSON document (success or failure) the skill parses.

    An answered consult with a session id carries ``resumeReadOnly``: the commands that
    continue that session with the read-only flags it ran with (run them in ``cwd``).
    """
    common: dict[str, Any] = {
        "peer": delivery.peer,
        "product": delivery.product,
        "sessionId": delivery.sessionId,
        "cwd": delivery.cwd,
        "sessionRecordPath": delivery.recordPath,
        "fallbacks": [f.document() for f in delivery.fallbacks],
        "elapsedMs": delivery.elapsedMs,
    }
    if delivery.degraded:
        common["degraded"] = True
        common["degradedReason"] = delivery.degradedReason
    dropped = delivery.attempts[-1].outputDroppedBytes if delivery.attempts else 0
    if dropped:  # the reviewer printed more than the output cap keeps (or the disk held)
        common["outputTruncated"] = True
        common["outputDroppedBytes"] = dropped
    if delivery.unprotected:
        common["unprotected"] = delivery.unprotected
    if delivery.ok and delivery.reply is not None:
        return {
            "ok": True,
            "status": "advisory",
            **common,
            "recordPath": str(record_path) if record_path else None,
            "text": delivery.reply.text,
            "cost": delivery.cost,
            "usage": dataclasses.asdict(delivery.usage) if delivery.usage else None,
            "message": ADVISORY_MESSAGE,
            **_read_only_resume(delivery),
        }
    from review_loop.orchestrator.explain import failure_words

    if delivery.interrupted:
        message = "interrupted: review-loop was stopped; this peer's session was ended"
    else:
        message = f"consult peer invoke failed: {failure_words(delivery)}"
    return {
        "ok": False,
        "status": INTERRUPTED if delivery.interrupted else "DELIVERY_UNKNOWN",
        "delivery": delivery.state.value,
        "code": delivery.reason,
        **common,
        "recordPath": None,
        "message": message,
        "error": failure_words(delivery),  # the original's words: "non-zero exit N: …"
        # ``status`` is the original's (DELIVERY_UNKNOWN for every failure); these say what
        # the delivery state means and what to do about it, in a person's words.
        **_explained(delivery),
        "attempts": [a.document() for a in delivery.attempts],
    }


def _explained(delivery: Delivery) -> dict[str, str]:
    """``summary`` (what happened) and, when there is one, ``hint`` (what to do)."""
    import os

    from review_loop.orchestrator.explain import hint, summary

    state, reason = delivery.state.value, delivery.reason
    explained = {"summary": summary(state, delivery.peer, reason, delivery.interrupted)}
    advice = hint(reason, delivery.detail, delivery.product, os.environ, delivery.cwd)
    if advice is not None:
        explained["hint"] = advice
    return explained


def claim_record_name(parent: Path, name: str) -> str:
    """Make ``parent/name`` exclusively (``-2``, ``-3`` … on a collision); return the name used.

    Two consults started in the same millisecond on the same peer get distinct record
    directories: ``mkdir`` fails on an existing directory, so no two callers both own one.

    Raises:
        RecordingError: the directory cannot be made (names the path and the errno).
    """
    for index in range(1, MAX_NAME_SUFFIX + 1):
        candidate = name if index == 1 else f"{name}-{index}"
        try:
            make_dir_exclusive(parent / candidate)
        except FileExistsError:
            continue
        except OSError as error:
            raise RecordingError(record_error(parent / candidate, error)) from None
        return candidate
    raise RecordingError(
        RecordError(
            path=str(parent / name),
            errno="EEXIST",
            message=f"{MAX_NAME_SUFFIX} record directories named {name} already exist",
        )
    )


def _write_answer(path: Path, text: str) -> RecordError | None:
    """Write the consult's Markdown record; a failure is returned, the answer still printed."""
    try:
        atomic_write_bytes(path, text.encode())
    except OSError as error:
        return record_error(path, error)
    return None


@reporting_async
async def run_consult(
    dispatcher: Dispatcher,
    plan: ConsultPlan,
    *,
    clock: Callable[[], str] = utc_now,
    interrupted: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Ask every peer of ``plan`` in parallel and write the records.

    Returns one peer's document when one peer was asked, else
    ``{ok, status, results: [...]}`` with ``ok`` true only when every peer answered.
    An answer whose records cannot be written is still returned, with ``recordError``
    (``{path, errno, message}``) saying what was not recorded. ``clock`` gives the
    creation time that names the records (injected by tests to pin it).

    When the consult is cancelled, ``interrupted`` receives the same document built
    from what had ended (answers that arrived are kept, and recorded), with
    ``"interrupted": [peer, ...]`` and those peers' ``status``/``code`` ``interrupted``;
    the cancellation then propagates.

    Raises:
        RecordingError: a record directory cannot be made (nothing was asked).
    """
    repo = dispatcher.repo
    note_stop(repo)  # a committed STOP stops every peer: say so (``tracked``)
    runtime = repo / ".review-handoff" / "runtime"
    prompt = consult_prompt(plan.question)
    created = clock()
    stamp = file_stamp(created)
    resolved = [resolve_peer(p, dispatcher.prefs) for p in plan.peers]
    avoid = tuple({r.product for r in resolved} | ({plan.host} if plan.host else set()))
    sessions = runtime / CONSULT_SESSIONS_DIR
    names = [claim_record_name(sessions, f"{stamp}-{peer.name}") for peer in resolved]
    requests = [
        PeerRequest(
            peer=peer.name,
            prompt=prompt,
            record_dir=sessions / name,
            resume_session_id=plan.resume_session_id,
            fallback=plan.fallback,
            avoid=avoid,
            timeout_ms=plan.timeout_ms,
        )
        for peer, name in zip(resolved, names, strict=True)
    ]
    try:
        deliveries = await dispatcher.fan_out(requests)
    except anyio.get_cancelled_exc_class():
        if interrupted is not None:
            ended = [dispatcher.outcome_of(request) for request in requests]
            interrupted(_consult_document(plan, runtime, created, resolved, names, ended))
        raise
    return _consult_document(plan, runtime, created, resolved, names, deliveries)


def _read_only_resume(delivery: Delivery) -> dict[str, Any]:
    """``{"resumeReadOnly": …}`` for the session that answered, or nothing without one."""
    if delivery.sessionId is None or not delivery.attempts:
        return {}
    from review_loop.adapters import get_adapter
    from review_loop.orchestrator.sessions.resume import read_only_resume

    # The last attempt is the one that answered: its product and launch command (an alias's
    # argv, or a fallback's) are the ones to resume with.
    answered = delivery.attempts[-1]
    commands = get_adapter(answered.product).resume_commands(
        delivery.sessionId, tuple(answered.command)
    )
    return {"resumeReadOnly": read_only_resume(answered.product, commands)}


def _consult_document(
    plan: ConsultPlan,
    runtime: Path,
    created: str,
    resolved: list[ResolvedPeer],
    names: list[str],
    deliveries: list[Delivery],
) -> dict[str, Any]:
    """Write each answer's Markdown record; one peer's document, or all of them."""
    results = []
    for peer, name, delivery in zip(resolved, names, deliveries, strict=True):
        record_path: Path | None = None
        failed = delivery.recordError
        if delivery.ok:
            record_path = runtime / "consults" / f"{name}.md"
            text = _record_text(peer, delivery, plan.question, created)
            unwritten = _write_answer(record_path, text)
            failed = failed or unwritten
            record_path = None if unwritten else record_path
        result = consult_result(delivery, record_path)
        if failed is not None:
            result["recordError"] = failed.document()
        results.append(result)
    stopped = [d.peer for d in deliveries if d.interrupted]
    if len(results) == 1:
        document = results[0]
    else:
        ok = all(r["ok"] for r in results)
        status = INTERRUPTED if stopped else "advisory" if ok else "DELIVERY_UNKNOWN"
        document = {"ok": ok, "status": status, "results": results}
    if stopped:
        document["interrupted"] = stopped
    return document
