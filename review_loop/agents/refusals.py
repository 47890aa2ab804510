"""The named reasons a reviewer CLI refuses a request before doing any work.

A CLI that cannot or will not run a review says so in its own words: an HTTP status and a
message from the provider it relayed, or a version too old for the flags review-loop needs.
Each adapter reads its CLI's words (purely, from stdout, stderr and the exit status) into
one :class:`Refusal`, which becomes the ``reason`` of the failure, the attempt and the
delivery. The names are the contract (``docs/cli-adapters.md``, "Refusals"); what a person
should do about each is :data:`ADVICE`.

Whether the refused request is ``NOT_SUBMITTED`` or ``DELIVERY_UNKNOWN`` is the adapter's
to prove per run, not the reason's: a provider that refused the *first* request of a run
processed nothing, one that refused a later request (after the model had read the prompt
and called tools) did. Either way, sending the same request again at once cannot succeed,
so none of these is retried with the same parameters; a ``NOT_SUBMITTED`` one falls back to
another product (``--fallback``) with the remaining budget.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Refusal(StrEnum):
    """One name per reason a CLI gives before any work is done.

    - ``rate_limited``: the provider throttled the request (HTTP 429 without a quota or
      credit word); it may work again in a little while.
    - ``quota_exhausted``: the account's quota, credit balance, spending limit or plan
      usage is used up (HTTP 402, OpenAI's ``insufficient_quota``, Anthropic's "credit
      balance is too low", Google's per-day ``QuotaFailure``, xAI's used-up credits); it
      comes back only when the user buys more or the period resets.
    - ``auth_failed``: the key or login was refused, or has expired (HTTP 401, an invalid
      or expired API key).
    - ``model_unavailable``: the model does not exist or the account may not use it (HTTP
      404 naming a model, "does not exist or you do not have access").
    - ``cli_too_old``: the installed CLI's version (its ``--version`` probe) is older than
      the oldest one the adapter knows how to keep read-only; nothing was started.
    """

    RATE_LIMITED = "rate_limited"
    QUOTA_EXHAUSTED = "quota_exhausted"
    AUTH_FAILED = "auth_failed"
    MODEL_UNAVAILABLE = "model_unavailable"
    CLI_TOO_OLD = "cli_too_old"


REFUSALS: Final = frozenset(Refusal)
"""Every refusal; ``reason in REFUSALS`` tells a refusal from the other reasons."""

ADVICE: Final[dict[Refusal, str]] = {
    Refusal.RATE_LIMITED: "the provider is rate-limiting this account; wait, or fall back",
    Refusal.QUOTA_EXHAUSTED: "the account's quota or credit is used up; add credit or fall back",
    Refusal.AUTH_FAILED: "the CLI's key or login was refused or expired; log in again",
    Refusal.MODEL_UNAVAILABLE: "the model is unknown or not allowed for this account",
    Refusal.CLI_TOO_OLD: "the installed CLI is older than review-loop supports; update it",
}
"""What a person can do about each refusal (one line, no product named)."""

STALLED: Final = "stalled"
"""The ``reason`` of a run ended for showing no sign of life for the stall time (no byte
on stdout or stderr, no CPU time in its process tree): not a refusal, and not the deadline
(``timeout``). ``DELIVERY_UNKNOWN``: the request may have been read."""
