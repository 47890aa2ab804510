"""What the user chose: reviewer order, skipHost, peer-command aliases, deadlines.

Stored as TOML in the user's state directory (``$REVIEW_LOOP_HOME`` relocates all user
state; otherwise ``$XDG_CONFIG_HOME/review-loop`` or ``~/.config/review-loop``), validated
once at load with errors that name the key, and written atomically.

The pydantic model (``Prefs``, ``PeerCommand``) is imported on first use: the defaults,
the paths and the file reading are plain Python, so ``help`` and ``prefs show`` start
without pydantic (``docs/startup.md``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from review_loop.prefs.defaults import DEFAULT_GRACE_MS, DEFAULT_ORDER, DEFAULT_TIMEOUT_MS
from review_loop.prefs.store import load_prefs, prefs_path, save_prefs, state_home

if TYPE_CHECKING:
    from review_loop.prefs.model import PeerCommand, Prefs

__all__ = [
    "DEFAULT_GRACE_MS",
    "DEFAULT_ORDER",
    "DEFAULT_TIMEOUT_MS",
    "PeerCommand",
    "Prefs",
    "load_prefs",
    "prefs_path",
    "save_prefs",
    "state_home",
]


def __getattr__(name: str) -> Any:
    if name in ("PeerCommand", "Prefs"):
        return getattr(importlib.import_module("review_loop.prefs.model"), name)
    raise AttributeError(f"module 'review_loop.prefs' has no attribute {name!r}")
