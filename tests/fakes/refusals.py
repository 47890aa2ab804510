"""How each provider refuses a request before doing any work, for the fake model API.

:func:`refusal_response` gives the status and the JSON body a provider's own API sends for a
rate limit, exhausted quota or credit, a bad or expired key, and a model that does not exist
(or the account may not use), in the wire shape of the API the request came in on:

=============  ===============================================================================
``anthropic``  Anthropic Messages: ``{"type": "error", "error": {"type", "message"}}``; 429
               ``rate_limit_error``; an empty credit balance is 400 ``invalid_request_error``
               ("Your credit balance is too low ..."), a billing problem 402
               ``billing_error``; 401 ``authentication_error``; 404 ``not_found_error``
               ("model: <name>").
``responses``  OpenAI: ``{"error": {"message", "type", "param", "code"}}``; a rate limit is 429
               ``rate_limit_exceeded``, an exhausted quota 429 ``insufficient_quota`` (the same
               status: only the body tells them apart); ChatGPT plans' 429
               ``usage_limit_reached``; 401 ``invalid_api_key``; 404 ``model_not_found``.
``gemini``     Google: ``{"error": {"code", "message", "status", "details"}}``; both limits are
               429 ``RESOURCE_EXHAUSTED``, told apart by the ``QuotaFailure`` detail's quota
               id (per minute: a rate; per day: the quota); a bad key is 400
               ``INVALID_ARGUMENT`` with ``ErrorInfo`` ``API_KEY_INVALID``; 404 ``NOT_FOUND``.
``chat``       xAI (the grok CLI's API): ``{"code": "<gRPC-ish text>", "error": "<message>"}``;
               429 for a rate, 403 when the team's credits or spending limit are used up, 400
               "Incorrect API key provided", 404 for a model the team cannot use.
=============  ===============================================================================

Chat completions is spoken by many servers, so a test chooses whose refusal it gets
(``Reply.refuse(kind, shape=...)``, :data:`REFUSAL_SHAPES`) instead of xAI's:

==============  ==============================================================================
``openai``      OpenAI's own chat completions: the same ``{"error": {"message", "type",
                "param", "code"}}`` as ``responses`` above (429 ``rate_limit_exceeded``, 429
                ``insufficient_quota``, 404 ``model_not_found``), which most OpenAI-compatible
                providers copy.
``openrouter``  OpenRouter: ``{"error": {"code": <the HTTP status>, "message", "metadata"}}``
                (a number, not a word); 429 "Rate limit exceeded: ...", 402 when the
                account's credits cannot cover the request, 401 for a bad key, 404 "No
                endpoints found for <model>.".
``vllm``        vLLM's OpenAI-compatible server: ``{"object": "error", "message", "type",
                "param", "code": <status>}`` at the top level; 404 ``NotFoundError`` "The
                model `<model>` does not exist.", 401 for a wrong ``--api-key``; a local
                server has no rate or quota to refuse with (those kinds raise).
==============  ==============================================================================

The shapes and wording follow each provider's published error references; the messages are
abridged. Nothing here is secret or real: keys are shown masked, as the providers do.
"""

from __future__ import annotations

from typing import Any, Literal

RefusalKind = Literal["rate_limit", "quota", "billing", "usage_limit", "auth", "expired", "model"]
RefusalShape = Literal["openai", "openrouter", "vllm"]
REFUSAL_SHAPES: tuple[RefusalShape, ...] = ("openai", "openrouter", "vllm")
REFUSAL_KINDS: tuple[RefusalKind, ...] = (
    "rate_limit",
    "quota",
    "billing",
    "usage_limit",
    "auth",
    "expired",
    "model",
)


def refusal_response(api: str, kind: str, model: str) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` of provider ``api`` (an API, or one of :data:`REFUSAL_SHAPES`)
    refusing ``model`` for ``kind``.

    Raises:
        ValueError: ``kind`` is not one of :data:`REFUSAL_KINDS`.
    """
    if kind not in REFUSAL_KINDS:
        raise ValueError(f"refusal kind {kind!r}: expected one of {REFUSAL_KINDS}")
    if api == "anthropic":
        return _anthropic(kind, model)
    if api == "gemini":
        return _google(kind, model)
    if api == "chat":
        return _xai(kind, model)
    if api == "openrouter":
        return _openrouter(kind, model)
    if api == "vllm":
        return _vllm(kind, model)
    return _openai(kind, model)


def _anthropic(kind: str, model: str) -> tuple[int, dict[str, Any]]:
    table: dict[str, tuple[int, str, str]] = {
        "rate_limit": (
            429,
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests "
            "per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
        ),
        "quota": (
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans "
            "& Billing to upgrade or purchase credits.",
        ),
        "billing": (
            402,
            "billing_error",
            "There is an issue with your billing or payment information.",
        ),
        "usage_limit": (
            429,
            "rate_limit_error",
            "You have reached your usage limit for this billing period.",
        ),
        "auth": (401, "authentication_error", "invalid x-api-key"),
        "expired": (
            401,
            "authentication_error",
            "OAuth token has expired. Please obtain a new token or refresh your existing token.",
        ),
        "model": (404, "not_found_error", f"model: {model}"),
    }
    status, error_type, message = table[kind]
    return status, {"type": "error", "error": {"type": error_type, "message": message}}


def _openai(kind: str, model: str) -> tuple[int, dict[str, Any]]:
    table: dict[str, tuple[int, str, str | None, str]] = {
        "rate_limit": (
            429,
            "requests",
            "rate_limit_exceeded",
            f"Rate limit reached for {model} in organization org-fake on requests per min "
            "(RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
        ),
        "quota": (
            429,
            "insufficient_quota",
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details.",
        ),
        "billing": (
            402,
            "insufficient_quota",
            "billing_hard_limit_reached",
            "Billing hard limit has been reached.",
        ),
        "usage_limit": (
            429,
            "usage_limit_reached",
            None,
            "The usage limit has been reached",
        ),
        "auth": (
            401,
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided: sk-fake***0000. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
        ),
        "expired": (
            401,
            "invalid_request_error",
            "token_expired",
            "Provided authentication token is expired. Please try signing in again.",
        ),
        "model": (
            404,
            "invalid_request_error",
            "model_not_found",
            f"The model `{model}` does not exist or you do not have access to it.",
        ),
    }
    status, error_type, code, message = table[kind]
    return status, {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _quota_failure(quota_id: str) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                "quotaId": quota_id,
            }
        ],
    }


def _google(kind: str, model: str) -> tuple[int, dict[str, Any]]:
    name = model or "gemini-fake"
    exhausted = (
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, head to: https://ai.google.dev/gemini-api/docs/"
        "rate-limits."
    )
    table: dict[str, tuple[int, str, str, list[dict[str, Any]]]] = {
        "rate_limit": (
            429,
            "RESOURCE_EXHAUSTED",
            exhausted,
            [
                _quota_failure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"},
            ],
        ),
        "quota": (
            429,
            "RESOURCE_EXHAUSTED",
            exhausted,
            [_quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier")],
        ),
        "billing": (
            402,
            "FAILED_PRECONDITION",
            "Billing is not enabled for this project, or its billing account is closed.",
            [],
        ),
        "usage_limit": (
            429,
            "RESOURCE_EXHAUSTED",
            exhausted,
            [_quota_failure("GenerateRequestsPerDayPerProjectPerModel")],
        ),
        "auth": (
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        ),
        "expired": (
            400,
            "INVALID_ARGUMENT",
            "API key expired. Please renew the API key.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_EXPIRED",
                    "domain": "googleapis.com",
                }
            ],
        ),
        "model": (
            404,
            "NOT_FOUND",
            f"models/{name} is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their "
            "supported methods.",
            [],
        ),
    }
    status, state, message, details = table[kind]
    error: dict[str, Any] = {"code": status, "message": message, "status": state}
    if details:
        error["details"] = details
    return status, {"error": error}


def _xai(kind: str, model: str) -> tuple[int, dict[str, Any]]:
    table: dict[str, tuple[int, str, str]] = {
        "rate_limit": (
            429,
            "Some resource has been exhausted",
            "Too many requests: your team has exceeded its rate limit of 8 requests per "
            "second. Please retry later.",
        ),
        "quota": (
            403,
            "The caller does not have permission to execute the specified operation",
            "Your team team-fake has either used all available credits or reached its "
            "monthly spending limit. To continue making API requests, please purchase more "
            "credits or raise your spending limit.",
        ),
        "billing": (
            402,
            "Payment required",
            "Your team team-fake has no payment method. Please add one to buy credits.",
        ),
        "usage_limit": (
            429,
            "Some resource has been exhausted",
            "Your team team-fake has reached its monthly spending limit.",
        ),
        "auth": (
            400,
            "Client specified an invalid argument",
            "Incorrect API key provided: sk***00. You can obtain an API key from "
            "https://console.x.ai.",
        ),
        "expired": (
            401,
            "The request does not have valid authentication credentials",
            "The API key has expired or was revoked.",
        ),
        "model": (
            404,
            "Some requested entity was not found",
            f"The model {model} does not exist or your team team-fake does not have access to it.",
        ),
    }
    status, code, message = table[kind]
    return status, {"code": code, "error": message}


def _openrouter(kind: str, model: str) -> tuple[int, dict[str, Any]]:
    table: dict[str, tuple[int, str, dict[str, Any] | None]] = {
        "rate_limit": (
            429,
            f"Rate limit exceeded: free-models-per-min. {model} is temporarily rate-limited "
            "upstream; please retry shortly.",
            {"headers": {"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "0"}},
        ),
        "quota": (
            402,
            "This request requires more credits, or fewer max_tokens. You requested up to "
            "32000 tokens, but can only afford 0. To increase, visit "
            "https://openrouter.ai/settings/credits and add more credits",
            {"limit_source": "openrouter_credits"},
        ),
        "billing": (
            402,
            "Insufficient credits. Add more using https://openrouter.ai/settings/credits",
            {"limit_source": "openrouter_credits"},
        ),
        "usage_limit": (
            402,
            "Key limit exceeded (total limit). Manage it using https://openrouter.ai/settings/keys",
            {"limit_source": "openrouter_key_limit"},
        ),
        "auth": (401, "No auth credentials found", None),
        "expired": (401, "User not found.", None),
        "model": (404, f"No endpoints found for {model}.", None),
    }
    status, message, metadata = table[kind]
    error: dict[str, Any] = {"code": status, "message": message}
    if metadata is not None:
        error["metadata"] = metadata
    return status, {"error": error}


def _vllm(kind: str, model: str) -> tuple[int, dict[str, Any]]:
    if kind in ("auth", "expired"):
        status, error_type, message = 401, "UnauthorizedError", "Unauthorized"
    elif kind == "model":
        status, error_type, message = 404, "NotFoundError", f"The model `{model}` does not exist."
    else:
        raise ValueError(f"refusal kind {kind!r}: vLLM has no rate or quota to refuse with")
    body = {"object": "error", "message": message, "type": error_type, "param": None}
    return status, {**body, "code": status}
