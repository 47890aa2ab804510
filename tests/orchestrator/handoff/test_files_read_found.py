"""Contract tests of ``files.read_found``: the scan ``sessions`` lists its records with.

It stands for ``directory.glob("*/*/<name>")`` followed by ``read_each`` (skipping what it
cannot read): the same files, the same contents, in the same order, and no more. Every
directory below ``directory`` is opened without following a link, and only regular files
are read: a link at any level, a FIFO, a file where a directory belongs, yields nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from review_loop.orchestrator.handoff.files import read_bytes, read_each, read_found

NAME = "r.json"


def tree(tmp_path: Path) -> Path:
    """A runtime with records, dot-names, and every kind of thing that must be skipped."""
    root = tmp_path / "repo" / ".review-handoff" / "runtime"
    for branch, packet in (("main", "p1"), ("main", "p2"), ("dev", "p1"), (".h", ".p")):
        (root / branch / packet).mkdir(parents=True)
        (root / branch / packet / NAME).write_text(f'{{"b": "{branch}", "p": "{packet}"}}')
    (root / "main" / "big").mkdir()
    (root / "main" / "big" / NAME).write_bytes(b"x" * 200_000)  # more than one read
    (root / "main" / "empty").mkdir()
    (root / "main" / "empty" / NAME).write_bytes(b"")
    outside = tmp_path / "outside"
    (outside / "p1").mkdir(parents=True)
    (outside / "p1" / NAME).write_text("secret")
    (root / "linked").symlink_to(outside)  # a branch directory that is a link
    (root / "main" / "p3").symlink_to(outside / "p1")  # a packet directory that is a link
    (root / "main" / "p4").mkdir()
    (root / "main" / "p4" / NAME).symlink_to(outside / "p1" / NAME)  # the file is a link
    (root / "main" / "p5").mkdir()
    os.mkfifo(root / "main" / "p5" / NAME)  # never waited on
    (root / "main" / "p6").mkdir()  # no record
    (root / "main" / "p7").mkdir()
    (root / "main" / "p7" / NAME).mkdir()  # a directory by the file's name
    (root / "main" / "p8").write_text("a file where a packet directory belongs")
    (root / "loose").write_text("a file where a branch directory belongs")
    (root / "main" / "p9").mkdir()
    (root / "main" / "p9" / "other.json").write_text("{}")  # another name
    return root


def test_contract_lists_and_reads_what_glob_and_read_each_give_in_their_order(
    tmp_path: Path,
) -> None:
    root = tree(tmp_path)
    listed = [path.relative_to(root).as_posix() for path in root.glob(f"*/*/{NAME}")]
    expected = [(rel, data) for rel, data in read_each(root, listed) if data is not None]
    found = list(read_found(root, 2, NAME))
    assert found == expected
    assert {rel for rel, _ in found} == {
        "main/p1/r.json",
        "main/p2/r.json",
        "dev/p1/r.json",
        ".h/.p/r.json",
        "main/big/r.json",
        "main/empty/r.json",
    }
    assert b"secret" not in b"".join(data for _, data in found)


def test_contract_a_link_swapped_in_after_the_listing_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo" / ".review-handoff" / "runtime"
    for number in range(6):
        (root / "main" / f"p{number}").mkdir(parents=True)
        (root / "main" / f"p{number}" / NAME).write_text("{}")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / NAME).write_text("secret")
    found = read_found(root, 2, NAME)
    first, _ = next(found)  # main/ is listed: its packets were directories then
    for packet in os.listdir(root / "main"):
        if first != f"main/{packet}/{NAME}":
            os.rename(root / "main" / packet, tmp_path / packet)
            (root / "main" / packet).symlink_to(tmp_path / "outside")
    assert list(found) == []


def test_contract_an_unreachable_or_missing_directory_reads_nothing(tmp_path: Path) -> None:
    root = tree(tmp_path)
    handoff = tmp_path / "other" / ".review-handoff"
    handoff.parent.mkdir()
    handoff.symlink_to(root.parent)  # .review-handoff itself is a link: refused
    assert list(read_found(handoff / "runtime", 2, NAME)) == []
    assert list(read_found(tmp_path / "none" / ".review-handoff" / "runtime", 2, NAME)) == []
    assert list(read_found(root / "main" / "p1" / NAME, 2, NAME)) == []  # not a directory


def test_contract_depth_is_the_number_of_directory_levels(tmp_path: Path) -> None:
    root = tree(tmp_path)
    assert list(read_found(root / "main", 1, NAME)) == [
        (rel.split("/", 1)[1], data)
        for rel, data in read_found(root, 2, NAME)
        if rel.startswith("main/")
    ]


def test_contract_a_short_read_is_not_taken_for_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read may return fewer bytes than asked before the end (Linux returns at most
    # 0x7ffff000 per call, so any file past 2 GiB; network and FUSE file systems): the
    # file is read to its end, as read_each's handle.read() does, never cut short (a cut
    # could turn a file that is no JSON into a record). os.read is capped here because a
    # 2 GiB file is no test fixture.
    root = tmp_path / "repo" / ".review-handoff" / "runtime"
    (root / "main" / "p1").mkdir(parents=True)
    content = bytes(range(256)) * 40
    (root / "main" / "p1" / NAME).write_bytes(content)
    real_read = os.read

    def capped(fd: int, size: int) -> bytes:
        return real_read(fd, min(size, 1000))

    monkeypatch.setattr(os, "read", capped)
    assert list(read_found(root, 2, NAME)) == [("main/p1/r.json", content)]
    assert list(read_each(root, ["main/p1/r.json"])) == [("main/p1/r.json", content)]
    assert read_bytes(root / "main" / "p1" / NAME) == content  # what read() gives
