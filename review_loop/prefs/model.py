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


class Prefs(BaseModel):
    """The user's reviewer preferences.

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

    def reviewers_for(self, host: str | None, *, skip_host: bool | None = None) -> list[str]:
        """The order with the host removed when skipping it (``skip_host`` overrides prefs)."""
        skip = self.skipHost if skip_host is None else skip_host
        return [p for p in self.order if not (skip and host is not None and p == host)]

    def standard_peers(self, host: str | None) -> frozenset[str]:
        """The products that are Peer A or Peer B for ``host`` (or could be, host unknown).

        The seed's peers are the first two of the order without the host. Without a host,
        any of the first three may be the host or one of its peers, so all three count:
        a product that may be the other peer's is never a safe substitute.
        """
        if host is None:
            return frozenset(self.order[:3])
        return frozenset(self.reviewers_for(host, skip_host=True)[:2])

    def default_reviewer(self, host: str | None = None) -> str:
        """The reviewer ``run`` uses when none is named: the first of the order without the host.

        ``host`` is the product whose work is reviewed; unnamed, it is :data:`DEFAULT_HOST`,
        the product the review skills run in. A review by the host's own product is no
        independent review, so the host is dropped whatever ``skipHost`` says (an order
        naming only the host keeps it). Under the default order this is ``codex``, the
        original tool's default reviewer.
        """
        skipped = host or DEFAULT_HOST
        return next((p for p in self.order if p != skipped), self.order[0])
