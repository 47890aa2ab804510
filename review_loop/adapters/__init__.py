"""Product adapters: pure translators between requests and each CLI (see ``base``)."""

from review_loop.adapters.base import Adapter, SessionFile, SessionStore
from review_loop.adapters.registry import get_adapter, is_product, known_products, product_names

__all__ = [
    "Adapter",
    "SessionFile",
    "SessionStore",
    "get_adapter",
    "is_product",
    "known_products",
    "product_names",
]
