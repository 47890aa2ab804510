"""The prefs: one frozen dataclass with the seed's key names, and the rules read from it.

Every :class:`Prefs` is checked by the one reader (:func:`review_loop.prefs.document.checked`)
when it is made, whoever makes it: :func:`~review_loop.prefs.store.load_prefs` from the
user's file, :meth:`Prefs.validate` from a mapping, or the constructor field by field.
The product names are checked where the registry is known (``load_prefs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from review_loop.agents.errors import PrefsError
from review_loop.prefs.defaults import (
    DEFAULT_GRACE_MS,
    DEFAULT_HOST,
    DEFAULT_LIVENESS_MS,
    DEFAULT_ORDER,
    DEFAULT_STALL_MS,
    DEFAULT_TIMEOUT_MS,
)
from review_loop.prefs.document import KEYS, ProductSet, checked

__all__ = ["PeerCommand", "Prefs", "ProductSet"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerCommand:
    """An alias such as ``codex002``: another executable or launcher for a product.

    ``command`` is an argv prefix (never a shell string); the adapter's own flags follow it.
    """

    product: str
    command: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prefs:
    """The user's reviewer preferences.

    Attributes:
        order: reviewer preference order, most preferred first.
        skipHost: drop the host product from ``order`` when picking reviewers.
        peerCommands: alias name -> the product and launcher it stands for.
        timeoutMs: the deadline of one attempt, from 1 s to 1 day.
        graceMs: time between SIGTERM and SIGKILL of a stopped session's process group.
        livenessMs: interval of the ``status=active`` line on stderr.
        stallMs: end a reviewer that showed no sign of life (no output, no CPU time in its
            process tree) for this long, as ``stalled``; 0 (the default) is off.
        envPassthrough: names of the user's environment variables that reviewers get
            besides what their product needs (exact names, e.g. ``AWS_PROFILE``).
        skillDirs: more directories where ``preflight`` looks for the skills the
            task-completion loop needs (``<dir>/<skill>/SKILL.md``), after the host's own.
        allowUnprotected: where no private mount namespace can be made, run reviewers
            anyway, able to read your secret stores and review-loop's state (default:
            refuse them, ``NOT_SUBMITTED``; ``docs/reviewer-lockdown.md``).
    """

    order: tuple[str, ...] = DEFAULT_ORDER
    skipHost: bool = False
    peerCommands: dict[str, PeerCommand] = field(default_factory=dict)
    timeoutMs: int = DEFAULT_TIMEOUT_MS
    graceMs: int = DEFAULT_GRACE_MS
    livenessMs: int = DEFAULT_LIVENESS_MS
    stallMs: int = DEFAULT_STALL_MS
    envPassthrough: tuple[str, ...] = ()
    skillDirs: tuple[str, ...] = ()
    allowUnprotected: bool = False

    def __post_init__(self) -> None:
        """Check every field as the file's reader does (raises ``PrefsError``); the
        deadline may be any positive number of milliseconds (``REVIEW_LOOP_TIMEOUT_MS``
        takes any, as the original), the file's range is the file reader's."""
        form = self.document()
        deadline = form.pop("timeoutMs")
        if isinstance(deadline, bool) or not isinstance(deadline, int) or deadline < 1:
            raise PrefsError(
                "Prefs: timeoutMs", f"{deadline!r} is not a deadline", "a positive integer of ms"
            )
        checked(form, source="Prefs", known=None)

    @classmethod
    def validate(
        cls, data: Mapping[str, Any], *, source: str = "prefs", known: ProductSet | None = None
    ) -> Prefs:
        """Prefs from a mapping in the file's shape (missing keys: the defaults).

        ``peerCommands`` entries may be tables or :class:`PeerCommand`\\ s. With ``known``,
        the product names are checked too.

        Raises:
            PrefsError: names ``source``, the key, what was wrong and what is accepted.
        """
        aliases = data.get("peerCommands")
        if isinstance(aliases, Mapping):
            data = {**data, "peerCommands": {k: _table(v) for k, v in aliases.items()}}
        return cls.from_document(checked(data, source=source, known=known))

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Prefs:
        """The prefs of a checked JSON form (:func:`~review_loop.prefs.document.checked`)."""
        return cls(
            order=tuple(document["order"]),
            skipHost=document["skipHost"],
            peerCommands={
                name: PeerCommand(product=entry["product"], command=tuple(entry["command"]))
                for name, entry in document["peerCommands"].items()
            },
            timeoutMs=document["timeoutMs"],
            graceMs=document["graceMs"],
            livenessMs=document["livenessMs"],
            stallMs=document["stallMs"],
            envPassthrough=tuple(document["envPassthrough"]),
            skillDirs=tuple(document["skillDirs"]),
            allowUnprotected=document["allowUnprotected"],
        )

    def document(self) -> dict[str, Any]:
        """The JSON form, as the prefs file holds it and ``prefs show`` prints it."""
        form: dict[str, Any] = {key: getattr(self, key) for key in KEYS}
        for key in ("order", "envPassthrough", "skillDirs"):
            form[key] = list(form[key])
        form["peerCommands"] = {name: _table(peer) for name, peer in self.peerCommands.items()}
        return form

    def with_alias(self, name: str, peer: PeerCommand) -> Prefs:
        """These prefs with ``name`` (re)bound to ``peer`` (``consult --peer-command``)."""
        return dataclasses.replace(self, peerCommands={**self.peerCommands, name: peer})

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

        ``host`` is the product whose work is reviewed; unnamed, it is ``DEFAULT_HOST``,
        the product the review skills run in. A review by the host's own product is no
        independent review, so the host is dropped whatever ``skipHost`` says (an order
        naming only the host keeps it). Under the default order this is ``codex``, the
        original tool's default reviewer.
        """
        skipped = host or DEFAULT_HOST
        return next((p for p in self.order if p != skipped), self.order[0])


def _table(entry: Any) -> Any:
    """A :class:`PeerCommand` as its table (anything else as it is, for the reader)."""
    if isinstance(entry, PeerCommand):
        return {"product": entry.product, "command": list(entry.command)}
    return entry
