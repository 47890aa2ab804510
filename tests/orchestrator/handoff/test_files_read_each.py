"""Contract tests of ``files.read_each``: many reads below one directory, as safe as one.

``sessions`` reads thousands of records through it; each must be read exactly as
``read_bytes`` would (no link followed under ``.review-handoff/``, regular files only), and
whatever ``read_bytes`` refuses is skipped (``None``), never followed.
"""

from __future__ import annotations

import os
from pathlib import Path

from review_loop.orchestrator.handoff.files import read_bytes, read_each


def runtime(tmp_path: Path) -> Path:
    root = tmp_path / "repo" / ".review-handoff" / "runtime"
    for branch, packet in (("main", "p1"), ("main", "p2"), ("dev", "p1")):
        (root / branch / packet).mkdir(parents=True)
        (root / branch / packet / "r.json").write_text(f'{{"b": "{branch}", "p": "{packet}"}}')
    return root


def test_contract_regular_files_read_as_read_bytes(tmp_path: Path) -> None:
    root = runtime(tmp_path)
    names = ["main/p1/r.json", "dev/p1/r.json", "main/p2/r.json", "main/p9/r.json"]
    got = dict(read_each(root, names))
    assert list(got) == names  # every name answered, in order
    for name in names[:3]:
        assert got[name] == read_bytes(root / name)
    assert got["main/p9/r.json"] is None  # missing


def test_contract_links_fifos_and_dotdot_are_skipped_never_followed(tmp_path: Path) -> None:
    root = runtime(tmp_path)
    outside = tmp_path / "outside"
    (outside / "p1").mkdir(parents=True)
    (outside / "p1" / "r.json").write_text("secret")
    (root / "linked").symlink_to(outside)  # a branch directory that is a link
    (root / "main" / "p3").symlink_to(outside / "p1")  # a packet directory that is a link
    (root / "main" / "p4").mkdir()
    (root / "main" / "p4" / "r.json").symlink_to(outside / "p1" / "r.json")  # a file link
    (root / "main" / "p5").mkdir()
    os.mkfifo(root / "main" / "p5" / "r.json")  # never waited on
    names = [
        "linked/p1/r.json",
        "main/p3/r.json",
        "main/p4/r.json",
        "main/p5/r.json",
        "main/../main/p1/r.json",
        "main/p1/r.json",
    ]
    got = dict(read_each(root, names))
    assert got == {**dict.fromkeys(names[:-1]), "main/p1/r.json": read_bytes(root / names[-1])}


def test_contract_an_unreachable_directory_reads_nothing(tmp_path: Path) -> None:
    root = runtime(tmp_path)
    handoff = tmp_path / "other" / ".review-handoff"
    handoff.parent.mkdir()
    handoff.symlink_to(root.parent)  # .review-handoff itself is a link: refused
    assert dict(read_each(handoff / "runtime", ["main/p1/r.json"])) == {"main/p1/r.json": None}
