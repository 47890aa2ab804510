"""The adapter registry: built-ins and third-party adapters through one door.

Built lazily on first use (no import-time side effects). Third-party adapters register
under the entry-point group ``review_loop.adapters``; the entry point may name an adapter
instance, a class, or any zero-argument callable that returns one.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING

from review_loop.agents.errors import UnknownProductError

if TYPE_CHECKING:  # base and the vocabulary: imported when an adapter is loaded
    from review_loop.adapters.base import Adapter

ENTRY_POINT_GROUP = "review_loop.adapters"

# module path -> attribute; imported only when the registry is first built.
BUILTINS: dict[str, str] = {
    "claude": "review_loop.adapters.claude:ADAPTER",
    "codex": "review_loop.adapters.codex:ADAPTER",
    "grok": "review_loop.adapters.grok:ADAPTER",
    "gemini": "review_loop.adapters.gemini:ADAPTER",
    "opencode": "review_loop.adapters.opencode:ADAPTER",
    "qwen": "review_loop.adapters.qwen:ADAPTER",
    # review-loop's own offline stand-in (no key, no network); never picked automatically.
    "simulated": "review_loop.adapters.simulated:ADAPTER",
}
# Products that answer without a model: chosen only by name, never as an automatic fallback.
OFFLINE: frozenset[str] = frozenset({"simulated"})


def _load(target: str) -> Adapter:
    module_name, _, attr = target.partition(":")
    obj = getattr(importlib.import_module(module_name), attr)
    return _as_adapter(obj, target)


def _as_adapter(obj: object, origin: str) -> Adapter:
    from review_loop.adapters.base import Adapter

    if not isinstance(obj, Adapter):
        obj = obj() if callable(obj) else obj
    if not isinstance(obj, Adapter):
        raise TypeError(f"{origin} does not provide a review_loop Adapter")
    return obj


@cache
def _third_party() -> dict[str, str]:
    # importlib.metadata scans every installed distribution: only when a name is not a
    # built-in or the full list is asked for, and once per process.
    from importlib.metadata import entry_points

    found: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.value
    return found


def product_names() -> tuple[str, ...]:
    """Every registered product name, built-ins first, then third-party, each sorted."""
    extra = sorted(set(_third_party()) - set(BUILTINS))
    return (*BUILTINS, *extra)


@cache
def get_adapter(name: str, *, field: str = "product") -> Adapter:
    """The adapter for product ``name``.

    Raises:
        UnknownProductError: no adapter answers to ``name`` (names ``field`` and the
            accepted products).
    """
    if name in BUILTINS:
        return _load(BUILTINS[name])
    third = _third_party()
    if name in third:
        return _load(third[name])
    raise UnknownProductError(field, name, product_names())


def is_product(name: str) -> bool:
    """Whether ``name`` is a registered product."""
    return name in BUILTINS or name in _third_party()


class KnownProducts:
    """Every registered product, checked lazily: built-ins answer without a metadata scan."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and is_product(name)

    def __iter__(self) -> Iterator[str]:
        return iter(product_names())


def known_products() -> KnownProducts:
    """A container of product names for validation (``in`` is cheap for built-ins)."""
    return KnownProducts()
