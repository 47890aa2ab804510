"""The variables a CLI's own user configuration names for its credentials.

A codex user whose ``~/.codex/config.toml`` defines a custom provider (``env_key =
"MY_PROVIDER_KEY"``: Azure, OpenRouter, a local server) needs that variable in codex's
environment, and the allow-list (:mod:`.environment`) passes only names it knows. The
adapter knows where its CLI's user configuration is and how to read the names out of it
(``user_config_files``, ``configured_env_names``: pure); this module reads the files.

Only the user's own configuration counts, never the reviewed repository's (its
``.codex/config.toml`` is hostile): a file that resolves inside the repository is skipped.
Each file is opened without blocking (a FIFO cannot hang a command), must be a regular file
of at most :data:`MAX_BYTES`, and is read as UTF-8; anything else names nothing. The answer
is kept per product while the files' sizes and modification times stay the same, so a
long-running MCP server sees an edit and a command pays one ``stat`` per file after the
first read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

MAX_BYTES: Final = 1 << 20
MAX_FILES: Final = 64
"""Per pattern (profiles): more files than this are not read."""

_cache: dict[tuple[str, tuple[tuple[str, int, int], ...]], tuple[str, ...]] = {}


def configured_names(
    adapter: Any, env: Mapping[str, str], repo: Path, home: Path | None = None
) -> tuple[str, ...]:
    """The variable names ``adapter``'s CLI reads credentials from, as its user
    configuration says (empty when the adapter declares no such configuration)."""
    files = getattr(adapter, "user_config_files", None)
    parse = getattr(adapter, "configured_env_names", None)
    if not callable(files) or not callable(parse):
        return ()
    home = home if home is not None else Path(env.get("HOME") or Path.home())
    found = [(path, info) for pattern in files(env, home) for path, info in _expand(pattern)]
    inside = repo.resolve()
    found = [(p, i) for p, i in found if not p.resolve().is_relative_to(inside)]
    key = (str(adapter.name), tuple((str(p), i.st_mtime_ns, i.st_size) for p, i in found))
    if key not in _cache:
        texts = {str(path): text for path, _ in found if (text := _read(path)) is not None}
        _cache[key] = tuple(parse(texts)) if texts else ()
    return _cache[key]


def user_file_texts(paths: Iterable[Path]) -> dict[str, str]:
    """The UTF-8 text of each of ``paths`` that is a regular file of at most
    :data:`MAX_BYTES`, read as the configuration files are (never blocking); the others
    are left out. For the files an adapter names as the user's own (its login)."""
    return {str(path): text for path in paths if (text := _read(path)) is not None}


def _expand(pattern: Path) -> list[tuple[Path, os.stat_result]]:
    """The regular files ``pattern`` names (``*`` only in its last component), sorted."""
    if "*" not in pattern.name:
        candidates = [pattern]
    else:
        try:
            candidates = sorted(pattern.parent.glob(pattern.name))[:MAX_FILES]
        except OSError:
            return []
    out = []
    for path in candidates:
        try:
            info = path.stat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_BYTES:
            out.append((path, info))
    return out


def _read(path: Path) -> str | None:
    """The file's UTF-8 text, or ``None`` (not a regular file now, too large, not UTF-8)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        data = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
