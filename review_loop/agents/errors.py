"""The error tree shared by every layer.

::

    ReviewLoopError                 base of everything this package raises on purpose
    ├── InputError                  bad input from the caller: names the field, the problem,
    │                               and what would be accepted (CLI exit 1)
    │   ├── UnknownProductError     a product name no adapter is registered for
    │   └── PrefsError              the prefs file or an env override is invalid
    ├── NotAGitRepositoryError      --repo is not inside a git checkout (CLI exit 1)
    ├── AdapterRefusalError         an adapter will not build an invocation, e.g. a CLI
    │                               version that cannot run read-only (delivery: NOT_SUBMITTED)
    └── StateError                  on-disk state is not what the tool wrote (fail closed)

Constructors take structured arguments and format the message themselves, so every
raiser carries the same context and the CLI can render it without parsing strings.
"""

from __future__ import annotations

from collections.abc import Iterable


class ReviewLoopError(Exception):
    """Base class for every error this package raises on purpose."""


class InputError(ReviewLoopError):
    """The caller gave a value we cannot use.

    Attributes:
        field: the flag, key or argument that was wrong (``--peer``, ``prefs.order[1]``).
        problem: what was wrong with it.
        accepted: what would have been accepted, in words.
    """

    def __init__(self, field: str, problem: str, accepted: str | None = None) -> None:
        self.field = field
        self.problem = problem
        self.accepted = accepted
        message = f"{field}: {problem}"
        if accepted:
            message += f" (accepted: {accepted})"
        super().__init__(message)


class UnknownProductError(InputError):
    """A product name that no registered adapter answers to."""

    def __init__(self, field: str, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = tuple(sorted(known))
        super().__init__(field, f"unknown product {name!r}", ", ".join(self.known))


class PrefsError(InputError):
    """The prefs file or an environment override failed validation."""


class NotAGitRepositoryError(ReviewLoopError):
    """The path given as the repository is not inside a git checkout."""

    def __init__(self, path: str, detail: str = "") -> None:
        self.path = path
        msg = f"--repo: {path!r} is not inside a git checkout"
        if detail:
            msg += f" ({detail.strip()})"
        super().__init__(msg + " (accepted: a directory inside a git work tree)")


class AdapterRefusalError(ReviewLoopError):
    """An adapter refuses to build an invocation it cannot make safe.

    Raised before anything is spawned, so the request was provably not submitted.
    """

    def __init__(self, product: str, reason: str) -> None:
        self.product = product
        self.reason = reason
        super().__init__(f"{product}: {reason}")


class StateError(ReviewLoopError):
    """On-disk state differs from what this tool wrote; the command fails closed.

    Attributes:
        code: the machine-readable code (``PACKET_LOCK_HELD``).
        hint: what a person can do about it, when there is something (the command line
            prints it as the document's ``hint``).
    """

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        self.code = code
        self.hint = hint
        super().__init__(f"{code}: {message}")
