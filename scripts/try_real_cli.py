"""Try a real reviewer CLI through review-loop with no key: ``scripts/try-real-cli``.

Starts the bundled fake model API (``tests/fakes/model_api.py``) on 127.0.0.1, gives the
chosen real CLI (claude, codex, gemini or grok, as ``scripts/install-clis`` pins them in
``.clis/``) a throw-away HOME whose configuration points it at that API, and runs one
``review-loop`` command with it on PATH. Nothing of your own environment's keys or CLI
logins is used or touched; the HOME, review-loop's state and (unless ``--repo``) the git
repository are temporary and removed at exit (``--keep`` keeps them).

    scripts/try-real-cli claude
    scripts/try-real-cli codex --reply "Looks fine." -- consult --peer codex --question "Ship?"
    scripts/try-real-cli claude --replies answers.json -- run --reviewer claude

Without a command, it asks the CLI a consult whose answer the fake API echoes. Each model
turn takes the next ``--reply`` (or item of ``--replies``, a JSON list of strings), then
follows the fake's in-band markers (``ECHO: text``, ``[[DELAY 2]]``, ``[[HTTP 401]]``), then
answers ``FAKE-ANSWER #<n>``. The command's JSON document is on stdout, its progress on
stderr, and its exit code is this script's.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCTS = ("claude", "codex", "gemini", "grok")
BIN_ENV = "REVIEW_LOOP_E2E_BIN"
"""Where the real CLIs are, as the e2e tier reads it (default ``.clis/node_modules/.bin``)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/try-real-cli",
        description="Run a real reviewer CLI through review-loop against the fake model API.",
    )
    parser.add_argument("product", choices=PRODUCTS)
    parser.add_argument("--reply", action="append", default=[], help="the next model answer")
    parser.add_argument("--replies", type=Path, help="a JSON list of model answers, in order")
    parser.add_argument("--repo", type=Path, help="run in this checkout (default: a new one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.epilog = "After --, the review-loop command to run (default: a consult)."
    return parser


def _replies(args: argparse.Namespace) -> list[str]:
    replies = list(args.reply)
    if args.replies is not None:
        listed = json.loads(args.replies.read_text(encoding="utf-8"))
        if not isinstance(listed, list) or not all(isinstance(r, str) for r in listed):
            raise SystemExit(f"--replies: {args.replies} must hold a JSON list of strings")
        replies += listed
    return replies


def _cli_bin(product: str) -> Path:
    folder = Path(os.environ.get(BIN_ENV) or ROOT / ".clis" / "node_modules" / ".bin")
    if not os.access(folder / product, os.X_OK):
        raise SystemExit(
            f"try-real-cli: the real {product} CLI is not at {folder / product}: run "
            f"scripts/install-clis (or point {BIN_ENV} at a folder holding it)"
        )
    return folder


def _scratch_repo(scratch: Path) -> Path:
    """A git repository with one commit and one uncommitted change (for ``run``)."""
    repo = scratch / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=try", "-c", "user.email=try@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "calc.py").write_text("def total(xs):\n    return sum(xs[1:])\n")
    subprocess.run([*git, "add", "calc.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "calc"], check=True)
    (repo / "calc.py").write_text("def total(xs):\n    return sum(xs)\n")
    return repo


def _command(args: argparse.Namespace, words: list[str]) -> list[str]:
    if words:
        return words
    echo = f"ECHO: {args.product} answered through review-loop, via the fake model API"
    question = f"Is the fix in calc.py (sum every element) right?\n{echo}"
    return ["consult", "--peer", args.product, "--question", question]


def _run_to_its_end(command: list[str], env: dict[str, str], repo: Path) -> int:
    """Run review-loop; a TERM or Ctrl-C here is passed on to it (by its pid) and waited
    for, so that it ends its reviewers and records before the fake API and the scratch
    directory go (``subprocess.run`` would SIGKILL it on Ctrl-C)."""
    child = subprocess.Popen(command, env=env, cwd=repo)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:  # the terminal sent INT to review-loop as well
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Start the fake API, run the command, stop the API; returns the command's exit code."""
    given = list(sys.argv[1:] if argv is None else argv)
    split = given.index("--") if "--" in given else len(given)
    args, words = _parser().parse_args(given[:split]), given[split + 1 :]
    sys.path.insert(0, str(ROOT))  # the fake model API lives with the tests
    from tests.fakes.model_api import FakeModelAPI, Reply, cli_env

    replies = _replies(args)
    folder = _cli_bin(args.product)
    scratch = Path(tempfile.mkdtemp(prefix="review-loop-try-"))
    api = FakeModelAPI().start()
    try:
        if replies:
            api.script(*[Reply.answer(text) for text in replies])
        env = cli_env(args.product, api, scratch / "home")
        env["PATH"] = os.pathsep.join([str(folder), str(Path(sys.executable).parent), env["PATH"]])
        env["REVIEW_LOOP_HOME"] = str(scratch / "state")
        repo = args.repo.resolve() if args.repo else _scratch_repo(scratch)
        command = [sys.executable, "-m", "review_loop", *_command(args, words)]
        print(
            f"try-real-cli: {args.product} from {folder}, fake model API at {api.base_url}, "
            f"HOME={scratch / 'home'}, repo={repo}\n$ review-loop {shlex.join(command[3:])}",
            file=sys.stderr,
            flush=True,
        )
        return _run_to_its_end(command, env, repo)
    finally:
        api.close()
        if args.keep:
            print(f"try-real-cli: kept {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
