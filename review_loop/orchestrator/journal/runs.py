"""Verification runs on the journal: start, input, scope/finding add, finish, status, render.

The ``spx verification run`` contract (outcomeeng/spx ``src/commands/verify/cli.ts``): the
same report shapes, the same preconditions in the same order, the same error headlines
(with ``review-loop`` in place of ``spx``), the same rejection block. Every mutation is a
:class:`~.store.Mutation` whose validation runs *under the stream's lock*, against the
history as it is at that moment, so a rule such as "a finding names a recorded unit" or
"the terminal status matches the evidence" cannot be raced by another process.

These functions are synchronous and one-shot, for the CLI. The audit workflow uses the
same :func:`scope_mutation` / :func:`finding_mutation` / :func:`terminal_mutation` through
the async single writer (:func:`~.writer.open_journal`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, NamedTuple

from review_loop.agents import run_payloads
from review_loop.agents import verification as v
from review_loop.agents.errors import ReviewLoopError
from review_loop.orchestrator.journal.dirs import Directory
from review_loop.orchestrator.journal.layout import (
    BACKEND_IDENTITY,
    Product,
    input_record,
    locate_product,
    new_run_token,
    run_file,
)
from review_loop.orchestrator.journal.store import (
    Appended,
    Existing,
    JournalSealedError,
    Mutation,
    Outcome,
    Refused,
    RunLog,
    Schema,
    StreamState,
    utc_timestamp,
)

PREFIX: Final = "review-loop verification run"
ERRORS: Final = {
    "INPUT_REQUIRED": f"{PREFIX} start requires --input <input-source>",
    "RUN_REQUIRED": f"{PREFIX} existing-run commands require an explicit --run <run-token>",
    "RUN_NOT_FOUND": f"{PREFIX} could not locate the requested run",
    "RUN_SELECTOR_MISMATCH": f"{PREFIX} selector does not match the recorded run",
    "CHANGED_SCOPE_FAILED": f"{PREFIX} could not derive the changeset changed-file scope",
    "INPUT_PERSIST_FAILED": f"{PREFIX} could not persist the recorded run input",
    "INPUT_READ_FAILED": f"{PREFIX} could not read the recorded run input",
    "PAYLOAD_REQUIRED": f"{PREFIX} evidence-add commands require --payload <payload-source>",
    "IDEMPOTENCY_KEY_REQUIRED": f"{PREFIX} evidence-add commands require --idempotency-key <key>",
    "PAYLOAD_READ_FAILED": f"{PREFIX} could not read the evidence payload",
    "PAYLOAD_INVALID": f"{PREFIX} evidence payload is not valid JSON",
    "RUN_FINISHED": f"{PREFIX} cannot add evidence to a finished run",
    "SCOPE_INVALID": f"{PREFIX} scope add: evidence payload rejected",
    "FINDING_INVALID": f"{PREFIX} finding add: evidence payload rejected",
    "UNSUPPORTED_VERIFICATION_TYPE": f"{PREFIX} verification type is not registered",
    "SPX_DRIVEN_APPEND_REJECTED": f"{PREFIX} cannot add caller evidence to a run spx drives",
    "APPEND_FAILED": f"{PREFIX} could not append the evidence event",
    "TERMINAL_STATUS_REQUIRED": f"{PREFIX} finish requires --terminal-status <status>",
    "TERMINAL_STATUS_INVALID": (
        f"{PREFIX} finish requires a terminal status in the journal terminal-status vocabulary"
    ),
    "TERMINAL_METADATA_INVALID": (
        f"{PREFIX} terminal metadata failed verification-type validation"
    ),
    "TERMINAL_STATUS_CONFLICT": (
        f"{PREFIX} terminal status conflicts with the run's recorded evidence"
    ),
    "FINISH_FAILED": f"{PREFIX} could not record terminal completion",
    "RUN_CONTEXT_FAILED": f"{PREFIX} could not record the run drive mode",
}

SCHEMA: Final = Schema(
    name=v.FOLD_ID,
    new_view=v.new_view,
    fold=v.fold_event,
    sealing_types=frozenset({v.TERMINAL_EVENT}),
)

Emit = Callable[[Mapping[str, Any]], None]
Warn = Callable[[str], None]
ReadSource = Callable[[str], str]


class VerificationError(ReviewLoopError):
    """A verification-run command refused; the message is the exact stderr text."""


def _fail(code: str, detail: str | None = None) -> VerificationError:
    message = ERRORS[code]
    return VerificationError(f"{message}: {detail}" if detail else message)


def read_source(source: str) -> str:
    """``stdin`` reads standard input; anything else is a file path. Either is read with
    the input limit (``input_files``): past it, an ``OSError`` that names the limit."""
    from review_loop.orchestrator.handoff.input_files import read_stream_text, read_text

    if source == v.INPUT_STDIN:
        return read_stream_text(sys.stdin, "stdin")
    return read_text(source)


def emit_stderr(event: Mapping[str, Any]) -> None:
    """Stream one journal event as a JSON line on stderr (stdout holds the result)."""
    sys.stderr.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stderr.flush()


def warn_stderr(message: str) -> None:
    """A warning on stderr (the command still succeeds)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


# libuv's words for the errors a read of a named source meets, as spx (Node) prints them.
_UV_WORDS = {
    "ENOENT": "no such file or directory",
    "EACCES": "permission denied",
    "ENOTDIR": "not a directory",
    "ELOOP": "too many symbolic links encountered",
    "ENAMETOOLONG": "name too long",
    "EISDIR": "illegal operation on a directory",
}


def _error_text(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        where = f" '{error.filename}'" if error.filename else ""
        return f"{error.strerror}{where}"
    return str(error) or type(error).__name__


def _read_error_text(error: BaseException) -> str:
    """Why a named source (``--input``, ``--payload``, ``--terminal-metadata``) could not be
    read, as spx (Node) words it after its headline: ``ENOENT: no such file or directory,
    open '<path>'``; ``EISDIR: illegal operation on a directory, read``."""
    if not isinstance(error, OSError) or error.errno is None:
        return _error_text(error)
    import errno

    code = errno.errorcode.get(error.errno, "EIO")
    said = error.strerror or code  # Node's words start in lower case; ours keep their units
    words = _UV_WORDS.get(code, said[:1].lower() + said[1:])
    if code == "EISDIR":  # Node opens a directory, then its read fails: no path
        return f"{code}: {words}, read"
    where = f" '{error.filename}'" if error.filename else ""
    return f"{code}: {words}, open{where}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> Any:
    """Strict JSON (no ``NaN``/``Infinity``), as ``JSON.parse`` reads it."""
    return json.loads(text, parse_constant=_reject_constant)


def _require_type(verification_type: str) -> None:
    if verification_type not in v.VERIFICATION_TYPES:
        raise _fail("UNSUPPORTED_VERIFICATION_TYPE")


def _selector(scope_type: str, scope: str) -> v.Selector:
    try:
        kind, identity = v.canonical_selector(scope_type, scope)
    except v.ScopeSelectorError as error:
        raise VerificationError(str(error)) from None
    return v.Selector(kind, identity)


# --- addressing an existing run -------------------------------------------------------------


class RunAddress(NamedTuple):
    """An existing run as a command names it, resolved to its files."""

    product: Product
    verification_type: str
    scope_type: str
    scope: str
    selector: v.Selector
    token: str
    runs_dir: Path
    log: RunLog

    @property
    def input_path(self) -> Path:
        """``input-<token>.json``."""
        return input_record(self.runs_dir, self.token)

    def diagnostic(self, code: str, target: Path | None = None) -> VerificationError:
        """The locator diagnostic spx prints for a run it cannot use."""
        fields = [
            ERRORS[code],
            f"run={self.token}",
            f"verification-type={self.verification_type}",
            f"scope-type={self.scope_type}",
            f"scope={self.scope}",
            f"backend={BACKEND_IDENTITY}",
            f"namespace={self.runs_dir}",
            f"target={target or self.input_path}",
        ]
        return VerificationError(" ".join(fields))


def address(cwd: Path, verification_type: str, scope_type: str, scope: str, run: str) -> RunAddress:
    """Resolve the selectors of an existing-run command (nothing is read yet).

    Raises:
        VerificationError: unregistered type, malformed scope, or no ``--run``.
    """
    _require_type(verification_type)
    selector = _selector(scope_type, scope)
    if not run.strip():
        raise _fail("RUN_REQUIRED")
    if not v.is_safe_segment(run):  # spx's text for a token that is not a file name
        raise VerificationError(v.UNSAFE_TOKEN)
    product = locate_product(cwd)
    runs_dir = product.runs_dir(verification_type)
    return RunAddress(
        product=product,
        verification_type=verification_type,
        scope_type=scope_type,
        scope=scope,
        selector=selector,
        token=run,
        runs_dir=runs_dir,
        log=RunLog(run_file(runs_dir, run), schema=SCHEMA, anchor=product.root),
    )


def _recorded_input(run: RunAddress) -> dict[str, Any] | None:
    if not v.is_safe_segment(run.token):
        return None
    try:
        with run.log.directory() as directory:
            text = directory.read(run.input_path.name).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise _fail("INPUT_READ_FAILED", _error_text(error)) from None
    try:
        record = json.loads(text)
    except ValueError as error:
        raise _fail("INPUT_READ_FAILED", str(error)) from None
    fields = ("scopeIdentity", "scopeType", "source", "digest", "content")
    if not isinstance(record, dict) or not all(isinstance(record.get(f), str) for f in fields):
        raise _fail("INPUT_READ_FAILED", "recorded input is missing required fields")
    return record


def _matches(record: Mapping[str, Any], selector: v.Selector) -> bool:
    return bool(
        record["scopeType"] == selector.scope_type
        and record["scopeIdentity"] == selector.scope_identity
    )


def _state(run: RunAddress) -> StreamState | None:
    if not v.is_safe_segment(run.token):
        return None
    log = run.log
    if not log.exists():
        return None
    return log.state()


def open_run(run: RunAddress) -> tuple[StreamState, dict[str, Any]]:
    """The run's state and recorded input, after every precondition of an append.

    Raises:
        VerificationError: not found, finished, selector mismatch, or spx-driven.
    """
    state = _state(run)
    if state is None:
        raise run.diagnostic("RUN_NOT_FOUND", run.runs_dir)
    if state.sealed_seq is not None:
        raise _fail("RUN_FINISHED")
    record = _recorded_input(run)
    if record is None:
        raise run.diagnostic("RUN_NOT_FOUND")
    if not _matches(record, run.selector):
        raise run.diagnostic("RUN_SELECTOR_MISMATCH")
    if state.view["driveMode"] == v.DRIVE_MODE_SPX:
        raise _fail("SPX_DRIVEN_APPEND_REJECTED")
    return state, record


def _projection_input(run: RunAddress, state: StreamState) -> None:
    """Preconditions shared by status, render and finish's idempotent answer."""
    try:
        record = _recorded_input(run)
    except VerificationError:
        if state.sealed_seq is not None:
            return  # a sealed run still projects without its sidecar
        raise
    if record is None:
        if state.sealed_seq is None:
            raise run.diagnostic("RUN_NOT_FOUND")
        return
    if not _matches(record, run.selector):
        raise run.diagnostic("RUN_SELECTOR_MISMATCH")


# --- mutations (shared with the async writer) -----------------------------------------------


@contextmanager
def _every_problem(verification_type: str, kind: str, payload: Any) -> Iterator[None]:
    """A refused payload carries every problem of its fields, not only spx's first one."""
    try:
        yield
    except v.PayloadRejectedError as error:
        error.problems = run_payloads.problems(verification_type, kind, payload)
        raise


def scope_mutation(
    verification_type: str, selector: v.Selector, key: str, payload: Any, *, time: str | None = None
) -> Mutation:
    """A ``scope add`` whose payload is validated under the lock against the run's history."""

    def decide(view: Mapping[str, Any]) -> Any:
        with _every_problem(verification_type, "scope", payload):
            unit = v.validate_scope_for_run(verification_type, payload, view, selector, key)
        return {"payload": unit}

    return Mutation(
        type=v.SCOPE_EVENT, id=key, key=key, decide=decide, source=v.EVENT_SOURCE, time=time
    )


def finding_mutation(
    verification_type: str, key: str, payload: Any, *, time: str | None = None
) -> Mutation:
    """A ``finding add`` validated under the lock (its unit must already be recorded)."""

    def decide(view: Mapping[str, Any]) -> Any:
        with _every_problem(verification_type, "finding", payload):
            finding = v.validate_finding_for_run(verification_type, payload, view, key)
        return {"payload": finding}

    return Mutation(
        type=v.FINDING_EVENT, id=key, key=key, decide=decide, source=v.EVENT_SOURCE, time=time
    )


def terminal_mutation(
    verification_type: str,
    selector: v.Selector,
    token: str,
    status: str,
    metadata: Any = None,
    *,
    has_metadata: bool = False,
    time: str | None = None,
) -> Mutation:
    """``finish``: the status is checked against the evidence under the lock, then seals."""

    def decide(view: Mapping[str, Any]) -> Any:
        with _every_problem(verification_type, "terminal-metadata", metadata):
            recorded = v.check_terminal(
                verification_type, status, metadata, view, selector, has_metadata=has_metadata
            )
        data: dict[str, Any] = {"terminalStatus": status}
        if recorded is not None:
            data["terminalMetadata"] = recorded
        return data

    return Mutation(
        type=v.TERMINAL_EVENT,
        id=f"{v.TERMINAL_ID_PREFIX}{token}",
        decide=decide,
        source=v.EVENT_SOURCE,
        time=time,
    )


def _problem_lines(error: v.PayloadRejectedError, verb: str) -> str:
    """After spx's block (kept line for line): every field problem, and where the fields are."""
    if not error.problems:
        return ""
    lines = ["", "", "  every problem of this payload (field: what is wrong; accepted):"]
    lines += [f"    {problem}" for problem in error.problems]
    lines += [f"  every field: review-loop verification run {verb} --help"]
    return "\n".join(lines)


def rejection_text(verb: str, verification_type: str, error: Exception) -> str:
    """Render a refused mutation as the command's stderr text."""
    if isinstance(error, JournalSealedError):
        return ERRORS["RUN_FINISHED"]
    if isinstance(error, v.TerminalRejectedError):
        return v.render_rejection(
            ERRORS["TERMINAL_STATUS_CONFLICT" if error.conflict else "TERMINAL_METADATA_INVALID"],
            verification_type,
            "terminal-metadata",
            error.reason,
            v.FINISH_RETRY_NOTE,
        ) + _problem_lines(error, "finish")
    if isinstance(error, v.PayloadRejectedError):
        return v.render_rejection(
            ERRORS["FINDING_INVALID" if verb == "finding" else "SCOPE_INVALID"],
            verification_type,
            "finding" if verb == "finding" else "scope",
            error.reason,
            v.APPEND_RETRY_NOTE,
        ) + _problem_lines(error, f"{verb} add")
    return f"{ERRORS['APPEND_FAILED']}: {_error_text(error)}"


# --- the verbs ------------------------------------------------------------------------------


def _changed_paths(product: Product, base: str, head: str) -> list[str]:
    from review_loop.orchestrator.handoff.git import git

    if base.startswith("-") or head.startswith("-"):
        raise _fail("CHANGED_SCOPE_FAILED", "a revision must not start with '-'")
    # --no-renames: a rename contributes both of its paths, as spx's name-status reading does.
    result = git(
        product.worktree,
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        f"{base}..{head}",
        "--",
        check=False,
    )
    if result.returncode != 0:  # spx's words, then git's own
        detail = result.stderr.decode("utf-8", "replace").strip()
        raise _fail("CHANGED_SCOPE_FAILED", f"failed to diff committed changed paths: {detail}")
    names = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    return sorted({name for name in names if name})


def _write_context(product: Product, verification_type: str, selector: v.Selector) -> str:
    if selector.scope_type == "changeset":
        base, head = v.parse_changeset_scope(selector.scope_identity)
        subject: dict[str, Any] = {"kind": "changeset", "base": base, "head": head}
    else:
        subject = {"kind": "file", "path": selector.scope_identity}
    payload = {
        "schemaVersion": "verification-context.v1",
        "subject": subject,
        "predicate": verification_type,
        "workflow": {"name": verification_type},
        "launch": {
            "productDir": str(product.root),
            "branchSlug": product.slug,
            "branchIdentity": product.branch_identity,
            "headSha": product.head or "",
            "createdAt": utc_timestamp(),
        },
        "persistence": {
            "kind": "state-store",
            "scope": "branch",
            "domain": "verification-context",
            "format": "canonical-json",
        },
    }
    digest = v.sha256_hex(v.canonical_json(payload).encode("utf-8"))
    contexts = product.branch_dir() / "verification-context" / "contexts"
    document = v.canonical_json({"context": payload, "digest": digest}).encode("utf-8")
    with Directory.open(contexts, anchor=product.root, create=True) as directory:
        directory.write_atomic(f"context-{digest}.json", document)
    return digest


def start(
    cwd: Path,
    verification_type: str,
    scope_type: str,
    scope: str,
    input_source: str,
    *,
    read: ReadSource = read_source,
    emit: Emit = emit_stderr,
) -> dict[str, Any]:
    """Open a run: resolve its scope, record its input, append its run context (seq 1).

    Raises:
        VerificationError: any precondition; nothing is left behind.
    """
    _require_type(verification_type)
    if not input_source.strip():
        raise _fail("INPUT_REQUIRED")
    product = locate_product(cwd)
    selector = _selector(scope_type, scope)
    if selector.scope_type == "changeset":
        base, head = v.parse_changeset_scope(selector.scope_identity)
        resolved = _changed_paths(product, base, head)
    else:
        resolved = [selector.scope_identity]
    try:
        content = read(input_source)
    except (OSError, UnicodeDecodeError) as error:
        raise _fail("INPUT_READ_FAILED", _read_error_text(error)) from None
    digest = v.digest_run_input(input_source, content)
    try:
        from review_loop.orchestrator.handoff.git import ensure_excluded

        ensure_excluded(product.root)
        context_digest = _write_context(product, verification_type, selector)
    except OSError as error:
        raise _fail("INPUT_PERSIST_FAILED", _error_text(error)) from None

    runs_dir = product.runs_dir(verification_type)
    log = _create_log(product, runs_dir)
    token = log.path.name.removeprefix("run-").removesuffix(".jsonl")
    record = {
        "scopeIdentity": selector.scope_identity,
        "scopeType": selector.scope_type,
        "source": input_source,
        "digest": digest,
        "content": content,
    }
    outcome = _record_start(log, token, record)
    emit(outcome.event)
    return {
        "runToken": token,
        "contextDigest": context_digest,
        "resolvedScope": resolved,
        "input": {"source": input_source, "digest": digest},
        "locator": {
            "runToken": token,
            "verificationType": verification_type,
            "scopeType": selector.scope_type,
            "scopeIdentity": selector.scope_identity,
            "backendIdentity": BACKEND_IDENTITY,
            "storageNamespace": str(runs_dir),
            "runTarget": str(log.path),
        },
    }


def _record_start(log: RunLog, token: str, record: dict[str, Any]) -> Appended:
    """Write the input record and append the run context (seq 1); on failure leave nothing."""
    path = input_record(log.path.parent, token)
    created = [log.path]
    try:
        with log.directory() as directory:
            directory.write_atomic(path.name, json.dumps(record, ensure_ascii=False).encode())
        created.append(path)
        outcome = log.commit(
            [
                Mutation(
                    type=v.RUN_CONTEXT_EVENT,
                    id=f"{v.RUN_CONTEXT_ID_PREFIX}{token}",
                    data={"driveMode": v.DRIVE_MODE_CALLER},
                    source=v.EVENT_SOURCE,
                )
            ]
        )[0]
        if not isinstance(outcome, Appended):
            raise _fail("RUN_CONTEXT_FAILED")
    except BaseException as error:
        with contextlib.suppress(OSError), log.directory() as directory:
            for leftover in [*created, log.lock_path, log.snapshot_path]:
                directory.unlink(leftover.name)
            directory.sync()
        if isinstance(error, OSError):
            raise _fail("INPUT_PERSIST_FAILED", _error_text(error)) from None
        raise
    return outcome


def _create_log(product: Product, runs_dir: Path) -> RunLog:
    """A new run's empty log, under a fresh token (its directories made no-follow)."""
    for _attempt in range(10):
        log = RunLog(run_file(runs_dir, new_run_token()), schema=SCHEMA, anchor=product.root)
        try:
            log.create()
        except FileExistsError:
            continue
        except OSError as error:
            raise _fail("INPUT_PERSIST_FAILED", _error_text(error)) from None
        return log
    raise _fail("INPUT_PERSIST_FAILED", "run token collision limit exhausted")


def read_input(run: RunAddress) -> dict[str, Any]:
    """The exact input recorded at start: ``{source, digest, content}``."""
    record = _recorded_input(run)
    if record is None:
        raise run.diagnostic("RUN_NOT_FOUND")
    if not _matches(record, run.selector):
        raise run.diagnostic("RUN_SELECTOR_MISMATCH")
    return {"source": record["source"], "digest": record["digest"], "content": record["content"]}


def add_evidence(
    run: RunAddress,
    verb: str,
    key: str,
    payload_source: str,
    *,
    read: ReadSource = read_source,
    emit: Emit = emit_stderr,
) -> dict[str, Any]:
    """``scope add`` (``verb="scope"``) or ``finding add`` (``verb="finding"``).

    A repeated key returns the original sequence without reading the payload, also when
    the payload differs: that is the ``spx verification run`` contract (a retry after an
    unknown outcome must not need the payload), and each verification type ties the key to
    the payload's identity (an audit scope key *is* its ``unitId``, a finding key is
    ``<unitId>:<rule>``), so a same-key, other-payload call names the evidence already
    recorded. Keys are indexed per event type, as spx does.

    Raises:
        VerificationError: a precondition, or the payload's rejection block.
    """
    if not payload_source.strip():
        raise _fail("PAYLOAD_REQUIRED")
    if not key.strip():
        raise _fail("IDEMPOTENCY_KEY_REQUIRED")
    event_type = v.FINDING_EVENT if verb == "finding" else v.SCOPE_EVENT
    state, _record = open_run(run)
    existing = state.lookup(event_type, key)
    if existing is not None:
        return {"sequence": existing, "idempotent": True}
    try:
        raw = read(payload_source)
    except (OSError, UnicodeDecodeError) as error:
        raise _fail("PAYLOAD_READ_FAILED", _read_error_text(error)) from None
    try:
        payload = parse_json(raw)
    except ValueError:
        raise _fail("PAYLOAD_INVALID") from None
    mutation = (
        finding_mutation(run.verification_type, key, payload)
        if verb == "finding"
        else scope_mutation(run.verification_type, run.selector, key, payload)
    )
    outcome = _commit_one(run, mutation)
    return evidence_report(outcome, verb, run.verification_type, emit)


def _commit_one(run: RunAddress, mutation: Mutation) -> Outcome:
    try:
        return run.log.commit([mutation])[0]
    except OSError as error:
        raise _fail("APPEND_FAILED", _error_text(error)) from None


def evidence_report(
    outcome: Outcome, verb: str, verification_type: str, emit: Emit | None = None
) -> dict[str, Any]:
    """``{sequence, idempotent}`` for an outcome, or the refusal as a VerificationError."""
    if isinstance(outcome, Refused):
        raise VerificationError(rejection_text(verb, verification_type, outcome.error))
    if isinstance(outcome, Existing):
        return {"sequence": outcome.sequence, "idempotent": True}
    if emit is not None:
        emit(outcome.event)
    return {"sequence": outcome.sequence, "idempotent": False}


def _finish_report(run: RunAddress, state: StreamState) -> dict[str, Any]:
    view = state.view
    report: dict[str, Any] = {"runToken": run.token}
    terminal = view["terminal"] or {}
    report.update(terminal)
    report.update(
        {
            "sealed": view["terminal"] is not None,
            "findingCount": view["findingCount"],
            "lastSequence": state.seq,
        }
    )
    return report


def finish(
    run: RunAddress,
    terminal_status: str,
    metadata_source: str | None = None,
    *,
    read: ReadSource = read_source,
    emit: Emit = emit_stderr,
    warn: Warn = warn_stderr,
) -> dict[str, Any]:
    """Record the terminal status (checked against the evidence), seal, report the projection.

    Idempotent: a run already finished answers with its projection, whatever status is
    asked (and re-creates a seal marker a crash lost).

    Raises:
        VerificationError: bad status, unknown run, or the status conflicts with the evidence.
    """
    if not terminal_status.strip():
        raise _fail("TERMINAL_STATUS_REQUIRED")
    if terminal_status not in v.TERMINAL_STATUSES:
        raise _fail("TERMINAL_STATUS_INVALID")
    state = _state(run)
    if state is None:
        raise run.diagnostic("RUN_NOT_FOUND")  # spx: target= the input record
    _projection_input(run, state)
    if state.sealed_seq is not None:
        run.log.ensure_seal_marker()
        _warn_seal_marker(run, state.sealed_seq, warn)
        return _finish_report(run, state)
    metadata: Any = None
    if metadata_source is not None:
        try:
            raw = read(metadata_source)
        except (OSError, UnicodeDecodeError) as error:
            raise _fail("PAYLOAD_READ_FAILED", _read_error_text(error)) from None
        try:
            metadata = parse_json(raw)
        except ValueError:
            raise _fail("PAYLOAD_INVALID") from None
    mutation = terminal_mutation(
        run.verification_type,
        run.selector,
        run.token,
        terminal_status,
        metadata,
        has_metadata=metadata_source is not None,
    )
    try:
        outcome = run.log.commit([mutation])[0]
    except OSError as error:
        raise _fail("FINISH_FAILED", _error_text(error)) from None
    if isinstance(outcome, Refused):
        raise VerificationError(rejection_text("finish", run.verification_type, outcome.error))
    if isinstance(outcome, Appended):
        emit(outcome.event)
    # The terminal event is durable: that is the seal, whatever happened to its marker.
    _warn_seal_marker(run, outcome.sequence, warn)
    return _finish_report(run, run.log.state())


def _warn_seal_marker(run: RunAddress, sequence: int, warn: Warn) -> None:
    error = run.log.seal_marker_error
    if error is not None:
        warn(
            f"{PREFIX} finish: warning: the run is sealed by its terminal event (seq "
            f"{sequence}); its seal marker, a cache, could not be written: {_error_text(error)}"
        )


def status(run: RunAddress) -> dict[str, Any]:
    """The resumable status folded from the history (reads the snapshot, not every event)."""
    state = _state(run)
    if state is None:
        raise run.diagnostic("RUN_NOT_FOUND")  # spx: target= the input record
    _projection_input(run, state)
    view = state.view
    report: dict[str, Any] = {
        "runToken": run.token,
        "verificationType": run.verification_type,
        "scopeType": run.scope_type,
        "sealed": view["terminal"] is not None,
        "driveMode": view["driveMode"],
        "lastSequence": state.seq,
    }
    report.update(view["terminal"] or {})
    report["findingCount"] = view["findingCount"]
    report["nextActions"] = v.next_actions(view)
    report.update(_healing(run, state))
    return report


def _healing(run: RunAddress, state: StreamState) -> dict[str, Any]:
    """Beyond the spx shape, only when there is something to say: moved-aside tails."""
    extra: dict[str, Any] = {}
    quarantined = run.log.quarantined()
    if quarantined:
        extra["quarantined"] = quarantined
    if state.tail is not None:  # a read-only run: the tail is ignored, not moved
        extra["ignoredTail"] = {"offset": state.tail.offset, "bytes": state.tail.size}
    return extra


def render(run: RunAddress) -> dict[str, Any]:
    """The projection with every event and every validated audit scope unit."""
    state = _state(run)
    if state is None:
        raise run.diagnostic("RUN_NOT_FOUND")  # spx: target= the input record
    _projection_input(run, state)
    events = run.log.read_events()
    view = v.new_view()
    for event in events:
        v.fold_event(view, event)
    report: dict[str, Any] = {
        "runToken": run.token,
        "findingCount": view["findingCount"],
        "sealed": view["terminal"] is not None,
        "driveMode": view["driveMode"],
    }
    report.update(view["terminal"] or {})
    report["nextActions"] = v.next_actions(view)
    report["events"] = events
    report["auditScopeUnits"] = v.audit_scope_units(events)
    return report


def resolve_cwd(root: str | None) -> Path:
    """``-C <root>`` (default: the current directory), made absolute."""
    return Path(os.path.abspath(root or os.getcwd()))
