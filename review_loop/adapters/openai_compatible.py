"""Reading a run of a CLI that relays an OpenAI-compatible chat-completions provider. Pure.

opencode and Qwen Code talk to any OpenAI-compatible server (OpenAI, OpenRouter, DashScope,
a local vLLM) and relay its refusals the same way: an HTTP status and the server's message
inside their own JSON output. Their adapters read a run in the same three steps, which live
here once:

1. :func:`stdout_or_failure`: the failures every run can end in before its output is read
   (a timeout, a stall, output past the cap, bytes that are not UTF-8) and the CLI's own
   refusals at start-up, proven before any request left (:func:`startup_refusal`);
2. the CLI's JSON output, read by the adapter itself (each CLI has its own event shapes);
3. :func:`api_error`: the provider's error the CLI relayed, as a named refusal
   (:func:`~review_loop.adapters.refusals.refusal_in`) or ``api error <status>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from review_loop.adapters._common import not_submitted, text_of, unknown
from review_loop.adapters.base import decode_utf8, detail_of, generic_failure
from review_loop.adapters.refusals import refusal_in, refused

if TYPE_CHECKING:  # the run vocabulary: imported where a run is read (agents/models.py)
    from review_loop.agents.models import Completed, Failure, Invocation

StartupRefusal = Callable[[str, str, "int | None"], "Failure | None"]
"""``(stderr, stdout, returncode)`` → the CLI's refusal at start-up, or ``None``."""

SESSION_NOT_FOUND: Final = "session not found"
"""The reason of a resume the CLI refused for an unknown id (marked ``session_not_found``,
so the dispatcher may start a new session)."""

_ANSI: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def stdout_or_failure(
    invocation: Invocation, completed: Completed, startup: StartupRefusal
) -> str | Failure:
    """The run's stdout as text, or the failure that ends its reading before any JSON is
    looked at: :func:`~review_loop.adapters.base.generic_failure`, output past the cap or
    not UTF-8 (``DELIVERY_UNKNOWN``, the session id known before launch kept), or what
    ``startup`` proves the CLI refused before sending anything (``NOT_SUBMITTED``)."""
    failure = generic_failure(completed)
    if failure is not None:
        return failure
    known_id = invocation.session_id
    if completed.stdout_truncated:
        return unknown("output too large", detail_of(completed), session_id=known_id)
    stdout = decode_utf8(completed.stdout)
    if stdout is None:
        return unknown("parse failed", "stdout is not UTF-8", session_id=known_id)
    refusal = startup(text_of(completed.stderr), stdout, completed.returncode)
    return stdout if refusal is None else refusal


def startup_refusal(
    stderr: str, stdout: str, returncode: int | None, rules: Sequence[tuple[re.Pattern[str], str]]
) -> Failure | None:
    """``NOT_SUBMITTED`` with the reason of the first of ``rules`` (pattern, reason) that
    ``stderr`` (colour codes removed) matches, when the CLI exited 1 with nothing on stdout:
    its argument parser or session lookup refused before any request was built. ``None``
    for any other run."""
    if returncode != 1 or stdout.strip():
        return None
    plain = _ANSI.sub("", stderr).strip()
    for pattern, reason in rules:
        if pattern.search(plain):
            return not_submitted(reason, plain, session_not_found=reason == SESSION_NOT_FOUND)
    return None


def api_error(
    status: int | None, message: str, *, processed_nothing: bool, session_id: str | None
) -> Failure:
    """The provider's error the CLI relayed (``status`` when the CLI tells it): a named
    refusal, ``NOT_SUBMITTED`` when the adapter proved from the run that nothing was
    processed (the run's first request was refused: no step, no tool, no answer begun),
    else ``DELIVERY_UNKNOWN``; any other error is ``api error <status>``, delivery
    unknown."""
    named = refusal_in(status, message)
    if named is not None:
        return refused(named, message, processed_nothing=processed_nothing, session_id=session_id)
    reason = "api error" if status is None else f"api error {status}"
    return unknown(reason, message, session_id=session_id)
