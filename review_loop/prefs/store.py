"""Reading and writing the prefs file; the one env var that relocates user state."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from review_loop.agents.errors import PrefsError
from review_loop.prefs.defaults import MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, TIMEOUT_RANGE
from review_loop.prefs.home import HOME_ENV, state_home

if TYPE_CHECKING:  # the dataclass is built where a Prefs is wanted (prefs show needs none)
    from review_loop.prefs.document import ProductSet
    from review_loop.prefs.model import Prefs

TIMEOUT_ENV = "REVIEW_LOOP_TIMEOUT_MS"
# How a prefs file that cannot be used is repaired (``prefs reset`` never reads it).
_REPAIR = "fix the file, or start over with the defaults: review-loop prefs reset"


def prefs_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the prefs file lives."""
    return state_home(env) / "prefs.toml"


def timeout_override(value: str) -> int:
    """``REVIEW_LOOP_TIMEOUT_MS`` as milliseconds, within the accepted deadline range.

    Raises:
        PrefsError: not an integer, or below one second or above one day (the message
            names the variable and the range).
    """
    try:
        number = int(value.strip())
    except ValueError:
        raise PrefsError(TIMEOUT_ENV, f"{value!r} is not an integer", TIMEOUT_RANGE) from None
    if not MIN_TIMEOUT_MS <= number <= MAX_TIMEOUT_MS:
        raise PrefsError(TIMEOUT_ENV, f"{value!r} is out of range", TIMEOUT_RANGE)
    return number


def parse_prefs(data: Mapping[str, Any], *, source: str, known: ProductSet) -> Prefs:
    """Validate a prefs mapping; errors name ``source`` and the key (see :meth:`Prefs.validate`)."""
    from review_loop.prefs.model import Prefs

    return Prefs.validate(data, source=source, known=known)


def _read_file(path: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """The prefs file's TOML table; ``{}`` when there is no file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as error:
        where = f" (the state directory is {HOME_ENV}={env[HOME_ENV]})" if env.get(HOME_ENV) else ""
        raise PrefsError(
            str(path), f"cannot read prefs file: {error.strerror}{where}", _REPAIR
        ) from None
    import tomllib  # only where there is a file

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise PrefsError(
            str(path), f"not valid TOML: {error}", f"a TOML table; {_REPAIR}"
        ) from None


def load_prefs_document(
    known: ProductSet,
    *,
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The prefs' JSON form (``load_prefs(...).document()``), for commands that only print it.

    Raises what :func:`load_prefs` raises.
    """
    from review_loop.prefs.document import checked

    env = os.environ if env is None else env
    path = prefs_path(env) if path is None else path
    data = _read_file(path, env)
    try:
        document = checked(data, source=str(path), known=known)
    except PrefsError as error:  # the file's content: say how to start over
        accepted = f"{error.accepted}; {_REPAIR}" if error.accepted else _REPAIR
        raise PrefsError(error.field, error.problem, accepted) from None
    override = env.get(TIMEOUT_ENV)
    if override is not None and override != "":
        document["timeoutMs"] = timeout_override(override)
    return document


def load_prefs(
    known: ProductSet,
    *,
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Prefs:
    """Load prefs from ``path`` (default :func:`prefs_path`) with env overrides applied.

    A missing file means the defaults. ``REVIEW_LOOP_TIMEOUT_MS`` overrides ``timeoutMs``
    and must be an integer of milliseconds from one second to one day.

    Raises:
        PrefsError: the file is unreadable, not TOML, or fails validation; or the env
            override is not an integer in that range. Every message names the file (or the
            variable) and the key.
    """
    from review_loop.prefs.model import Prefs

    return Prefs.from_document(load_prefs_document(known, path=path, env=env))


def save_prefs(prefs: Prefs, *, path: Path | None = None) -> Path:
    """Write ``prefs`` atomically (temp file + rename); returns the path."""
    import tomli_w

    path = prefs_path() if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    text = tomli_w.dumps(prefs.document())
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
