"""The review run's files: packets, the per-packet lock, the run state.

Layout (``docs/origins.md`` §3.3), under ``<repo>/.review-handoff/``::

    active/<branchSlug>/<YYYY-MM-DD_HH-MM>-<scope>[-NN].md      the packet (created with O_EXCL)
    archive/<branchSlug>/<same name>                            after PASS / close
    runtime/<branchSlug>/<packetBase>/
        auto-run-state.json      atomic (temp file + rename)
        reviewer-session.json    written by the dispatcher
        evidence/round-N.diff    the frozen evidence of round N
        answers/round-N*.md      the reviewer's raw answers (audit)
        STOP                     per-packet stop file
        .auto-run.lock/owner     "<token>\\n<pid>\\n" then "start|ticks|boot|since <value>" lines
        events.jsonl

Trust (``docs/authenticated-state.md``): ``auto-run-state.json`` carries a MAC made with
the per-user secret (:mod:`review_loop.orchestrator.handoff.state_auth`, purpose
:data:`STATE_PURPOSE`), and it pins the packet's sha256 (``packetHash``). A packet is
believed only through an authenticated state; a state without a valid MAC (committed,
copied, forged) is never read as a verdict or a round: it is reported
(:func:`review_loop.orchestrator.handoff.trust.note_untrusted`) and the review runs again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import secrets
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from review_loop.agents.errors import InputError, ReviewLoopError, StateError
from review_loop.agents.review import Finding, Ledger, branch_slug, legacy_branch_slug
from review_loop.agents.review_packet import PACKET_NAME_RE, h1_sections, split_packet
from review_loop.orchestrator.handoff import state_auth
from review_loop.orchestrator.handoff.files import (
    HandoffPathError,
    atomic_write_json,
    iso_utc,
    make_dir_exclusive,
    make_dirs,
    open_fd,
    read_bytes,
    refuse_link_at,
    refuse_links,
    remove_tree,
    unlink,
)
from review_loop.orchestrator.handoff.trust import note_repo, note_untrusted
from review_loop.orchestrator.process import procfs

HANDOFF = ".review-handoff"
STATE_FILE = "auto-run-state.json"
LOCK_DIR = ".auto-run.lock"
LOCK_GRACE_S = 2.0
CREATE_RETRIES = 20
# The MAC purpose of a run state: a MAC made for another kind of document never matches.
STATE_PURPOSE = "review-loop/review-run-state/v1"
_FIRST_ANCHORS = ("review_handoff", "review_intake")


def sha256_bytes(data: bytes) -> str:
    """Hex sha256."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class PacketRef:
    """Where one packet lives."""

    repo: Path
    slug: str
    base: str
    archived: bool

    @property
    def packet_id(self) -> str:
        """``<slug>/<base>``."""
        return f"{self.slug}/{self.base}"

    @property
    def path(self) -> Path:
        """The packet file."""
        return (
            self.repo
            / HANDOFF
            / ("archive" if self.archived else "active")
            / self.slug
            / (self.base + ".md")
        )

    @property
    def archive_path(self) -> Path:
        """Where the packet goes when archived."""
        return self.repo / HANDOFF / "archive" / self.slug / (self.base + ".md")

    @property
    def runtime(self) -> Path:
        """The packet's runtime directory."""
        return self.repo / HANDOFF / "runtime" / self.slug / self.base


def active_dir(repo: Path, slug: str) -> Path:
    """``active/<slug>``."""
    return repo / HANDOFF / "active" / slug


def create_packet(repo: Path, slug: str, scope: str, render: Any) -> PacketRef:
    """Create a new packet exclusively; ``render(packet_id)`` gives its text.

    The name is the local time to the minute and the scope; a taken name gets ``-02`` …
    (up to 20 tries). A name is also taken when an archived packet or a runtime directory
    has it: a new packet never shares (or, once archived, replaces) another's record.
    """
    folder = active_dir(repo, slug)
    make_dirs(folder)
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M")
    for attempt in range(CREATE_RETRIES):
        base = f"{stamp}-{scope}" + (f"-{attempt + 1:02d}" if attempt else "")
        path = folder / f"{base}.md"
        taken = PacketRef(repo, slug, base, archived=True)
        if os.path.lexists(taken.path) or os.path.lexists(taken.runtime):
            continue
        try:
            fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(render(f"{slug}/{base}").encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:  # disk full: no half-written packet, and name the file
            with suppress(OSError):
                unlink(path, missing_ok=True)
            raise _named(error, path) from None
        return PacketRef(repo, slug, base, archived=False)
    raise StateError("PACKET_CREATE_FAILED", f"{CREATE_RETRIES} packet names under {folder} taken")


def packets_newest_first(repo: Path, slug: str, *, archived: bool) -> list[PacketRef]:
    """Every packet of the branch (active or archived), newest (by name, then mtime) first."""
    folder = repo / HANDOFF / ("archive" if archived else "active") / slug
    if not folder.is_dir():
        return []
    found = sorted(
        (path.name, path.lstat().st_mtime, path.stem)
        for path in folder.glob("*.md")
        if PACKET_NAME_RE.match(path.name)
    )
    return [PacketRef(repo, slug, stem, archived=archived) for _, _, stem in reversed(found)]


def latest_trusted_packet(repo: Path, slug: str, *, archived: bool) -> tuple[PacketRef | None, int]:
    """The newest packet whose record is authenticated, and how many newer ones were not.

    Every packet passed over is reported with :func:`note_untrusted` (a committed or forged
    packet never hides, or stands in for, the user's own).
    """
    skipped = 0
    for ref in packets_newest_first(repo, slug, archived=archived):
        problem = packet_problem(ref)
        if problem is None:
            return ref, skipped
        note_untrusted(*problem)
        skipped += 1
    return None, skipped


def resolve_packet_arg(repo: Path, slugs: tuple[str, ...], value: str) -> PacketRef:
    """A ``--packet`` value: a path, a packet id (``<slug>/<base>``) or a bare base name.

    Raises:
        InputError: the packet is outside ``.review-handoff/{active,archive}/<slug>/``,
            is not named like a packet, or does not exist.
    """
    candidate = Path(value)
    if not candidate.is_absolute() and not candidate.exists():
        for kind in ("active", "archive"):
            for slug in slugs:
                base = value.split("/")[-1].removesuffix(".md")
                probe = repo / HANDOFF / kind / slug / f"{base}.md"
                if probe.exists() and (value.count("/") == 0 or value.split("/")[0] == slug):
                    candidate = probe
                    break
            else:
                continue
            break
    given = candidate if candidate.is_absolute() else Path.cwd() / candidate
    refuse_link_at(given)  # a packet reached through a link is named as such
    path = given.resolve()
    if not path.is_file():
        raise InputError("--packet", f"no such packet: {value!r}", "a packet path or packet id")
    root = (repo / HANDOFF).resolve()
    try:
        kind, slug, name = path.relative_to(root).parts
    except ValueError:
        raise InputError(
            "--packet",
            f"{value!r} is not a packet of this branch",
            f"a file under {root}/active/<branch-slug>/",
        ) from None
    if kind not in ("active", "archive") or slug not in slugs:
        raise InputError(
            "--packet",
            f"{value!r} is not a packet of this branch",
            f"a file under {root}/active/{slugs[0]}/",
        )
    if not PACKET_NAME_RE.match(name):
        raise InputError(
            "--packet", f"{name!r} is not a packet name", "YYYY-MM-DD_HH-MM-<scope>[-NN].md"
        )
    return PacketRef(repo, slug, name.removesuffix(".md"), archived=kind == "archive")


def branch_slugs(identity: str) -> tuple[str, ...]:
    """The v2 slug, then the legacy slug still read."""
    slugs = [branch_slug(identity)]
    if not identity.startswith("detached:"):
        legacy = legacy_branch_slug(identity)
        if legacy not in slugs:
            slugs.append(legacy)
    return tuple(slugs)


def read_packet(ref: PacketRef, identity: str) -> tuple[bytes, dict[str, str], str]:
    """The packet's bytes, frontmatter and body, validated for this branch.

    Raises:
        InputError: the frontmatter's ``branch`` is not the current branch identity, or
            the packet is a classic (manual-mode) packet.
    """
    data = read_bytes(ref.path)
    try:
        meta, body = split_packet(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise InputError("--packet", f"{ref.path} is not a packet: {error}") from None
    if meta.get("branch") != identity:
        raise InputError(
            "--packet",
            f"the packet belongs to branch {meta.get('branch')!r}, not {identity!r}",
            "a packet of the checked-out branch",
        )
    if meta.get("mode") == "classic":
        raise InputError("--packet", "a classic (manual) packet cannot run in auto mode")
    return data, meta, body


# -- lock ---------------------------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    # A process that exists but cannot be read (psutil's AccessDenied) holds its lock.
    return procfs.status(pid) not in (None, procfs.ZOMBIE)


@dataclass(frozen=True)
class LockOwner:
    """What a lock's ``owner`` file says about the process that took it.

    The first two lines are the token and the pid (all an old lock holds, and all an older
    review-loop reads); ``key value`` lines follow. Read from the repository, so nothing
    here is believed but what the process table confirms.

    Attributes:
        token: the holder's token (it releases only a lock holding its own).
        pid: the holder's pid (0 when unreadable).
        start: its start as ``procfs.start_time`` (the reaper's ``procStart``), seconds.
        ticks: its start in clock ticks since boot (``procfs.start_ticks``): what proves it,
            whatever the wall clock did since.
        boot: the boot id when it took the lock (Linux).
        since: when it took the lock (ISO-8601 UTC).
    """

    token: str
    pid: int
    start: float | None = None
    ticks: float | None = None
    boot: str | None = None
    since: str | None = None

    @classmethod
    def mine(cls, token: str) -> LockOwner:
        """This process, now."""
        from review_loop.orchestrator.handoff.files import utc_now
        from review_loop.orchestrator.handoff.unfinished import boot_id

        pid = os.getpid()
        return cls(
            token, pid, procfs.start_time(pid), procfs.start_ticks(pid), boot_id(), utc_now()
        )

    def text(self) -> str:
        """The ``owner`` file's text."""
        lines = [self.token, str(self.pid)]
        for key in ("start", "ticks", "boot", "since"):
            value = getattr(self, key)
            if value is not None:
                lines.append(f"{key} {value!r}" if isinstance(value, float) else f"{key} {value}")
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str) -> LockOwner:
        """An ``owner`` file's text, old (token and pid) or new; what is malformed is left
        out (``None``), never guessed."""
        lines = text.splitlines()
        try:
            pid = int(lines[1]) if len(lines) > 1 else 0
        except ValueError:
            pid = 0
        values = dict(line.partition(" ")[::2] for line in lines[2:])
        since = values.get("since", "")
        return cls(
            lines[0] if lines else "",
            pid,
            _number(values.get("start")),
            _number(values.get("ticks")),
            values.get("boot") if _BOOT_RE.fullmatch(values.get("boot", "")) else None,
            since if _SINCE_RE.fullmatch(since) else None,
        )


_BOOT_RE = re.compile(r"[0-9a-f-]{1,64}")
_SINCE_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
LOCK_REUSE_SLACK_S = 1.0
"""An old lock (pid only) is stale when its pid's process started this much later than
the lock was written (``/proc/stat``'s boot time is in whole seconds)."""


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def owner_gone(owner: LockOwner, written: float | None) -> str | None:
    """Why the lock's owner is proven gone, or ``None`` while it may still hold the lock.

    Gone: its pid runs no process (or a zombie); the lock was taken in another boot; the
    pid's process has another start than the owner's (the pid was reused). An old lock
    (no start recorded) is gone when the pid's process started after the lock's ``owner``
    file was written (``written``, its mtime): that process cannot have written it.
    A process that exists but cannot be read is never judged gone.
    """
    if not _pid_alive(owner.pid):
        return f"pid {owner.pid} is not running"
    from review_loop.orchestrator.handoff.unfinished import boot_id

    current_boot = boot_id()
    if owner.boot is not None and current_boot is not None and owner.boot != current_boot:
        return f"the lock was taken before the machine restarted (boot {owner.boot})"
    if owner.ticks is not None:
        ticks = procfs.start_ticks(owner.pid)
        if ticks is not None and ticks != owner.ticks:
            return f"pid {owner.pid} now belongs to another process (another start time)"
        return None
    started = procfs.start_time(owner.pid)
    if started is not None and written is not None and started > written + LOCK_REUSE_SLACK_S:
        return f"pid {owner.pid} belongs to a process started after the lock was taken"
    return None


def _publish(lock: Path, token: str) -> None:
    make_dir_exclusive(lock)
    owner = lock / "owner"
    try:
        fd = open_fd(owner, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(LockOwner.mine(token).text())
    except OSError as error:
        # Disk full: a lock without its owner would hold the packet; take it back.
        remove_tree(lock)
        raise _named(error, owner) from None


def _named(error: OSError, path: Path) -> OSError:
    """``error`` naming ``path`` (a failed ``write`` alone names no file)."""
    if isinstance(error, HandoffPathError) or error.filename is not None:
        return error
    return type(error)(error.errno, os.strerror(error.errno or 0), str(path))


def _held(message: str, lock: Path | None = None) -> StateError:
    hint = None
    if lock is not None:
        hint = (
            "another review-loop command is working on this packet: wait for it to finish, "
            "or stop it. If the process named is not review-loop on this packet (a lock "
            "copied or planted), remove the lock: rm -r " + shlex.quote(str(lock))
        )
    return StateError("PACKET_LOCK_HELD", message, hint)


def _held_by(owner: LockOwner, lock: Path) -> StateError:
    """The refusal naming who holds ``lock``: pid, start, since when, command line."""
    details = []
    started = procfs.start_time(owner.pid)
    if started is not None:
        details.append(f"started {iso_utc(int(started * 1e9))}")
    if owner.since is not None:
        details.append(f"holding it since {owner.since}")
    command = _command_line(owner.pid)
    if command:
        details.append(f"command: {command}")
    said = f" ({'; '.join(details)})" if details else ""
    return _held(f"packet lock held by pid {owner.pid}{said}", lock)


def _command_line(pid: int) -> str:
    """``pid``'s command line, shortened, or ``""`` (no ``/proc``, unreadable, gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(4096)
    except OSError:
        return ""
    words = [word.decode("utf-8", "replace") for word in raw.split(b"\0") if word]
    text = shlex.join(words)
    return text if len(text) <= 200 else text[:199] + "…"


def _reclaim(runtime: Path, lock: Path, token: str) -> None:
    """Take over ``lock`` if its owner is gone (:func:`owner_gone`); else raise
    ``PACKET_LOCK_HELD`` naming the holder, with a ``hint`` saying how to clear it.

    Reclaimers take turns under an flock on a sibling file, so two of them can never both
    judge the same stale lock and one remove the other's fresh one. A holder never needs
    that flock: a live owner's lock is never judged stale.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND
    with os.fdopen(open_fd(runtime / f"{LOCK_DIR}.reclaim", flags), "a+") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            owner = read_bytes(lock / "owner").decode("utf-8", "replace")
            written: float | None = (lock / "owner").stat().st_mtime
        except (FileNotFoundError, NotADirectoryError):
            owner, written = "", None
        stale = True
        if not owner.strip():
            try:
                age = time.time() - lock.stat().st_mtime
            except FileNotFoundError:
                # Released meanwhile: there is nothing stale to remove. Removing the path
                # now could remove a fresh lock a publisher (who takes no flock) has just
                # made, and two processes would hold the packet.
                stale = False
            else:
                if age < LOCK_GRACE_S:
                    raise _held("packet lock held (owner not published yet)")
        else:
            holder = LockOwner.parse(owner)
            gone = owner_gone(holder, written)
            if gone is None:
                raise _held_by(holder, lock)
            from review_loop.orchestrator.log import log_event

            log_event("packet lock taken over", lock=str(lock), why=gone)
        if stale:
            remove_tree(lock)
        try:
            _publish(lock, token)
        except FileExistsError:
            raise _held("packet lock taken by another process while reclaiming it") from None


@contextmanager
def packet_lock(runtime: Path) -> Iterator[str]:
    """Hold ``runtime/.auto-run.lock`` for the block; yields the owner token.

    An existing lock is reclaimed only when its owner is proven gone (:func:`owner_gone`:
    its pid dead, another boot, or the pid now another process's, by start time), or when
    its owner file is missing or empty and the lock is older than 2 s (a crash between
    mkdir and write). ``docs/process-ownership.md`` ("The packet lock").

    Raises:
        StateError: ``PACKET_LOCK_HELD`` — another live process holds the lock.
    """
    make_dirs(runtime)
    refuse_links(runtime)  # before the first write of the command, not at the one that meets it
    lock = runtime / LOCK_DIR
    token = f"{os.getpid()}-{time.time_ns()}-{secrets.token_hex(4)}"
    try:
        _publish(lock, token)
    except FileExistsError:
        taken = True
    else:
        taken = False
    if taken:
        _reclaim(runtime, lock, token)
    try:
        yield token
    finally:
        try:
            current = read_bytes(lock / "owner").decode("utf-8")
        except (OSError, ValueError):
            current = ""
        if current.startswith(token + "\n"):
            remove_tree(lock)


# -- state --------------------------------------------------------------------------------


class StateRecoveryRequiredError(ReviewLoopError):
    """The state file exists but cannot be read as the tool wrote it."""


class RunState(BaseModel):
    """The keys of ``auto-run-state.json`` whose type the run relies on.

    Only checks shapes (the file keeps its other keys: ``evidenceRound<N>``, ...); a signed
    state that fails it is reported naming the file and the key.
    """

    model_config = ConfigDict(extra="allow")

    round: StrictInt = Field(default=0, ge=0)
    # any number from 1, as the original's --rounds (Number(): 1.5 is a budget)
    roundsBudget: StrictInt | StrictFloat | None = Field(default=None, ge=1)
    packetHash: StrictStr | None = None
    roundStartPacketHash: StrictStr | None = None
    baseSha: StrictStr | None = None
    reviewer: StrictStr | None = None
    completion: StrictStr | None = None
    lastVerdict: StrictStr | None = None
    lifecycleState: StrictStr | None = None
    paths: list[StrictStr] | None = None
    pathFilter: list[StrictStr] | None = None
    findingIds: list[StrictStr] | None = None
    findingCatalog: dict[StrictStr, dict[str, Any]] | None = None
    openBlocking: list[StrictStr] | None = None
    openConcerns: list[StrictStr] | None = None
    evidence: dict[str, Any] | None = None
    pendingStage: dict[str, Any] | None = None


def state_shape_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with the state's keys (``key 'round': ...``), or ``None``."""
    try:
        RunState.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        key = str(first["loc"][0])  # the state's own key (a union adds its member's name)
        return f"key {key!r}: {first['msg']} (found {first.get('input')!r})"
    for key, value in data.items():
        if key.startswith("evidenceDigest") and not isinstance(value, str):
            return f"key {key!r}: not a sha256 string (found {value!r})"
        if key.startswith("evidenceRound") and not isinstance(value, dict):
            return f"key {key!r}: not an evidence object (found {value!r})"
    return None


def read_state(runtime: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(state, problem)``: the authenticated state, or why the file is not believed.

    ``(None, None)`` when there is no state yet. A file that is not JSON or has no valid
    MAC gives ``(None, reason)``: it is untrusted, never an error.

    Raises:
        StateRecoveryRequiredError: the file cannot be read, or a state this user's
            review-loop signed has a key of the wrong type (names the file and the key).
    """
    path = runtime / STATE_FILE
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        return None, None
    except HandoffPathError:
        raise  # a link is refused as such, not as a recoverable state
    except OSError as error:
        raise StateRecoveryRequiredError(f"{path} is unreadable: {error}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return None, f"not JSON ({error}); no valid MAC"
    if not isinstance(data, dict):
        return None, "not a JSON object; no valid MAC"
    shape = state_shape_problem(data)
    if not state_auth.verify(STATE_PURPOSE, data):
        return None, "no valid MAC" + (f"; {shape}" if shape else "")
    if shape:
        raise StateRecoveryRequiredError(f"{path}: {shape}")
    return data, None


def load_state(runtime: Path) -> dict[str, Any] | None:
    """The authenticated ``auto-run-state.json``, or ``None`` (none yet, or untrusted).

    An untrusted file is reported (:func:`note_untrusted`) and treated as absent.

    Raises:
        StateRecoveryRequiredError: see :func:`read_state`.
    """
    note_repo(runtime.parents[3])
    state, problem = read_state(runtime)
    if problem is not None:
        note_untrusted(runtime / STATE_FILE, problem)
    return state


def packet_problem(ref: PacketRef) -> tuple[Path, str] | None:
    """``(path, reason)`` when the packet's review record cannot be believed, else ``None``.

    Believed: a packet with an authenticated run state (an archived one must also be
    byte for byte the packet that state pins), and an active packet that has no state and
    no review stage yet (its first round is a real review either way). Everything else —
    a state without a valid MAC, review stages or an archive without one — is untrusted.
    """
    note_repo(ref.repo)
    state_path = ref.runtime / STATE_FILE
    try:
        state, problem = read_state(ref.runtime)
    except StateRecoveryRequiredError:
        return None  # authenticated but damaged: the run fails closed on it, naming the key
    if problem is not None:
        return state_path, problem
    try:
        data = read_bytes(ref.path)
    except OSError as error:
        if ref.archived:  # an archive is believed only byte for byte
            return ref.path, f"the archived packet cannot be read ({error})"
        return None  # gone or unreadable: reading it reports that
    if state is not None:
        if ref.archived and state.get("packetHash") != sha256_bytes(data):
            return ref.path, "the archived packet is not the one its run state authenticates"
        return None
    if ref.archived:
        return ref.path, "an archived packet without a run state with a valid MAC"
    try:
        meta, body = split_packet(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None  # not a packet: reading it reports that
    staged = any(anchor not in _FIRST_ANCHORS for anchor, _ in h1_sections(body))
    if staged or meta.get("lifecycle_state") == "archived":
        return ref.path, "review stages without a run state with a valid MAC"
    return None


def authenticated_archives(
    repo: Path, slugs: tuple[str, ...]
) -> list[tuple[PacketRef, dict[str, Any]]]:
    """The archived packets of the branch with an authenticated state, newest first.

    The untrusted ones are reported and skipped.
    """
    found: list[tuple[PacketRef, dict[str, Any]]] = []
    for slug in slugs:
        for ref in packets_newest_first(repo, slug, archived=True):
            problem = packet_problem(ref)
            if problem is not None:
                note_untrusted(*problem)
                continue
            try:
                state, _ = read_state(ref.runtime)
            except StateRecoveryRequiredError as error:
                note_untrusted(ref.runtime / STATE_FILE, str(error))
                continue
            if state is not None:
                found.append((ref, state))
    return found


def save_state(runtime: Path, state: dict[str, Any]) -> None:
    """Sign the state (``mac``) and write it atomically (temp file + rename)."""
    atomic_write_json(runtime / STATE_FILE, state_auth.sign(STATE_PURPOSE, state))


def ledger_from_state(state: dict[str, Any]) -> Ledger | None:
    """The ledger kept in the state, or ``None`` when it is incomplete."""
    ids = state.get("findingIds")
    catalog = state.get("findingCatalog")
    if not isinstance(ids, list) or not isinstance(catalog, dict):
        return None
    if any(i not in catalog for i in ids):
        return None
    status_map = state.get("findingStatus")
    open_ids = set(state.get("openBlocking") or []) | set(state.get("openConcerns") or [])
    findings: dict[str, Finding] = {}
    status: dict[str, Any] = {}
    try:
        for fid in ids:
            entry = catalog[fid]
            findings[fid] = Finding(id=fid, **{k: v for k, v in entry.items() if k != "id"})
            if isinstance(status_map, dict) and fid in status_map:
                status[fid] = status_map[fid]
            else:
                status[fid] = "open" if fid in open_ids else "resolved"
        return Ledger(catalog=findings, status=status)
    except (TypeError, ValueError):
        return None


def ledger_to_state(ledger: Ledger) -> dict[str, Any]:
    """The ledger keys of the state."""
    return {
        "findingIds": ledger.finding_ids,
        "findingCatalog": {
            fid: f.model_dump(mode="json", exclude={"id"}) for fid, f in ledger.catalog.items()
        },
        "findingStatus": dict(ledger.status),
        "openBlocking": ledger.open_blocking,
        "openConcerns": ledger.open_concerns,
    }
