"""Process tests: ``kill -9`` of the ``review-loop`` that owns two running reviewers.

Rows: ``kill -9`` × {hang, grandchild, SIGTERM-ignoring, setsid escaper holding the pipe,
detached helper after a normal answer}. Nothing can run in the killed process, so the
promise is the next command's: the next ``consult`` on the repository ends every process
of the dead run (setsid'd ones included) and marks its records, and no record is left
``running``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import (
    MODES,
    PEER_A,
    PEER_B,
    Mode,
    Scanner,
    consult_args,
    finish,
    launch,
    launch_row,
    one_document,
    record_of,
    unfinished,
)

NEXT_PEER = "gemini"


@pytest.mark.parametrize("mode", MODES, ids=[m.name for m in MODES])
def test_process_owner_killed_then_the_next_command_ends_everything(
    mode: Mode, repo: Path, fakes: FakeCLIs, env: dict[str, str], scanner: Scanner
) -> None:
    owner = launch_row(mode, repo, fakes, env, scanner)
    assert owner.poll() is None, "review-loop ended before the kill"
    owner.kill()  # kill -9: no handler, no cleanup, no output
    finish(owner)

    following = launch(consult_args(repo, NEXT_PEER), env)
    stdout, stderr = finish(following)
    assert following.returncode == 0, (stdout[-1000:], stderr[-2000:])
    assert one_document(stdout)["text"] == f"answer from {NEXT_PEER}"

    assert unfinished(repo) == []
    b_record = record_of(repo, PEER_B)
    assert b_record is not None and b_record["status"] in ("orphaned", "lost"), b_record
    if mode.a_answers:  # A's answer arrived before the kill: its record says so
        a_record = record_of(repo, PEER_A)
        assert a_record is not None and a_record["status"] == "finished"
    survivors = scanner.survivors()
    assert survivors == [], [" ".join(p.cmdline()) for p in survivors]
