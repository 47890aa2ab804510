"""What the user chose: reviewer order, skipHost, peer-command aliases, deadlines.

Stored as TOML in the user's state directory (``$REVIEW_LOOP_HOME`` relocates all user
state; otherwise ``$XDG_CONFIG_HOME/review-loop`` or ``~/.config/review-loop``), validated
once at load with errors that name the key, and written atomically.

Every name is imported on first use: the defaults, the paths and the file reading are plain
Python and the pydantic model (``Prefs``, ``PeerCommand``) is built only when asked for, so
``help`` and ``prefs show`` start without pydantic (``docs/performance.md``). The commands that
run reviewers read the plain runtime value ``PrefsView`` (``load_prefs_view``; ``as_view``
or ``Prefs.view()`` for a model an embedder passes), which falls back to the model only for
a file that is not plainly valid.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from review_loop.prefs.defaults import DEFAULT_GRACE_MS, DEFAULT_ORDER, DEFAULT_TIMEOUT_MS
    from review_loop.prefs.home import state_home
    from review_loop.prefs.model import PeerCommand, Prefs
    from review_loop.prefs.store import load_prefs, load_prefs_view, prefs_path, save_prefs
    from review_loop.prefs.view import PeerCommandView, PrefsView, as_view

__all__ = [
    "DEFAULT_GRACE_MS",
    "DEFAULT_ORDER",
    "DEFAULT_TIMEOUT_MS",
    "PeerCommand",
    "PeerCommandView",
    "Prefs",
    "PrefsView",
    "as_view",
    "load_prefs",
    "load_prefs_view",
    "prefs_path",
    "save_prefs",
    "state_home",
]


_WHERE = {
    "DEFAULT_GRACE_MS": "defaults",
    "DEFAULT_ORDER": "defaults",
    "DEFAULT_TIMEOUT_MS": "defaults",
    "PeerCommand": "model",
    "PeerCommandView": "view",
    "Prefs": "model",
    "PrefsView": "view",
    "as_view": "view",
    "load_prefs": "store",
    "load_prefs_view": "store",
    "prefs_path": "store",
    "save_prefs": "store",
    "state_home": "home",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"review_loop.prefs.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'review_loop.prefs' has no attribute {name!r}")
