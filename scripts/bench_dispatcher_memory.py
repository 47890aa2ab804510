"""What a long-lived dispatcher holds: its RSS over N sequential consults, the caller keeping
nothing, each answer 100 KB (the fake codex of tests/fakes through the real process layer).

Usage: .venv/bin/python scripts/bench_dispatcher_memory.py [N] [--backend asyncio|trio]

Prints one JSON document: the RSS (MiB) after every N/4 consults (after gc.collect()), the
growth per consult over the second half (past ``keep_outcomes``' warm-up when N >= 256),
and how many deliveries ``Dispatcher.outcomes`` holds at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from review_loop import PeerRequest, open_dispatcher  # noqa: E402
from review_loop.prefs import Prefs  # noqa: E402
from tests.fakes import FakeCLIs  # noqa: E402

ANSWER_BYTES = 100_000


def _mib() -> float:
    gc.collect()
    return round(psutil.Process().memory_info().rss / (1024 * 1024), 1)


async def _measure(repo: Path, count: int) -> dict[str, object]:
    prefs = Prefs.validate({"timeoutMs": 120_000, "graceMs": 300, "livenessMs": 600_000})
    samples: list[tuple[int, float]] = []
    step = max(count // 4, 1)
    async with open_dispatcher(repo=repo, prefs=prefs, progress=lambda _: None) as d:
        samples.append((0, _mib()))
        for done in range(1, count + 1):
            delivery = await d.consult(PeerRequest(peer="codex", prompt=f"question {done}"))
            assert delivery.ok, delivery.detail
            del delivery
            if done % step == 0:
                samples.append((done, _mib()))
        held = len(d.outcomes)
    (first_n, first_rss), (last_n, last_rss) = samples[len(samples) // 2], samples[-1]
    per_consult_kib = (last_rss - first_rss) * 1024 / max(last_n - first_n, 1)
    return {
        "consults": count,
        "answerBytes": ANSWER_BYTES,
        "rssMiB": dict(samples),
        "growthKiBPerConsultOverSecondHalf": round(per_consult_kib, 2),
        "outcomesHeld": held,
    }


def main() -> None:
    """Run the measurement in a scratch repository and print its document."""
    parser = argparse.ArgumentParser()
    parser.add_argument("count", nargs="?", type=int, default=400)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        repo = root / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        os.environ["REVIEW_LOOP_HOME"] = str(root / "state")
        fakes = FakeCLIs(root / "fakes")
        fakes.script(codex=[{"mode": "big-answer", "bytes": ANSWER_BYTES}])
        os.environ.update(fakes.env())
        result = anyio.run(_measure, repo, args.count, backend=args.backend)
    print(json.dumps({"backend": args.backend, **result}, indent=2))


if __name__ == "__main__":
    main()
