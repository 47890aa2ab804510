"""A scriptable fake of the four reviewer CLIs, run through the real process layer.

Installed by :func:`tests.fakes.install_fake_clis` as executables named ``claude``,
``codex``, ``gemini`` and ``grok`` on a temporary PATH. Each invocation:

- logs ``{product, argv, stdin, cwd, pid, env}`` as one JSON line to ``$FAKE_AGENT_LOG``;
- takes the next step of ``$FAKE_AGENT_SCRIPT`` (JSON ``{product or "*": [step, ...]}``;
  the last step repeats) — or answers ``ok`` when there is no script;
- prints what that product prints for the step, in the product's own output format.

A step is ``{"mode": M, ...}`` with ``M`` one of: ``ok`` (``text``), ``fail`` (an API error
after the request left), ``not-logged-in`` (credential refusal before any request),
``session-not-found``, ``bad-args`` (argument refusal), ``hang``, ``stubborn`` (ignores
SIGTERM), ``grandchild`` (answers, leaving a sleeping grandchild that holds stdout),
``setsid-grandchild`` (a grandchild in its own session holding stdout, then hang),
``garbage``, ``non-utf8``, ``huge`` (``bytes``), ``slow-stream`` (``lines``, ``interval``),
``empty``, ``burn`` (uses CPU for ``seconds`` without a byte of output, then answers),
``flood`` (prints junk lines until killed), ``big-answer`` (a valid answer of
``bytes`` characters), ``answer-then-linger`` (answers, of ``bytes`` characters if given,
closes stdout and stderr, sleeps ``linger`` seconds), ``partial-then-linger`` (the same with
its output's last characters cut off), ``ok-leaving`` (answers, leaving the processes listed
in ``leave``: ``detached``, ``daemon``, ``daemon-pipe``; see ``_leave``),
``stubborn-escape`` (a SIGTERM-ignoring grandchild in its own session holding stdout, then
hang; the pids left are noted in ``$FAKE_AGENT_SCRIPT.pids``), ``read-paths`` (tries to read each
of ``paths`` and answers with one JSON object: path -> its content, the sorted names of a
directory, or ``"<ErrorName>"``; then tries to unmount each of them, noting
``"umount <path>": rc``).
``--version`` prints ``$FAKE_AGENT_VERSION`` (default ``9.9.9``). A ``--help`` or
``--version`` probe is not a call (not in ``$FAKE_AGENT_LOG``); with ``$FAKE_AGENT_PROBE_LOG``
set, each logs ``{product, argv, cwd}`` there.
Any step may carry ``delay`` (seconds before output), ``wait_for`` (a path: no output until
it exists), ``write`` (a path,
relative to the cwd, the fake writes to — to prove read-only isolation), and ``exit``.
An audit concern's step may carry ``read_receipts`` (``true``: the reply's ``audited`` paths
are read from the cwd, as a reviewer with a Read tool would, and their receipts added under
``read``; a number ``N``: each read stops after ``N`` lines, a truncated read).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

GROK_BUILD_HELP = """Usage: grok [options]
  -p, --prompt <prompt>        run one prompt headless
  --prompt-file <file>         read the prompt from a file
  --output-format <format>     text | json | streaming-json
  --sandbox <mode>             read-only | workspace-write
  -r, --resume <id>            resume a session
  --permission-mode <mode>     default | dontAsk
  --tools <tools>              the tools the model may use
  --disallowed-tools <tools>   tools the model may not use
  --deny <rule>                a permission rule that denies
  --no-subagents               start no subagent
  --disable-web-search         no web search
  --no-auto-update             do not update itself
"""
HELP = {
    "claude": """Usage: claude [options] [command] [prompt]
Options:
  -p, --print                           Print response and exit
  --output-format <format>              text, json or stream-json
  --permission-mode <mode>              Permission mode to use for the session
  --tools <tools...>                    Specify the list of available tools
  --disallowedTools, --disallowed-tools <tools...>  Tools to deny
  --setting-sources <sources>           Comma-separated list of setting sources
  --strict-mcp-config                   Only use MCP servers from --mcp-config
  --mcp-config <configs...>             Load MCP servers from JSON files or strings
  --settings <file-or-json>             A settings JSON file or string
  -r, --resume [value]                  Resume a conversation by session ID
  --session-id <uuid>                   Use a specific session ID
""",
    "codex": """Run Codex non-interactively

Usage: codex exec [OPTIONS] [PROMPT] [COMMAND]

Options:
  -c, --config <key=value>
          Override a configuration value
  -s, --sandbox <SANDBOX_MODE>
          Select the sandbox policy
  -C, --cd <DIR>
          Tell the agent to use the specified directory as its working root
      --skip-git-repo-check
          Allow running Codex outside a Git repository
      --disable <FEATURE>
          Disable a feature (repeatable)
      --ignore-rules
          Do not load execpolicy .rules files
      --json
          Print events to stdout as JSONL
""",
    "gemini": """Usage: gemini [options] [command]
Options:
  -p, --prompt                    Run in non-interactive (headless) mode  [string]
      --skip-trust                Trust the current workspace for this session.  [boolean]
      --approval-mode             Set the approval mode: plan (read-only mode)  [string]
      --admin-policy              Additional admin policy files  [array]
  -r, --resume                    Resume a previous session.  [string]
      --session-id                Start a new session with this UUID.  [string]
  -o, --output-format             The format of the CLI output.  [string]
""",
}
"""What ``--help`` prints: the real CLIs' layout, every flag the adapters require (as of
the pinned versions). ``$FAKE_AGENT_HELP_DROP`` (comma-separated flags) leaves out the
lines that define them: a CLI version that dropped a flag; ``$FAKE_AGENT_HELP_EXIT`` is
its exit status (a help that fails)."""


def _help(product: str, grok_variant: str) -> str:
    if product == "grok":
        text = GROK_VIBE_HELP if grok_variant == "vibe" else GROK_BUILD_HELP
    else:
        text = HELP.get(product, f"Usage: {product} [options]\n")
    dropped = {flag for flag in os.environ.get("FAKE_AGENT_HELP_DROP", "").split(",") if flag}
    lines = text.splitlines()
    kept = [line for line in lines if not dropped & set(re.split(r"[\s,<\[]+", line.strip()))]
    return "\n".join(kept)


GROK_VIBE_HELP = """Usage: grok [options] [command] [message...]
Options:
  -V, --version               output the version number
  -d, --directory <dir>       set working directory
  -p, --prompt <prompt>       process a single prompt and exit (headless mode)
  --max-tool-rounds <rounds>  maximum number of tool execution rounds (default: 400)
"""


def _next_step(product: str) -> dict[str, Any]:
    script_path = os.environ.get("FAKE_AGENT_SCRIPT")
    if not script_path or not Path(script_path).exists():
        return {"mode": "ok"}
    script = json.loads(Path(script_path).read_text())
    steps = script.get(product) or script.get("*") or [{"mode": "ok"}]
    counter = Path(f"{script_path}.{product}.count")
    try:
        with open(f"{script_path}.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = int(counter.read_text()) if counter.exists() else 0
            counter.write_text(str(index + 1))
    except OSError:  # a read-only file system (an isolated run): this step, uncounted
        index = int(counter.read_text()) if counter.exists() else 0
    return dict(steps[min(index, len(steps) - 1)])


def _log_probe(product: str, argv: list[str]) -> None:
    """Where a probe ran: a CLI may load the project config of its working directory."""
    log = os.environ.get("FAKE_AGENT_PROBE_LOG")
    if log:
        with open(log, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write(json.dumps({"product": product, "argv": argv, "cwd": os.getcwd()}) + "\n")


def _log(product: str, argv: list[str], stdin: str) -> None:
    log = os.environ.get("FAKE_AGENT_LOG")
    if not log:
        return
    entry = {
        "product": product,
        "argv": argv,
        "stdin": stdin,
        "cwd": os.getcwd(),
        "cwd_entries": sorted(os.listdir(".")),
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("CLAUDE", "GEMINI", "FAKE"))},
    }
    try:
        with open(log, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write(json.dumps(entry) + "\n")
    except OSError as error:  # a read-only file system (an isolated run): not logged
        _print(f"fake agent: cannot log this call: {error}", err=True)


def _flag(argv: list[str], *names: str) -> str | None:
    for i, word in enumerate(argv):
        if word in names and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _session_id(product: str, argv: list[str]) -> str:
    if product == "codex" and "resume" in argv:
        return argv[argv.index("resume") + 1]
    resumed = _flag(argv, "--resume", "-r")
    return resumed or _flag(argv, "--session-id") or str(uuid.uuid4())


def _read_prompt(product: str, argv: list[str]) -> str:
    if product == "grok":
        return _flag(argv, "-p", "--prompt") or ""
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    try:
        return sys.stdin.read()
    except (OSError, ValueError):
        return ""


def _print(text: str = "", *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def _ok(product: str, sid: str, text: str, grok_variant: str) -> None:
    if product == "claude":
        _print(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": False,
                    "api_error_status": None,
                    "result": text,
                    "session_id": sid,
                    "num_turns": 1,
                    "total_cost_usd": 0.0125,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                }
            )
        )
    elif product == "codex":
        for event in (
            {"type": "thread.started", "thread_id": sid},
            {"type": "turn.started"},
            {
                "type": "item.completed",
                "item": {"id": "item_0", "type": "error", "message": "Model metadata not found"},
            },
            {
                "type": "item.completed",
                "item": {"id": "item_1", "type": "agent_message", "text": text},
            },
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5},
            },
        ):
            _print(json.dumps(event))
    elif product == "gemini":
        _print(
            json.dumps(
                {
                    "session_id": sid,
                    "response": text,
                    "stats": {
                        "models": {"gemini-fake": {"tokens": {"prompt": 10, "candidates": 5}}}
                    },
                }
            )
        )
    elif grok_variant == "vibe":
        _print(json.dumps({"role": "user", "content": "question"}))
        _print(json.dumps({"role": "assistant", "content": text}))
    else:
        _print(json.dumps({"text": text, "stopReason": "EndTurn", "sessionId": sid}))


def _fail(product: str, sid: str, grok_variant: str) -> int:
    if product == "claude":
        _print(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": True,
                    "api_error_status": 500,
                    "session_id": sid,
                    "result": "API Error: 500 internal server error",
                }
            )
        )
        return 1
    if product == "codex":
        _print(json.dumps({"type": "thread.started", "thread_id": sid}))
        _print(json.dumps({"type": "turn.failed", "error": {"message": "unexpected status 500"}}))
        return 1
    if product == "gemini":
        _print(
            json.dumps(
                {
                    "session_id": sid,
                    "error": {"type": "Error", "message": "[API Error: 500]", "code": 500},
                }
            ),
            err=True,
        )
        return 1
    if grok_variant == "vibe":
        _print(
            json.dumps(
                {
                    "role": "assistant",
                    "content": "Sorry, I encountered an error: Grok API error: 500",
                }
            )
        )
        return 0
    _print(json.dumps({"error": "API error 500"}), err=True)
    return 1


def _not_logged_in(product: str, sid: str) -> int:
    if product == "claude":
        _print(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": True,
                    "api_error_status": None,
                    "session_id": sid,
                    "result": "Not logged in · Please run /login",
                }
            )
        )
        return 1
    if product == "codex":
        _print("Missing environment variable: 'FAKE_API_KEY'.", err=True)
        return 1
    if product == "gemini":
        _print(
            json.dumps(
                {
                    "session_id": sid,
                    "error": {"type": "Error", "message": "Please set an Auth method", "code": 41},
                }
            ),
            err=True,
        )
        return 41
    _print("❌ Error: API key required. Set GROK_API_KEY environment variable", err=True)
    return 1


def _session_not_found(product: str, sid: str) -> int:
    if product == "claude":
        _print(f"No conversation found with session ID: {sid}", err=True)
    elif product == "codex":
        _print(
            f"Error: thread/resume: thread/resume failed: no rollout found for thread id "
            f"{sid} (code -32600)",
            err=True,
        )
    elif product == "gemini":
        _print(f'Error resuming session: Invalid session identifier "{sid}".', err=True)
    else:
        _print(f"Session not found: {sid}", err=True)
    return 1


def _spawn_sleeper(*, new_session: bool) -> None:
    code = f"import os, time\n{'os.setsid()' if new_session else ''}\ntime.sleep(3600)\n"
    # stdout/stderr are inherited on purpose: the grandchild keeps the pipes open.
    subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)


def _note_pid(pid: int) -> None:
    """Append ``pid`` to ``$FAKE_AGENT_SCRIPT.pids``: the processes a step left behind."""
    script = os.environ.get("FAKE_AGENT_SCRIPT")
    if script:
        with open(f"{script}.pids", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write(f"{pid}\n")


def _leave(kind: str) -> None:
    """Leave one process behind, as a CLI's background helper or daemon would.

    ``detached``: its own session, stdio on /dev/null, the environment (marker) kept.
    ``daemon``: double-forked (its parent exits at once, so nobody sees it as a child),
    its own session, stdio on /dev/null, ``REVIEW_LOOP_SESSION_MARKER`` dropped.
    ``daemon-pipe``: the same, but it keeps stdout and stderr open.
    ``stubborn-escape``: its own session, ignores SIGTERM, keeps stdout and stderr open.
    """
    sleeper = "import signal, time\n"
    if kind == "stubborn-escape":
        sleeper += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    sleeper += "time.sleep(3600)\n"
    null = subprocess.DEVNULL
    if kind in ("detached", "stubborn-escape"):
        keep = kind == "stubborn-escape"
        helper = subprocess.Popen(
            [sys.executable, "-c", sleeper],
            stdin=null,
            stdout=None if keep else null,
            stderr=None if keep else null,
            start_new_session=True,
        )
        _note_pid(helper.pid)
        return
    env = {k: v for k, v in os.environ.items() if k != "REVIEW_LOOP_SESSION_MARKER"}
    middle = os.fork()
    if middle == 0:  # the intermediate: new session, fork the daemon, note it, vanish
        os.setsid()
        daemon = os.fork()
        if daemon == 0:
            if kind == "daemon":
                fd = os.open(os.devnull, os.O_RDWR)
                for target in (0, 1, 2):
                    os.dup2(fd, target)
            os.execve(sys.executable, [sys.executable, "-c", sleeper], env)
        _note_pid(daemon)
        os._exit(0)
    os.waitpid(middle, 0)


def _read_paths(paths: list[str]) -> dict[str, Any]:
    """What this process can read of each path, then whether it can unmount it."""
    seen: dict[str, Any] = {}
    for path in paths:
        try:
            if os.path.isdir(path):
                seen[path] = sorted(os.listdir(path))
            else:
                seen[path] = Path(path).read_text(errors="replace")
        except OSError as error:
            seen[path] = f"<{type(error).__name__}>"
    for path in paths:  # a reviewer that could unmount a cover would see what it hides
        done = subprocess.run(["umount", path], capture_output=True, check=False)
        seen[f"umount {path}"] = done.returncode
    return seen


def _with_receipts(text: str, cap: Any) -> str:
    """The reply with a read receipt (line count, last non-blank line) per audited path it
    could read from the cwd; ``cap`` lines at most when it is a number (``True``: all)."""
    reply = json.loads(text)
    receipts = {}
    for path in reply.get("audited") or []:
        try:
            lines = Path(path).read_text().split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        if lines and lines[-1] == "":
            lines.pop()
        if cap is not True:
            lines = lines[: int(cap)]
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        receipts[path] = {"lines": len(lines), "lastLine": last}
    return json.dumps({**reply, "read": receipts})


def main(product: str) -> int:
    argv = sys.argv[1:]
    grok_variant = os.environ.get("FAKE_GROK_VARIANT", "build")
    if {"--help", "-h", "--version", "-V"} & set(argv):
        _log_probe(product, argv)
    if "--help" in argv or "-h" in argv:
        _print(_help(product, grok_variant))
        return int(os.environ.get("FAKE_AGENT_HELP_EXIT") or 0)
    if "--version" in argv or "-V" in argv:
        version = os.environ.get("FAKE_AGENT_VERSION", "9.9.9")  # an old one: cli_too_old
        _print("1.0.1" if product == "grok" and grok_variant == "vibe" else f"{product} {version}")
        return 0
    prompt = _read_prompt(product, argv)
    step = _next_step(product)
    _log(product, argv, prompt)
    sid = _session_id(product, argv)
    mode = step.get("mode", "ok")
    if step.get("write"):
        try:
            Path(step["write"]).write_text("written by a fake reviewer\n")
        except OSError as error:  # a read-only tree refuses it; the run goes on, as a CLI's would
            _print(f"write refused: {error}", err=True)
    if step.get("delay"):
        time.sleep(float(step["delay"]))
    while step.get("wait_for") and not Path(step["wait_for"]).exists():
        time.sleep(0.05)  # held until the test creates the file: provably running meanwhile
    first_line = prompt.strip().splitlines()[-1] if prompt.strip() else ""
    text = step.get("text", f"FAKE-ANSWER from {product}: {first_line[:60]}")
    if step.get("read_receipts"):
        text = _with_receipts(text, step["read_receipts"])
    exit_code = step.get("exit")
    if mode == "read-paths":
        _ok(product, sid, json.dumps(_read_paths(step.get("paths", []))), grok_variant)
        return 0
    if mode == "ok":
        _ok(product, sid, text, grok_variant)
        return int(exit_code or 0)
    if mode == "fail":
        return _fail(product, sid, grok_variant)
    if mode == "not-logged-in":
        return _not_logged_in(product, sid)
    if mode == "session-not-found":
        return _session_not_found(product, sid)
    if mode == "bad-args":
        _print("error: unexpected argument '--bogus' found", err=True)
        return int(exit_code or 2)
    if mode == "empty":
        return int(exit_code or 0)
    if mode == "garbage":
        _print("this is not json {{{ at all")
        return int(exit_code or 0)
    if mode == "non-utf8":
        sys.stdout.buffer.write(b"\xff\xfe\xfa not utf-8 \x80\n")
        sys.stdout.flush()
        return int(exit_code or 0)
    if mode == "huge":
        chunk = b"x" * 65536 + b"\n"
        for _ in range(int(step.get("bytes", 100 * 1024 * 1024)) // len(chunk)):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return int(exit_code or 0)
    if mode == "flood":  # a CLI stuck printing: lines of junk until it is killed
        line = b"y" * 65535 + b"\n"
        if "bytes" in step:  # that much, then stuck silent: the flood's size does not
            for _ in range(-(-int(step["bytes"]) // len(line))):  # hang on the machine's speed
                sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
            time.sleep(3600)
        while True:
            sys.stdout.buffer.write(line)
    if mode == "big-answer":  # a whole, valid answer of ``bytes`` characters
        _ok(product, sid, "z" * int(step.get("bytes", 50 * 1000 * 1000)), grok_variant)
        return int(exit_code or 0)
    if mode in ("answer-then-linger", "partial-then-linger"):  # lets go of stdout, stays
        text = "z" * int(step["bytes"]) if "bytes" in step else text
        if mode == "partial-then-linger":  # its answer cut short of its format's end
            sys.stdout, whole = io.StringIO(), sys.stdout
            _ok(product, sid, text, grok_variant)
            sys.stdout, printed = whole, sys.stdout.getvalue()
            _print(printed.rstrip("\n")[:-3])
        else:
            _ok(product, sid, text, grok_variant)
        os.close(1)
        os.close(2)
        time.sleep(float(step.get("linger", 3600)))
        return 0
    if mode == "slow-stream":
        for i in range(int(step.get("lines", 5))):
            _print(f"progress {i}", err=True)
            time.sleep(float(step.get("interval", 0.2)))
        _ok(product, sid, text, grok_variant)
        return 0
    if mode == "grandchild":
        _spawn_sleeper(new_session=False)
        _ok(product, sid, text, grok_variant)
        return 0
    if mode == "setsid-grandchild":
        _spawn_sleeper(new_session=True)
        time.sleep(3600)
        return 0
    if mode == "ok-leaving":
        for kind in step.get("leave", ["detached"]):
            _leave(kind)
        _ok(product, sid, text, grok_variant)
        return int(exit_code or 0)
    if mode == "stubborn-escape":
        _leave("stubborn-escape")
        time.sleep(3600)
        return 0
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
        return 0
    if mode == "burn":  # thinks without printing: CPU time, no output, for ``seconds``
        until = time.monotonic() + float(step.get("seconds", 3))
        while time.monotonic() < until:
            sum(range(10_000))
        _ok(product, sid, text, grok_variant)
        return 0
    if mode == "hang":
        if product == "codex":
            _print(json.dumps({"type": "thread.started", "thread_id": sid}))
        time.sleep(3600)
        return 0
    _print(f"fake_agent: unknown mode {mode!r}", err=True)
    return 99


if __name__ == "__main__":
    match = re.match(r"--as=(\w+)", sys.argv[1] if len(sys.argv) > 1 else "")
    if not match:
        sys.exit("usage: fake_agent.py --as=PRODUCT [args...]")
    del sys.argv[1]
    sys.exit(main(match.group(1)))
