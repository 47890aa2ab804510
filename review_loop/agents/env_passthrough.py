"""Which variables of the caller's environment may reach a CLI (:class:`EnvPassthrough`).

Its own module, not :mod:`review_loop.agents.models`: every adapter declares one at import,
and ``sessions``, which imports every adapter to read its CLI's store, then loads neither
the run vocabulary nor its seven dataclass definitions (``docs/performance.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from review_loop.agents.constants import ENV_NAME_PATTERN


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvPassthrough:
    """Which variables of the caller's environment may reach a CLI; nothing else does.

    Attributes:
        names: exact variable names (``ANTHROPIC_API_KEY``).
        prefixes: every variable whose name starts with one of these (``LC_``).
    """

    names: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Refuse a name or prefix that is no variable name (``*``, ``A=B``, ``""``).

        Adapters (code, possibly a third party's) and prefs (already checked) supply
        these; the check is kept because a pattern-like word must never widen what reaches
        a CLI (``dataclasses.replace`` runs it too).

        Each field is a tuple (a list is taken as one, as the pydantic model took it). Any
        other value is refused, a ``str`` above all: ``prefixes=""`` has no word to refuse
        yet ``startswith("")`` passes every variable, and ``names="HOME"`` would pass
        ``"H"`` (``in`` on a string is a substring test).

        Raises:
            ValueError: names the field and the offending value or word.
        """
        for label in ("names", "prefixes"):
            words = getattr(self, label)
            if not isinstance(words, tuple | list):
                raise ValueError(
                    f"EnvPassthrough.{label}: {words!r} is not a tuple of variable names"
                )
            for word in words:
                if not isinstance(word, str) or not re.fullmatch(ENV_NAME_PATTERN, word):
                    raise ValueError(
                        f"EnvPassthrough.{label}: {word!r} is not a variable name "
                        f"(accepted: {ENV_NAME_PATTERN})"
                    )
            # a copy: a list changed later changes nothing (frozen, hence object.__setattr__)
            object.__setattr__(self, label, tuple(words))

    def __reduce__(self) -> tuple[object, ...]:
        """Unpickled through the check: a tampered pickle cannot build a refused value."""
        return _env_passthrough, (self.names, self.prefixes)

    def allows(self, name: str) -> bool:
        """Whether ``name`` may pass."""
        return name in self.names or name.startswith(self.prefixes)

    def plus(self, other: EnvPassthrough) -> EnvPassthrough:
        """Both allowances together (order kept, duplicates dropped)."""
        return EnvPassthrough(
            names=tuple(dict.fromkeys((*self.names, *other.names))),
            prefixes=tuple(dict.fromkeys((*self.prefixes, *other.prefixes))),
        )


def _env_passthrough(names: tuple[str, ...], prefixes: tuple[str, ...]) -> EnvPassthrough:
    """Rebuild a pickled :class:`EnvPassthrough` through its check."""
    return EnvPassthrough(names=names, prefixes=prefixes)
