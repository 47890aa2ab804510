"""The prefs model: frozen, validated, with the seed's key names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from review_loop.agents.errors import PrefsError

# The defaults and bounds are plain constants (``help`` reads them without pydantic).
from review_loop.prefs.defaults import (
    ALIAS_RE,
    DEFAULT_GRACE_MS,
    DEFAULT_HOST,
    DEFAULT_LIVENESS_MS,
    DEFAULT_ORDER,
    DEFAULT_TIMEOUT_MS,
    ENV_NAME_RE,
    MAX_TIMEOUT_MS,
    MIN_TIMEOUT_MS,
    TIMEOUT_RANGE,
    is_skill_dir,
)
from review_loop.prefs.view import PrefsRules, PrefsView

__all__ = [
    "ALIAS_RE",
    "DEFAULT_GRACE_MS",
    "DEFAULT_HOST",
    "DEFAULT_LIVENESS_MS",
    "DEFAULT_ORDER",
    "DEFAULT_TIMEOUT_MS",
    "ENV_NAME_RE",
    "MAX_TIMEOUT_MS",
    "MIN_TIMEOUT_MS",
    "TIMEOUT_RANGE",
    "PeerCommand",
    "Prefs",
    "ProductSet",
]


class ProductSet(Protocol):
    """The registered product names: cheap membership, full iteration for messages."""

    def __contains__(self, name: object, /) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...


class PeerCommand(BaseModel):
    """An alias such as ``codex002``: another executable or launcher for a product.

    ``command`` is an argv prefix (never a shell string); the adapter's own flags follow it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    product: str
    command: tuple[str, ...] = Field(min_length=1)

    @field_validator("command")
    @classmethod
    def _no_empty_words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not word for word in value):
            raise ValueError("every word of command must be non-empty")
        return value


class Prefs(BaseModel, PrefsRules):
    """The user's reviewer preferences.

    The rules read from ``order`` and ``skipHost`` (``reviewers_for``, ``standard_peers``,
    ``default_reviewer``) are :class:`~review_loop.prefs.view.PrefsRules`, shared with the
    plain :class:`~review_loop.prefs.view.PrefsView` that :meth:`view` returns.

    Attributes:
        order: reviewer preference order, most preferred first.
        skipHost: drop the host product from ``order`` when picking reviewers.
        peerCommands: alias name -> the product and launcher it stands for.
        timeoutMs: the deadline of one attempt, from 1 s to 1 day.
        graceMs: time between SIGTERM and SIGKILL of a stopped session's process group.
        livenessMs: interval of the ``status=active`` line on stderr.
        envPassthrough: names of the user's environment variables that reviewers get
            besides what their product needs (exact names, e.g. ``AWS_PROFILE``).
        skillDirs: more directories where ``preflight`` looks for the skills the
            task-completion loop needs (``<dir>/<skill>/SKILL.md``), after the host's own.
        allowUnprotected: where no private mount namespace can be made, run reviewers
            anyway, able to read your secret stores and review-loop's state (default:
            refuse them, ``NOT_SUBMITTED``; ``docs/reviewer-lockdown.md``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    order: tuple[str, ...] = DEFAULT_ORDER
    skipHost: bool = False
    peerCommands: dict[str, PeerCommand] = Field(default_factory=dict)
    timeoutMs: int = Field(default=DEFAULT_TIMEOUT_MS, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS)
    graceMs: int = Field(default=DEFAULT_GRACE_MS, ge=0, le=MAX_TIMEOUT_MS)
    livenessMs: int = Field(default=DEFAULT_LIVENESS_MS, gt=0, le=MAX_TIMEOUT_MS)
    envPassthrough: tuple[str, ...] = ()
    skillDirs: tuple[str, ...] = ()
    allowUnprotected: bool = False

    @field_validator("skillDirs")
    @classmethod
    def _skill_dirs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if not is_skill_dir(entry):
                raise ValueError(
                    f"{entry!r} is not an absolute directory (accepted: /path or ~/path)"
                )
        return value

    @field_validator("envPassthrough")
    @classmethod
    def _env_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not ENV_NAME_RE.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not an environment variable name "
                    f"(exact names matching {ENV_NAME_RE.pattern}; no patterns)"
                )
        if len(set(value)) != len(value):
            raise ValueError("envPassthrough must not repeat a name")
        return value

    @field_validator("order")
    @classmethod
    def _order_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("order must name at least one product")
        if len(set(value)) != len(value):
            raise ValueError("order must not repeat a product")
        return value

    @field_validator("peerCommands")
    @classmethod
    def _alias_names(cls, value: dict[str, PeerCommand]) -> dict[str, PeerCommand]:
        for name in value:
            if not ALIAS_RE.match(name):
                raise ValueError(f"alias {name!r} must match {ALIAS_RE.pattern}")
        return value

    def check_products(self, known: ProductSet, *, source: str) -> Prefs:
        """Refuse product names no adapter answers to; returns ``self``."""

        def accepted() -> str:
            return ", ".join(sorted(known))

        for index, product in enumerate(self.order):
            if product not in known:
                raise PrefsError(
                    f"{source}: order[{index}]", f"unknown product {product!r}", accepted()
                )
        for alias, peer in self.peerCommands.items():
            if peer.product not in known:
                raise PrefsError(
                    f"{source}: peerCommands.{alias}.product",
                    f"unknown product {peer.product!r}",
                    accepted(),
                )
            if alias in known:
                raise PrefsError(
                    f"{source}: peerCommands.{alias}",
                    "an alias must not shadow a product name",
                    "a new name such as codex002",
                )
        return self

    def view(self) -> PrefsView:
        """These prefs as the plain runtime value the dispatcher and workflows read.

        Built from this model's JSON form, the one conversion the plain reading path shares
        (:meth:`PrefsView.from_document`), so both give equal views of equal prefs.
        """
        return PrefsView.from_document(self.model_dump(mode="json"))
