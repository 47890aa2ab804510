"""Reading and writing the prefs file; the one env var that relocates user state."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from review_loop.agents.errors import PrefsError
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


TIMEOUT_ENV_ACCEPTED = (
    "a positive number of milliseconds, as the original review-loop takes it "
    "(500, 1e3, 1500.5, 100000000; a fraction is rounded up to the next millisecond)"
)


def timeout_override(value: str) -> int:
    """``REVIEW_LOOP_TIMEOUT_MS`` as whole milliseconds: any positive finite number, as the
    original review-loop takes it (``Number(value)``), a fraction rounded up (a deadline is
    never shorter than asked).

    The prefs file keeps its own range (one second to one day): a number typed there is
    checked as a setting, while the variable is the original's contract.

    Raises:
        PrefsError: not a number, not finite, or not above zero (the message names the
            variable and what is accepted).
    """
    from review_loop.agents.js_number import js_number

    number = js_number(value)
    if number is None:
        raise PrefsError(TIMEOUT_ENV, f"{value!r} is not a number", TIMEOUT_ENV_ACCEPTED)
    if number <= 0:
        raise PrefsError(
            TIMEOUT_ENV, f"{value!r} is not a positive finite number", TIMEOUT_ENV_ACCEPTED
        )
    return math.ceil(number)


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

    A missing file means the defaults. ``REVIEW_LOOP_TIMEOUT_MS`` overrides ``timeoutMs``:
    any positive number of milliseconds (:func:`timeout_override`).

    Raises:
        PrefsError: the file is unreadable, not TOML, or fails validation; or the env
            override is not a positive number. Every message names the file (or the
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
