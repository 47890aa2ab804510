"""The progress lines a dispatcher hands to its ``progress`` callable, naming their request.

A :class:`ProgressLine` is the line itself (a ``str``: ``[review-loop] reviewer=P status=S
...``, exactly what ``review-loop`` prints on stderr, so a callable written for ``str`` keeps
working) that also says which request it reports on: :attr:`ProgressLine.request` is the
very :class:`~review_loop.orchestrator.dispatcher.PeerRequest` object the caller passed to
``consult`` or ``fan_out`` (compare it with ``is``), and :attr:`ProgressLine.record_dir` is
that request's record directory, unique per call. Two requests to the same reviewer at
once give lines with the same text and different requests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from review_loop.orchestrator.dispatcher import PeerRequest

_FIELDS = re.compile(r"^\[review-loop\] reviewer=(\S+) status=(\S+)")


class ProgressLine(str):
    """One progress line (the text) and the request it reports on.

    Attributes:
        request: the caller's own request object, or ``None`` for a line about no request.
        record_dir: that request's record directory (``reviewer-session.json`` is there).
        peer: the ``reviewer=`` of the line (the peer name or alias being run).
        status: the ``status=`` of the line (``active``, ``answered``, ``timeout``,
            ``fallback``, ``not-started``, ``failed``).
    """

    request: PeerRequest | None
    record_dir: Path | None
    peer: str
    status: str

    def __new__(
        cls, text: str, *, request: PeerRequest | None = None, record_dir: Path | None = None
    ) -> ProgressLine:
        """The line ``text`` about ``request`` (recorded in ``record_dir``)."""
        line = super().__new__(cls, text)
        found = _FIELDS.match(text)
        line.request = request
        line.record_dir = record_dir
        line.peer = found.group(1) if found else ""
        line.status = found.group(2) if found else ""
        return line


__all__ = ["ProgressLine"]
