"""Prefs as a plain runtime value, for the commands that run reviewers (no pydantic).

:class:`PrefsView` carries the attributes the dispatcher and the workflows read from
:class:`~review_loop.prefs.model.Prefs` (same names, same values) as a frozen slotted
dataclass (made by :func:`~review_loop.agents.frozen_dataclass.frozen_dataclass`), so
``consult`` can load the user's prefs without building the pydantic model
(``docs/performance.md``). The pydantic model stays the contract: it validates every prefs file
the plain path does not plainly accept, words every error, and is what embedders pass to
``open_dispatcher`` (``Prefs.view()`` / :func:`as_view` turn it into this value).

A view is only ever built from the prefs' JSON form (:meth:`PrefsView.from_document`), the
one conversion both paths share: the plain reader's document
(:func:`review_loop.prefs.plain.plain_prefs`) or the model's ``model_dump(mode="json")``. So
the view of a plainly valid file equals the view of the model that validates it exactly when
their JSON forms are equal, which ``tests/prefs/`` checks. The reading rules (who reviews for
a host, the standard peers, the default reviewer) live once, in :class:`PrefsRules`, which
both the model and the view inherit (``docs/performance.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from review_loop.prefs.defaults import (
    DEFAULT_GRACE_MS,
    DEFAULT_HOST,
    DEFAULT_LIVENESS_MS,
    DEFAULT_ORDER,
    DEFAULT_TIMEOUT_MS,
)

if TYPE_CHECKING:
    from review_loop.prefs.model import Prefs
    from review_loop.prefs.peer_command_view import PeerCommandView as PeerCommandView

__all__ = ["PeerCommandView", "PrefsRules", "PrefsView", "as_view"]


def __getattr__(name: str) -> Any:
    """:class:`PeerCommandView`, defined on first use: only prefs with an alias need it."""
    if name == "PeerCommandView":
        from review_loop.prefs.peer_command_view import PeerCommandView

        globals()[name] = PeerCommandView  # later lookups are plain attribute reads
        return PeerCommandView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PrefsRules:
    """The rules read from ``order`` and ``skipHost``: one implementation for model and view."""

    __slots__ = ()

    if TYPE_CHECKING:  # provided by the subclass (a pydantic field or a dataclass field)
        order: tuple[str, ...]
        skipHost: bool

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


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefsView(PrefsRules):
    """The user's prefs as the commands that run reviewers read them (see ``Prefs``).

    Same attribute names, types and values as :class:`~review_loop.prefs.model.Prefs`,
    except that each ``peerCommands`` entry is a :class:`PeerCommandView`. Build one with
    :meth:`from_document`, :func:`review_loop.prefs.store.load_prefs_view` or
    :func:`as_view`; the constructor does not validate (the value is trusted), and
    ``PrefsView()`` is the defaults, as ``Prefs()``.
    """

    order: tuple[str, ...] = DEFAULT_ORDER
    skipHost: bool = False
    peerCommands: dict[str, PeerCommandView] = field(default_factory=dict)
    timeoutMs: int = DEFAULT_TIMEOUT_MS
    graceMs: int = DEFAULT_GRACE_MS
    livenessMs: int = DEFAULT_LIVENESS_MS
    envPassthrough: tuple[str, ...] = ()
    skillDirs: tuple[str, ...] = ()
    allowUnprotected: bool = False

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> PrefsView:
        """The view of a validated JSON form (``Prefs.model_dump(mode="json")`` or
        :func:`~review_loop.prefs.plain.plain_prefs`); every key must be present.

        Trusted input only: nothing is checked here, the document already was.
        """
        return cls(
            order=tuple(document["order"]),
            skipHost=document["skipHost"],
            peerCommands=_peer_commands(document["peerCommands"]),
            timeoutMs=document["timeoutMs"],
            graceMs=document["graceMs"],
            livenessMs=document["livenessMs"],
            envPassthrough=tuple(document["envPassthrough"]),
            skillDirs=tuple(document["skillDirs"]),
            allowUnprotected=document["allowUnprotected"],
        )

    def with_alias(self, name: str, peer: PeerCommandView) -> PrefsView:
        """These prefs with ``name`` (re)bound to ``peer`` (``consult --peer-command``).

        As ``Prefs.model_copy(update={"peerCommands": {...}})``: the caller has checked
        ``name`` and ``peer`` (a launcher found on PATH, a product among the peers).
        """
        return dataclasses.replace(self, peerCommands={**self.peerCommands, name: peer})


def _peer_commands(entries: Mapping[str, Any]) -> dict[str, PeerCommandView]:
    """Each alias of the JSON form as a :class:`PeerCommandView` (none: no class defined)."""
    if not entries:
        return {}
    from review_loop.prefs.peer_command_view import PeerCommandView

    return {
        name: PeerCommandView(product=entry["product"], command=tuple(entry["command"]))
        for name, entry in entries.items()
    }


def as_view(prefs: Prefs | PrefsView) -> PrefsView:
    """``prefs`` as a :class:`PrefsView`: itself if it is one, else the model's ``view()``."""
    return prefs if isinstance(prefs, PrefsView) else prefs.view()
