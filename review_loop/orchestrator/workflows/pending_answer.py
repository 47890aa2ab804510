"""A reviewer's answer that arrived, kept until its round is recorded: never asked twice.

A review round is paid for when the reviewer answers. If recording the round then fails
(disk full, read-only, permission) or review-loop dies before the round is written, the
next ``run --continue`` (or the same round's retry) must use that answer, not ask again.

So, as soon as an answer arrives, :func:`keep_answer` writes it, signed with the user's
secret (:mod:`~review_loop.orchestrator.handoff.state_auth`), to the packet's runtime directory
(``pending-answer.json``) and, when that fails, to the user's state directory
(``$REVIEW_LOOP_HOME/pending/<key>.json``, the key a hash of repository, packet and round).
:func:`take_answer` gives it back only when its MAC is valid and it answers exactly this
question: same repository, packet, round and prompt (SHA-256). A forged or stale file is
reported as untrusted and ignored (the reviewer is asked). :func:`clear_answer` removes it
once the round is recorded. See ``docs/handoff-writes.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from review_loop.agents.outcomes import RecordError
from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.handoff.files import atomic_write_json, read_bytes, unlink
from review_loop.orchestrator.handoff.recording import record_error
from review_loop.orchestrator.handoff.trust import note_untrusted
from review_loop.prefs import state_home

PURPOSE = "review-loop pending reviewer answer v1"
REPO_FILE = "pending-answer.json"
PENDING_DIR = "pending"


class PendingAnswer(BaseModel):
    """One delivered answer and the exact question it answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str
    packetId: str
    round: int
    promptSha256: str
    reviewer: str
    product: str
    sessionId: str | None = None
    text: str
    correction: bool = False
    deliveredAt: str


def prompt_digest(prompt: str) -> str:
    """SHA-256 of the prompt text: an answer is reused only for the same question."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def user_copy_path(repo: Path, packet_id: str, round_number: int) -> Path:
    """``$REVIEW_LOOP_HOME/pending/<sha256 of repo, packet, round>.json``."""
    key = json.dumps([str(repo.resolve()), packet_id, round_number]).encode()
    return state_home() / PENDING_DIR / f"{hashlib.sha256(key).hexdigest()}.json"


def keep_answer(runtime: Path, answer: PendingAnswer) -> tuple[Path | None, RecordError | None]:
    """Keep ``answer`` where it survives; returns ``(where, the first failure or None)``.

    The repository copy is tried first; the user's state directory when it fails. ``where``
    is ``None`` only when neither could be written (the answer is then only printed).
    """
    document = state_auth.sign(PURPOSE, answer.model_dump(mode="json"))
    first: RecordError | None = None
    for path in (
        runtime / REPO_FILE,
        user_copy_path(Path(answer.repo), answer.packetId, answer.round),
    ):
        try:
            if path.parent.name == PENDING_DIR:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write_json(path, document)
        except OSError as error:
            first = first or record_error(path, error)
            continue
        return path, first
    return None, first


def _read(path: Path, *, in_repo: bool) -> Any:
    try:
        data = read_bytes(path) if in_repo else path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        note_untrusted(path, f"unreadable: {error.strerror or error}")
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        note_untrusted(path, "not JSON")
        return None


def take_answer(
    runtime: Path, repo: Path, packet_id: str, round_number: int, prompt: str
) -> tuple[PendingAnswer, Path] | None:
    """The kept answer to exactly this question, and where it was; ``None`` when none is.

    A file without this user's valid MAC, or for another question, is noted as untrusted
    (see :mod:`~review_loop.orchestrator.handoff.trust`) and never used.
    """
    digest = prompt_digest(prompt)
    wanted = (str(repo.resolve()), packet_id, round_number, digest)
    candidates = (
        (runtime / REPO_FILE, True),
        (user_copy_path(repo, packet_id, round_number), False),
    )
    for path, in_repo in candidates:
        document = _read(path, in_repo=in_repo)
        if document is None:
            continue
        if not state_auth.verify(PURPOSE, document):
            note_untrusted(path, "pending reviewer answer without a valid MAC; ignored")
            continue
        try:
            answer = PendingAnswer.model_validate(
                {k: v for k, v in document.items() if k != state_auth.MAC_FIELD}
            )
        except ValidationError:
            note_untrusted(path, "pending reviewer answer of an unknown shape; ignored")
            continue
        if (answer.repo, answer.packetId, answer.round, answer.promptSha256) == wanted:
            return answer, path
    return None


def clear_answer(runtime: Path, repo: Path, packet_id: str, round_number: int) -> None:
    """Remove both copies once the round is recorded (a leftover is harmless: it is bound
    to a round that is over, so it never answers another question)."""
    with suppress(OSError):
        unlink(runtime / REPO_FILE, missing_ok=True)
    with suppress(OSError):
        os.unlink(user_copy_path(repo, packet_id, round_number))
