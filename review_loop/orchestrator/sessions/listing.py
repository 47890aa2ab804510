"""Every resumable session of a repository: our records and each CLI's own store.

Read-only. The orchestrator does the reading; each adapter says where its CLI keeps
sessions and how to parse one file, so this module never names a product.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
from collections.abc import Mapping
from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from review_loop.adapters import get_adapter, product_names
from review_loop.agents.constants import SESSION_FILE
from review_loop.agents.listing_vocabulary import StoredSession
from review_loop.orchestrator.handoff.files import HANDOFF_DIR, read_found
from review_loop.orchestrator.handoff.json_text import Written
from review_loop.orchestrator.handoff.trust import tracked_handoff_files
from review_loop.orchestrator.sessions.records import Record, read_record
from review_loop.orchestrator.sessions.resume import read_only_resume as read_only_resume

if TYPE_CHECKING:
    from review_loop.adapters import Adapter

NOTE = (
    "Resume a session with the same product from its cwd (Claude looks sessions up per "
    "directory). Sessions under consult-sessions/ are advisory consults."
)
RUNTIME = f"{HANDOFF_DIR}/runtime"
"""Where the records are, relative to the repository: ``<branch>/<packet>/`` + SESSION_FILE."""


class Listed(NamedTuple):
    """One session ready for output."""

    session: StoredSession
    packet_id: str | None
    command: tuple[str, ...]
    status: str | None


def _records(repo: Path) -> list[Record]:
    """Every readable session record under ``.review-handoff/runtime/*/*/``.

    Read by :func:`files.read_found` (no link followed below ``.review-handoff/``, regular
    files only) and :func:`session_read.read_record` (ours by their exact JSON types, else
    the original tool's). Unreadable, non-JSON and foreign files are skipped, as the
    original tool does. A record git tracks came from the repository, not from this user's
    reviewer: it is skipped, so a committed record cannot put a program of its choosing in
    a resume command.
    """
    found = list(read_found(repo / RUNTIME, 2, SESSION_FILE))
    if not found:
        return []  # nothing to check: git is not asked
    committed = set(tracked_handoff_files(repo))
    records = []
    for relative, data in found:
        if committed and f"{RUNTIME}/{relative}" in committed:
            continue
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError):
            continue  # not JSON (or nested past what the parser takes)
        record = read_record(relative.rsplit("/", 1)[0], raw, str(repo))
        if record is not None:
            records.append(record)
    return records


def _read_head(path: Path, size: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def _store_sessions(adapter: Adapter, env: Mapping[str, str], repo: Path) -> list[StoredSession]:
    from review_loop.adapters import SessionFile

    home = Path(env.get("HOME") or Path.home())
    found: list[StoredSession] = []
    for store in adapter.session_stores(env, home, repo):
        if not store.root.is_dir():
            continue
        for path in store.root.glob(store.pattern):
            try:
                stat = path.stat()
                sidecars = {}
                for name in store.sidecars:
                    side = (path.parent / name).resolve()
                    if side.is_file():
                        sidecars[name] = side.read_bytes()
                file = SessionFile(
                    path=path,
                    head=_read_head(path, store.head_bytes),
                    mtime=stat.st_mtime,
                    sidecars=sidecars,
                )
                session = adapter.parse_session(file, repo)
            except (OSError, ValueError):
                continue  # unreadable files are skipped, never fatal
            if session is not None:
                found.append(session)
    return found


def list_sessions(
    repo: Path, product: str | None = None, env: Mapping[str, str] | None = None
) -> list[Listed]:
    """Sessions of ``repo`` (optionally one product's), newest first, one per session id."""
    env = os.environ if env is None else env
    products = [product] if product else list(product_names())
    best: dict[tuple[str, str], Listed] = {}

    def offer(item: Listed) -> None:
        if item.session.session_id.startswith("-"):
            # Quoted, it is still one word, but the CLI reads it as a flag (a record's
            # ``--dangerously-skip-permissions``) in every resume command printed, the
            # read-only ones too. No CLI issues such an id: skipped, from any source.
            return
        key = (item.session.product, item.session.session_id)
        current = best.get(key)
        if current is None:
            best[key] = item
            return
        # Keep our record's packet id and command, and the newest activity time.
        newest = max(current.session.updated, item.session.updated)
        keep = current if current.packet_id is not None else item
        best[key] = Listed(
            keep.session._replace(updated=newest),
            keep.packet_id,
            keep.command,
            keep.status,
        )

    def listed(record: Record, session_id: str) -> Listed:
        return Listed(
            StoredSession(
                product=record.product,
                session_id=session_id,
                cwd=record.cwd,
                updated=record.updated,
                source="review-loop",
            ),
            record.packet_id,
            record.command,
            record.status,
        )

    # A call that was not answered (not logged in, garbage output, timeout) may name a
    # session id that has no conversation behind it: its record is listed only when the
    # CLI's own store holds that session.
    unproven: list[tuple[Record, str]] = []
    for record in _records(repo):
        # a record of a product no adapter answers to is foreign (skipped): it has no
        # resume command, and must not make the whole listing fail
        if record.session_id is None or record.product not in products:
            continue
        if record.delivered:
            offer(listed(record, record.session_id))
        else:
            unproven.append((record, record.session_id))
    for name in products:
        adapter = get_adapter(name, field="--product")
        for session in _store_sessions(adapter, env, repo):
            offer(Listed(session, None, (adapter.default_executable,), None))
    for record, session_id in unproven:
        if (record.product, session_id) in best:
            offer(listed(record, session_id))
    return sorted(best.values(), key=lambda item: item.session.updated, reverse=True)


def session_document(item: Listed) -> dict[str, Any]:
    """One entry of ``sessions``' output, with resume commands.

    ``resume.interactive`` / ``resume.headless`` are the commands alone, as the original
    prints them (a client may split them into an argv); run them in ``cwd``. They carry
    none of the read-only flags review-loop ran the session with: ``resumeReadOnly``
    (:func:`read_only_resume`) does. ``resumeInShell`` and ``resumeReadOnlyInShell`` are
    copy-ready shell lines of each that change to ``cwd`` first.
    """
    session = item.session
    commands = get_adapter(session.product).resume_commands(session.session_id, item.command)
    interactive, headless = commands.interactive, commands.headless
    read_only = read_only_resume(session.product, commands)
    prefix = _change_to(session.cwd)
    return _Entry(
        {
            "packetId": item.packet_id,
            "product": session.product,
            "sessionId": session.session_id,
            "cwd": session.cwd,
            "updated": session.updated,
            "source": session.source,
            "title": session.title,
            "status": item.status,
            "resume": {"interactive": interactive, "headless": headless},
            "resumeInShell": {
                "interactive": _in_shell(prefix, interactive),
                "headless": _in_shell(prefix, headless),
            },
            "resumeReadOnly": read_only,
            "resumeReadOnlyInShell": {
                "interactive": _in_shell(prefix, read_only["interactive"]),
                "headless": _in_shell(prefix, read_only["headless"]),
            },
        }
    )


def _in_shell(prefix: str, command: str | None) -> str | None:
    """``command`` after ``prefix`` (the change to its ``cwd``); no command, no line."""
    return prefix + command if command else None


@functools.lru_cache(maxsize=64)
def _change_to(cwd: str | None) -> str:
    """``cd <cwd> && `` (nothing without a cwd): most sessions share one cwd, quoted once."""
    return f"cd {shlex.quote(cwd)} && " if cwd else ""


_COMMANDS = ("interactive", "headless")
_READ_ONLY = ("interactive", "headless", "unavailable")
_ENTRY = (
    "packetId",
    "product",
    "sessionId",
    "cwd",
    "updated",
    "source",
    "title",
    "status",
    "resume",
    "resumeInShell",
    "resumeReadOnly",
    "resumeReadOnlyInShell",
)
_SHAPES = (_COMMANDS, _COMMANDS, _READ_ONLY, _COMMANDS)


class _NotText(Exception):
    """A value the entry's template does not write (it writes strings and null)."""


def _text(value: Any) -> str:
    if type(value) is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    raise _NotText


class _Entry(Written):
    """One entry of ``sessions``' output (:func:`session_document`), written in one piece.

    ``sessions`` prints thousands of them: one formatted string per entry is about a third
    faster than walking each dict (``docs/performance.md``). The bytes are what
    ``json.dumps(indent=2)`` writes; anything but the entry's own keys and string or null
    values (a third-party adapter's title, say) is walked as any dict instead.
    """

    __slots__ = ()

    def text(self, newline: str) -> str | None:
        """The entry as pretty JSON indented at ``newline``; ``None`` if not of its shape."""
        nested: list[Any] = [self.get(key) for key in _ENTRY[8:]]
        shapes = tuple(tuple(value) if type(value) is dict else () for value in nested)
        if tuple(self) != _ENTRY or shapes != _SHAPES:
            return None
        try:
            return self._write(newline, *nested)
        except _NotText:
            return None

    def _write(
        self,
        newline: str,
        resume: dict[str, Any],
        shell: dict[str, Any],
        read_only: dict[str, Any],
        read_only_shell: dict[str, Any],
    ) -> str:
        a = newline + "  "
        b = a + "  "
        return (
            f'{{{a}"packetId": {_text(self["packetId"])},{a}"product": {_text(self["product"])}'
            f',{a}"sessionId": {_text(self["sessionId"])},{a}"cwd": {_text(self["cwd"])}'
            f',{a}"updated": {_text(self["updated"])},{a}"source": {_text(self["source"])}'
            f',{a}"title": {_text(self["title"])},{a}"status": {_text(self["status"])}'
            f',{a}"resume": {{{b}"interactive": {_text(resume["interactive"])}'
            f',{b}"headless": {_text(resume["headless"])}{a}}}'
            f',{a}"resumeInShell": {{{b}"interactive": {_text(shell["interactive"])}'
            f',{b}"headless": {_text(shell["headless"])}{a}}}'
            f',{a}"resumeReadOnly": {{{b}"interactive": {_text(read_only["interactive"])}'
            f',{b}"headless": {_text(read_only["headless"])}'
            f',{b}"unavailable": {_text(read_only["unavailable"])}{a}}}'
            f',{a}"resumeReadOnlyInShell": {{{b}"interactive": '
            f"{_text(read_only_shell['interactive'])}"
            f',{b}"headless": {_text(read_only_shell["headless"])}{a}}}{newline}}}'
        )
