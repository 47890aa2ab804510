"""The evidence identity of a working tree, as the original ``review-loop`` defines it.

``{baseSha, pathFilter, digest, coveredPaths, sourceRound}`` (``docs/origins.md``
§3.1, §3.6). Two snapshots are the same when ``baseSha``, ``pathFilter`` and ``digest``
agree; ``coveredPaths`` is audit metadata and ``sourceRound`` names the reviewed round.

Pure: computing the digest is the orchestrator's job
(``review_loop.orchestrator.workflows.evidence``).
The string helpers here reproduce JavaScript semantics (``String.prototype.trim``,
``Array.prototype.sort``), because the original is JavaScript and its values must compare
equal to ours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the pydantic model, built on first use (``docs/performance.md``)
    from review_loop.agents.evidence_model import Evidence as Evidence

# ECMAScript WhiteSpace + LineTerminator: what ``\s`` and ``String.prototype.trim`` strip.
# Differs from Python's ``str.isspace`` (no U+001C..U+001F or U+0085; has U+FEFF).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(JS_WHITESPACE)


def js_rstrip(text: str) -> str:
    """``text.replace(/\\s*$/, "")``: drop trailing ECMAScript whitespace."""
    return text.rstrip(JS_WHITESPACE)


def js_sort_key(text: str) -> bytes:
    """Order strings as ``Array.prototype.sort`` does: by UTF-16 code units."""
    return text.encode("utf-16-be", "surrogatepass")


def _well_formed(text: str) -> str:
    # A str from argv may carry surrogate escapes for undecodable bytes; Node would have
    # decoded those bytes to U+FFFD. Anything else stays as it is.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


_C_ESCAPES = {
    0x07: "\\a",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0B: "\\v",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}


def path_name(raw: bytes) -> str:
    """How a path git lists is named in ``coveredPaths`` and in the reviewer's prompt.

    A UTF-8 name is itself, as the original lists it. A name that is not UTF-8 (which the
    original turns into U+FFFD, a name no file has) is written as git prints it with
    ``core.quotePath`` on: in double quotes, each control character, quote and backslash
    C-escaped and each byte from 0x7f octal (``"evil\\377.py"``), the form ``git status``
    shows and git's own unquoting reads back.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out = ['"']
    for byte in raw:
        if byte in _C_ESCAPES:
            out.append(_C_ESCAPES[byte])
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


def normalize_path_filter(paths: str | list[str] | None) -> list[str] | None:
    """Normalize a path filter: split a string on ``,``, trim, drop empties, dedupe, sort.

    An empty result is ``None`` (no filter). Trimming and ordering follow JavaScript, so
    the result equals the original tool's ``normalizePathFilter`` for every input that
    leaves at least one path.
    """
    if paths is None:
        return None
    items = paths.split(",") if isinstance(paths, str) else paths
    seen: dict[str, None] = {}
    for item in items:
        trimmed = js_trim(_well_formed(str(item)))
        if trimmed:
            seen.setdefault(trimmed, None)
    if not seen:
        return None
    return sorted(seen, key=js_sort_key)


def __getattr__(name: str) -> Any:
    # ``Evidence`` lives in evidence_model: the ``evidence`` command prints the fields it
    # computed without building the model; every other importer gets it here, unchanged.
    if name == "Evidence":
        from review_loop.agents.evidence_model import Evidence

        return Evidence
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
