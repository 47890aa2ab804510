"""Contract and process tests of the forked start: a launched script run in a fork of the
warm supervisor instead of a fresh interpreter.

``unshare ... <python> -I -S script.py args`` (what the reviewer sandbox runs before every
reviewer) is recognised exactly (:func:`subreaper.forked_start`); anything else is spawned
as it is. Run that way, the script's ``main`` runs in a fork of the supervisor that joined
the namespaces ``unshare`` made, with the CLI's exact environment, stdin and directory;
a failing ``unshare`` is the supervisor's spawn failure (its message on stderr) and the
script never runs, nor does it under an ``unshare`` that made no mount namespace. Real
supervisors, a real ``unshare``, asyncio and trio.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from review_loop.agents.models import Invocation
from review_loop.orchestrator.process import subreaper
from review_loop.orchestrator.process.run import MARKER_ENV, Started, launcher_failed, run_process

needs_unshare = pytest.mark.skipif(
    not subreaper.available() or shutil.which("unshare") is None,
    reason="needs the session supervisor (Linux) and unshare",
)
UNSHARE = ["unshare", "--mount", "--propagation", "private"]
if os.geteuid() != 0:
    UNSHARE = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]

SCRIPT = """\
import json, os, sys


def main(args):
    reply = {
        "supervisor_modules": "subreaper" in sys.modules,
        "mnt": os.readlink("/proc/self/ns/mnt"),
        "args": args,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "stdin": os.read(0, 100).decode(),
    }
    os.write(1, json.dumps(reply).encode())
    with open(args[0], "w") as ran:
        ran.write("ran")
    return 7


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
"""


def _argv(script: Path, *args: str) -> tuple[str, ...]:
    return (*UNSHARE, sys.executable, "-I", "-S", str(script), *args)


def test_contract_the_launched_script_is_recognised_exactly() -> None:
    script = "/opt/x/wrapper.py"
    start = subreaper.forked_start(
        [
            "/usr/bin/unshare",
            *UNSHARE[1:],
            sys.executable,
            "-I",
            "-S",
            script,
            "--hide",
            "/a",
            "--",
            "cli",
        ]
    )
    assert start is not None
    assert start.launcher == ["/usr/bin/unshare", *UNSHARE[1:]]
    assert (start.script, start.args) == (script, ["--hide", "/a", "--", "cli"])
    refused = [
        ["/usr/bin/env", sys.executable, "-I", "-S", script],  # not the namespace launcher
        ["/usr/bin/unshare", "--mount", "--net", sys.executable, "-I", "-S", script],
        ["/usr/bin/unshare", "--mount", "--root=/x", sys.executable, "-I", "-S", script],
        ["/usr/bin/unshare", "--mount", "/usr/bin/python9", "-I", "-S", script],
        ["/usr/bin/unshare", "--mount", sys.executable, "-I", script],  # not isolated
        ["/usr/bin/unshare", "--mount", sys.executable, "-S", "-I", script],
        ["/usr/bin/unshare", "--mount", sys.executable, "-I", "-S", "wrapper.py"],  # relative
        ["/usr/bin/unshare", "--mount", sys.executable, "-I", "-S", "/opt/x/wrapper"],
        ["/usr/bin/unshare", "--mount", sys.executable, "-I", "-S", "/opt/x/my-wrapper.py"],
        ["/usr/bin/unshare", "--mount", sys.executable, "-I", "-S"],
        [sys.executable, "-I", "-S", script],  # no launcher: nothing to join
    ]
    assert [argv for argv in refused if subreaper.forked_start(argv) is not None] == []


@needs_unshare
@pytest.mark.anyio
async def test_process_the_script_runs_in_a_fork_of_the_supervisor_inside_the_namespace(
    tmp_path: Path,
) -> None:
    """Its ``main`` runs in the supervisor's interpreter (its modules are loaded: no fresh
    interpreter started), in the mount namespace ``unshare`` made, with the session's
    argv, directory, stdin and exact environment; its return value is the exit code."""
    script = tmp_path / "launched.py"
    script.write_text(SCRIPT)
    ran, work = tmp_path / "ran", tmp_path / "work"
    work.mkdir()
    seen: list[Started] = []

    async def on_started(info: Started) -> None:
        seen.append(info)

    invocation = Invocation(
        argv=_argv(script, str(ran), "two words", ""), cwd=work, stdin=b"question", env={"X": "1"}
    )
    done = await run_process(invocation, deadline=30, grace=1, on_started=on_started)

    assert done.returncode == 7, done.stderr
    reply = json.loads(done.stdout)
    assert reply["supervisor_modules"] is True
    assert reply["mnt"] != os.readlink("/proc/self/ns/mnt")
    assert reply["args"] == [str(ran), "two words", ""]
    assert reply["cwd"] == str(work)
    assert reply["stdin"] == "question"
    assert reply["env"]["X"] == "1"
    assert reply["env"][MARKER_ENV] == seen[0].marker
    assert "PYTHONPATH" not in reply["env"] and "LC_CTYPE" not in reply["env"]
    assert ran.read_text() == "ran"


@needs_unshare
@pytest.mark.anyio
async def test_process_a_failing_launcher_is_a_spawn_failure(tmp_path: Path) -> None:
    """An ``unshare`` that cannot make the namespace: the session is the supervisor's spawn
    failure naming the launcher and how it ended (never the exit code of a command that
    ran), its message is on stderr, and the script never runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "unshare"
    fake.write_text(
        "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 3\n"
    )
    fake.chmod(0o755)
    script = tmp_path / "launched.py"
    script.write_text(SCRIPT)
    ran = tmp_path / "ran"
    argv = (str(fake), *_argv(script, str(ran))[1:])

    done = await run_process(Invocation(argv=argv, cwd=tmp_path), deadline=30, grace=1)

    assert done.returncode is None
    assert done.spawn_error == f"spawn failed: {subreaper.LAUNCHER_FAILED} (exit 3)"
    assert launcher_failed(done)
    assert b"unshare: unshare failed: Operation not permitted" in done.stderr
    assert done.stdout == b"" and not ran.exists()


@needs_unshare
@pytest.mark.anyio
async def test_process_a_launcher_that_makes_no_namespace_runs_nothing(tmp_path: Path) -> None:
    """An ``unshare`` on PATH that execs its command without making a namespace: the
    script (the wrapper, whose mounts would land in review-loop's own namespace) never
    runs; the session is a spawn failure."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "unshare"
    fake.write_text(
        '#!/bin/sh\nwhile [ "${1#-}" != "$1" ] || [ "$1" = private ]; do shift; done\nexec "$@"\n'
    )
    fake.chmod(0o755)
    script = tmp_path / "launched.py"
    script.write_text(SCRIPT)
    ran = tmp_path / "ran"
    argv = (str(fake), *_argv(script, str(ran))[1:])

    done = await run_process(Invocation(argv=argv, cwd=tmp_path), deadline=30, grace=1)

    assert done.returncode is None
    assert done.spawn_error is not None and "made no mount namespace" in done.spawn_error
    assert not launcher_failed(done)  # it ran: not a namespace that cannot be made
    assert done.stdout == b"" and not ran.exists()
