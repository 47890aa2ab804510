"""Plain constants several layers share, importable without pydantic.

``help`` and ``prefs show`` read these and nothing heavier (``docs/performance.md``); the
modules that define the shapes import them from here.
"""

from __future__ import annotations

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""What an environment variable name may look like (POSIX portable names)."""

DEFAULT_ROUNDS = 3
"""Review rounds a ``run`` may use unless ``--rounds`` says otherwise (as the original)."""

SESSION_FILE = "reviewer-session.json"
"""The file name of a session record (``SessionRecord``) in its record directory."""
