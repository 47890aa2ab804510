"""The vocabulary every layer speaks: requests, invocations, finished processes, outcomes.

These are pure data, immutable once built. Building or reading them performs no I/O, so
adapters can be tested without spawning anything and the orchestrator can journal them.
They are built by this code base alone (the adapters, the process layer, the dispatcher),
never from untrusted input, so they are not validated at run time: ``mypy --strict`` is
their check, and importing them costs no pydantic (``docs/performance.md``).

Two kinds, by what is done with them (``docs/performance.md``):

- **The run vocabulary** (:class:`AgentRequest`, :class:`Capabilities`,
  :class:`Invocation`, :class:`Completed`, :class:`Usage`, :class:`Reply`,
  :class:`Failure`, :data:`Outcome`): frozen, slotted, keyword-only stdlib dataclasses,
  because the run path changes them with ``dataclasses.replace`` and pydantic validates and
  describes ``Reply`` and ``Usage`` inside the public ``Delivery``. They live in
  :mod:`review_loop.agents.run_vocabulary` and are loaded from there on first use (module
  ``__getattr__``): ``sessions`` runs no CLI, so it neither defines them nor imports
  :mod:`dataclasses` (with :mod:`inspect`), about a tenth of its start-up.
- **The listing vocabulary** (:class:`StoredSession`, :class:`ResumeCommands`,
  :class:`ReadOnlyResume`): built by an adapter, read by ``sessions``, never changed and
  never described by pydantic: ``typing.NamedTuple``s, a tenth of a dataclass's cost to
  define. :class:`EnvPassthrough`, which every adapter declares at import and which checks
  its words, is a small hand-written frozen class.
"""

from __future__ import annotations

import importlib
import re
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from review_loop.agents.constants import ENV_NAME_PATTERN as ENV_NAME_PATTERN

if TYPE_CHECKING:
    from review_loop.agents.run_vocabulary import AgentRequest as AgentRequest
    from review_loop.agents.run_vocabulary import Capabilities as Capabilities
    from review_loop.agents.run_vocabulary import Completed as Completed
    from review_loop.agents.run_vocabulary import Failure as Failure
    from review_loop.agents.run_vocabulary import Invocation as Invocation
    from review_loop.agents.run_vocabulary import Outcome as Outcome
    from review_loop.agents.run_vocabulary import Reply as Reply
    from review_loop.agents.run_vocabulary import Usage as Usage

_ENV_NAME = re.compile(ENV_NAME_PATTERN)

_RUN_VOCABULARY = frozenset(
    {
        "AgentRequest",
        "Capabilities",
        "Completed",
        "Failure",
        "Invocation",
        "Outcome",
        "Reply",
        "Usage",
    }
)


def __getattr__(name: str) -> Any:
    """The run vocabulary, defined on first use (see the module's docstring)."""
    if name in _RUN_VOCABULARY:
        value = getattr(importlib.import_module("review_loop.agents.run_vocabulary"), name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DeliveryState(StrEnum):
    """What we can prove about whether a request reached the model.

    - ``DELIVERED``: a reply was parsed.
    - ``NOT_SUBMITTED``: proven that nothing left this machine (executable missing,
      STOP before spawn, the CLI refused its arguments or credentials up front).
      Only this state may be retried, once, with the same parameters.
    - ``DELIVERY_UNKNOWN``: everything else (timeout, killed, crash mid-run, empty or
      unparseable output). Never silently re-sent to the same product.
    """

    DELIVERED = "DELIVERED"
    NOT_SUBMITTED = "NOT_SUBMITTED"
    DELIVERY_UNKNOWN = "DELIVERY_UNKNOWN"


class EnvPassthrough:
    """Which variables of the caller's environment may reach a CLI; nothing else does.

    Built with keywords only (``EnvPassthrough(names=(...), prefixes=(...))``); immutable,
    compared and hashed by value, like the frozen dataclass it was. Hand-written rather
    than a dataclass because every adapter builds one at import (``sessions`` then needs no
    :mod:`dataclasses`), and not a ``NamedTuple`` because its check must not be bypassable
    (``NamedTuple._make``/``_replace`` skip any ``__new__``).

    Attributes:
        names: exact variable names (``ANTHROPIC_API_KEY``).
        prefixes: every variable whose name starts with one of these (``LC_``).
    """

    __slots__ = ("names", "prefixes")

    names: tuple[str, ...]
    prefixes: tuple[str, ...]

    def __init__(self, *, names: tuple[str, ...] = (), prefixes: tuple[str, ...] = ()) -> None:
        """Refuse a name or prefix that is no variable name (``*``, ``A=B``, ``""``).

        Adapters (code, possibly a third party's) and prefs (already checked) supply
        these; the check is kept because it is cheap (one precompiled pattern) and a
        pattern-like word must never widen what reaches a CLI.

        Each field is a tuple (a list is taken as one, as the pydantic model took it). Any
        other value is refused, a ``str`` above all: ``prefixes=""`` has no word to refuse
        yet ``startswith("")`` passes every variable, and ``names="HOME"`` would pass
        ``"H"`` (``in`` on a string is a substring test).

        Raises:
            ValueError: names the field and the offending value or word.
        """
        checked = []
        for label, words in (("names", names), ("prefixes", prefixes)):
            if not isinstance(words, tuple | list):
                raise ValueError(
                    f"EnvPassthrough.{label}: {words!r} is not a tuple of variable names"
                )
            for word in words:
                if not isinstance(word, str) or not _ENV_NAME.fullmatch(word):
                    raise ValueError(
                        f"EnvPassthrough.{label}: {word!r} is not a variable name "
                        f"(accepted: {ENV_NAME_PATTERN})"
                    )
            checked.append(tuple(words))  # a copy: a list changed later changes nothing
        object.__setattr__(self, "names", checked[0])
        object.__setattr__(self, "prefixes", checked[1])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: EnvPassthrough is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: EnvPassthrough is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not EnvPassthrough:
            return NotImplemented
        return (self.names, self.prefixes) == (other.names, other.prefixes)

    def __hash__(self) -> int:
        return hash((self.names, self.prefixes))

    def __repr__(self) -> str:
        return f"EnvPassthrough(names={self.names!r}, prefixes={self.prefixes!r})"

    def __reduce__(self) -> tuple[Any, ...]:
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


class StoredSession(NamedTuple):
    """A resumable session found in a CLI's own store or in our records.

    Built with keywords; a change is ``session._replace(updated=...)``.
    """

    product: str
    session_id: str
    cwd: str | None
    updated: str
    """ISO-8601 UTC time of the last activity."""
    source: str
    title: str | None = None


class ReadOnlyResume(NamedTuple):
    """Resume commands that keep the read-only flags review-loop ran the session with.

    ``unavailable`` says why there is none (the CLI has no read-only mode, or the adapter
    does not say how); both commands are then ``None``, never a writable stand-in.
    """

    interactive: str | None
    headless: str | None
    unavailable: str | None = None


class ResumeCommands(NamedTuple):
    """Copy-ready commands that resume a session: interactively and headless.

    ``interactive``/``headless`` are the bare commands the original tool printed (no
    read-only flags); ``read_only`` the same with the adapter's read-only flags, ``None``
    from an adapter that does not give them.
    """

    interactive: str | None
    headless: str | None
    read_only: ReadOnlyResume | None = None
