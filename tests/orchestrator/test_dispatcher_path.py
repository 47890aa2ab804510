"""Contract and process tests of the dispatcher's work per session (docs/performance.md).

What each consult pays besides its CLI was cut without weakening a promise; these tests
hold each cut to the behaviour it stands for:

- ``PeerRequest`` keeps its documented behaviour (keyword-only, frozen, validated on
  construction and on ``dataclasses.replace``, equality, repr), and importing the
  dispatcher loads no ``uuid``;
- an entry of the index of unfinished records is a new name (a hard link), not a new file:
  making an inode cost more than an fsync on this machine's disk; where no link can be
  made it is an empty file of its own, and nothing is ever followed through a link;
- a record is still written as ``json.dumps(indent=2)`` writes it, byte for byte;
- the files the finish writes are made while the CLI runs (the finished record's next
  version beside its index entry, ``unfinished.make_ahead``; ``events.jsonl``), and the
  finished record and the event line are still on disk — fsynced, the record's directory
  after its rename — before the answer is returned; what was made ahead and not used is
  removed with the entry, also when the reaper drops a dead owner's entry; no descriptor
  stays open while the CLI runs.

Async tests run on asyncio and trio, with the fake CLIs through the real process layer;
``os.fsync`` and the makers are only observed (wrapped, still called): nothing else can
see when a file reached the disk.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from review_loop.agents.errors import InputError
from review_loop.orchestrator import dispatcher
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.handoff import files, recording, unfinished
from review_loop.orchestrator.handoff.files import HandoffPathError
from review_loop.prefs import Prefs
from tests.fakes import FakeCLIs
from tests.gitrepo import empty_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = empty_repo(tmp_path / "repo")
    (made / ".review-handoff" / "runtime").mkdir(parents=True)
    return made


# -- PeerRequest ----------------------------------------------------------------------------


def test_contract_peer_request_is_keyword_only_frozen_and_validated(tmp_path: Path) -> None:
    request = PeerRequest(peer="codex", prompt="Ship it?", record_dir=str(tmp_path))
    assert request.record_dir == tmp_path and isinstance(request.record_dir, Path)
    assert request.directory == tmp_path
    with pytest.raises(TypeError):
        PeerRequest("codex", "Ship it?")  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.peer = "claude"  # type: ignore[misc]
    with pytest.raises(InputError, match=r"PeerRequest\.timeout_ms"):
        dataclasses.replace(request, timeout_ms=0)  # replace validates as construction does
    with pytest.raises(InputError, match=r"PeerRequest\.peer"):
        PeerRequest(peer=" ", prompt="x")
    moved = dataclasses.replace(request, record_dir="elsewhere")
    assert moved.record_dir == Path("elsewhere") and moved.prompt == "Ship it?"


def test_contract_peer_request_compares_hashes_and_prints_its_fields(tmp_path: Path) -> None:
    one = PeerRequest(peer="codex", prompt="p", record_dir=tmp_path, fallback=("claude",))
    two = PeerRequest(peer="codex", prompt="p", record_dir=str(tmp_path), fallback=("claude",))
    assert one == two and hash(one) == hash(two)
    assert one != dataclasses.replace(one, isolate=True)
    assert repr(one) == (
        f"PeerRequest(peer='codex', prompt='p', record_dir={tmp_path!r}, "
        "resume_session_id=None, fallback=('claude',), avoid=(), timeout_ms=None, "
        "stop_files=(), isolate=False)"
    )
    assert [f.name for f in dataclasses.fields(PeerRequest)] == [
        "peer",
        "prompt",
        "record_dir",
        "resume_session_id",
        "fallback",
        "avoid",
        "timeout_ms",
        "stop_files",
        "isolate",
    ]


def test_process_importing_the_dispatcher_loads_no_uuid() -> None:
    probe = (
        "import sys\n"
        "import review_loop.orchestrator.dispatcher\n"
        "print(sorted({'uuid', 'tempfile'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True, text=True)
    assert "uuid" not in done.stdout  # imported where a record directory is named for a caller


# -- the index's entries ----------------------------------------------------------------------


def test_contract_an_index_entry_is_a_new_name_not_a_new_file(repo: Path) -> None:
    runtime = repo / ".review-handoff" / "runtime"
    for name in ("one", "two", "three"):
        assert unfinished.add(repo, runtime / "c" / name, 4242, 17.5)
    index = unfinished.index_dir(repo)
    linked = (index / unfinished.LINKED).stat()
    made = [entry.name for entry in unfinished.entries(repo)]
    assert len(made) == 3
    for name in made:
        info = os.lstat(index / name)
        assert (info.st_ino, info.st_size) == (linked.st_ino, 0)  # one inode for all
    assert linked.st_nlink == 4
    unfinished.remove(repo, runtime / "c" / "two", 4242, 17.5)
    assert sorted(e.second for e in unfinished.entries(repo)) == ["one", "three"]
    assert (index / unfinished.LINKED).stat().st_nlink == 3


def test_contract_make_name_makes_its_own_file_where_no_link_can_be_made(repo: Path) -> None:
    index = unfinished.index_dir(repo)
    (index / unfinished.LINKED).mkdir(parents=True)  # a directory cannot be linked to
    entry = index / "1-2.0-a%2Fb"
    files.make_name(entry, unfinished.LINKED)
    assert entry.is_file() and not entry.is_symlink() and entry.stat().st_size == 0
    files.make_name(entry, unfinished.LINKED)  # made already: left as it is
    assert entry.is_file()


def test_contract_make_name_follows_no_link(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("keep\n")
    index = unfinished.index_dir(repo)
    index.mkdir()
    planted = index / "9-1.0-a%2Fb"
    planted.symlink_to(victim)
    files.make_name(planted, unfinished.LINKED)  # exists (as a link): left, not followed
    assert planted.is_symlink() and victim.read_text() == "keep\n"
    (index / unfinished.LINKED).unlink()  # made on the way: plant a link in its place
    (index / unfinished.LINKED).symlink_to(victim)
    other = index / "9-1.0-a%2Fc"
    files.make_name(other, unfinished.LINKED)  # links the link itself, never its target
    assert other.is_symlink() and os.stat(victim).st_nlink == 1
    assert victim.read_text() == "keep\n"
    linked_dir = repo / ".review-handoff" / "elsewhere"
    linked_dir.symlink_to(outside, target_is_directory=True)
    with pytest.raises(HandoffPathError):
        files.make_name(linked_dir / "x", unfinished.LINKED)
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]


# -- records --------------------------------------------------------------------------------


def test_contract_a_record_is_json_dumps_indent_2_byte_for_byte(repo: Path) -> None:
    document = {
        "product": "codex",
        "sessionId": None,
        "status": "finished",
        "cwd": "/répo/☃",
        "command": ["codex", "--flag"],
        "ownerStart": 1796097709.31,
        "attempt": 1,
        "nested": {"empty": {}, "list": [], "flag": True},
    }
    path = repo / ".review-handoff" / "runtime" / "c" / "r" / "reviewer-session.json"
    files.atomic_write_json(path, document)
    expected = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    assert path.read_bytes() == expected.encode("utf-8")


def test_contract_missing_directories_are_still_made(tmp_path: Path) -> None:
    plain = tmp_path / "state" / "deep" / "probes.json"  # outside .review-handoff
    files.atomic_write_json(plain, {"a": 1})
    assert json.loads(plain.read_text()) == {"a": 1}
    guarded = tmp_path / "new-repo" / ".review-handoff" / "runtime" / "x" / "events.jsonl"
    files.append_line(guarded, {"b": 2})
    assert json.loads(guarded.read_text()) == {"b": 2}


# -- files made ahead ----------------------------------------------------------------------


def test_contract_a_file_made_ahead_becomes_the_record(repo: Path) -> None:
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    record = directory / "reviewer-session.json"
    files.atomic_write_json(record, {"status": "running"})
    assert unfinished.add(repo, directory, 77, 1.5)
    made = unfinished.make_ahead(repo, directory, 77, 1.5)
    assert made is not None and made.name.startswith(".") and unfinished.parse(made.name) is None
    inode = made.stat().st_ino
    files.atomic_write_json(record, {"status": "finished"}, made=made)
    assert record.stat().st_ino == inode and not made.exists()
    assert record.read_text() == json.dumps({"status": "finished"}, indent=2) + "\n"
    assert sorted(p.name for p in directory.iterdir()) == ["reviewer-session.json"]
    unused = unfinished.make_ahead(repo, directory, 77, 1.5)  # made, then not needed
    assert unused is not None and unused.exists()
    unfinished.remove(repo, directory, 77, 1.5)  # the record is finished: both go
    assert sorted(p.name for p in unfinished.index_dir(repo).iterdir()) == [unfinished.LINKED]


def test_contract_a_file_made_ahead_that_cannot_serve_is_not_used(
    repo: Path, tmp_path: Path
) -> None:
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    record = directory / "reviewer-session.json"
    made = unfinished.made_path(repo, directory, 77, 1.5)
    assert made is not None
    victim = tmp_path / "victim"
    victim.write_text("")
    made.parent.mkdir(parents=True)
    for planted in ("used", "link", "directory", "missing"):
        if planted == "used":
            made.write_text("not empty")
        elif planted == "link":
            made.symlink_to(victim)
        elif planted == "directory":
            made.mkdir()
        files.atomic_write_json(record, {"planted": planted}, made=made)
        assert json.loads(record.read_text()) == {"planted": planted}
        assert record.stat().st_nlink == 1 and not record.is_symlink()
        assert sorted(p.name for p in directory.iterdir()) == ["reviewer-session.json"]
        if made.is_dir() and not made.is_symlink():
            made.rmdir()
        elif planted != "missing":
            made.unlink()
    assert victim.read_text() == ""


def test_contract_a_dropped_entry_takes_what_was_made_ahead(repo: Path) -> None:
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    assert unfinished.add(repo, directory, 77, 1.5)
    made = unfinished.make_ahead(repo, directory, 77, 1.5)
    assert made is not None and made.exists()
    (entry,) = unfinished.entries(repo)
    unfinished.drop(repo, entry)  # the reaper, for a record whose owner died
    assert not made.exists()
    assert sorted(p.name for p in unfinished.index_dir(repo).iterdir()) == [unfinished.LINKED]


class Observed:
    """What reached the disk, in order: each fsync (a file's inode and bytes then; for a
    directory, its path and the record's bytes then), and the inodes made ahead."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, record: Path) -> None:
        self.record = record
        self.fsyncs: list[tuple[int | str, bytes]] = []
        self.made: list[int] = []
        self.open_while_running: list[list[str]] = []
        real_fsync, real_make_file = os.fsync, files.make_file

        def fsync(fd: int) -> None:
            real_fsync(fd)
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                seen = self.record.read_bytes() if self.record.exists() else b""
                self.fsyncs.append((os.readlink(f"/proc/self/fd/{fd}"), seen))
            else:  # opened for writing only: read through /proc
                self.fsyncs.append((info.st_ino, Path(f"/proc/self/fd/{fd}").read_bytes()))

        def make_file(path: Path) -> None:
            real_make_file(path)
            self.made.append(path.stat().st_ino)
            self.open_while_running.append(open_files_below(record.parents[3]))

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(files, "make_file", make_file)
        monkeypatch.setattr(unfinished, "make_file", make_file)
        monkeypatch.setattr(dispatcher, "make_file", make_file)


def open_files_below(directory: Path) -> list[str]:
    """This process's descriptors on a file below ``directory``."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            found.append(target)
    return found


@pytest.mark.anyio
async def test_collaboration_the_answer_is_on_disk_before_it_is_returned(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes.script(claude=[{"mode": "ok", "text": "looks right"}])
    directory = repo / ".review-handoff" / "runtime" / "t" / "claude"
    record, events = directory / "reviewer-session.json", directory / "events.jsonl"
    observed = Observed(monkeypatch, record)
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as opened:
        delivery = await opened.consult(
            PeerRequest(peer="claude", prompt="ok?", record_dir=directory)
        )
        synced = list(observed.fsyncs)  # as the answer is returned
    assert delivery.reply is not None and delivery.reply.text == "looks right"
    final, lines = record.read_bytes(), events.read_bytes()
    assert json.loads(final)["status"] == "finished"
    assert [json.loads(line)["event"] for line in lines.splitlines()] == ["attempt"]
    # the finished record's bytes were fsynced, then its directory once it was renamed...
    data_at = synced.index((record.stat().st_ino, final))
    assert (str(directory), final) in synced[data_at + 1 :]
    # ...and the event line, in events.jsonl itself
    assert (events.stat().st_ino, lines) in synced
    # both files were made while the CLI ran, not after it, and none was held open
    assert record.stat().st_ino in observed.made and events.stat().st_ino in observed.made
    assert observed.open_while_running == [[], []]
    assert sorted(p.name for p in directory.iterdir()) == ["events.jsonl", "reviewer-session.json"]
    assert sorted(p.name for p in unfinished.index_dir(repo).iterdir()) == [
        unfinished.LINKED,
        unfinished.STAMP,
    ]


# -- what is planted where a file is made ahead or written -----------------------------------


class Unblocker:
    """Frees a writer blocked on opening a FIFO: after a generous bound, each FIFO is
    opened for reading (kept open until :meth:`close`), and that it had to is noted. A
    write that waits on a planted FIFO would otherwise hang the test (and the event loop)."""

    def __init__(self, *fifos: Path, after_s: float = 10.0) -> None:
        import threading

        self.fifos = fifos
        self.readers: list[int] = []
        self.fired = False
        self._timer = threading.Timer(after_s, self._free)
        self._timer.start()

    def _free(self) -> None:
        self.fired = True
        for fifo in self.fifos:
            with contextlib.suppress(OSError):
                self.readers.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))

    def close(self) -> None:
        self._timer.cancel()
        for fd in self.readers:
            os.close(fd)


def test_contract_a_planted_fifo_is_never_waited_on(repo: Path) -> None:
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    record, events = directory / "reviewer-session.json", directory / "events.jsonl"
    made = unfinished.made_path(repo, directory, 77, 1.5)
    assert made is not None
    made.parent.mkdir(parents=True)
    directory.mkdir(parents=True)
    os.mkfifo(made)
    os.mkfifo(events)
    unblocker = Unblocker(made, events)
    try:
        with pytest.raises(OSError, match=re.escape(str(events))):
            files.make_file(events)  # what the dispatcher makes while the CLI runs
        assert unfinished.make_ahead(repo, directory, 77, 1.5) is None
        files.atomic_write_json(record, {"status": "finished"}, made=made)  # written as usual
        with pytest.raises(OSError, match=re.escape(str(events))):
            files.append_line(events, {"event": "attempt"})
        failed = recording.append_record(events, {"event": "attempt"})
        assert failed is not None and failed.path == str(events)
    finally:
        unblocker.close()
    assert not unblocker.fired
    assert json.loads(record.read_text()) == {"status": "finished"}
    assert stat.S_ISFIFO(os.lstat(made).st_mode) and stat.S_ISFIFO(os.lstat(events).st_mode)


def test_contract_a_record_rewritten_in_place_is_a_file_of_one_name(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The atomic write fails (a full disk, injected: nothing else makes it fail for root);
    # the in-place rewrite must not write into a file outside the repository through a
    # hard link planted as the record, nor wait on a FIFO planted there.
    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(recording, "atomic_write_json", full)
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    directory.mkdir(parents=True)
    record = directory / "reviewer-session.json"
    victim = tmp_path / "victim"
    victim.write_text("x" * 4096)
    os.link(victim, record)
    failed = recording.write_record(record, {"status": "finished"})
    assert failed is not None and failed.errno == "ENOSPC"
    assert victim.read_text() == "x" * 4096
    record.unlink()
    os.mkfifo(record)
    unblocker = Unblocker(record)
    try:
        assert recording.write_record(record, {"status": "finished"}) is not None
    finally:
        unblocker.close()
    assert not unblocker.fired
    record.unlink()
    record.write_text("y" * 4096)  # a file of its own: rewritten in place, as before
    assert recording.write_record(record, {"status": "finished"}) is None
    assert json.loads(record.read_text()) == {"status": "finished"}


def test_contract_an_event_line_is_not_appended_through_a_hard_link(
    repo: Path, tmp_path: Path
) -> None:
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    directory.mkdir(parents=True)
    events = directory / "events.jsonl"
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    os.link(victim, events)
    failed = recording.append_record(events, {"event": "attempt"})
    assert failed is not None and failed.path == str(events) and failed.errno == "EMLINK"
    assert victim.read_text() == "keep\n"
    events.unlink()
    assert recording.append_record(events, {"event": "attempt"}) is None
    assert json.loads(events.read_text()) == {"event": "attempt"}


def a_running_record_and_its_made_file(repo: Path) -> tuple[Path, Path]:
    """A record written ``running``, its entry, and the file made ahead beside it."""
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    record = directory / "reviewer-session.json"
    files.atomic_write_json(record, {"status": "running"})
    assert unfinished.add(repo, directory, 77, 1.5)
    made = unfinished.make_ahead(repo, directory, 77, 1.5)
    assert made is not None
    return record, made


def test_contract_a_file_swapped_in_for_the_made_one_does_not_become_the_record(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between the checks on the made file and its rename, another process puts a file of
    # its own in its place (a race: only a wrapper around the rename can hit it every time).
    record, made = a_running_record_and_its_made_file(repo)
    real_rename = os.rename

    def rename(src: str, dst: str, **kwargs: int) -> None:
        if src == made.name:
            made.unlink()
            made.write_text('{"status": "planted"}\n')
        real_rename(src, dst, **kwargs)

    monkeypatch.setattr(os, "rename", rename)
    files.atomic_write_json(record, {"status": "finished"}, made=made)
    assert json.loads(record.read_text()) == {"status": "finished"}
    assert record.stat().st_nlink == 1


def test_contract_an_end_between_the_two_removals_leaves_the_entry(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The entry is what finds the made file: removed last, an end between the two (the
    # process killed) leaves an entry the next reaper drops with the made file, never a
    # made file nothing names.
    directory = repo / ".review-handoff" / "runtime" / "c" / "r"
    assert unfinished.add(repo, directory, 77, 1.5)
    made = unfinished.make_ahead(repo, directory, 77, 1.5)
    assert made is not None
    real_unlink = files.unlink  # what unfinished removes with
    calls: list[Path] = []

    def unlink(path: Path, *, missing_ok: bool = False) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the end, between the two
        real_unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(unfinished, "unlink", unlink)
    with pytest.raises(KeyboardInterrupt):
        unfinished.remove(repo, directory, 77, 1.5)
    monkeypatch.setattr(unfinished, "unlink", real_unlink)
    (entry,) = unfinished.entries(repo)
    unfinished.drop(repo, entry)  # the reaper, once the owner is gone
    assert sorted(p.name for p in unfinished.index_dir(repo).iterdir()) == [unfinished.LINKED]


@pytest.mark.anyio
async def test_collaboration_fifos_planted_where_the_finish_writes_block_nothing(
    repo: Path, fakes: FakeCLIs
) -> None:
    # The made-ahead record and events.jsonl as FIFOs (the CLI under review can list the
    # index and plant them): the files made while the CLI runs are made in the event loop's
    # thread, so a blocking open there would stop the loop, deadline included.
    fakes.script(claude=[{"mode": "ok", "text": "looks right"}])
    directory = repo / ".review-handoff" / "runtime" / "t" / "claude"
    directory.mkdir(parents=True)
    record, events = directory / "reviewer-session.json", directory / "events.jsonl"
    pid = os.getpid()
    made = unfinished.made_path(repo, directory, pid, dispatcher._process_start(pid))
    assert made is not None
    made.parent.mkdir(parents=True)
    os.mkfifo(made)
    os.mkfifo(events)
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    unblocker = Unblocker(made, events)
    try:
        async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as opened:
            delivery = await opened.consult(
                PeerRequest(peer="claude", prompt="ok?", record_dir=directory)
            )
    finally:
        unblocker.close()
    assert not unblocker.fired
    assert delivery.reply is not None and delivery.reply.text == "looks right"
    assert json.loads(record.read_bytes())["status"] == "finished"
    assert delivery.recordError is not None and delivery.recordError.path == str(events)


def test_contract_make_name_never_opens_a_file_planted_while_it_makes_one(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``.entry`` is missing when the link is tried, and a FIFO is planted before it is made
    # (a race: only a wrapper around the link can hit it every time): it is linked, as any
    # file there, never opened and waited on.
    index = unfinished.index_dir(repo)
    index.mkdir()
    real_link = os.link
    planted: list[bool] = []

    def link(src: str, dst: str, **kwargs: object) -> None:
        if not planted:
            planted.append(True)
            os.mkfifo(index / unfinished.LINKED)
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), src)
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link)
    entry = index / "1-2.0-a%2Fb"
    unblocker = Unblocker(index / unfinished.LINKED)
    try:
        files.make_name(entry, unfinished.LINKED)
    finally:
        unblocker.close()
    assert not unblocker.fired
    assert os.lstat(entry).st_ino == os.lstat(index / unfinished.LINKED).st_ino


@pytest.mark.anyio
async def test_collaboration_a_cancelled_session_leaves_nothing_made_ahead(
    repo: Path, fakes: FakeCLIs
) -> None:
    # Cancelled once its files are made: the task that made them ends with the session
    # (no ExceptionGroup reaches the caller's scope), the record is finished interrupted
    # through the made file, and the made file goes with the entry.
    fakes.script(claude=[{"mode": "hang"}])
    directory = repo / ".review-handoff" / "runtime" / "t" / "claude"
    record = directory / "reviewer-session.json"
    pid = os.getpid()
    made = unfinished.made_path(repo, directory, pid, dispatcher._process_start(pid))
    assert made is not None
    prefs = Prefs.validate({"timeoutMs": 60_000, "graceMs": 300, "livenessMs": 60_000})
    request = PeerRequest(peer="claude", prompt="ok?", record_dir=directory)
    inodes: list[int] = []
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as opened:
        with anyio.fail_after(30):  # generous: catches a hang only
            async with anyio.create_task_group() as group:
                group.start_soon(opened.consult, request)
                while not (made.exists() and (directory / "events.jsonl").exists()):
                    await anyio.sleep(0.01)
                inodes.append(made.stat().st_ino)
                group.cancel_scope.cancel()
        delivery = opened.outcome_of(request)
    assert delivery.interrupted and delivery.attempts[0].state.value == "DELIVERY_UNKNOWN"
    assert json.loads(record.read_bytes())["status"] == "interrupted"
    assert record.stat().st_ino == inodes[0]  # the made file became the record
    assert sorted(p.name for p in unfinished.index_dir(repo).iterdir()) == [
        unfinished.LINKED,
        unfinished.STAMP,
    ]


def test_contract_a_link_swapped_in_on_the_made_files_way_only_leaves_it_unused(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the made file was opened and checked, the index directory becomes a link (a
    # race: only a wrapper around the check can hit it every time). The made file is then
    # not used; the record is written as usual, not refused for a link on another path.
    record, made = a_running_record_and_its_made_file(repo)
    index = unfinished.index_dir(repo)
    real_fresh = files._fresh

    def fresh(info: os.stat_result) -> bool:
        index.rename(index.with_name("moved"))
        index.symlink_to(index.with_name("moved"), target_is_directory=True)
        return real_fresh(info)

    monkeypatch.setattr(files, "_fresh", fresh)
    files.atomic_write_json(record, {"status": "finished"}, made=made)
    assert json.loads(record.read_text()) == {"status": "finished"}
    left = index.with_name("moved") / made.name
    assert left.stat().st_ino != record.stat().st_ino  # not used: left for its maker


@pytest.mark.anyio
async def test_collaboration_nothing_is_made_ahead_for_a_record_without_an_entry(
    repo: Path, fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The entry cannot be made (no inode free, injected: root cannot be refused one), so
    # the stamp goes and the next reaper scans every record. A file made ahead then would
    # have no entry to be found and removed by after a crash: none is made.
    def no_inode(path: Path, like: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(unfinished, "make_name", no_inode)
    fakes.script(claude=[{"mode": "ok", "delay": 1.0, "text": "looks right"}])
    directory = repo / ".review-handoff" / "runtime" / "t" / "claude"
    pid = os.getpid()
    made = unfinished.made_path(repo, directory, pid, dispatcher._process_start(pid))
    assert made is not None
    seen: list[bool] = []
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as opened:
        with anyio.fail_after(30):  # generous: catches a hang only
            async with anyio.create_task_group() as group:

                async def ask() -> None:
                    delivery = await opened.consult(
                        PeerRequest(peer="claude", prompt="ok?", record_dir=directory)
                    )
                    assert delivery.reply is not None
                    group.cancel_scope.cancel()

                group.start_soon(ask)
                while True:  # while the CLI runs, once events.jsonl (made after) exists
                    if (directory / "events.jsonl").exists():
                        seen.append(made.exists())
                        break
                    await anyio.sleep(0.005)
    assert seen == [False]
    assert json.loads((directory / "reviewer-session.json").read_bytes())["status"] == "finished"
