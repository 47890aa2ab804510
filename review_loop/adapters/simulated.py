"""The simulated reviewer (``--peer simulated``): review-loop's own offline stand-in CLI.

A product like the others, registered through the same registry door, launched through the
same process layer: ``<python> -I -B -m review_loop.simulated [--resume ID]`` with the prompt
on stdin, one JSON line ``{"session_id", "text"}`` on stdout (:mod:`review_loop.simulated`).
It needs no key and no network, so a newcomer can try every workflow offline.

``-I`` (isolated mode) keeps the repository out of its import path: the current directory
is never put on ``sys.path`` and ``PYTHON*`` variables are ignored, so a repository holding
a ``review_loop/`` package cannot run code through it. It reads nothing but its prompt, which
makes it read-only by construction. It keeps no session store; a resume keeps the id.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from review_loop.adapters._common import (
    checked_session_id,
    no_answer,
    not_submitted,
    prompt_bytes,
    require_command,
    unknown,
)
from review_loop.adapters.base import (
    SessionFile,
    SessionStore,
    decode_utf8,
    detail_of,
    generic_failure,
    json_lines,
)
from review_loop.agents.env_passthrough import EnvPassthrough
from review_loop.agents.listing_vocabulary import ReadOnlyResume, ResumeCommands, StoredSession

if TYPE_CHECKING:
    # the run vocabulary: imported where a run is built or read (agents/models.py)
    from review_loop.agents.models import AgentRequest, Capabilities, Completed, Invocation, Outcome

NAME: Final = "simulated"
MODULE: Final = ("-I", "-B", "-m", "review_loop.simulated")
REFUSED_EXIT: Final = 2
REFUSED_PREFIX: Final = b"review-loop-simulated: "
"""How the simulated CLI refuses before answering (exit 2, this prefix on stderr)."""
# Nothing of the caller's environment (it needs no key and no configuration) but the
# user's file of scripted answers (review_loop/simulated_replies.py).
ENV_PASSTHROUGH: Final = EnvPassthrough(names=("REVIEW_LOOP_SIMULATED_REPLIES",))


@final
class SimulatedAdapter:
    """Adapter for the bundled simulated reviewer (see the module docstring)."""

    # One immutable instance per product (``ADAPTER``): empty slots, so no attribute of its
    # own can be set; these are the class's.
    __slots__ = ()

    name: str = NAME
    # The interpreter review-loop runs under: it can import the simulated module.
    default_executable: str = sys.executable or "python3"
    env_passthrough: EnvPassthrough = ENV_PASSTHROUGH

    def probe_args(self) -> tuple[str, ...] | None:
        """No probe: the simulated CLI ships with this package and cannot differ from it."""
        return None

    def capabilities(self, probe_output: str | None) -> Capabilities:
        """Read-only (it reads only its prompt) and resumable (the id is kept)."""
        from review_loop.agents.models import Capabilities

        return Capabilities(variant="simulated", read_only=True, resumable=True)

    def build(
        self, request: AgentRequest, *, command: Sequence[str], capabilities: Capabilities
    ) -> Invocation:
        """``<command> -I -B -m review_loop.simulated [--resume ID]``, the prompt on stdin."""
        from review_loop.agents.models import Invocation

        argv = [*require_command(NAME, command), *MODULE]
        if request.resume_session_id is not None:
            argv += ["--resume", checked_session_id(NAME, request.resume_session_id)]
        return Invocation(
            argv=tuple(argv), stdin=prompt_bytes(NAME, request.prompt), cwd=request.cwd
        )

    def output_complete(self, invocation: Invocation, completed: Completed) -> bool:
        """Complete once its one JSON line, with ``text``, has been printed."""
        if completed.stdout_truncated:
            return False
        stdout = decode_utf8(completed.stdout)
        lines = list(json_lines(stdout)) if stdout is not None else []
        return any(isinstance(line.get("text"), str) for line in lines)

    def interpret(self, invocation: Invocation, completed: Completed) -> Outcome:
        """The JSON line's ``text`` is the reply; its own refusal (exit 2) is
        ``NOT_SUBMITTED``; anything else is ``DELIVERY_UNKNOWN``."""
        from review_loop.agents.models import Reply

        generic = generic_failure(completed)
        if generic is not None:
            return generic
        if completed.returncode == REFUSED_EXIT and completed.stderr.startswith(REFUSED_PREFIX):
            # Its own refusal (an empty prompt, an unusable replies file): it answers nothing
            # and sends nothing anywhere, so nothing was submitted.
            return not_submitted("refused", detail_of(completed))
        stdout = decode_utf8(completed.stdout)
        if stdout is None:
            return unknown("output is not UTF-8", "")
        for event in json_lines(stdout):
            text, session_id = event.get("text"), event.get("session_id")
            if completed.returncode == 0 and isinstance(text, str) and text.strip():
                return Reply(
                    text=text, session_id=session_id if isinstance(session_id, str) else None
                )
        return no_answer(completed, stdout)

    @property
    def reads_only_its_prompt(self) -> bool:
        """review-loop's own stand-in reads nothing but its prompt: it runs without the
        reviewer sandbox (``docs/reviewer-lockdown.md``), so it works where none can be made."""
        return True

    def session_stores(self, env: Mapping[str, str], home: Path, repo: Path) -> list[SessionStore]:
        """None: the simulated reviewer keeps no sessions of its own (records list them)."""
        return []

    def parse_session(self, file: SessionFile, repo: Path) -> StoredSession | None:
        """Never called (no stores)."""
        return None

    def resume_commands(self, session_id: str, command: Sequence[str]) -> ResumeCommands:
        """Headless only: it has no interactive mode. It reads nothing and writes nothing,
        so its read-only command is the same."""
        launcher = shlex.join([*command, *MODULE])
        headless = f'{launcher} --resume {shlex.quote(session_id)} "<prompt>"'
        return ResumeCommands(
            interactive=None,
            headless=headless,
            read_only=ReadOnlyResume(interactive=None, headless=headless),
        )


ADAPTER: Final = SimulatedAdapter()
