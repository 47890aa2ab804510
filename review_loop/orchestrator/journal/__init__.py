"""The append-only journal and its single writer.

- :mod:`.store` — one stream's durable log: flock-ordered, one ``pwrite`` + ``fdatasync``
  per batch, torn or garbage tails moved aside, idempotency keys, sealing by the terminal
  event, a MAC-signed snapshot for O(1) commands.
- :mod:`.dirs` — directories opened no-follow from the repository root; no link followed.
- :mod:`.writer` — ``open_journal()``: a bounded anyio stream feeding the single writer task.
- :mod:`.layout` / :mod:`.runs` — verification runs (the ``spx verification run`` contract).

Submodules are imported on first use, so a CLI command pays only for what it touches.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Appended": "store",
    "Existing": "store",
    "Journal": "writer",
    "JournalClosedError": "writer",
    "JournalMissingError": "store",
    "JournalSealedError": "store",
    "Mutation": "store",
    "Refused": "store",
    "RunLog": "store",
    "Schema": "store",
    "open_journal": "writer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
