"""Contract: ``files.iso_utc``/``utc_now`` print exactly what ``datetime`` prints.

The stamps are written into every session record and event line and parsed back by the
session listing and the reaper; they were made with ``datetime`` before and must not change
by a character.
"""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import UTC, datetime

from review_loop.orchestrator.handoff.files import iso_utc, utc_now


def datetime_stamp(ns: int) -> str:
    """What ``datetime.now(UTC).isoformat(timespec="milliseconds")`` printed at ``ns``."""
    seconds, rest = divmod(ns, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_contract_iso_utc_is_datetimes_stamp_over_random_instants() -> None:
    rng = random.Random(20261201)
    instants = [
        0,
        999_999_999,
        1_000_000_000,
        951_782_400 * 10**9,  # 2000-02-29, a leap day
        1_798_761_599 * 10**9 + 999_999_999,  # the last nanosecond of 2026
        253_402_300_799 * 10**9 + 999_999_999,  # the last nanosecond of year 9999
    ]
    instants += [rng.randrange(0, 253_402_300_800 * 10**9) for _ in range(20_000)]
    for ns in instants:
        assert iso_utc(ns) == datetime_stamp(ns), ns


def test_contract_utc_now_is_now_in_the_records_shape() -> None:
    before = datetime.now(UTC)
    stamp = utc_now()
    after = datetime.now(UTC)
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after
    assert len(stamp) == len("2026-12-01T05:30:00.123Z") and stamp.endswith("Z")


def test_process_recording_a_stamp_does_not_import_datetime() -> None:
    code = (
        "import sys; from review_loop.orchestrator.handoff.files import utc_now; utc_now(); "
        "print('datetime' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
