"""What a person reads about a reviewer call: progress lines, hints, one-line summaries.

The dispatcher and the workflows keep the machine-readable fields (``state``, ``reason``,
``detail``) exactly as their contracts fix them; this module adds the words a person needs
to act on an outcome: which executable was missing and where it was looked for, which STOP
file blocks every reviewer and how to remove it, and what a deadline really was. It names
no product: the executable and the product come from the caller.

Pure functions (no I/O but reading ``PATH`` from the environment they are given).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from review_loop.agents.outcomes import Delivery

from review_loop.agents.refusals import ADVICE, REFUSALS, STALLED, Refusal

PREFIX = "[review-loop]"
EXECUTABLE_NOT_FOUND = "executable not found: "

# Outcomes that a second identical attempt cannot change: nothing was started because of
# something only the user can change (a missing program, a STOP file, a full disk). A
# refusal is retried: an isolation mount can fail once and succeed the next time.
# A missing credential is the user's to set or pass: the same environment fails the same way.
# A named refusal (a rate limit, an empty quota, a refused key, an unknown model, a CLI too
# old) is the provider's or the installation's answer: the same request a moment later gets
# the same answer, so it goes to the fallback (if any) instead.
_FINAL_REASONS = frozenset(
    {"STOP interrupt (pre-spawn)", "record failed", "missing credentials", *REFUSALS}
)


def retry_may_help(reason: str | None, detail: str) -> bool:
    """Whether retrying a proven ``NOT_SUBMITTED`` with the same parameters can succeed.

    Not for a missing executable (it is still missing a moment later), a STOP file (it is
    still there) or a record that could not be written.
    """
    if reason in _FINAL_REASONS:
        return False
    return not detail.startswith(EXECUTABLE_NOT_FOUND)


def fallback_reason(reason: str | None, *, timed_out: bool) -> str:
    """The ``reason`` of a fallback's ``{from, to, reason}``: ``timeout``, ``stalled``, the
    named refusal that proved nothing was processed (``quota_exhausted``...), else
    ``not_submitted``."""
    if timed_out:
        return "timeout"
    if reason == STALLED or reason in REFUSALS:
        return str(reason)
    return "not_submitted"


def missing_executable(detail: str) -> str | None:
    """The executable a ``spawn failed`` detail says was not found, else ``None``."""
    if detail.startswith(EXECUTABLE_NOT_FOUND):
        return detail.removeprefix(EXECUTABLE_NOT_FOUND).strip()
    return None


def missing_executable_hint(executable: str, product: str, env: Mapping[str, str]) -> str:
    """Where ``executable`` was looked for, and the three ways to make it found."""
    if "/" in executable:
        where = f"{executable} does not exist or is not executable"
    else:
        path = env.get("PATH", "")
        where = f"'{executable}' is not in any directory on PATH ({path or 'PATH is empty'})"
    return (
        f"{where}. Install the {product} CLI, put its directory on PATH, or name its "
        f"executable with: review-loop prefs alias {product}2 {product} /path/to/{executable}"
        f" (then --peer {product}2)"
    )


def stop_hint(stop_files: Sequence[Path]) -> str:
    """Which STOP file blocks every reviewer, and the command that removes it."""
    present = [path for path in stop_files if path.exists()] or list(stop_files)
    names = " ".join(shlex.quote(str(path)) for path in present)
    return (
        f"a STOP file stops every reviewer: {names}. "
        f"Remove it to let reviewers run again: rm {names}"
    )


def failure_words(delivery: Delivery) -> str:
    """What went wrong, in the original's words where a client may match them: a reviewer
    that exited non-zero is ``non-zero exit N: <what it printed>`` (a timeout's detail is
    already ``timeout after <N>ms ...``)."""
    detail = delivery.detail or delivery.reason or "unknown"
    last = delivery.attempts[-1] if delivery.attempts else None
    if last is None or last.timedOut or last.stopped or last.exitCode in (None, 0):
        return detail
    prefix = f"non-zero exit {last.exitCode}"
    return detail if detail.startswith(prefix) else f"{prefix}: {detail}"


def timeout_detail(deadline_ms: int, elapsed_ms: int) -> str:
    """The deadline the user set, not the deadline plus the time it took to end the tree."""
    # "timeout after <N>ms": the original's words, which a client may match
    return f"timeout after {deadline_ms}ms (+ grace; the process ended after {elapsed_ms} ms)"


def hint(
    reason: str | None,
    detail: str,
    product: str,
    env: Mapping[str, str],
    cwd: str | None = None,
) -> str | None:
    """What to do about a failed call, when the outcome says it (else ``None``).

    ``cwd`` (the repository) names the global STOP file when a STOP ended a running call.
    """
    executable = missing_executable(detail)
    if executable is not None:
        return missing_executable_hint(executable, product, env)
    if reason == "STOP interrupt (pre-spawn)" and detail:
        return detail
    if reason == "STOP interrupt" and cwd:
        stop = Path(cwd) / ".review-handoff" / "STOP"
        return (
            f"a STOP file ended the call while it ran (the global one is {stop}, a run's own "
            "is in its runtime directory); remove it before asking again"
        )
    if reason == "missing credentials":
        return missing_credential_hint(detail, product, env)
    if reason == "timeout":
        return "raise the deadline with --timeout SECONDS or 'review-loop prefs set timeoutMs N'"
    if reason in REFUSALS:
        return f"{product}: {ADVICE[Refusal(reason)]}"
    if reason == STALLED:
        return (
            "it showed no sign of life (no output, no CPU time) for the stall time; raise it "
            "with 'review-loop prefs set stallMs N', or turn it off with stallMs 0"
        )
    return None


def missing_credential_hint(detail: str, product: str, env: Mapping[str, str]) -> str:
    """Which variable the CLI wanted, and the two ways to let it reach the CLI."""
    from review_loop.adapters._common import missing_variable

    name = missing_variable(detail)
    if name is None:
        return (
            f"{product} found no credentials in the environment review-loop gave it; pass the "
            "variable that holds them with 'review-loop prefs set envPassthrough NAME' "
            "(or REVIEW_LOOP_ENV_PASSTHROUGH=NAME for one call)"
        )
    passes = (
        f"review-loop prefs set envPassthrough {name} (add it to the names you pass "
        f"already), or REVIEW_LOOP_ENV_PASSTHROUGH={name} for one call"
    )
    if name in env:
        return f"{product} needs {name}, which is set but does not reach it: {passes}"
    return (
        f"{product} needs {name} and it is not set in review-loop's environment: export it "
        f"before review-loop runs (a name your own {product} configuration gives is passed "
        f"once it is set; any other needs {passes})"
    )


def summary(state: str, peer: str, reason: str | None, interrupted: bool) -> str:
    """One sentence that says what the delivery state means for this call."""
    why = f" ({reason})" if reason else ""
    if interrupted:
        return f"{peer} was interrupted{why}; its session was ended"
    if state == "NOT_SUBMITTED":
        return (
            f"NOT_SUBMITTED: the question never reached {peer}{why}; "
            "it is safe to ask again once the cause is fixed"
        )
    if state == "DELIVERY_UNKNOWN":
        return (
            f"DELIVERY_UNKNOWN: {peer} may have received the question{why} but no answer "
            "was read; it is not sent again automatically"
        )
    return f"{state}: {peer}"


def progress_line(peer: str, status: str, **fields: object) -> str:
    """``[review-loop] reviewer=P status=S key=value ...`` (the liveness lines' format)."""
    rest = "".join(f" {key}={value}" for key, value in fields.items() if value is not None)
    return f"{PREFIX} reviewer={peer} status={status}{rest}"


# Where the command line sends progress lines instead of plain stderr (its live status on
# a terminal, :mod:`review_loop.orchestrator.cli.live`); ``None``: one line each on stderr.
_progress_sink: Callable[[str], None] | None = None


def set_progress_sink(sink: Callable[[str], None] | None) -> None:
    """Route the default progress output (the command line's choice; never set on import)."""
    global _progress_sink
    _progress_sink = sink


def emit_progress(text: str) -> None:
    """The default progress output: the sink when one is set, else one line on stderr.

    A host without a working stderr (none at all, a full disk, a reader gone) loses the
    line, never the call that reported it (:func:`.std_streams.write_stderr`).
    """
    if _progress_sink is not None:
        _progress_sink(text)
        return
    from review_loop.orchestrator.std_streams import write_stderr

    write_stderr(text)
