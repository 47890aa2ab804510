"""The environment a reviewer CLI gets: an allow-list, never the caller's whole environment.

A reviewer is trusted to answer, not to behave (docs/design.md, "Trust boundaries"), so it gets
the least environment that lets it start and authenticate. The variables of the caller's
environment that pass are, and nothing else:

1. :data:`BASICS`, product-neutral: PATH, HOME, user and shell names, temp dirs, locale,
   terminal basics, XDG base directories, proxies and CA bundles;
2. what the product's adapter declares (``Adapter.env_passthrough``: its auth and config
   variables), carried by the invocation (``Invocation.pass_env``);
3. what the user adds: the ``envPassthrough`` prefs key (persistent) and the names listed
   in ``REVIEW_LOOP_ENV_PASSTHROUGH`` (comma- or space-separated) of the caller's own
   environment, for one caller or one run. Both take exact names only: no pattern, no
   prefix, no "everything".

Then ``Invocation.unset_env`` is removed, ``Invocation.env`` is set on top, and the run's
marker variable is set last, so no passed-through value can replace it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from review_loop.agents.models import ENV_NAME_PATTERN, EnvPassthrough, Invocation

PASSTHROUGH_ENV = "REVIEW_LOOP_ENV_PASSTHROUGH"
"""The caller's per-run addition: names of its own variables that may reach reviewers."""

_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")

BASICS = EnvPassthrough(
    names=(
        # what any program needs to start and find its files
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TMPDIR",
        "TMP",
        "TEMP",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        # locale and terminal basics
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "COLUMNS",
        "LINES",
        # the network as the user configured it: proxies and CA bundles
        *_PROXIES,
        *(name.lower() for name in _PROXIES),
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
    ),
    prefixes=("LC_",),
)
"""Product-neutral variables every reviewer gets when the caller has them."""

_SEPARATORS = re.compile(r"[\s,]+")
_NAME = re.compile(ENV_NAME_PATTERN)


def caller_names(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The names listed in ``REVIEW_LOOP_ENV_PASSTHROUGH``: exact names, never patterns.

    A word that is not a variable name (``*``, ``A=B``) could match nothing, so it is
    left out rather than failing a run that has already started.
    """
    words = _SEPARATORS.split(environ.get(PASSTHROUGH_ENV, ""))
    return tuple(word for word in words if _NAME.fullmatch(word))


def reviewer_passthrough(declared: EnvPassthrough, user_names: Iterable[str]) -> EnvPassthrough:
    """What an adapter declares plus the names the user added in prefs (``envPassthrough``)."""
    return declared.plus(EnvPassthrough(names=tuple(user_names)))


def child_environment(
    invocation: Invocation,
    fixed: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of the process that runs ``invocation``.

    Args:
        invocation: its ``pass_env`` says what of ``environ`` may pass besides
            :data:`BASICS`; ``unset_env`` is dropped; ``env`` is set on top.
        fixed: variables the orchestrator sets last (the run's marker), overriding all.
        environ: the caller's environment (default: ``os.environ``).
    """
    source = os.environ if environ is None else environ
    allowed = BASICS.plus(invocation.pass_env).plus(EnvPassthrough(names=caller_names(source)))
    dropped = set(invocation.unset_env)
    env = {
        name: value
        for name, value in source.items()
        if allowed.allows(name) and name not in dropped
    }
    env.update(invocation.env)
    env.update(fixed)
    return env
