"""How review-loop runs git: nothing the reviewed repository configures runs.

A repository's own configuration (``.git/config``, ``config.worktree``, and what they
include) can name programs that git starts on its own: an fsmonitor hook, hooks, an
external diff, textconv and filter drivers, a pager, an ssh command, credential helpers,
a gpg program. That configuration is not the user's: an agent working in the tree, or an
edit review-loop applied, can write it. Every git review-loop runs gets its argv and its
environment from here (``docs/git-lockdown.md``):

- :data:`GLOBAL_OPTIONS` switch off what one setting names for every command:
  ``core.fsmonitor``, hooks (``core.hooksPath=/dev/null``), the pager, every transport
  (``protocol.allow=never``: no ssh command, remote helper, credential helper or askpass;
  a partial clone's lazy fetch fails instead) and signature checks (``log.showSignature``).
- :func:`argv` adds ``--no-ext-diff --no-textconv`` to every command that can show a diff
  (``--no-textconv`` to ``grep``): ``diff.external``, ``diff.<driver>.command`` and
  ``diff.<driver>.textconv`` never run, whatever scope defines them. The digest then binds
  a file's own bytes, not a program's rendering of them.
- Filter drivers (``filter.<name>.clean/smudge/process``) cannot be switched off by one
  option, and their names are not known in advance: :data:`DRIVER_QUERY` reads them (a
  ``git config`` read runs nothing) and :func:`driver_overrides` resets every one whose
  value comes from the repository's own scopes to the user's value (``git lfs`` in
  ``~/.gitconfig`` keeps working) or to nothing. The same read resets a
  ``diff.submodule=diff`` (its child ``git diff`` in a submodule would not get our flags).
  The overrides travel as ``GIT_CONFIG_COUNT`` entries: a subsection may hold ``=``, which
  ``-c`` cannot express, and they reach a child git in a submodule.
- :func:`environment` is a small allow-list of the caller's environment: where git finds
  the user's own configuration and the repository, locale, and the pathspec and diff-option
  variables that change output the original tool's digest depends on. Secrets in the
  caller's environment never reach anything git starts.

Trusted: the system and global configuration and the caller's ``-c`` / ``GIT_CONFIG_*``
(``command`` scope). Not trusted: ``local``, ``worktree`` and anything git cannot name.

Plain ``os`` only: the journal commands run git through ``posix_spawn`` without importing
``subprocess`` (``journal/layout.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

__all__ = [
    "DRIVER_QUERY",
    "GLOBAL_OPTIONS",
    "argv",
    "config_entries",
    "driver_overrides",
    "environment",
    "needs_driver_overrides",
]

GLOBAL_OPTIONS: tuple[str, ...] = (
    "--no-pager",
    "-c",
    "core.fsmonitor=",  # empty: off (a hook path or a boolean; "" is neither)
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "protocol.allow=never",
    "-c",
    "log.showSignature=false",
)
"""Global options before every subcommand review-loop runs."""

# Commands that can show a diff and so run an external diff or a textconv driver.
_DIFF_COMMANDS = frozenset({"diff", "diff-files", "diff-index", "diff-tree", "log", "show"})
_DIFF_FLAGS = ("--no-ext-diff", "--no-textconv")
_GREP_FLAGS = ("--no-textconv",)

# Commands that never convert work tree content (so never run a filter driver), whatever
# their options (checked: cat-file and ls-files below). Any other command gets the overrides.
_NO_CONTENT = frozenset(
    {
        "cat-file",
        "check-attr",
        "config",
        "for-each-ref",
        "grep",
        "log",
        "ls-files",
        "ls-tree",
        "merge-base",
        "rev-parse",
        "show",
        "symbolic-ref",
        "var",
        "version",
    }
)
# Options under which a command of _NO_CONTENT does hash or convert work tree files.
_CONTENT_OPTIONS = frozenset({"--filters", "--textconv", "-m", "--modified"})

_DRIVER_KEY = r"^(filter\..*\.(clean|smudge|process|required)|diff\.submodule)$"
DRIVER_QUERY: tuple[str, ...] = ("config", "-z", "--show-scope", "--get-regexp", _DRIVER_KEY)
"""The ``git config`` read whose output :func:`driver_overrides` takes (exit 1: none).

``config -z --show-scope --list`` gives the same records (and more): evidence reads that
once for this and its own settings."""
_FILTER_KEYS = ("clean", "smudge", "process", "required")

TRUSTED_SCOPES = frozenset({"system", "global", "command"})

# The caller's environment that git may see: where the user's configuration and the
# repository are, the locale, and what changes diff or pathspec output (evidence replays
# the original's commands under them). Programs (GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND,
# GIT_PAGER, GIT_ASKPASS, GIT_EDITOR) and everything else stay behind.
_PASSED = frozenset(
    {
        "HOME",
        "PATH",
        "TMPDIR",
        "TZ",
        "LANG",
        "LANGUAGE",
        "XDG_CONFIG_HOME",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_ATTR_NOSYSTEM",
        "GIT_CEILING_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_SYSTEM",
        "GIT_DEFAULT_HASH",
        "GIT_DIFF_OPTS",
        "GIT_DIR",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_EXEC_PATH",
        "GIT_GLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
        "GIT_INDEX_FILE",
        "GIT_LITERAL_PATHSPECS",
        "GIT_NAMESPACE",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_OPTIONAL_LOCKS",
        "GIT_REPLACE_REF_BASE",
        "GIT_WORK_TREE",
    }
)
_PASSED_PREFIXES = ("LC_",)


def _subcommand(args: Sequence[str | bytes]) -> tuple[int, str]:
    """The index and name of the subcommand in ``args`` (after global options)."""
    i = 0
    while i < len(args):
        word = os.fsdecode(args[i])
        if word in ("-c", "-C"):
            i += 2
            continue
        if not word.startswith("-"):
            return i, word
        i += 1
    return len(args), ""


def argv(repo: str | os.PathLike[str], args: Sequence[str | bytes]) -> list[str]:
    """``git -C repo <GLOBAL_OPTIONS> args...``, with the diff flags after a diff command.

    Bytes (a name that is not UTF-8) become ``str`` with surrogate escapes, which the
    process layer encodes back to the same bytes.
    """
    at, name = _subcommand(args)
    words = [os.fsdecode(a) for a in args]
    flags = _DIFF_FLAGS if name in _DIFF_COMMANDS else _GREP_FLAGS if name == "grep" else ()
    words[at + 1 : at + 1] = flags
    return ["git", "-C", os.fsdecode(repo), *GLOBAL_OPTIONS, *words]


def needs_driver_overrides(args: Sequence[str | bytes]) -> bool:
    """Whether the command may convert work tree content, so run a filter driver."""
    at, name = _subcommand(args)
    if name not in _NO_CONTENT:
        return True
    return any(os.fsdecode(a) in _CONTENT_OPTIONS for a in args[at + 1 :])


def _is_driver_key(key: str) -> bool:
    if key == "diff.submodule":
        return True
    section, _, rest = key.partition(".")
    return section == "filter" and rest.rpartition(".")[2] in _FILTER_KEYS and "." in rest


def driver_overrides(listing: bytes) -> list[tuple[str, str]]:
    """The ``(key, value)`` overrides for :data:`DRIVER_QUERY`'s output.

    Every filter key (``filter.<name>.clean/smudge/process/required``) and
    ``diff.submodule`` whose last value comes from an untrusted scope is set to its last
    trusted value, or to the empty string (no filter command; ``required`` false;
    ``diff.submodule``: ``short``, git's default). A ``diff.submodule`` that ends up
    ``diff`` becomes ``log``. Other records in ``listing`` are ignored.
    """
    trusted: dict[str, str] = {}
    last_scope: dict[str, str] = {}
    last_value: dict[str, str] = {}
    for scope, key, raw_value in config_entries(listing):
        if not _is_driver_key(key):
            continue
        value = "true" if raw_value is None else raw_value
        last_scope[key] = scope
        last_value[key] = value
        if scope in TRUSTED_SCOPES:
            trusted[key] = value
    overrides: dict[str, str] = {}
    for key, scope in last_scope.items():
        if scope not in TRUSTED_SCOPES:
            overrides[key] = trusted.get(key, "short" if key == "diff.submodule" else "")
    submodule = overrides.get("diff.submodule", last_value.get("diff.submodule", ""))
    if submodule.strip().lower() == "diff":
        overrides["diff.submodule"] = "log"
    return sorted(overrides.items())


def config_entries(listing: bytes) -> list[tuple[str, str, str | None]]:
    """``(scope, key, value)`` from ``git config -z --show-scope`` output (records
    ``scope\\0key\\nvalue\\0``; a key with no ``=`` has no value: ``None``)."""
    words = listing.split(b"\0")
    out = []
    for i in range(0, len(words) - 1, 2):
        scope = os.fsdecode(words[i])
        key, newline, value = os.fsdecode(words[i + 1]).partition("\n")
        out.append((scope, key, value if newline else None))
    return out


def environment(
    overrides: Sequence[tuple[str, str]] = (), source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for git: the allow-listed part of ``source`` (``os.environ``),
    the caller's ``GIT_CONFIG_COUNT`` entries, then ``overrides`` appended to them."""
    environ = os.environ if source is None else source
    env = {
        name: value
        for name, value in environ.items()
        if name in _PASSED or name.startswith(_PASSED_PREFIXES)
    }
    env.setdefault("GIT_OPTIONAL_LOCKS", "0")  # read-only commands must not take index.lock
    env["GIT_TERMINAL_PROMPT"] = "0"  # never ask for a password (no transport runs anyway)
    entries = [*_caller_entries(environ), *overrides]
    for i, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    if entries:
        env["GIT_CONFIG_COUNT"] = str(len(entries))
    return env


def _caller_entries(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """The caller's own ``GIT_CONFIG_COUNT`` entries (trusted, ``command`` scope)."""
    count = environ.get("GIT_CONFIG_COUNT", "")
    if not count.isdigit():
        return []
    entries = []
    for i in range(int(count)):
        key = environ.get(f"GIT_CONFIG_KEY_{i}")
        if key is None:
            break  # git itself refuses the command: keep what is well formed
        entries.append((key, environ.get(f"GIT_CONFIG_VALUE_{i}", "")))
    return entries
