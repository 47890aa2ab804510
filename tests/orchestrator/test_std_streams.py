"""Contract tests of the standard streams' guards (``review_loop.orchestrator.std_streams``).

Progress and diagnostics are for a person: no stderr at all (``None``, a host started
without descriptor 2) or a stderr that fails (a full disk, a reader gone) loses the line,
never the call that was reporting it. The process-level promises (closed descriptors,
``/dev/full``, exit 120) are proven in ``tests/faults/test_closed_streams.py``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from review_loop import PeerRequest, open_dispatcher
from review_loop.orchestrator import explain, log, std_streams
from review_loop.prefs import Prefs
from tests.test_cli import git_repo


class _Failing(io.StringIO):
    """A stream whose every write and flush fails as a full disk's does."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")


def test_contract_progress_without_a_stderr_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", None)
    explain.emit_progress("[review-loop] reviewer=codex status=active")  # no AttributeError
    assert std_streams.write_stderr("a line") is False


def test_contract_progress_on_a_failing_stderr_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", _Failing())
    explain.emit_progress("[review-loop] reviewer=codex status=active")  # no OSError
    assert std_streams.write_stderr("a line") is False


def test_contract_guarded_stderr_drops_after_the_first_failure() -> None:
    guarded = std_streams.GuardedStderr(_Failing())
    assert guarded.write("one\n") == 4
    guarded.flush()
    assert guarded.failure == "[Errno 28] No space left on device"
    assert guarded.isatty() is False
    assert guarded.write("two\n") == 4  # dropped, not raised


def test_contract_guarded_stderr_passes_through_while_it_works() -> None:
    target = io.StringIO()
    guarded = std_streams.GuardedStderr(target)
    guarded.write("kept\n")
    guarded.flush()
    assert target.getvalue() == "kept\n" and guarded.failure is None
    assert guarded.getvalue() == "kept\n"  # anything else is the stream's own


def test_contract_logging_without_a_stderr_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", None)
    log.log_event("test-event", level="info", where="nowhere")  # no AttributeError


@pytest.mark.anyio
@pytest.mark.parametrize("stderr", ["none", "failing"])
async def test_collaboration_an_embedded_consult_without_a_working_stderr_is_recorded(
    stderr: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default progress (no ``progress`` callable) goes to stderr; a host with none, or
    one that fails, still gets its answer and a finished record (asyncio and trio)."""
    repo = git_repo(tmp_path / "repo")
    monkeypatch.setattr("sys.stderr", None if stderr == "none" else _Failing())
    async with open_dispatcher(repo=repo, prefs=Prefs()) as dispatcher:
        delivery = await dispatcher.consult(PeerRequest(peer="simulated", prompt="Ship?"))
    monkeypatch.undo()
    assert delivery.ok, delivery
    record = json.loads(Path(delivery.recordPath or "").read_text())
    assert record["status"] == "finished", record
