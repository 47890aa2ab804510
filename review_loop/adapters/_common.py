"""Pure helpers the built-in adapters share: argument checks, parsing, failure shapes.

Nothing here performs I/O. Generating a UUID and reading the clock of a given ``mtime``
are the only things that are not plain string work.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from review_loop.adapters.base import (
    DETAIL_LIMIT,
    decode_utf8,
    detail_of,
    generic_failure,
    json_lines,
    json_object,
)
from review_loop.agents.constants import ENV_NAME_PATTERN
from review_loop.agents.errors import AdapterRefusalError
from review_loop.agents.listing_vocabulary import ReadOnlyResume, ResumeCommands

if TYPE_CHECKING:  # the run vocabulary is imported where a run is read (agents/models.py)
    from review_loop.agents.models import Completed, Failure, Invocation, Usage

# -- request checks --------------------------------------------------------------------------

# Patterns are strings, compiled by ``re`` on first use (its cache), not at import:
# ``sessions`` imports every adapter and needs few of them (docs/performance.md).
#
# A session handle goes into argv right after a flag. One that starts with "-" could be
# read as a flag of its own (commander treats `--resume --x` as two options), so handles
# are restricted to what the CLIs actually issue: UUIDs and similar tokens.
_SESSION_ID_RE = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
_UUID_RE = r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"

MAX_ARG_BYTES = 131072 - 1
"""Linux ``MAX_ARG_STRLEN`` (32 pages, terminating NUL included) for one argv element."""

PROMPT_PLACEHOLDER = '"<prompt>"'
"""The literal placeholder the original tool prints in headless resume commands."""


def require_command(product: str, command: Sequence[str]) -> tuple[str, ...]:
    """The launcher prefix as a tuple; refuse an empty one (there is nothing to run)."""
    words = tuple(command)
    if not words or not words[0]:
        raise AdapterRefusalError(product, "the command to launch is empty")
    return words


def checked_session_id(product: str, value: str) -> str:
    """A session handle that cannot be mistaken for a flag, or :class:`AdapterRefusalError`."""
    if not is_plain_token(value):
        raise AdapterRefusalError(
            product,
            f"session id {value[:80]!r} is not a plain token (letters, digits, '._:-', "
            "not starting with '-')",
        )
    return value


def is_plain_token(value: str) -> bool:
    """Whether ``value`` is safe as a session handle in argv (see :func:`checked_session_id`)."""
    return bool(re.fullmatch(_SESSION_ID_RE, value))


def is_uuid(value: str) -> bool:
    """Whether ``value`` is a UUID in the canonical 8-4-4-4-12 form."""
    return bool(re.fullmatch(_UUID_RE, value))


def preassigned_uuid(product: str, value: str | None) -> str:
    """``value`` if it is a UUID, a fresh uuid4 when ``None``; refuse anything else."""
    if value is None:
        import uuid  # here, not at import: uuid loads platform, which sessions never needs

        return str(uuid.uuid4())
    if not is_uuid(value):
        raise AdapterRefusalError(product, f"session id {value[:80]!r} is not a UUID")
    return value


def prompt_bytes(product: str, prompt: str) -> bytes:
    """The prompt as UTF-8 for stdin; refuse a blank prompt or one that is not text."""
    if not prompt.strip():
        raise AdapterRefusalError(product, "the prompt is empty")
    try:
        return prompt.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AdapterRefusalError(product, f"the prompt is not valid Unicode text ({exc})") from exc


def prompt_argument(product: str, prompt: str) -> str:
    """The prompt as one argv element; refuse what the kernel or the CLI cannot take.

    Some CLIs have no stdin input, so the prompt becomes one argument (never a shell
    string). Linux caps one argument at 128 KiB and argv cannot carry NUL bytes.
    """
    size = len(prompt_bytes(product, prompt))
    if "\x00" in prompt:
        raise AdapterRefusalError(product, "the prompt contains a NUL byte")
    if size > MAX_ARG_BYTES:
        raise AdapterRefusalError(
            product,
            f"the prompt is {size} bytes; this CLI takes it as one argument, "
            f"limited to {MAX_ARG_BYTES} bytes",
        )
    return prompt


def directory_argument(product: str, cwd: Path) -> str:
    """``cwd`` as the value of a directory flag; refuse one that could read as a flag."""
    text = str(cwd)
    if text.startswith("-"):
        raise AdapterRefusalError(product, f"working directory {text!r} starts with '-'")
    return text


# -- parsing ---------------------------------------------------------------------------------


def text_of(data: bytes) -> str:
    """Lenient decode for diagnostics and pattern matching (never for replies)."""
    return data.decode("utf-8", "replace")


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text``: the whole text, else the first ``{`` to the last ``}``."""
    stripped = text.strip()
    if not stripped:
        return None
    candidates = [stripped]
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end and (start, end) != (0, len(stripped) - 1):
        candidates.append(stripped[start : end + 1])
    for candidate in candidates:
        if (value := json_object(candidate)) is not None:
            return value
    return None


def last_json_lines(kept: bytes, count: int) -> list[dict[str, Any]] | None:
    """The last ``count`` non-empty lines of a truncated stream, if provably whole.

    A truncated stream is its head and its tail joined with no marker, so the line at the
    junction can be the start of one line glued to the end of another, and can even be
    valid JSON. The head and the tail are kept in equal parts (the orchestrator's caps),
    so lines that together fit in the second half of ``kept`` lie wholly in the tail.
    Returns ``None`` when they do not fit or are not all JSON objects.
    """
    lines = [line for line in kept.split(b"\n") if line.strip()][-count:]
    if len(lines) < count or sum(len(line) + 1 for line in lines) > len(kept) // 2:
        return None
    parsed = []
    for line in lines:
        try:
            value = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return None
        if not isinstance(value, dict):
            return None
        parsed.append(value)
    return parsed


def as_str(value: object) -> str | None:
    """``value`` if it is a string."""
    return value if isinstance(value, str) else None


def as_int(value: object) -> int | None:
    """``value`` if it is an integer (booleans excluded)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def as_float(value: object) -> float | None:
    """``value`` as a float if it is a number (booleans excluded)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def as_dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty dict."""
    return value if isinstance(value, dict) else {}


def usage_of(data: object, *, input_key: str, output_key: str, cached_key: str) -> Usage | None:
    """A :class:`Usage` from a token-count object, or ``None`` when it has no counts."""
    from review_loop.agents.models import Usage

    counts = as_dict(data)
    usage = Usage(
        input_tokens=as_int(counts.get(input_key)),
        output_tokens=as_int(counts.get(output_key)),
        cached_input_tokens=as_int(counts.get(cached_key)),
    )
    if usage == Usage():
        return None
    return usage


def version_in(text: str | None) -> str | None:
    """The first ``N.N.N`` version number in a probe's output."""
    if not text:
        return None
    found = re.search(r"\b(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)\b", text)
    return found.group(1) if found else None


# -- failures --------------------------------------------------------------------------------


MISSING_VARIABLE = "credential variable not set: "
"""How a ``missing credentials`` detail names the variable (:func:`missing_credential`), so
that the orchestrator can say how to pass it without knowing the product's message."""


def missing_credential(variable: str | None, said: str) -> Failure:
    """``NOT_SUBMITTED`` ``missing credentials``: the CLI refused before any request because
    ``variable`` (when the message names it) is not in its environment."""
    named = f"{MISSING_VARIABLE}{variable}\n" if variable else ""
    return not_submitted("missing credentials", named + said)


def missing_variable(detail: str) -> str | None:
    """The variable a :func:`missing_credential` detail names, or ``None``."""
    if not detail.startswith(MISSING_VARIABLE):
        return None
    name = detail.removeprefix(MISSING_VARIABLE).split("\n", 1)[0]
    return name if re.fullmatch(ENV_NAME_PATTERN, name) else None


def not_submitted(reason: str, detail: str, *, session_not_found: bool = False) -> Failure:
    """A failure that provably happened before any request left this machine."""
    from review_loop.agents.models import DeliveryState, Failure

    return Failure(
        state=DeliveryState.NOT_SUBMITTED,
        reason=reason,
        detail=detail[:DETAIL_LIMIT],
        session_not_found=session_not_found,
    )


def unknown(
    reason: str, detail: str, *, session_id: str | None = None, session_not_found: bool = False
) -> Failure:
    """A failure after which nobody can say whether the model got the request."""
    from review_loop.agents.models import DeliveryState, Failure

    return Failure(
        state=DeliveryState.DELIVERY_UNKNOWN,
        reason=reason,
        detail=detail[:DETAIL_LIMIT],
        session_id=session_id,
        session_not_found=session_not_found,
    )


def exit_reason(completed: Completed) -> str:
    """``non-zero exit N`` (or ``no exit status``) for an unexplained failed run."""
    if completed.returncode is None:
        return "no exit status"
    return f"non-zero exit {completed.returncode}"


def no_answer(completed: Completed, stdout: str, *, session_id: str | None = None) -> Failure:
    """The run gave no parsable answer: empty output, garbage, or an unexplained exit."""
    if completed.returncode != 0:
        return unknown(exit_reason(completed), detail_of(completed), session_id=session_id)
    if not stdout.strip():
        return unknown("empty output", detail_of(completed), session_id=session_id)
    return unknown("parse failed", detail_of(completed), session_id=session_id)


# -- a run's stdout --------------------------------------------------------------------------

StartupRefusal = Callable[[str, str, "int | None"], "Failure | None"]
"""``(stderr, stdout, returncode)`` → the CLI's refusal at start-up, or ``None``."""


def stdout_or_failure(
    invocation: Invocation, completed: Completed, startup: StartupRefusal | None = None
) -> str | Failure:
    """The run's stdout as text, or the failure that ends its reading before any JSON is
    looked at: :func:`~review_loop.adapters.base.generic_failure`, then
    :func:`readable_stdout`, then what ``startup`` (when given) proves the CLI refused
    before sending anything (``NOT_SUBMITTED``)."""
    failure = generic_failure(completed)
    if failure is not None:
        return failure
    stdout = readable_stdout(completed, invocation.session_id)
    if startup is None or not isinstance(stdout, str):
        return stdout
    refusal = startup(text_of(completed.stderr), stdout, completed.returncode)
    return stdout if refusal is None else refusal


def readable_stdout(completed: Completed, session_id: str | None) -> str | Failure:
    """The run's stdout as text, or ``DELIVERY_UNKNOWN`` (with ``session_id``, the id known
    before launch) for output past the cap (``output too large``) or bytes that are not
    UTF-8 (``parse failed``): a reply is never read from a cut or mis-decoded stream."""
    if completed.stdout_truncated:
        return unknown("output too large", detail_of(completed), session_id=session_id)
    stdout = decode_utf8(completed.stdout)
    if stdout is None:
        return unknown("parse failed", "stdout is not UTF-8", session_id=session_id)
    return stdout


# -- session files ---------------------------------------------------------------------------


def iso_utc(mtime: float) -> str:
    """``mtime`` as ISO-8601 UTC with milliseconds and ``Z`` (like JS ``toISOString``)."""
    from datetime import UTC, datetime  # here: only a CLI's own session store needs it

    moment = datetime.fromtimestamp(mtime, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def same_path(recorded: str, repo: Path) -> bool:
    """Whether a path a CLI recorded names ``repo`` (lexically; no filesystem access)."""
    return os.path.normpath(recorded) == os.path.normpath(str(repo))


def title_of(text: str | None, limit: int = 80) -> str | None:
    """One line of at most ``limit`` characters, ``…`` marking a cut; ``None`` if blank."""
    if text is None:
        return None
    line = " ".join(text.split())
    if not line:
        return None
    if len(line) > limit:
        return line[: limit - 1].rstrip() + "…"
    return line


def head_objects(head: bytes) -> list[dict[str, Any]]:
    """Every complete JSON-object line in the first bytes of a JSONL file."""
    return list(json_lines(text_of(head)))


def string_field(text: str, key: str, *, start: int = 0) -> str | None:
    """The first ``"key": "value"`` string in raw JSON text, even in a cut-off line.

    Used when a file's first line is longer than what was read. A key inside a JSON string
    has its quotes escaped, so it cannot match ``"key"`` followed by ``:``.
    """
    pattern = re.compile(r'(?<!\\)"' + re.escape(key) + r'"\s*:\s*"((?:[^"\\]|\\.)*)"')
    found = pattern.search(text, start)
    if found is None:
        return None
    try:
        value = json.loads('"' + found.group(1) + '"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def content_text(content: object) -> str | None:
    """The text of a chat ``content``: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
        return "\n".join(parts) if parts else None
    return None


# -- resume commands -------------------------------------------------------------------------


class SessionIdSlot:
    """Where the session id goes among a :class:`ResumeForms` command's words."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SESSION_ID"


SESSION_ID: Final = SessionIdSlot()
"""The session id's place in a resume command's words (exactly once per command)."""

ResumeWords = tuple[str | SessionIdSlot, ...]


class ResumeForms:
    """A product's copy-ready resume commands: its arguments around the session id.

    Each command is the launcher (the session's ``command``, else the product name) and
    one tuple of arguments holding :data:`SESSION_ID` once. ``interactive`` and
    ``headless`` are the commands the original tool printed, ``read_only`` the
    (interactive, headless) pair that also carries the adapter's read-only flags, after
    ``read_only_lead`` when there is one (opencode's variable assignments). The headless
    forms end with the literal ``"<prompt>"`` placeholder, unquoted, exactly as the
    original tool prints it.

    ``sessions`` writes four commands per listed session, whose words but the session id
    are the same every time: they are quoted once per launcher (:func:`_quoted`), the id
    once per session.
    """

    __slots__ = ("forms",)

    def __init__(
        self,
        interactive: ResumeWords,
        headless: ResumeWords,
        *,
        read_only: tuple[ResumeWords, ResumeWords],
        read_only_lead: str = "",
    ) -> None:
        lead = f"{read_only_lead} " if read_only_lead else ""
        self.forms = (
            ("", interactive, ""),
            ("", headless, PROMPT_PLACEHOLDER),
            (lead, read_only[0], ""),
            (lead, read_only[1], PROMPT_PLACEHOLDER),
        )
        for _, words, _ in self.forms:
            if words.count(SESSION_ID) != 1:
                raise ValueError(f"a resume command holds the session id once: {words!r}")

    def commands(
        self, session_id: str, command: Sequence[str], default_executable: str
    ) -> ResumeCommands:
        """The commands that resume ``session_id``, launched by ``command`` (or, when it is
        empty, ``default_executable``)."""
        interactive, headless, read_only_interactive, read_only_headless = _quoted(
            self, tuple(command) or (default_executable,)
        )
        word = shlex.quote(session_id)
        return ResumeCommands(
            word.join(interactive),
            word.join(headless),
            ReadOnlyResume(word.join(read_only_interactive), word.join(read_only_headless)),
        )


@functools.lru_cache(maxsize=64)
def _quoted(forms: ResumeForms, launcher: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Each command of ``forms`` after ``launcher``, quoted: its text before the session id
    and after it (``shlex.join`` of its words is ``before + shlex.quote(id) + after``)."""
    quoted = []
    for lead, words, placeholder in forms.forms:
        at = words.index(SESSION_ID)
        before = shlex.join([*launcher, *_text_words(words[:at])])
        after = [shlex.quote(word) for word in _text_words(words[at + 1 :])]
        if placeholder:
            after.append(placeholder)
        quoted.append((f"{lead}{before} ", "".join(f" {part}" for part in after)))
    return tuple(quoted)


def _text_words(words: ResumeWords) -> list[str]:
    return [word for word in words if isinstance(word, str)]
