"""What the user chose: reviewer order, skipHost, peer-command aliases, deadlines.

Stored as TOML in the user's state directory (``$REVIEW_LOOP_HOME`` relocates all user
state; otherwise ``$XDG_CONFIG_HOME/review-loop`` or ``~/.config/review-loop``), validated
once at load with errors that name the key, and written atomically.
"""

from review_loop.prefs.model import (
    DEFAULT_GRACE_MS,
    DEFAULT_ORDER,
    DEFAULT_TIMEOUT_MS,
    PeerCommand,
    Prefs,
)
from review_loop.prefs.store import load_prefs, prefs_path, save_prefs, state_home

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
