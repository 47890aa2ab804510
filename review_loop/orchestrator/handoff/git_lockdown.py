"""How review-loop runs git: nothing the reviewed repository configures runs.

A repository's own configuration (``.git/config``, ``config.worktree``, and what they
include) can name programs that git starts on its own: an fsmonitor hook, hooks, an
external diff, textconv and filter drivers, a pager, an ssh command, credential helpers,
a gpg program. That configuration is not the user's: an agent working in the tree, or an
edit review-loop applied, can write it. Every git review-loop runs gets its argv and its
environment from here (``docs/reviewer-lockdown.md``):

- :data:`GLOBAL_OPTIONS` switch off what one setting names for every command:
  ``core.fsmonitor``, hooks (``core.hooksPath=/dev/null``), the pager, every transport
  (``protocol.allow=never``: no ssh command, remote helper, credential helper or askpass;
  a partial clone's lazy fetch fails instead) and signature checks (``log.showSignature``).
  The one command that must reach a remote, ``fetch``, gets :data:`TRANSPORT_OPTIONS`
  instead, and the transport programs the repository names are reset with the drivers.
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
    "is_transport",
    "needs_driver_overrides",
]

_ALWAYS: tuple[str, ...] = (
    "--no-pager",
    "-c",
    "core.fsmonitor=",  # empty: off (a hook path or a boolean; "" is neither)
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
)
GLOBAL_OPTIONS: tuple[str, ...] = (
    *_ALWAYS,
    "-c",
    "protocol.allow=never",  # no transport: ssh command, helpers, a lazy fetch
    "-c",
    "log.showSignature=false",
)
"""Global options before every subcommand review-loop runs (but ``fetch``)."""

TRANSPORT_OPTIONS: tuple[str, ...] = (
    *_ALWAYS,
    "-c",
    "protocol.ext.allow=never",  # whatever the repository allows: no ext:: command
    "-c",
    "fetch.recurseSubmodules=false",  # a submodule's own configuration is not read here
)
"""Global options before ``fetch`` (scope resolution refreshes an ``origin/`` base): the
user's transports work; what the repository's configuration names for them is reset with
the drivers (:func:`driver_overrides`)."""
_TRANSPORT_COMMANDS = frozenset({"fetch"})

# Commands that can show a diff and so run an external diff or a textconv driver.
_DIFF_COMMANDS = frozenset({"diff", "diff-files", "diff-index", "diff-tree", "log", "show"})
_DIFF_FLAGS = ("--no-ext-diff", "--no-textconv")
_GREP_FLAGS = ("--no-textconv",)
# remote.<name>.uploadpack is first-wins (no -c can outrank the repository's): the command
# line names git's own. (A user's own uploadpack path is not honoured by review-loop's fetch.)
_FETCH_FLAGS = ("--upload-pack=git-upload-pack",)
_FLAGS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_DIFF_COMMANDS, _DIFF_FLAGS),
    "grep": _GREP_FLAGS,
    "fetch": _FETCH_FLAGS,
}

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

_DRIVER_KEY = (
    r"^(filter\..*\.(clean|smudge|process|required)|diff\.submodule"
    r"|core\.(sshcommand|askpass|gitproxy)|credential\.(.*\.)?helper)$"
)
DRIVER_QUERY: tuple[str, ...] = ("config", "-z", "--show-scope", "--get-regexp", _DRIVER_KEY)
"""The ``git config`` read whose output :func:`driver_overrides` takes (exit 1: none).

``config -z --show-scope --list`` gives the same records (and more): evidence reads that
once for this and its own settings."""
_FILTER_KEYS = ("clean", "smudge", "process", "required")
# Single-valued keys outside filter.*, and the value an untrusted one is reset to when the
# user's configuration has none (git's own default, or nothing).
_RESET = {"diff.submodule": "short", "core.sshcommand": "ssh", "core.askpass": ""}

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
# What a fetch needs to reach the user's remotes as the user's own git would: the ssh agent,
# the caller's own ssh/askpass programs, proxies and certificates.
_TRANSPORT_PASSED = frozenset(
    {
        "SSH_AUTH_SOCK",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_SSL_CAINFO",
        "GIT_SSL_CAPATH",
        "GIT_SSL_NO_VERIFY",
        "SSL_CERT_DIR",
        "SSL_CERT_FILE",
        "CURL_CA_BUNDLE",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
    }
)


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


def is_transport(args: Sequence[str | bytes]) -> bool:
    """Whether the command talks to a remote (``fetch``): see :data:`TRANSPORT_OPTIONS`."""
    return _subcommand(args)[1] in _TRANSPORT_COMMANDS


def argv(repo: str | os.PathLike[str], args: Sequence[str | bytes]) -> list[str]:
    """``git -C repo <GLOBAL_OPTIONS> args...``, with the diff flags after a diff command
    (:data:`TRANSPORT_OPTIONS` for ``fetch``).

    Bytes (a name that is not UTF-8) become ``str`` with surrogate escapes, which the
    process layer encodes back to the same bytes.
    """
    at, name = _subcommand(args)
    words = [os.fsdecode(a) for a in args]
    flags = _FLAGS.get(name, ())
    words[at + 1 : at + 1] = flags
    options = TRANSPORT_OPTIONS if name in _TRANSPORT_COMMANDS else GLOBAL_OPTIONS
    return ["git", "-C", os.fsdecode(repo), *options, *words]


def needs_driver_overrides(args: Sequence[str | bytes]) -> bool:
    """Whether the command may convert work tree content, so run a filter driver."""
    at, name = _subcommand(args)
    if name not in _NO_CONTENT:
        return True
    return any(os.fsdecode(a) in _CONTENT_OPTIONS for a in args[at + 1 :])


def _single_default(key: str) -> str | None:
    """The reset value of a single-valued key this module resets, else ``None``."""
    if key in _RESET:
        return _RESET[key]
    section, _, rest = key.partition(".")
    name, _, last = rest.rpartition(".")
    if section == "filter" and name and last in _FILTER_KEYS:
        return ""
    return None


def _is_helper_list(key: str) -> bool:
    return key.startswith("credential.") and key.endswith(".helper")


def driver_overrides(listing: bytes) -> list[tuple[str, str]]:
    """The ``(key, value)`` overrides for :data:`DRIVER_QUERY`'s output.

    A single-valued key (``filter.<name>.clean/smudge/process/required``,
    ``diff.submodule``, ``core.sshCommand``, ``core.askPass``) whose last value comes from
    an untrusted scope is set to its last trusted value, or reset (no filter command,
    ``required`` false, git's default ``short``, ``ssh``, no askpass). A
    ``diff.submodule`` that ends up ``diff`` becomes ``log``. A credential helper list with
    an untrusted entry is emptied (an empty value) and given the trusted entries again. An
    untrusted ``core.gitProxy`` (first match wins, so it cannot be outranked) turns the
    ``git://`` transport off. Other records in ``listing`` are ignored.
    """
    trusted: dict[str, str] = {}
    last_scope: dict[str, str] = {}
    last_value: dict[str, str] = {}
    helpers: dict[str, list[tuple[str, str]]] = {}
    proxied = False
    for scope, key, raw_value in config_entries(listing):
        value = "true" if raw_value is None else raw_value
        if _is_helper_list(key):
            helpers.setdefault(key, []).append((scope, value))
            continue
        if key == "core.gitproxy":
            proxied = proxied or scope not in TRUSTED_SCOPES
            continue
        if _single_default(key) is None:
            continue
        last_scope[key] = scope
        last_value[key] = value
        if scope in TRUSTED_SCOPES:
            trusted[key] = value
    overrides: dict[str, str] = {}
    for key, scope in last_scope.items():
        if scope not in TRUSTED_SCOPES:
            overrides[key] = trusted.get(key, _single_default(key) or "")
    submodule = overrides.get("diff.submodule", last_value.get("diff.submodule", ""))
    if submodule.strip().lower() == "diff":
        overrides["diff.submodule"] = "log"
    out = sorted(overrides.items())
    for key, entries in sorted(helpers.items()):
        if any(scope not in TRUSTED_SCOPES for scope, _ in entries):
            out.append((key, ""))  # an empty helper empties the list
            out += [(key, value) for scope, value in entries if scope in TRUSTED_SCOPES]
    if proxied:
        out.append(("protocol.git.allow", "never"))
    return out


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
    overrides: Sequence[tuple[str, str]] = (),
    source: Mapping[str, str] | None = None,
    *,
    transport: bool = False,
) -> dict[str, str]:
    """The environment for git: the allow-listed part of ``source`` (``os.environ``; with
    ``transport``, also what reaching a remote needs), the caller's ``GIT_CONFIG_COUNT``
    entries, then ``overrides`` appended to them."""
    environ = os.environ if source is None else source
    env = {
        name: value
        for name, value in environ.items()
        if name in _PASSED
        or name.startswith(_PASSED_PREFIXES)
        or (transport and name in _TRANSPORT_PASSED)
    }
    env.setdefault("GIT_OPTIONAL_LOCKS", "0")  # read-only commands must not take index.lock
    env["GIT_TERMINAL_PROMPT"] = "0"  # never ask on a terminal: nobody is there to answer
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
