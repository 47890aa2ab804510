"""Reading a run of a CLI that relays an OpenAI-compatible chat-completions provider. Pure.

opencode and Qwen Code talk to any OpenAI-compatible server (OpenAI, OpenRouter, DashScope,
a local vLLM) and relay its refusals the same way: an HTTP status and the server's message
inside their own JSON output. Their adapters read a run in the same three steps, the
last two of which live here:

1. :func:`~review_loop.adapters._common.stdout_or_failure` (every adapter's first step):
   the failures every run can end in before its output is read (a timeout, a stall, output
   past the cap, bytes that are not UTF-8) and the CLI's own refusals at start-up, proven
   before any request left (here :func:`startup_refusal`);
2. the CLI's JSON output, read by the adapter itself (each CLI has its own event shapes);
3. :func:`api_error`: the provider's error the CLI relayed, as a named refusal
   (:func:`~review_loop.adapters.refusals.refusal_in`) or ``api error <status>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from review_loop.adapters._common import not_submitted, unknown
from review_loop.adapters.refusals import refusal_in, refused

if TYPE_CHECKING:  # the run vocabulary: imported where a run is read (agents/models.py)
    from review_loop.agents.models import Failure

SESSION_NOT_FOUND: Final = "session not found"
"""The reason of a resume the CLI refused for an unknown id (marked ``session_not_found``,
so the dispatcher may start a new session)."""

# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
_ANSI: Final = r"\x1b\[[0-9;]*[A-Za-z]"


def startup_refusal(
    stderr: str, stdout: str, returncode: int | None, rules: Sequence[tuple[str, str]]
) -> Failure | None:
    """``NOT_SUBMITTED`` with the reason of the first of ``rules`` (pattern, reason) that
    ``stderr`` (colour codes removed) matches, when the CLI exited 1 with nothing on stdout:
    its argument parser or session lookup refused before any request was built. ``None``
    for any other run."""
    if returncode != 1 or stdout.strip():
        return None
    plain = re.sub(_ANSI, "", stderr).strip()
    for pattern, reason in rules:
        if re.search(pattern, plain):
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
