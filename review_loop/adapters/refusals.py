"""Reading a provider's refusal, as a CLI relays it, into a named :class:`Refusal`. Pure.

Every CLI passes the provider's HTTP status and message through in its own framing (an
``api_error_status`` field, ``unexpected status 401 Unauthorized: ...``, ``Grok API error:
429 "..."``, a JSON ``error.code``), and some replace the message with their own words for
the cases they know (claude's "Credit balance is too low", codex's "Quota exceeded. Check
your plan and billing details."). An adapter extracts what its CLI said (status, if any,
and text) and asks :func:`refusal_in`; the words below are the providers' and the CLIs'
own, as measured against the real CLIs (``tests/e2e/test_refusals_real.py``).

:func:`too_old` compares a probed version with the oldest an adapter supports.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from review_loop.adapters.base import DETAIL_LIMIT
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.refusals import Refusal

if TYPE_CHECKING:  # the run vocabulary is imported where a run is read (agents/models.py)
    from review_loop.agents.models import Failure

# Quota before rate: the same 429 carries both (OpenAI's insufficient_quota, Google's
# RESOURCE_EXHAUSTED), told apart only by these words. Google's per-minute quota ids are a
# rate; its per-day ones the quota (the ids are in the error's QuotaFailure detail).
# Patterns, compiled by ``re`` on first use (its cache), not at import: ``sessions`` imports
# every adapter and needs none of them. ``(?i)``: each ignores case.
_RATE_FIRST: Final = r"(?i)PerMinute|per min(?:ute)?\b"
_QUOTA: Final = (
    r"(?i)insufficient_quota|quota exceeded|exceeded your current quota|PerDay"
    r"|credit balance|credits?\b|spending limit|billing|payment"
    r"|usage limit|usage_limit"
)
_RATE: Final = r"(?i)rate[ _-]?limit|too many requests|\b429\b|resource has been exhausted"
_AUTH: Final = (
    r"(?i)authenticat|unauthori[sz]ed|invalid[ _-]?api[ _-]?key|incorrect api key"
    r"|api key not valid|api[ _]key[ _]?(?:invalid|expired)|token (?:has |is )?expired"
    r"|expired or (?:was )?revoked|invalid x-api-key|\b401\b"
)
_MODEL: Final = (
    r"(?i)model_not_found|model[ `'\"]\S*[`'\"]? does not exist|model \S+ does not exist"
    r"|issue with the selected model|models/\S+ is not found|not_found_error.*model"
    r"|model: \S+|unknown model|model is not (?:available|supported)"
    # OpenRouter: no provider serves the model (or none serves it with tools)
    r"|no endpoints found"
)


def refusal_in(status: int | None, text: str) -> Refusal | None:
    """The refusal that ``status`` (the provider's HTTP status, when the CLI tells it) and
    ``text`` (what the CLI said of the error) name, or ``None`` for any other error.

    A 5xx, a connection failure and anything unrecognised are ``None``: they are not a
    refusal but a failure, and stay what the adapter called them.
    """
    if status is not None and status >= 500:
        return None
    if status == 402:
        return Refusal.QUOTA_EXHAUSTED
    if status in (None, 429) and re.search(_RATE_FIRST, text):
        return Refusal.RATE_LIMITED
    if re.search(_QUOTA, text) and status in (None, 400, 403, 429):
        return Refusal.QUOTA_EXHAUSTED
    if status == 429 or (status is None and re.search(_RATE, text)):
        return Refusal.RATE_LIMITED
    if re.search(_MODEL, text) and status in (None, 400, 403, 404):
        return Refusal.MODEL_UNAVAILABLE
    if status == 401 or (status in (None, 400, 403) and re.search(_AUTH, text)):
        return Refusal.AUTH_FAILED
    return None


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"2.1.197"`` as ``(2, 1, 197)`` (a pre-release suffix ignored); ``None`` if unread."""
    if not version:
        return None
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return tuple(int(part) for part in found.groups()) if found else None


def too_old(version: str | None, oldest: tuple[int, ...]) -> bool:
    """Whether a probed ``version`` is older than ``oldest``. An unreadable or unknown
    version is not "too old": it is refused only when proven older."""
    probed = version_tuple(version)
    return probed is not None and probed < oldest


def refuse_too_old(product: str, version: str | None, oldest: tuple[int, ...]) -> None:
    """Raise ``cli_too_old`` when the probed ``version`` is older than ``oldest``.

    Called by ``build``: nothing is started, so the delivery is ``NOT_SUBMITTED`` and
    ``--fallback`` answers instead.

    Raises:
        AdapterRefusalError: ``code`` :attr:`Refusal.CLI_TOO_OLD`; the message names the
            version installed and the oldest supported.
    """
    if version is None or not too_old(version, oldest):
        return
    wanted = ".".join(map(str, oldest))
    raise AdapterRefusalError(
        product,
        f"{product} {version} is older than {wanted}, the oldest version whose read-only "
        f"flags review-loop has proven; update {product} to {wanted} or later",
        code=Refusal.CLI_TOO_OLD.value,
    )


def refused(
    refusal: Refusal, detail: str, *, processed_nothing: bool, session_id: str | None = None
) -> Failure:
    """The failure for ``refusal``: ``NOT_SUBMITTED`` when the adapter proved from the run
    that the provider processed nothing (it refused the run's first request: no token
    counted, no tool run, no answer begun), else ``DELIVERY_UNKNOWN``."""
    from review_loop.agents.models import DeliveryState, Failure

    return Failure(
        state=DeliveryState.NOT_SUBMITTED if processed_nothing else DeliveryState.DELIVERY_UNKNOWN,
        reason=refusal.value,
        detail=detail[:DETAIL_LIMIT],
        session_id=session_id,
    )
