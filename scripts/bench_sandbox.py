"""What the reviewer sandbox costs per session, as ratios against a baseline measured in the
same run (this machine is shared and noisy: absolute numbers drift, ratios less).

    .venv/bin/python scripts/bench_sandbox.py [--quick]

In a throw-away HOME that holds every secret store and every product's login files (so
each is covered), with a state directory and a superproject ``.env`` above the repository:

1. one instant fake CLI started by the process layer, bare vs inside the sandbox with the
   covers a codex reviewer gets (the wrapper's start, the mounts, the user namespace);
2. one whole ``Dispatcher.consult`` of that CLI, with the sandbox vs the same consult
   with the sandbox step replaced by the identity (everything else equal).

The two sides of each alternate run by run (the order flipping each round); the ratio is
the median of the per-round ratios. The namespace probe runs once per process (in the
warm-up), so the consult figures are the per-session cost.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from review_loop.adapters import get_adapter  # noqa: E402
from review_loop.agents.models import Invocation  # noqa: E402
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher  # noqa: E402
from review_loop.orchestrator.process.run import run_process  # noqa: E402
from review_loop.orchestrator.sandbox import reviewer as sandbox  # noqa: E402
from review_loop.prefs import Prefs  # noqa: E402

FAKE_CODEX = """\
import json, sys
# --version and exec --help answer the flag probe (orchestrator/sandbox/flags.py)
if sys.argv[1:] == ["--version"]:
    sys.exit(print("codex-cli 0.171.0"))
if sys.argv[1:3] == ["exec", "--help"]:
    sys.exit(print("  -s  x\\n  -c  x\\n  --ignore-rules  x"))
sys.stdin.read()
print(json.dumps({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"}))
item = {"id": "i", "type": "agent_message", "text": "ok"}
print(json.dumps({"type": "item.completed", "item": item}))
print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}))
"""
HOME_FILES = (
    *(f"{store}/x" for store in sandbox.SECRET_STORES if not store.endswith((".json", "netrc"))),
    ".docker/config.json",
    ".netrc",
    ".claude/.credentials.json",
    ".claude.json",
    ".gemini/oauth_creds.json",
    ".grok/user-settings.json",
    ".codex/config.toml",
)


def world(root: Path) -> tuple[Path, Path]:
    """A HOME with every store, a state directory, and a repository under a superproject."""
    home, state = root / "home", root / "state"
    for name in HOME_FILES:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("secret\n")
    state.mkdir()
    (state / "state-secret").write_text("key\n")
    repo = root / "super" / "repo"
    repo.mkdir(parents=True)
    (root / "super" / ".env").write_text("GEMINI_MODEL=x\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    os.environ.update({"HOME": str(home), "REVIEW_LOOP_HOME": str(state)})
    return repo, root / "codex.py"


async def paired(
    runs: int, base: Callable[[], Awaitable[object]], boxed: Callable[[], Awaitable[object]]
) -> tuple[float, float, float]:
    """Median seconds of ``base`` and of ``boxed`` over ``runs`` rounds (after one warm-up
    each), and the median of the per-round ratios: the two alternate, the order flipping
    each round, so both see the same load on a shared machine."""
    await base()
    await boxed()
    samples: tuple[list[float], list[float]] = ([], [])
    for index in range(runs):
        order = ((0, base), (1, boxed)) if index % 2 == 0 else ((1, boxed), (0, base))
        for slot, once in order:
            start = time.perf_counter()
            await once()
            samples[slot].append(time.perf_counter() - start)
    ratios = [b / a for a, b in zip(*samples, strict=True)]
    return statistics.median(samples[0]), statistics.median(samples[1]), statistics.median(ratios)


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        repo, cli = world(Path(tmp))
        cli.write_text(FAKE_CODEX)
        argv = (sys.executable, str(cli))
        plan = sandbox.exposure(get_adapter("codex"), repo=repo, cwd=repo, project=())
        covered = [p for p in plan.hide if p.exists()]
        wrapped = sandbox.wrapped_argv(sandbox.hide_options(plan), argv)

        async def spawn(words: tuple[str, ...]) -> None:
            invocation = Invocation(argv=words, cwd=repo, stdin=b"hi")
            done = await run_process(invocation, deadline=30, grace=1)
            assert done.returncode == 0, done.stderr

        bare, boxed, ratio = await paired(runs, lambda: spawn(argv), lambda: spawn(wrapped))
        print(f"process: {len(plan.hide)} paths hidden, {len(covered)} of them present")
        print(f"  bare CLI {bare * 1000:.1f} ms, in the sandbox {boxed * 1000:.1f} ms")
        print(f"  cost {(boxed - bare) * 1000:.1f} ms per session, ratio {ratio:.2f}")

        prefs = Prefs.validate(
            {"peerCommands": {"fake": {"product": "codex", "command": list(argv)}}}
        )

        async def consult() -> None:
            request = PeerRequest(peer="fake", prompt="hi", record_dir=repo / ".rh" / "t")
            async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
                delivery = await d.consult(request)
            assert delivery.reply is not None, delivery

        real_protect = sandbox.protect

        async def identity(invocation: Invocation, *_: object, **__: object) -> Invocation:
            return invocation

        async def consult_unprotected() -> None:
            sandbox.protect = identity  # type: ignore[assignment]
            try:
                await consult()
            finally:
                sandbox.protect = real_protect

        unprotected, protected, ratio = await paired(runs, consult_unprotected, consult)
        print(f"consult: without the sandbox {unprotected * 1000:.1f} ms, with it "
              f"{protected * 1000:.1f} ms")  # fmt: skip
        print(f"  cost {(protected - unprotected) * 1000:.1f} ms per session, "
              f"ratio {ratio:.2f}")  # fmt: skip


if __name__ == "__main__":
    anyio.run(main, 5 if "--quick" in sys.argv else 30)
