"""Product adapters: pure translators between requests and each CLI (see ``base``).

Names are imported on first use: the registry (``get_adapter``, ``known_products``...) is
cheap, while ``base`` loads the vocabulary of :mod:`review_loop.agents.models` and every
adapter's parsing, which ``help`` and ``prefs`` never need (``docs/performance.md``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from review_loop.adapters.base import Adapter, SessionFile, SessionStore
    from review_loop.adapters.registry import (
        get_adapter,
        is_product,
        known_products,
        product_names,
    )

__all__ = [
    "Adapter",
    "SessionFile",
    "SessionStore",
    "get_adapter",
    "is_product",
    "known_products",
    "product_names",
]

_WHERE = {
    "Adapter": "review_loop.adapters.base",
    "SessionFile": "review_loop.adapters.base",
    "SessionStore": "review_loop.adapters.base",
    "get_adapter": "review_loop.adapters.registry",
    "is_product": "review_loop.adapters.registry",
    "known_products": "review_loop.adapters.registry",
    "product_names": "review_loop.adapters.registry",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'review_loop.adapters' has no attribute {name!r}")
