"""Process tests: TERM, HUP and INT to a two-peer ``review-loop consult`` are cancellation.

Rows: {SIGTERM, SIGHUP, SIGINT} × {hang, grandchild, SIGTERM-ignoring, setsid escaper
holding the pipe, detached helper after a normal answer}. ``review-loop`` runs as a real
process with two fake CLIs at once. Each row checks: the exit code is 128 + the signal,
stdout holds exactly one JSON document (``ok: false``, the signal, the interrupted peers,
an answer that had arrived), no traceback, no record left ``running``, and no process of
the run survives.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.fakes import FakeCLIs
from tests.faults.harness import (
    MODES,
    PEER_A,
    PEER_B,
    Mode,
    Scanner,
    finish,
    launch_row,
    one_document,
    record_of,
    unfinished,
)

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


@pytest.mark.parametrize("mode", MODES, ids=[m.name for m in MODES])
@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_process_signal_cancels_a_two_peer_consult(
    sig: signal.Signals,
    mode: Mode,
    repo: Path,
    fakes: FakeCLIs,
    env: dict[str, str],
    scanner: Scanner,
) -> None:
    proc = launch_row(mode, repo, fakes, env, scanner)
    if proc.poll() is None:
        proc.send_signal(sig)
    stdout, stderr = finish(proc)
    assert proc.returncode == 128 + sig, (proc.returncode, stdout[-1000:], stderr[-2000:])

    assert "Traceback" not in stderr, stderr[-2000:]
    document = one_document(stdout)
    assert document["ok"] is False
    assert document["status"] == "interrupted"
    assert document["signal"] == sig.name
    by_peer = {result["peer"]: result for result in document["results"]}
    assert set(by_peer) == {PEER_A, PEER_B}
    assert PEER_B in document["interrupted"]
    assert by_peer[PEER_B]["status"] == "interrupted"
    assert by_peer[PEER_B]["code"] == "interrupted"
    if mode.a_answers:  # the answer that arrived before the signal is kept and shown
        assert PEER_A not in document["interrupted"]
        assert by_peer[PEER_A]["status"] == "advisory"
        assert by_peer[PEER_A]["text"] == f"answer from {PEER_A}"
        assert Path(by_peer[PEER_A]["recordPath"]).is_file()
    elif not mode.a_exits:
        assert document["interrupted"] == [PEER_A, PEER_B]

    assert unfinished(repo) == []
    b_record = record_of(repo, PEER_B)
    assert b_record is not None
    assert b_record["status"] == "interrupted" and b_record["reason"] == "interrupted"
    survivors = scanner.survivors()
    assert survivors == [], [" ".join(p.cmdline()) for p in survivors]
