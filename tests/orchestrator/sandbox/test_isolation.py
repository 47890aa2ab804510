"""Contract, process and collaboration tests: isolation of a CLI without a read-only mode.

- contract: the wrapper's reading of ``/proc/self/mountinfo`` (escapes, stacked mounts);
- process: the wrapper itself, as root and (where a user namespace can be made) as a user
  without privileges: only the scratch directory takes a write, no capability is left;
- collaboration: ``Dispatcher.consult`` of a fake isolated CLI (a ``sys.executable`` script
  named ``grok`` answering the npm grok 0.0.34's help) that tries to write everywhere: only
  its scratch writes succeed, the repository, the real HOME, /tmp and a directory outside
  everything are untouched, and the consult still answers; a ``mount`` that fails (a fake
  on PATH) refuses the request as NOT_SUBMITTED before the CLI starts, never half-isolated.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.models import DeliveryState
from review_loop.agents.outcomes import Delivery
from review_loop.orchestrator.dispatcher import PeerRequest, open_dispatcher
from review_loop.orchestrator.sandbox import isolation
from review_loop.orchestrator.sandbox.wrapper import (
    ISOLATION_FAILED_EXIT,
    MARKER,
    parse_mountinfo,
    reachable,
)
from review_loop.prefs import Prefs
from tests.fakes.fake_agent import GROK_VIBE_HELP
from tests.gitrepo import committed_repo
from tests.orchestrator.sandbox.as_nobody import nobody_launcher, wrapper_copy

# ----------------------------------------------------------------------------- contract

MOUNTINFO = """\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw
30 25 0:27 / /dev/shm ro,relatime - tmpfs tmpfs rw
31 27 0:28 / /mnt/a\\040b rw shared:5 - tmpfs tmpfs rw
32 31 0:29 / /mnt/a\\040b/inner rw - tmpfs tmpfs rw
33 31 0:30 / /mnt/a\\040b rw - tmpfs tmpfs rw
34 27 0:31 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw
35 27 0:32 / /srv/x/y rw - tmpfs tmpfs rw
36 27 254:0 /srv /srv rw - ext4 /dev/vda rw
"""


def test_mountinfo_is_parsed_with_its_escapes_contract() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert [m.mount_point for m in mounts][4:6] == ["/mnt/a b", "/mnt/a b/inner"]
    assert [(m.id, m.parent, m.read_only) for m in mounts][:4] == [
        (27, 1, False),
        (24, 27, False),
        (25, 24, False),
        (30, 25, True),
    ]
    assert mounts[7].fstype == "autofs"


def test_only_the_top_of_a_stack_and_what_lies_under_it_is_reachable_contract() -> None:
    # 25 is covered by 30 (same point); 31 by 33, which hides 32 beneath it as well; 35 lies
    # under its sibling 36, mounted later on a directory above it.
    visible = [m.id for m in reachable(parse_mountinfo(MOUNTINFO))]
    assert visible == [27, 24, 30, 33, 34, 36]


def test_the_scratch_holds_a_copy_and_only_the_named_home_files_contract(tmp_path: Path) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    (repo / ".review-handoff").mkdir()
    (repo / ".review-handoff" / "record.json").write_text("{}")
    os.mkfifo(repo / "planted-fifo")  # copytree refuses one: the request would fail
    home = tmp_path / "home"
    (home / ".cli").mkdir(parents=True)
    (home / ".cli" / "settings.json").write_text("key")
    (home / ".gitconfig").write_text("[user]\n")
    root = tmp_path / "scratch"
    root.mkdir()

    scratch = isolation.make_scratch(
        root, repo, source_home=home, home_files=(".cli/settings.json", ".cli/absent.md")
    )

    assert scratch.copy == root / "work" / "repo"
    assert sorted(p.name for p in scratch.copy.iterdir()) == [".git", "a.txt"]
    assert [p.relative_to(scratch.home).as_posix() for p in scratch.home.rglob("*")] == [
        ".cli",
        ".cli/settings.json",
    ]
    assert (scratch.home / ".cli" / "settings.json").stat().st_mode & 0o777 == 0o600
    assert scratch.env()["HOME"] == str(scratch.home)
    assert scratch.env()["TMPDIR"] == str(scratch.tmp) and scratch.tmp.is_dir()


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside", ".cli/../../x", ""])
def test_a_home_file_outside_home_is_refused_contract(tmp_path: Path, name: str) -> None:
    repo = committed_repo(tmp_path / "repo", {"a.txt": "hello\n"})
    with pytest.raises(ValueError, match="is not a path inside HOME"):
        isolation.make_scratch(tmp_path / "scratch", repo, source_home=tmp_path, home_files=[name])
    assert not (tmp_path / "scratch").exists()  # refused before anything was copied


# ----------------------------------------------------------------------------- process

_PROBE = """
import json, os, sys
results = {}
for name, path in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        results[name] = "ok"
    except OSError as error:
        results[name] = __import__("errno").errorcode[error.errno]
status = open("/proc/self/status").read().splitlines()
results["caps"] = sorted({line.split()[1] for line in status if line.startswith("Cap")})
print(json.dumps(results))
"""


@pytest.fixture
def world() -> Iterator[Path]:
    """A directory tree outside pytest's (0700) temp root, traversable by any user."""
    root = Path(tempfile.mkdtemp(prefix="review-loop-isolation-test-"))
    root.chmod(0o755)
    for name in ("scratch", "outside"):
        (root / name).mkdir(mode=0o777)
        (root / name).chmod(0o777)
    yield root
    shutil.rmtree(root)


def _probe_writes(
    prefix: list[str], python: str, world: Path, wrapper: Path = isolation.WRAPPER
) -> dict[str, Any]:
    argv = [
        *prefix,
        python,
        "-I",
        "-S",
        str(wrapper),
        "--writable",
        str(world / "scratch"),
        "--",
        python,
        "-I",
        "-c",
        _PROBE,
        "scratch",
        str(world / "scratch" / "a"),
        "outside",
        str(world / "outside" / "a"),
        "devnull",
        os.devnull,
    ]
    # cwd in the world tree: the wrapper re-enters its working directory, which nobody could
    # not do in a private (0700) checkout
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=world)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_wrapper_leaves_only_the_scratch_writable_process(world: Path) -> None:
    wrapper = [sys.executable, "-I", "-S", str(isolation.WRAPPER), "--"]
    prefix = isolation.sandbox_argv([], [])[: -len(wrapper)]  # the unshare part, as root or not
    results = _probe_writes(list(prefix), sys.executable, world)
    assert results == {
        "scratch": "ok",
        "outside": "EROFS",
        "devnull": "ok",
        "caps": ["0000000000000000"],
    }
    assert list((world / "outside").iterdir()) == []


def test_the_wrapper_works_without_root_in_a_user_namespace_process(world: Path) -> None:
    prefix, python = nobody_launcher()
    wrapper = wrapper_copy(world)
    results = _probe_writes(prefix, python, world, wrapper)
    assert results == {
        "scratch": "ok",
        "outside": "EROFS",
        "devnull": "ok",
        "caps": ["0000000000000000"],
    }


def test_a_failing_mount_stops_the_wrapper_before_the_command_process(
    world: Path, tmp_path: Path
) -> None:
    bin_dir = _failing_mount(tmp_path)
    ran = world / "outside" / "ran"
    argv = isolation.sandbox_argv([world / "scratch"], ["touch", str(ran)])
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == ISOLATION_FAILED_EXIT
    assert done.stderr.startswith(MARKER), done.stderr
    assert "remount,bind,ro" in done.stderr and "permission denied" in done.stderr
    assert not ran.exists()  # the command never ran, half-isolated or otherwise


def _failing_mount(tmp_path: Path) -> Path:
    """A ``mount`` first on PATH that binds as the real one does but refuses every remount."""
    real = shutil.which("mount")
    assert real is not None
    bin_dir = tmp_path / "failing-mount-bin"
    bin_dir.mkdir()
    script = bin_dir / "mount"
    script.write_text(
        f"#!{sys.executable} -I\n"
        "import os, sys\n"
        "if any(arg.startswith('remount') for arg in sys.argv[1:]):\n"
        "    sys.stderr.write(f'mount: {sys.argv[-1]}: permission denied.\\n')\n"
        "    sys.exit(32)\n"
        f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
    )
    script.chmod(0o755)
    return bin_dir


# ----------------------------------------------------------------------------- collaboration

FAKE_ISOLATED_CLI = """
import errno, json, os, subprocess, sys
if "--help" in sys.argv:
    print(HELP)
    sys.exit(0)
# read beside the script (readable, as everything is): the CLI's environment is not ours
targets = json.loads(open(os.path.join(os.path.dirname(__file__), "targets.json")).read())
results = {}
for name, path in targets.items():
    path = path.replace("$HOME", os.environ["HOME"]).replace("$TMPDIR", os.environ["TMPDIR"])
    try:
        with open(path, "w") as handle:
            handle.write("written by the isolated CLI\\n")
        results[name] = "ok"
    except OSError as error:
        results[name] = errno.errorcode[error.errno]
remount = subprocess.run(["mount", "-o", "remount,bind,rw", "/"], capture_output=True)
results["remount-rw"] = remount.returncode
settings = os.path.join(os.environ["HOME"], ".grok", "user-settings.json")
results["home-settings"] = open(settings).read() if os.path.exists(settings) else None
results["home-entries"] = sorted(os.listdir(os.environ["HOME"]))
results["cwd"] = os.getcwd()
print(json.dumps({"role": "assistant", "content": json.dumps(results)}))
"""


@dataclass(frozen=True)
class Scene:
    """A repository, the user's real HOME, a place outside everything, and the fake CLI
    (first on PATH) with the paths it will try to write."""

    repo: Path
    real_home: Path
    outside: Path
    bin_dir: Path
    targets: dict[str, str]

    async def consult(self) -> Delivery:
        prefs = Prefs.validate({"timeoutMs": 60_000, "graceMs": 300, "livenessMs": 60_000})
        request = PeerRequest(
            peer="grok",
            prompt="Is this right?",
            record_dir=self.repo / ".review-handoff" / "runtime" / "t" / "grok",
        )
        async with open_dispatcher(repo=self.repo, prefs=prefs, progress=lambda _: None) as d:
            return await d.consult(request)

    def assert_untouched(self) -> None:
        assert sorted(p.name for p in self.repo.iterdir()) == [".git", ".review-handoff", "a.txt"]
        assert (self.repo / "a.txt").read_text() == "hello\n"
        assert (self.real_home / ".gitconfig").read_text() == "[user]\n\tname = me\n"
        assert not Path(self.targets["tmp"]).exists()
        assert not Path(self.targets["dev-shm"]).exists()
        assert list(self.outside.iterdir()) == []


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    repo = committed_repo(tmp_path / "repo with space", {"a.txt": "hello\n"})
    real_home = tmp_path / "real-home"  # a key in the CLI's settings, a .gitconfig to attack
    (real_home / ".grok").mkdir(parents=True)
    (real_home / ".grok" / "user-settings.json").write_text('{"apiKey": "k-from-home"}')
    (real_home / ".gitconfig").write_text("[user]\n\tname = me\n")
    (real_home / ".ssh").mkdir()
    (real_home / ".ssh" / "id_ed25519").write_text("secret\n")
    monkeypatch.setenv("HOME", str(real_home))
    outside = tmp_path / "outside-everything"
    outside.mkdir()
    targets = {
        "repo-relative": "pwned.txt",  # lands in the throw-away copy: its working directory
        "repo-absolute": str(repo / "pwned.txt"),
        "repo-git-config": str(repo / ".git" / "config"),
        "home": "$HOME/.gitconfig",  # the scratch HOME
        "real-home": str(real_home / ".gitconfig"),
        "tmp": f"/tmp/review-loop-isolation-canary-{uuid.uuid4().hex}",
        "dev-shm": f"/dev/shm/review-loop-isolation-canary-{uuid.uuid4().hex}",  # stacked mount
        "outside": str(outside / "canary"),
        "scratch-tmp": "$TMPDIR/canary",
        "proc-parent-root": f"/proc/{os.getpid()}/root{outside / 'via-proc'}",
        "devnull": os.devnull,
    }
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "targets.json").write_text(json.dumps(targets))
    exe = bin_dir / "grok"
    exe.write_text(f"#!{sys.executable}\nHELP = {GROK_VIBE_HELP!r}\n{FAKE_ISOLATED_CLI}")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin:/usr/sbin:/sbin")
    yield Scene(repo, real_home, outside, bin_dir, targets)
    for canary in ("tmp", "dev-shm"):  # only if a failing run wrote them
        Path(targets[canary]).unlink(missing_ok=True)


@pytest.mark.anyio
async def test_only_scratch_writes_succeed_and_the_consult_answers_collaboration(
    scene: Scene,
) -> None:
    before = {p.relative_to(scene.repo): p.read_bytes() for p in _files(scene.repo)}

    delivery = await scene.consult()

    assert delivery.ok, delivery
    assert delivery.reply is not None
    seen = json.loads(delivery.reply.text)
    assert {name: seen[name] for name in scene.targets} == {
        "repo-relative": "ok",
        "repo-absolute": "EROFS",
        "repo-git-config": "EROFS",
        "home": "ok",
        "real-home": "EROFS",
        "tmp": "EROFS",
        "dev-shm": "EROFS",
        "outside": "EROFS",
        "scratch-tmp": "ok",
        "proc-parent-root": "EACCES",  # no capability left to look into another namespace
        "devnull": "ok",
    }, seen
    assert seen["remount-rw"] != 0  # root in its namespace, but without CAP_SYS_ADMIN
    assert seen["home-settings"] == '{"apiKey": "k-from-home"}'  # the adapter's home file ...
    assert seen["home-entries"] == [".gitconfig", ".grok"]  # ... and only what it wrote itself
    cwd = Path(seen["cwd"])
    assert cwd.name == scene.repo.name and "review-loop-isolated-" in str(cwd)
    assert not cwd.exists()  # the scratch directory is gone
    after = {
        p.relative_to(scene.repo): p.read_bytes()
        for p in _files(scene.repo)
        if ".review-handoff" not in p.relative_to(scene.repo).parts
    }
    assert after == before
    scene.assert_untouched()


@pytest.mark.anyio
async def test_a_mount_that_cannot_be_made_read_only_refuses_the_request_collaboration(
    scene: Scene, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await isolation.namespace_available()  # the probe passed before mount broke
    monkeypatch.setenv("PATH", f"{_failing_mount(tmp_path)}:{os.environ['PATH']}")

    delivery = await scene.consult()

    assert delivery.state is DeliveryState.NOT_SUBMITTED, delivery
    assert delivery.reason == "refused"
    assert delivery.detail.startswith(MARKER), delivery.detail
    assert "remount,bind,ro" in delivery.detail and "permission denied" in delivery.detail
    assert [a.state for a in delivery.attempts] == [DeliveryState.NOT_SUBMITTED] * 2
    assert [a.exitCode for a in delivery.attempts] == [ISOLATION_FAILED_EXIT] * 2
    scene.assert_untouched()  # the CLI never ran half-isolated: its writes would have landed


@pytest.mark.anyio
async def test_where_the_setup_fails_the_probe_refuses_before_spawn_collaboration(
    scene: Scene, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isolation, "_available", None)  # probe again, with mount broken
    monkeypatch.setenv("PATH", f"{_failing_mount(tmp_path)}:{os.environ['PATH']}")

    delivery = await scene.consult()

    assert delivery.state is DeliveryState.NOT_SUBMITTED, delivery
    assert "no read-only mount namespace can be made here" in delivery.detail
    assert all(a.exitCode is None for a in delivery.attempts)  # nothing was spawned
    scene.assert_untouched()
