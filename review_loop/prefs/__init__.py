"""What the user chose: reviewer order, skipHost, peer-command aliases, deadlines.

Stored as TOML in the user's state directory (``$REVIEW_LOOP_HOME`` relocates all user
state; otherwise ``$XDG_CONFIG_HOME/review-loop`` or ``~/.config/review-loop``), validated
once at load with errors that name the key, and written atomically.

Every name is imported on first use: ``help`` reads the defaults, and ``prefs show`` the
file, without defining the dataclasses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from review_loop.prefs.defaults import DEFAULT_GRACE_MS, DEFAULT_ORDER, DEFAULT_TIMEOUT_MS
    from review_loop.prefs.home import state_home
    from review_loop.prefs.model import PeerCommand, Prefs
    from review_loop.prefs.store import load_prefs, prefs_path, save_prefs

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


_WHERE = {
    "DEFAULT_GRACE_MS": "defaults",
    "DEFAULT_ORDER": "defaults",
    "DEFAULT_TIMEOUT_MS": "defaults",
    "PeerCommand": "model",
    "Prefs": "model",
    "load_prefs": "store",
    "prefs_path": "store",
    "save_prefs": "store",
    "state_home": "home",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"review_loop.prefs.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'review_loop.prefs' has no attribute {name!r}")
