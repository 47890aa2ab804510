"""The error tree shared by every layer.

Every exception the package raises to a caller is a :class:`ReviewLoopError`, drawn here
with the module that defines it (a class defined in a higher layer is named by its module;
``tests/agents/test_error_tree.py`` fails on one that is missing, or outside the tree)::

    ReviewLoopError                 base of everything this package raises on purpose
    ├── InputError                  bad input from the caller: names the field, the problem,
    │   │                           and what would be accepted (CLI exit 1)
    │   ├── UnknownProductError     a product name no adapter is registered for
    │   └── PrefsError              the prefs file or an env override is invalid
    ├── UsageError                  cli: a command line the parser refused (CLI exit 1)
    ├── NotAGitRepositoryError      --repo is not inside a git checkout (CLI exit 1)
    ├── AdapterRefusalError         an adapter will not build an invocation, e.g. a CLI
    │                               version that cannot run read-only (delivery: NOT_SUBMITTED)
    ├── StateError                  on-disk state is not what the tool wrote (fail closed)
    │   ├── HandoffPathError        files: a path under .review-handoff/ passes through a
    │   │                           symbolic link or ``..`` (also an OSError)
    │   ├── UnsafePathError         journal.dirs: a journal path goes through a link below
    │   │                           its anchor
    │   └── JournalError            journal.store: the journal's own refusals
    │       ├── JournalMissingError     the stream's log does not exist
    │       ├── JournalSealedError      the stream is sealed; it accepts nothing more
    │       ├── JournalCorruptError     the log cannot be healed safely; fail closed
    │       └── JournalClosedError      journal.writer: the writer stopped; not recorded
    ├── StateRecoveryRequiredError  workflows.review_store: the state file exists but cannot
    │                               be read as the tool wrote it
    ├── FormatError                 a text or document is not in the format its reader
    │   │                           accepts (also a ValueError); the workflow that reads it
    │   │                           answers for it, so one that reaches the command line
    │   │                           is a crash (the document names its ``errorType``)
    │   ├── ReviewFormatError       agents.review: a review reply or ledger stage
    │   ├── PacketFormatError       agents.review_packet: a review packet
    │   ├── MalformedReviewError    agents.converge: a blind review's reply
    │   ├── ScenarioError           agents.verify_diff: scenarios that break Step 2's rules
    │   ├── ConcernConfigError      agents.verification_audit: a concern configuration
    │   ├── ConcernReplyError       agents.verification_audit: a concern agent's reply
    │   ├── RegistryError           agents.scope_rules: an artifact registry
    │   └── ScopeSelectorError      agents.verification: a --scope-type/--scope pair
    ├── PayloadRejectedError        agents.verification: a journal payload broke a rule
    │   └── TerminalRejectedError   ``finish`` refused: the status or its metadata
    ├── VerificationError           journal.runs: a verification-run command refused (the
    │                               message is the exact stderr text)
    ├── ScopeResolutionError        scope: the selector cannot be resolved (exit 2)
    │   └── RunReadError            the run named for reconciliation cannot be read
    ├── ScopeInputError             scope: a caller input the resolver refuses (exit 1)
    ├── StaleBaseError              scope: the head does not contain the base tip
    ├── RepoConfigError             repo_config: a repository configuration file unusable
    │                               as it is at the base commit
    ├── GitCommandError             evidence: a git command the evidence needs failed
    ├── RecordingError              recording: a record that must exist could not be written
    ├── LaunchRefusedError          runner: a runner proved the CLI never ran (the
    │                               dispatcher's NOT_SUBMITTED; an embedder's runner raises it)
    ├── InputTooLargeError          input_files: an input past its limit (also an OSError)
    ├── TreeFileRefusedError        tree_files: a file of the reviewed tree refused (a link,
    │                               ``.git``, not regular, too large; also an OSError)
    ├── AuditBlockedError           workflows.audit: the audit stopped (its BLOCKED fields)
    └── OutputLostError             std_streams: stdout did not reach its reader (exit 120)

A class that also derives from ``ValueError`` or ``OSError`` does so because callers catch
it that way. Constructors take structured arguments and format the message themselves, so
every raiser carries the same context and the CLI can render it without parsing strings.
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

    Attributes:
        product: the product refused.
        reason: what makes it unsafe, in words.
        code: the named reason the delivery reports (a
            :class:`~review_loop.agents.refusals.Refusal` such as ``cli_too_old``), or
            ``None`` for the generic ``refused``.
    """

    def __init__(self, product: str, reason: str, *, code: str | None = None) -> None:
        self.product = product
        self.reason = reason
        self.code = code
        super().__init__(f"{product}: {reason}")


class FormatError(ReviewLoopError, ValueError):
    """A text or document is not in the format its reader accepts; the message says where.

    The workflow that reads it turns it into its own answer (a malformed reply, a blocked
    audit); one that reaches the command line is a crash, and its document names the
    ``errorType``.
    """


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
