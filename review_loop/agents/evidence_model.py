"""The evidence identity as a pydantic model: the shape stored in packets and ledgers.

Imported through :mod:`review_loop.agents.evidence` (``from review_loop.agents.evidence
import Evidence``); kept apart so that computing and printing evidence needs no pydantic
(``docs/performance.md``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Evidence(BaseModel):
    """A fingerprint of the working tree against a base commit.

    Attributes:
        baseSha: the full sha of the base commit.
        pathFilter: the normalized ``--paths`` filter, or ``None`` for the whole tree.
        digest: sha256 (hex) of the evidence diff text.
        coveredPaths: every changed tracked path and untracked path, normalized.
        sourceRound: the review round this evidence was frozen for, if any.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    baseSha: str
    pathFilter: list[str] | None
    digest: str
    coveredPaths: list[str]
    sourceRound: int | None = None

    def same_snapshot(self, other: Evidence) -> bool:
        """True when both describe the same tree: ``baseSha + pathFilter + digest`` only."""
        return (
            self.baseSha == other.baseSha
            and self.pathFilter == other.pathFilter
            and self.digest == other.digest
        )
