"""``resumeReadOnly``: one session's resume commands with the read-only flags it ran with.

Shared by ``sessions`` (every listed session) and ``consult`` (the session that answered).
Its own module so that ``consult`` prints it without importing the session listing
(``orchestrator.sessions`` and its record reader: ``docs/performance.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from review_loop.agents.listing_vocabulary import ResumeCommands


def read_only_resume(product: str, commands: ResumeCommands) -> dict[str, str | None]:
    """``resumeReadOnly``: the resume commands with the adapter's read-only flags.

    ``{interactive, headless, unavailable}``; when the adapter gives none (the CLI has no
    read-only mode, or a third-party adapter does not say), both commands are ``None`` and
    ``unavailable`` says why: never a writable command in their place.
    """
    read_only = commands.read_only
    if read_only is None:
        return {
            "interactive": None,
            "headless": None,
            "unavailable": f"the {product} adapter gives no read-only resume command; "
            "the commands under resume run without review-loop's read-only flags",
        }
    # ReadOnlyResume's fields in order, as its _asdict() gives them (a test holds the two
    # equal), written out: sessions builds one per listed session
    return {
        "interactive": read_only.interactive,
        "headless": read_only.headless,
        "unavailable": read_only.unavailable,
    }
