"""Where all user state lives: the one rule, importable at no cost (no pydantic, no ``re``,
no ``tomllib``). The state secret, the prefs file, the pending answers and the user's
registries all find their directory through :func:`state_home`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

HOME_ENV = "REVIEW_LOOP_HOME"


def state_home(env: Mapping[str, str] | None = None) -> Path:
    """The directory for all user state: ``$REVIEW_LOOP_HOME`` or the XDG config dir."""
    env = os.environ if env is None else env
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "review-loop"
