"""The prefs' defaults and bounds as plain constants (no pydantic: ``help`` reads them)."""

from __future__ import annotations

import re

from review_loop.agents.constants import ENV_NAME_PATTERN

DEFAULT_ORDER: tuple[str, ...] = ("claude", "codex", "grok")
# The host a review is assumed to run in when the caller does not say (the review skills
# are Claude Code skills): `run` picks its default reviewer from the order without it.
DEFAULT_HOST = "claude"
DEFAULT_TIMEOUT_MS = 1_200_000  # 20 minutes, as the original review-loop
# A deadline outside these bounds is a typo (seconds given as ms, or ms as s), never a wish:
# below one second no reviewer can answer, above one day a hung one is never stopped.
MIN_TIMEOUT_MS = 1_000
MAX_TIMEOUT_MS = 86_400_000
TIMEOUT_RANGE = (
    f"an integer of milliseconds from {MIN_TIMEOUT_MS} (1 s) to {MAX_TIMEOUT_MS} (1 day)"
)
DEFAULT_GRACE_MS = 5_000
DEFAULT_LIVENESS_MS = 30_000
# A reviewer that shows no sign of life (no byte on stdout or stderr, no CPU time in its
# process tree) for stallMs is ended as "stalled". Off (0) by default: claude (one JSON
# document at the end) and the npm grok (no streaming) print nothing while the model
# thinks, and a process blocked on a socket may count no CPU tick for minutes, so any
# fixed default would end some healthy review early; the deadline (timeoutMs) still bounds
# every run. Below one second a poll could not tell a pause from a stall.
DEFAULT_STALL_MS = 0
MIN_STALL_MS = 1_000
ALIAS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ENV_NAME_RE = re.compile(ENV_NAME_PATTERN)


def is_skill_dir(entry: str) -> bool:
    """Whether ``entry`` may be a ``skillDirs`` entry: an absolute or ``~`` path, no NUL."""
    return (entry.startswith(("/", "~/")) or entry == "~") and "\0" not in entry
