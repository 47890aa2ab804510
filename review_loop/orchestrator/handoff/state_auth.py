"""Authenticated review state: what review-loop wrote, provably, and nothing else.

Everything under a repository's ``.review-handoff/`` can be committed, copied or forged by
whoever controls the repository (a pull request, an agent that just wrote code). A verdict,
a run state or a gate result read from there is therefore believed only when it carries a
MAC made with a secret that never leaves the user's state directory:

- the secret is 32 random bytes in ``$REVIEW_LOOP_HOME/state-secret`` (created ``0600`` on
  first use, exclusively, so two processes racing to create it agree on one);
- a MAC is HMAC-SHA256 over a *purpose* string and the canonical JSON of the document
  (sorted keys, no whitespace, UTF-8), so a MAC made for one kind of document never
  authenticates another kind;
- :func:`sign` returns the document with a ``"mac"`` field added; :func:`verify` checks it
  and answers ``True`` only for a document this user's review-loop signed for ``purpose``.

A document copied from another machine or user, edited by hand, or forged fails
:func:`verify`; callers treat it as untrusted (re-run the review), never as an error that
blocks the user.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from review_loop.agents.errors import StateError
from review_loop.prefs.home import state_home

SECRET_FILE = "state-secret"
SECRET_BYTES = 32
MAC_FIELD = "mac"

_cached: tuple[Path, bytes] | None = None


def secret_path() -> Path:
    """Where the per-user secret lives (the user's state directory)."""
    # prefs.home, not the prefs model: no pydantic (~70 ms), and a journal command that
    # checks its cache must start fast.
    return state_home() / SECRET_FILE


def _read_secret(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o077:
            raise StateError(
                "STATE_SECRET_INSECURE",
                f"{path} is readable by others (mode {info.st_mode & 0o777:o}); "
                "it must be 0600 (chmod 600 it, or delete it to make a new one)",
            )
        data = os.read(fd, SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        raise StateError(
            "STATE_SECRET_INVALID",
            f"{path} holds {len(data)} bytes, not {SECRET_BYTES} (delete it to make a new one)",
        )
    return data


def state_secret() -> bytes:
    """The per-user secret, created ``0600`` on first use.

    Raises:
        StateError: the secret file exists but is not private or has the wrong size, or
            it cannot be created (the message names the path and the errno).
    """
    global _cached
    path = secret_path()
    if _cached is not None and _cached[0] == path:
        return _cached[1]
    try:
        secret = _read_secret(path)
    except FileNotFoundError:
        secret = _create_secret(path)
    _cached = (path, secret)
    return secret


def _create_secret(path: Path) -> bytes:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_secret(path)  # another process made it first: use theirs
    except OSError as error:
        raise StateError(
            "STATE_SECRET_UNWRITABLE",
            f"cannot create {path}: [{errno.errorcode.get(error.errno or 0, '?')}] "
            f"{error.strerror}",
        ) from None
    secret = os.urandom(SECRET_BYTES)  # not `secrets`: its import costs ~2 ms per command
    try:
        os.write(fd, secret)
        os.fsync(fd)
    finally:
        os.close(fd)
    return secret


def _canonical(document: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in document.items() if k != MAC_FIELD}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def mac(purpose: str, document: Mapping[str, Any]) -> str:
    """The hex MAC of ``document`` (its ``mac`` field excluded) for ``purpose``."""
    digest = hmac.new(state_secret(), purpose.encode() + b"\0", hashlib.sha256)
    digest.update(_canonical(document))
    return digest.hexdigest()


def mac_bytes(purpose: str, data: bytes) -> str:
    """The hex MAC of raw bytes (a packet file's text) for ``purpose``."""
    digest = hmac.new(state_secret(), purpose.encode() + b"\0", hashlib.sha256)
    digest.update(data)
    return digest.hexdigest()


def sign(purpose: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with a ``mac`` field that :func:`verify` accepts for ``purpose``."""
    return {
        **{k: v for k, v in document.items() if k != MAC_FIELD},
        MAC_FIELD: mac(purpose, document),
    }


def verify(purpose: str, document: Any) -> bool:
    """Whether ``document`` carries a valid MAC for ``purpose`` made with this user's secret."""
    if not isinstance(document, Mapping):
        return False
    claimed = document.get(MAC_FIELD)
    if not isinstance(claimed, str) or not claimed.isascii():
        return False  # compare_digest refuses non-ASCII text; no MAC of ours has any
    try:
        expected = mac(purpose, document)
    except (UnicodeEncodeError, ValueError, TypeError, RecursionError):
        return False  # no canonical UTF-8 JSON (a lone surrogate, a cycle): never signed
    return hmac.compare_digest(claimed, expected)


def verify_bytes(purpose: str, data: bytes, claimed: object) -> bool:
    """Whether ``claimed`` is the MAC of ``data`` for ``purpose``."""
    if not isinstance(claimed, str) or not claimed.isascii():
        return False
    return hmac.compare_digest(claimed, mac_bytes(purpose, data))
