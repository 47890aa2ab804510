"""Contract tests of the standard streams' guards (``review_loop.orchestrator.std_streams``).

Progress and diagnostics are for a person: no stderr at all (``None``, a host started
without descriptor 2) or a stderr that fails (a full disk, a reader gone) loses the line,
never the call that was reporting it. The process-level promises (closed descriptors,
``/dev/full``, exit 120) are proven in ``tests/faults/test_closed_streams.py``.
"""

from __future__ import annotations

import io

import pytest

from review_loop.orchestrator import explain, log, std_streams


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
    log._logger.cache_clear()
    try:
        log.log_event("test-event", level="info", where="nowhere")  # no AttributeError
    finally:
        log._logger.cache_clear()
