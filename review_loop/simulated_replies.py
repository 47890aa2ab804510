"""Scripted answers for the simulated reviewer: ``REVIEW_LOOP_SIMULATED_REPLIES=<file>``.

The file is JSON: a list of reviewer answers, used in call order, one per call of the
simulated reviewer, whatever the workflow (consult, review round, re-review, preflight,
position, blind review, verify-diff). Each answer is a non-empty string, or an object
``{"text": "..."}``::

    ["## Coverage\\n- calc.py\\n\\n## Findings\\n\\n| ID | ...\\n\\nVerdict: BLOCKED",
     {"text": "...Verdict: PASS"}]

So the review round trip (``run`` -> ``fix-completion`` -> ``run --continue`` -> ``close``)
can be tried with no key: the first answer can block, the next one pass. Once the list is
used up, the built-in answers (:func:`review_loop.simulated.answer`) take over.

The position (the next answer's index) is kept beside the file, in ``<file>.position``, so
that it carries across processes: each call of the simulated CLI is its own process, and
parallel calls (two peers of one consult) each take a different answer. The position is read
and advanced under an exclusive ``flock`` of the replies file itself, and written to a
temporary file renamed over the old one, so a reader never sees half a position and no two
calls take the same answer. It remembers the file's digest: an edited file starts again
from its first answer; deleting ``<file>.position`` does too.

The file is the user's (trusted, like prefs); it is validated where review-loop starts
(:func:`check_environment`, a usage error naming the item and field) and again by the
simulated CLI before it answers (an invalid file is refused, never half used).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from review_loop.agents.errors import InputError


REPLIES_ENV: Final = "REVIEW_LOOP_SIMULATED_REPLIES"
"""The variable naming the replies file (absolute; the command line makes it so)."""
POSITION_SUFFIX: Final = ".position"
ACCEPTED: Final = 'a JSON list of answers, each a non-empty string or {"text": "<answer>"}'
_MAX_BYTES: Final = 16 * 1024 * 1024
_JSON_KINDS: Final = {bool: "boolean", int: "number", float: "number", list: "array"}
_JSON_KINDS[type(None)] = "null"


def _error(problem: str) -> InputError:
    from review_loop.agents.errors import InputError

    return InputError(REPLIES_ENV, problem, ACCEPTED)


def _location(loc: tuple[int | str, ...]) -> str:
    """pydantic's error location as the file's path: ``[2].text``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def parse_replies(data: bytes, *, source: str) -> tuple[str, ...]:
    """The answers ``data`` (the file's bytes) holds, in order.

    Raises:
        InputError: not UTF-8 JSON, not a list, or an item that is no answer; the message
            names ``source``, the item (``[2].text``) and what was wrong.
    """
    from pydantic import ValidationError as PydanticValidationError

    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise _error(f"{source}: not a UTF-8 JSON document ({error})") from None
    if not isinstance(document, list):
        kind = {**_JSON_KINDS, dict: "object", str: "string"}.get(type(document), "value")
        raise _error(f"{source}: the document is a JSON {kind}, not a list")
    answers: list[str] = []
    for index, item in enumerate(document):
        # A string is taken as {"text": <it>}: one model checks both forms, and its error
        # names the field (``text``) of the object form.
        value = {"text": item} if isinstance(item, str) else item
        if not isinstance(value, dict):
            kind = _JSON_KINDS.get(type(item), type(item).__name__)
            raise _error(f"{source}: [{index}]: a JSON {kind}, not a string or an object")
        try:
            _answer_model().model_validate(value, strict=True)
            answers.append(value["text"])  # verbatim: the model strips only to check
        except PydanticValidationError as error:
            first = error.errors(include_url=False)[0]
            where = f"[{index}]" + ("" if isinstance(item, str) else _location(first["loc"]))
            raise _error(f"{source}: {where}: {first['msg']}") from None
    return tuple(answers)


@functools.cache
def _answer_model() -> Any:
    """The pydantic model of one answer (built on first use: pydantic is imported only when
    a replies file is named)."""
    from typing import Annotated

    from pydantic import BaseModel, ConfigDict, StringConstraints

    class Answer(BaseModel):
        """One scripted answer: its text (not blank once stripped; kept verbatim)."""

        model_config = ConfigDict(extra="forbid", frozen=True)
        text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

    return Answer


def replies_path(environ: Mapping[str, str]) -> Path | None:
    """The replies file the environment names, or ``None`` when it names none.

    Raises:
        InputError: the value is not an absolute path.
    """
    value = environ.get(REPLIES_ENV)
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute():
        raise _error(f"{value!r} is not an absolute path")
    return path


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except OSError as error:
        raise _error(f"{path}: cannot be read ({error.strerror or error})") from None
    if len(data) > _MAX_BYTES:
        raise _error(f"{path}: larger than {_MAX_BYTES} bytes")
    return data


def check_environment(environ: MutableMapping[str, str], cwd: Path) -> None:
    """Validate the replies file where review-loop starts: a usage error, never a reviewer
    that fails later. A relative path is made absolute against ``cwd`` (the simulated CLI
    runs in the repository, where it would name another file).

    Raises:
        InputError: the file is missing, unreadable, or holds no list of answers.
    """
    value = environ.get(REPLIES_ENV)
    if not value:
        return
    path = Path(os.path.abspath(cwd / value))  # an absolute value stays as it is
    environ[REPLIES_ENV] = str(path)
    parse_replies(_read(path), source=str(path))


def _position_of(position_file: Path, digest: str) -> int:
    """The next answer's index for the replies file of ``digest`` (0 for a new file)."""
    try:
        stored = json.loads(position_file.read_bytes())
    except (OSError, ValueError):
        return 0
    if not isinstance(stored, dict) or stored.get("digest") != digest:
        return 0
    index = stored.get("next")
    return index if isinstance(index, int) and index >= 0 else 0


def _write_position(position_file: Path, digest: str, index: int) -> None:
    """Write the position through a temporary file renamed over the old one (atomic)."""
    temporary = position_file.with_name(f"{position_file.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"digest": digest, "next": index}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, position_file)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise _error(f"{position_file}: the position cannot be saved ({error})") from None


def next_reply(path: Path) -> tuple[int, str] | None:
    """Take the next scripted answer: ``(its index, its text)``, or ``None`` when the list
    is used up. The position advances atomically under a lock (module docstring).

    Raises:
        InputError: the file is unreadable or invalid, or the position cannot be saved.
    """
    import fcntl

    try:
        handle = open(path, "rb")  # noqa: SIM115 (held open for the lock)
    except OSError as error:
        raise _error(f"{path}: cannot be read ({error.strerror or error})") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when the file is closed
        data = handle.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            raise _error(f"{path}: larger than {_MAX_BYTES} bytes")
        answers = parse_replies(data, source=str(path))
        digest = hashlib.sha256(data).hexdigest()
        position_file = path.with_name(path.name + POSITION_SUFFIX)
        index = _position_of(position_file, digest)
        if index >= len(answers):
            return None
        _write_position(position_file, digest, index + 1)
        return index, answers[index]
