"""Helpers shared by command modules: repo and prefs options, question input."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from review_loop.agents.errors import InputError

if TYPE_CHECKING:
    import argparse

    from review_loop.prefs import Prefs


def add_repo_option(parser: argparse.ArgumentParser) -> None:
    """``--repo`` (aliases ``--repo-root``, and ``-C`` as git's and spx's): default the git
    top level of ``--cwd`` (the original's option), else of the current directory. Every
    command that takes a repository accepts ``--repo``."""
    parser.add_argument("--repo", "--repo-root", "-C", dest="repo", default=None)
    parser.add_argument("--cwd", dest="cwd", default=None)


def repo_from(args: argparse.Namespace) -> Path:
    """The repository root named by ``--repo`` (validated as a git work tree); without it,
    the top level of the work tree containing ``--cwd`` (as the original)."""
    from review_loop.orchestrator.handoff.git import repo_root

    repo = args.repo if args.repo is not None else getattr(args, "cwd", None)
    return repo_root(repo)


def load_user_prefs() -> Prefs:
    """The user's prefs, validated against the registered products."""
    from review_loop.adapters import known_products
    from review_loop.prefs import load_prefs

    return load_prefs(known_products())


def read_text_file(path_text: str, field: str) -> str:
    """Read a UTF-8 text file named by ``field``; errors say what was wrong.

    At most the input limit (``input_files.MAX_INPUT_BYTES``, 16 MiB) is read: an endless
    file (``/dev/zero``, a FIFO) is refused at the limit, naming it.
    """
    from review_loop.orchestrator.handoff.input_files import (
        InputTooLargeError,
        limit_text,
        read_bytes,
    )

    accepted = f"a readable UTF-8 text file of at most {limit_text()}"
    try:
        data = read_bytes(path_text)
    except FileNotFoundError:
        raise InputError(field, f"no such file: {path_text!r}", accepted) from None
    except IsADirectoryError:
        raise InputError(field, f"{path_text!r} is a directory", accepted) from None
    except InputTooLargeError as error:
        raise InputError(field, f"{path_text!r} is {error.strerror}", accepted) from None
    except OSError as error:
        raise InputError(field, f"cannot read {path_text!r}: {error.strerror}") from None
    return utf8_text(data, path_text, field)


def utf8_text(data: bytes, path_text: str, field: str) -> str:
    """``data`` read from ``path_text`` as text; not UTF-8 is refused naming ``field``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(field, f"{path_text!r} is not UTF-8 text", "a UTF-8 text file") from None


# The flags (by their ``dest``) that name a file or a directory, and how the error names
# them. An empty value is refused: it would mean "the current directory" to git and to
# ``os.path``, and review (and write ``.review-handoff/`` into) a checkout nobody named.
PATH_FLAGS: dict[str, str] = {
    "repo": "--repo",
    "cwd": "--cwd",
    "packet": "--packet",
    "target": "--target",
    "body_file": "--body-file",
    "question_file": "--question-file",
    "scenarios_file": "--scenarios-file",
    "plan": "--plan",
    "host_position": "--host-position",
    "concerns": "--concerns",
    "driver": "--driver",
    "deterministic": "--deterministic-verification",
    "directory": "DIR",
    "root": "-C/--directory",
    "audit_input": "--audit-input",
    "scratch_dir": "--scratch-dir",
    "output": "--output",
    "dir": "--dir",
    "skill_dirs": "--skill-dir",
}


def refuse_empty_paths(args: object) -> None:
    """Refuse a path flag given as the empty string, before anything is read or written.

    Raises:
        InputError: naming the flag (:data:`PATH_FLAGS`).
    """
    for dest, flag in PATH_FLAGS.items():
        value = getattr(args, dest, None)
        if value == "" or (isinstance(value, list) and "" in value):
            raise InputError(
                flag,
                "is empty",
                "a path; to mean the current directory, name it ('.') or leave the flag out"
                if dest in ("repo", "root", "directory")
                else "a path",
            )


def positive_seconds(value: str, field: str) -> int:
    """A deadline given on the command line in seconds, as milliseconds.

    Accepted: a number of seconds from 1 to 86400 (one day). Anything else — not a number,
    NaN, infinite, below one second (``0.0004`` once became 0 ms, which meant "the
    default", twenty minutes) or above one day — is refused with the accepted range.

    Raises:
        InputError: naming ``field``, the value, and the accepted range.
    """
    # the plain bounds, not prefs.model's re-export: that would build pydantic (docs/performance.md)
    from review_loop.prefs.defaults import MAX_TIMEOUT_MS, MIN_TIMEOUT_MS

    accepted = (
        f"a number of seconds from {MIN_TIMEOUT_MS // 1000} to {MAX_TIMEOUT_MS // 1000} "
        "(one day), e.g. 600"
    )
    try:
        seconds = float(value)
    except ValueError:
        raise InputError(field, f"{value!r} is not a number of seconds", accepted) from None
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise InputError(field, f"{value!r} is not a number of seconds", accepted)
    milliseconds = round(seconds * 1000)
    if not MIN_TIMEOUT_MS <= milliseconds <= MAX_TIMEOUT_MS:
        raise InputError(field, f"{value!r} is out of range", accepted)
    return milliseconds


def checked_resume_id(value: str | None, field: str = "--resume") -> str | None:
    """A session id to resume, checked before anything is written (``None`` stays ``None``).

    The same rule every adapter applies when it builds argv (a plain token: letters,
    digits, ``._:-``, not starting with ``-``), applied here so a refused ``--resume`` is
    refused before a record is created, with exit code 1.

    Raises:
        InputError: the id is not a plain token (``../../etc/passwd``, ``-x``, empty).
    """
    from review_loop.adapters._common import is_plain_token

    if value is None:
        return None
    if not is_plain_token(value):
        raise InputError(
            field,
            f"{value[:80]!r} is not a session id",
            "a session id as the CLI printed it: letters, digits and '._:-', "
            "not starting with '-', at most 200 characters",
        )
    return value


def parse_bool(value: str | None, field: str) -> bool | None:
    """``true``/``false`` (as ``--k=v`` in the original); ``None`` stays ``None``."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", ""):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise InputError(field, f"{value!r} is not a boolean", "true or false")
