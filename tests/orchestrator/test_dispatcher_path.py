"""Contract and process tests of the dispatcher's work per session (docs/dispatcher-path.md).

What each consult pays besides its CLI was cut without weakening a promise; these tests
hold each cut to the behaviour it stands for:

- ``PeerRequest`` keeps its documented behaviour (keyword-only, frozen, validated on
  construction and on ``dataclasses.replace``, equality, repr) without compiling dataclass
  methods when the dispatcher is imported;
- an entry of the index of unfinished records is a new name (a hard link), not a new file:
  making an inode cost more than an fsync on this machine's disk; where no link can be
  made it is an empty file of its own, and nothing is ever followed through a link;
- a record is still written as ``json.dumps(indent=2)`` writes it, byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from review_loop.agents.errors import InputError
from review_loop.orchestrator import files, unfinished
from review_loop.orchestrator.dispatcher import PeerRequest
from review_loop.orchestrator.files import HandoffPathError
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


def test_process_importing_the_dispatcher_compiles_no_dataclass_method() -> None:
    # @dataclass compiles each generated method with exec when the class is defined (about
    # half a millisecond a class, on every command's start); an audit hook sees each compile.
    probe = (
        "import sys\n"
        "import anyio, review_loop.agents.outcomes, review_loop.orchestrator.process\n"
        "import review_loop.orchestrator.git, review_loop.orchestrator.isolation\n"
        "import review_loop.orchestrator.masking, review_loop.prefs.view\n"
        "compiled = []\n"
        "sys.addaudithook(lambda event, args: event == 'compile' and compiled.append(args[0]))\n"
        "import review_loop.orchestrator.dispatcher\n"
        "print([source for source in compiled if b'__create_fn__' in source])\n"
        "print(sorted({'uuid', 'tempfile'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True, text=True)
    compiled, loaded = done.stdout.splitlines()
    assert compiled == "[]"
    assert "uuid" not in loaded  # imported where a record directory is named for a caller


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
