"""Contract and collaboration tests: nothing under ``.review-handoff/`` goes through a link.

Contract: every file primitive (:mod:`review_loop.orchestrator.handoff.files`) refuses a symbolic
link at any depth from ``.review-handoff`` down — the directory itself, a directory below
it, the file — with :class:`HandoffPathError` naming the path and the link, and writes
nothing outside (a snapshot of the outside directory is compared before and after).
Collaboration: the git exclude entry, the process layer's spill file, the reaper's reads and
the dispatcher's session records, through the real code paths (the dispatcher on asyncio
and trio, with fake CLIs).
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.errors import InputError, StateError
from review_loop.orchestrator.handoff import files
from review_loop.orchestrator.handoff.files import HandoffPathError
from tests.fakes import FakeCLIs
from tests.gitrepo import empty_repo


def snapshot(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry below ``root``: its kind and (for files) its bytes, links not followed."""
    found: dict[str, tuple[str, bytes]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path).encode())
        elif path.is_dir():
            found[rel] = ("dir", b"")
        else:
            found[rel] = ("file", path.read_bytes())
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the repository with one victim file in it."""
    out = tmp_path / "outside"
    (out / "runtime").mkdir(parents=True)
    (out / "victim.txt").write_text("victim original content\n")
    return out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return empty_repo(tmp_path / "repo")


HANDOFF = ".review-handoff"

# Each primitive, called on a path under .review-handoff/runtime/<dir>/<name>.
PRIMITIVES: dict[str, Callable[[Path], Any]] = {
    "atomic_write_bytes": lambda p: files.atomic_write_bytes(p, b"data"),
    "atomic_write_json": lambda p: files.atomic_write_json(p, {"a": 1}),
    "append_line": lambda p: files.append_line(p, {"event": "x"}),
    "append_bytes": lambda p: files.append_bytes(p, b"line\n"),
    "open_fd_create": lambda p: os.close(files.open_fd(p, os.O_WRONLY | os.O_CREAT)),
    "create_exclusive": lambda p: os.close(files.open_fd(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    "make_dirs": files.make_dirs,
    "make_dir_exclusive": files.make_dir_exclusive,
    "make_temp_file": lambda p: os.close(files.make_temp_file(p, "stdout-", ".spill")[0]),
    "read_bytes": files.read_bytes,
    "rename_into": lambda p: files.rename(p.parents[3] / "src.txt", p),
    "unlink": files.unlink,
    "remove_tree": files.remove_tree,
    "refuse_links": files.refuse_links,
}


def _plant(repo: Path, outside: Path, where: str) -> Path:
    """Plant a link at ``where`` (relative to the repo) to ``outside``; returns the link."""
    link = repo / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    return link


# -- contract: every primitive, a link at every depth ------------------------------------


@pytest.mark.parametrize("primitive", sorted(PRIMITIVES))
@pytest.mark.parametrize(
    "where", [HANDOFF, f"{HANDOFF}/runtime", f"{HANDOFF}/runtime/packet"], ids=["top", "dir", "sub"]
)
def test_a_linked_directory_is_refused_and_nothing_is_written_outside(
    repo: Path, outside: Path, primitive: str, where: str
) -> None:
    (outside / "packet").mkdir()
    (outside / "runtime" / "packet").mkdir()
    (outside / "runtime" / "packet" / "events.jsonl").write_text("old\n")
    (repo / "src.txt").write_text("source\n")
    link = _plant(repo, outside, where)
    before = snapshot(outside)
    target = repo / HANDOFF / "runtime" / "packet" / "events.jsonl"
    with pytest.raises(HandoffPathError) as caught:
        PRIMITIVES[primitive](target)
    assert snapshot(outside) == before
    message = str(caught.value)
    assert str(link) in message and str(outside) in message and "symbolic link" in message
    assert caught.value.errno == errno.ELOOP
    assert isinstance(caught.value, StateError) and isinstance(caught.value, OSError)
    assert caught.value.component == link


@pytest.mark.parametrize(
    "primitive",
    [
        "atomic_write_bytes",
        "atomic_write_json",
        "append_line",
        "append_bytes",
        "open_fd_create",
        "read_bytes",
        "rename_into",
    ],
)
def test_a_linked_file_is_refused_and_the_victim_is_unchanged(
    repo: Path, outside: Path, primitive: str
) -> None:
    victim = outside / "victim.txt"
    (repo / "src.txt").write_text("source\n")
    target = repo / HANDOFF / "runtime" / "packet" / "events.jsonl"
    target.parent.mkdir(parents=True)
    target.symlink_to(victim)
    before = snapshot(outside)
    with pytest.raises(HandoffPathError, match=r"events\.jsonl is a symbolic link"):
        PRIMITIVES[primitive](target)
    assert snapshot(outside) == before
    assert victim.read_text() == "victim original content\n"
    assert target.is_symlink()  # left for the user to see, not replaced


def test_a_link_to_a_file_is_not_removed_through(repo: Path, outside: Path) -> None:
    """``unlink`` removes a link itself; what it points to stays."""
    target = repo / HANDOFF / "runtime" / "STOP"
    target.parent.mkdir(parents=True)
    target.symlink_to(outside / "victim.txt")
    files.unlink(target)
    assert not target.is_symlink()
    assert (outside / "victim.txt").read_text() == "victim original content\n"


def test_dot_dot_is_refused_under_the_handoff(repo: Path, outside: Path) -> None:
    (repo / HANDOFF / "runtime").mkdir(parents=True)
    escape = repo / HANDOFF / "runtime" / ".." / ".." / ".." / "outside" / "x.json"
    before = snapshot(outside)
    with pytest.raises(HandoffPathError, match=r"'\.\.'"):
        files.atomic_write_json(escape, {})
    with pytest.raises(HandoffPathError):
        files.make_dirs(repo / HANDOFF / "runtime" / "..")
    assert snapshot(outside) == before


def test_writes_without_links_land_whole(repo: Path) -> None:
    base = repo / HANDOFF / "runtime" / "a" / "b"
    files.atomic_write_json(base / "state.json", {"k": "v"})
    files.append_line(base / "events.jsonl", {"n": 1})
    files.append_line(base / "events.jsonl", {"n": 2})
    fd, spill = files.make_temp_file(base / "c", "stdout-", ".spill")
    os.close(fd)
    files.make_dir_exclusive(base / "lock")
    with pytest.raises(FileExistsError, match=re.escape(str(base / "lock"))):
        files.make_dir_exclusive(base / "lock")
    files.rename(base / "state.json", repo / HANDOFF / "archive" / "s" / "state.json")
    assert json.loads(files.read_bytes(repo / HANDOFF / "archive" / "s" / "state.json")) == {
        "k": "v"
    }
    assert (base / "events.jsonl").read_text().splitlines() == ['{"n":1}', '{"n":2}']
    assert spill.parent == base / "c" and (spill.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in base.iterdir()) == ["c", "events.jsonl", "lock"]  # no temps
    files.remove_tree(base / "lock")
    files.unlink(base / "events.jsonl")
    files.unlink(base / "events.jsonl", missing_ok=True)
    with pytest.raises(FileNotFoundError, match=re.escape(str(base / "events.jsonl"))):
        files.unlink(base / "events.jsonl")
    with pytest.raises(FileNotFoundError, match=re.escape(str(base / "missing"))):
        files.read_bytes(base / "missing" / "x")


def test_a_planted_fifo_is_refused_not_waited_on(repo: Path) -> None:
    state = repo / HANDOFF / "runtime" / "p" / "auto-run-state.json"
    state.parent.mkdir(parents=True)
    os.mkfifo(state)
    with pytest.raises(OSError, match="not a regular file"):
        files.read_bytes(state)


def test_concurrent_make_dirs_of_the_same_tree(repo: Path) -> None:
    """Two makers of the same directories race; both succeed (one makes, one opens)."""
    import threading

    errors: list[BaseException] = []

    def make() -> None:
        try:
            for n in range(50):
                files.make_dirs(repo / HANDOFF / "runtime" / f"d{n}" / "x")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(list((repo / HANDOFF / "runtime").iterdir())) == 50


def test_paths_outside_the_handoff_are_opened_as_before(tmp_path: Path) -> None:
    """The state home, a temp dir: a link the user made there is still followed."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "home").symlink_to(real, target_is_directory=True)
    files.atomic_write_json(tmp_path / "home" / "probes.json", {"a": 1})
    assert json.loads((real / "probes.json").read_text()) == {"a": 1}
    (real / "data.txt").write_text("x")
    (tmp_path / "alias.txt").symlink_to(real / "data.txt")
    assert files.read_bytes(tmp_path / "alias.txt") == b"x"


def test_refuse_links_finds_a_link_deep_below(repo: Path, outside: Path) -> None:
    runtime = repo / HANDOFF / "runtime" / "slug" / "packet"
    (runtime / "evidence").mkdir(parents=True)
    (runtime / "evidence" / "round-1.diff").write_text("diff")
    files.refuse_links(runtime)  # no link: fine
    (runtime / "evidence" / "round-2.diff").symlink_to(outside / "victim.txt")
    with pytest.raises(HandoffPathError, match=r"round-2\.diff is a symbolic link"):
        files.refuse_links(runtime)


def test_refuse_link_at(repo: Path, outside: Path, tmp_path: Path) -> None:
    packet = repo / HANDOFF / "active" / "slug" / "p.md"
    files.refuse_link_at(packet)  # missing: fine
    packet.parent.mkdir(parents=True)
    packet.write_text("x")
    files.refuse_link_at(packet)
    packet.unlink()
    packet.symlink_to(outside / "victim.txt")
    with pytest.raises(HandoffPathError, match=r"p\.md is a symbolic link"):
        files.refuse_link_at(packet)
    (tmp_path / "mine.md").symlink_to(outside / "victim.txt")
    files.refuse_link_at(tmp_path / "mine.md")  # the user's own link, outside the handoff


@pytest.mark.parametrize("value", ["codex", "codex002", "my-launcher_2", "a.b"])
def test_check_name_accepts_one_plain_component(value: str) -> None:
    assert files.check_name("--flag", value) == value


@pytest.mark.parametrize(
    "value", ["", "a/b", "../x", "..", "a..b/c", ".hidden", "a\0b", "/abs/codex", "x/.."]
)
def test_check_name_refuses_what_could_leave_a_directory(value: str) -> None:
    with pytest.raises(InputError) as caught:
        files.check_name("--peer-command", value)
    assert caught.value.field == "--peer-command"
    assert "'/'" in str(caught.value) and "'..'" in str(caught.value)


# -- collaboration: git exclude, spill files, reaper reads ---------------------------------


def test_git_exclude_is_not_written_through_a_link(repo: Path, outside: Path) -> None:
    from review_loop.orchestrator.handoff.git import ensure_excluded

    info = repo / ".git" / "info"
    for child in info.iterdir():
        child.unlink()
    info.rmdir()
    info.symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    with pytest.raises(HandoffPathError, match=re.escape(str(info))):
        ensure_excluded(repo)
    assert snapshot(outside) == before

    info.unlink()
    info.mkdir()
    (info / "exclude").symlink_to(outside / "victim.txt")
    with pytest.raises(HandoffPathError, match="exclude is a symbolic link"):
        ensure_excluded(repo)
    assert (outside / "victim.txt").read_text() == "victim original content\n"

    (info / "exclude").unlink()
    assert ensure_excluded(repo) is True
    assert (info / "exclude").read_text() == "/.review-handoff/\n"
    assert ensure_excluded(repo) is False


def test_spill_file_is_not_created_through_a_link(repo: Path, outside: Path) -> None:
    from review_loop.orchestrator.process.run import BoundedCapture

    _plant(repo, outside, f"{HANDOFF}/runtime")
    before = snapshot(outside)
    capture = BoundedCapture(
        head_cap=4, tail_cap=4, spill_dir=repo / HANDOFF / "runtime" / "consult-sessions" / "x"
    )
    capture.feed(b"more than four bytes")  # refused spill: the capture goes on in memory
    capture.close()
    assert capture.spill_error == "ELOOP" and capture.value() == b"moreytes"
    assert snapshot(outside) == before


def test_reaper_does_not_believe_a_linked_record(repo: Path, outside: Path) -> None:
    """A record reached through a link is skipped (never read, never rewritten)."""
    from review_loop.orchestrator.process.reaper import find_records

    record = {
        "product": "codex",
        "peer": "codex",
        "updated": "2026-01-01T00:00:00.000Z",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "cwd": str(repo),
        "status": "running",
        "ownerPid": 999_999,
    }
    (outside / "reviewer-session.json").write_text(json.dumps(record))
    # the same record, not through a link, is found (so the test below can fail)
    (repo / HANDOFF / "runtime" / "real" / "packet").mkdir(parents=True)
    (repo / HANDOFF / "runtime" / "real" / "packet" / "reviewer-session.json").write_text(
        json.dumps(record)
    )
    assert len(find_records(repo)) == 1
    (repo / HANDOFF / "runtime" / "real" / "packet" / "reviewer-session.json").unlink()
    runtime = repo / HANDOFF / "runtime" / "slug"
    runtime.mkdir(parents=True)
    (runtime / "packet").symlink_to(outside, target_is_directory=True)
    (runtime / "other").mkdir()
    (runtime / "other" / "reviewer-session.json").symlink_to(outside / "reviewer-session.json")
    before = snapshot(outside)
    assert find_records(repo) == []
    assert snapshot(outside) == before


# -- collaboration: the dispatcher's records (asyncio and trio) ----------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("where", [f"{HANDOFF}/runtime", f"{HANDOFF}/runtime/t/claude"])
async def test_dispatcher_records_are_not_written_through_a_link(
    repo: Path, outside: Path, fakes: FakeCLIs, where: str
) -> None:
    """The session record is written before the prompt is sent: a link stops the consult
    before any reviewer is asked, and nothing lands outside."""
    from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
    from review_loop.prefs import Prefs

    fakes.script(claude=[{"mode": "ok", "text": "fine"}])
    link = _plant(repo, outside, where)
    before = snapshot(outside)
    prefs = Prefs.validate({"timeoutMs": 20_000, "graceMs": 300, "livenessMs": 60_000})
    request = PeerRequest(
        peer="claude", prompt="q", record_dir=repo / HANDOFF / "runtime" / "t" / "claude"
    )
    said: list[str] = []
    try:
        async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
            delivery = await d.consult(request)
    except HandoffPathError as error:
        said.append(str(error))
    else:
        assert not delivery.ok or getattr(delivery, "recordError", None) is not None
        said.append(json.dumps(delivery.document()))
    assert snapshot(outside) == before
    assert fakes.calls() == []  # no prompt left without its record
    assert str(link) in said[0]
