"""review-loop: put work in front of independent AI reviewer CLIs, read-only, in parallel.

The embedding API (works under asyncio and trio)::

    from review_loop import PeerRequest, open_dispatcher

    async with open_dispatcher(repo="path/to/checkout") as dispatcher:  # the user's prefs
        delivery = await dispatcher.consult(PeerRequest(peer="codex", prompt=text))

``repo`` (a ``str`` or a ``Path``) must be an existing git checkout; each call's records go
to a new directory under ``.review-handoff/runtime/embedded/`` (excluded from git), where
``review-loop sessions`` lists them. Bad input raises :class:`InputError` before anything
starts. Diagnostics go through the standard ``logging`` module (logger ``review_loop``), as
the host program configures it. ``--peer simulated`` answers offline (no key).
See ``docs/embedding.md``.

Names are imported lazily so that ``review-loop`` commands pay only for what they use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from review_loop.agents.errors import InputError, ReviewLoopError
    from review_loop.agents.models import DeliveryState, Reply, Usage
    from review_loop.agents.outcomes import Attempt, Delivery, Fallback, RecordError, SessionRecord
    from review_loop.orchestrator.dispatcher import (
        Dispatcher,
        PeerRequest,
        ProgressLine,
        open_dispatcher,
    )
    from review_loop.prefs import Prefs

__all__ = [
    "Attempt",
    "Delivery",
    "DeliveryState",
    "Dispatcher",
    "Fallback",
    "InputError",
    "PeerRequest",
    "Prefs",
    "ProgressLine",
    "RecordError",
    "Reply",
    "ReviewLoopError",
    "SessionRecord",
    "Usage",
    "load_prefs",
    "open_dispatcher",
]

_WHERE = {
    "Attempt": "review_loop.agents.outcomes",
    "Delivery": "review_loop.agents.outcomes",
    "DeliveryState": "review_loop.agents.models",
    "Dispatcher": "review_loop.orchestrator.dispatcher",
    "Fallback": "review_loop.agents.outcomes",
    "InputError": "review_loop.agents.errors",
    "PeerRequest": "review_loop.orchestrator.dispatcher",
    "Prefs": "review_loop.prefs",
    "ProgressLine": "review_loop.orchestrator.dispatcher",
    "RecordError": "review_loop.agents.outcomes",
    "Reply": "review_loop.agents.models",
    "ReviewLoopError": "review_loop.agents.errors",
    "SessionRecord": "review_loop.agents.outcomes",
    "Usage": "review_loop.agents.models",
    "open_dispatcher": "review_loop.orchestrator.dispatcher",
}


def load_prefs() -> Prefs:
    """The user's prefs (``$REVIEW_LOOP_HOME/prefs.toml``), validated against the adapters."""
    from review_loop.adapters import known_products
    from review_loop.prefs import load_prefs as _load

    return _load(known_products())


def __dir__() -> list[str]:
    """The public API (``dir(review_loop)``), not this module's import machinery."""
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'review_loop' has no attribute {name!r}")
