"""A peer-command alias as the commands that run reviewers read it (see ``prefs/view.py``).

Its own module, loaded on first use through :mod:`review_loop.prefs.view` (import it from
there): only prefs that define an alias, or ``consult --peer-command``, need the class, so
a plain ``consult`` does not pay for defining it (``docs/performance.md``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerCommandView:
    """A peer-command alias: its product and its argv prefix (never a shell string)."""

    product: str
    command: tuple[str, ...]
