"""The original ``review-loop``'s session record, as ``sessions`` still lists it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class OriginalRecord(BaseModel):
    """``reviewer-session.json`` as the original ``review-loop`` writes it.

    The original writes a record only after a call succeeded, so one is resumable.
    """

    model_config = ConfigDict(extra="ignore", defer_build=True)

    product: str
    sessionId: str
    updated: str
