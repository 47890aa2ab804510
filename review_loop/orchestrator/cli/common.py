"""Helpers shared by command modules: repo and prefs options, question input."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from review_loop.agents.errors import InputError

if TYPE_CHECKING:
    from review_loop.prefs import Prefs


def add_repo_option(parser: argparse.ArgumentParser) -> None:
    """``--repo`` (alias ``--repo-root``): default the git top level of the cwd."""
    parser.add_argument("--repo", "--repo-root", dest="repo", default=None)


def repo_from(args: argparse.Namespace) -> Path:
    """The repository root named by ``--repo`` (validated as a git work tree)."""
    from review_loop.orchestrator.git import repo_root

    return repo_root(args.repo)


def load_user_prefs() -> Prefs:
    """The user's prefs, validated against the registered products."""
    from review_loop.adapters import known_products
    from review_loop.prefs import load_prefs

    return load_prefs(known_products())


def read_text_file(path_text: str, field: str) -> str:
    """Read a UTF-8 text file named by ``field``; errors say what was wrong."""
    path = Path(path_text)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(
            field, f"no such file: {path_text!r}", "a readable UTF-8 text file"
        ) from None
    except IsADirectoryError:
        raise InputError(
            field, f"{path_text!r} is a directory", "a readable UTF-8 text file"
        ) from None
    except OSError as error:
        raise InputError(field, f"cannot read {path_text!r}: {error.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(field, f"{path_text!r} is not UTF-8 text", "a UTF-8 text file") from None


def positive_seconds(value: str, field: str) -> int:
    """Seconds given on the command line, as milliseconds."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise InputError(field, f"{value!r} is not a positive number of seconds", "e.g. 600")
    return int(seconds * 1000)


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
