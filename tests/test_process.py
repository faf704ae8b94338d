"""Running git: the two commands every command runs are started by posix_spawnp, and
their child gets what subprocess gives it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate.errors import NotARepository
from git_hydrate.store import process
from git_hydrate.store.process import run_git

from .conftest import ROOT

#: Fills both pipes well past what a pipe holds, and fails.
PROBE = "yes err | head -c 300000 >&2; yes out | head -c 300000; exit 3"
#: Shows the signals the child blocks and ignores.
SIGNALS = ["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"]
#: glibc's internal signals, which its posix_spawn leaves ignored (see store/process.py).
GLIBC_INTERNAL = (1 << 31) | (1 << 32)


def _ignored(stdout: bytes) -> int:
    found = re.search(rb"SigIgn:\s*([0-9a-f]+)", stdout)
    assert found is not None
    return int(found.group(1), 16)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_spawned_child_gets_what_subprocess_gives() -> None:
    spawned = process._spawned(["sh", "-c", PROBE], None)
    started = subprocess.run(["sh", "-c", PROBE], capture_output=True, check=False)
    assert spawned is not None and spawned.returncode == started.returncode == 3
    assert spawned.stderr == started.stderr and len(spawned.stderr) == 300000
    assert spawned.stdout == started.stdout and len(spawned.stdout) == 300000
    spawned = process._spawned(SIGNALS, None)
    started = subprocess.run(SIGNALS, capture_output=True, check=False)
    assert spawned is not None
    assert spawned.stdout.split(b"\n")[0] == started.stdout.split(b"\n")[0]  # SigBlk
    ignored = _ignored(spawned.stdout)
    assert ignored & ~GLIBC_INTERNAL == _ignored(started.stdout) & ~GLIBC_INTERNAL
    assert not ignored & (1 << 12 | 1 << 24)  # SIGPIPE, SIGXFSZ: back at their default


def test_which_commands_are_spawned(repo: Path) -> None:
    code = (
        "import sys\n"
        "from git_hydrate.store.process import run_git\n"
        "assert run_git(['rev-parse', '--git-dir']).stdout == b'.git\\n'\n"
        "assert run_git(['config', '-z', '--list']).returncode == 0\n"
        "print('subprocess' in sys.modules)\n"
        "run_git(['version'])\n"
        "print('subprocess' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "False\nTrue\n", "")


def test_no_git_on_path(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", str(repo / "nowhere"))
    for args, where in ((["config", "--list"], None), (["version"], None), (["version"], ".")):
        with pytest.raises(NotARepository, match="git binary was not found"):
            run_git(args, cwd=where)


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd_create here")
def test_a_command_begun_early_keeps_its_output_in_memory() -> None:
    """``begin_git`` keeps git's output in a nameless file in memory: no
    ``tempfile`` import (~3 ms of a first task's start) nor file on disk; the
    output is all there, however much git writes."""
    code = (
        "import sys\n"
        "from git_hydrate.store.process import begin_git\n"
        "running = begin_git(['sh', '-c', 'yes out | head -c 3000000'], None, None)\n"
        "assert running is not None\n"
        "out = running.output()\n"
        "assert out == b'out\\n' * 750000, len(out or b'')\n"
        "assert 'tempfile' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_a_command_begun_early_without_memfd_writes_to_a_temporary_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where ``memfd_create`` is missing (macOS) or refused (a sandbox: ENOSYS,
    EPERM), git's output goes to a temporary file, all of it; no descriptor is left."""

    def refused(*_args: object) -> int:
        raise PermissionError(1, "memfd_create refused")

    for memfd in (refused, None):
        if memfd is None:
            monkeypatch.delattr(os, "memfd_create", raising=False)
        else:
            monkeypatch.setattr(os, "memfd_create", memfd, raising=False)
        before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
        running = process.begin_git(["sh", "-c", "yes out | head -c 300000"], None, None)
        assert running is not None
        assert running.output() == b"out\n" * 75000
        after = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
        assert after == before
