"""Temporary files of killed cache writers: found by doctor, removed by pruning (issue 29, D11)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from git_hydrate import Ledger

from .conftest import ROOT, hydrate
from .wrapper import python_command

#: A writer of the prompt cache's kind killed mid-write: its first chunk is on
#: disk, under the temporary name, when SIGKILL ends it.
KILLED_WRITER = """
import os, signal, sys
from git_hydrate import Ledger
def chunks():
    yield b"x" * 65536
    os.kill(os.getpid(), signal.SIGKILL)
    yield b"never"
with Ledger(".") as ledger:
    ledger.repo.replace_file(sys.argv[1], chunks(), private=True)
"""


def _killed_write(repo: Path, path: Path) -> Path:
    before = set(path.parent.glob("*.tmp"))
    proc = subprocess.run(
        [*python_command(), "-c", KILLED_WRITER, str(path)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == -9
    (left,) = set(path.parent.glob("*.tmp")) - before
    assert left.stat().st_size == 65536 and not path.exists()
    return left


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_doctor_lists_a_killed_writers_temporary_file_and_clears_it(repo: Path) -> None:
    cache = repo / ".git" / "hydrate" / "prompt-cache"
    left = _killed_write(repo, cache / "0123456789abcdef")
    report = json.loads(hydrate(repo, "doctor", "--json").stdout)
    (young,) = report["temporaries"]
    assert young["path"] == str(left) and young["size"] == 65536
    assert young["stale"] is False  # killed a moment ago: within the margin
    _age(left, 120)
    res = hydrate(repo, "doctor")
    assert res.returncode == 0, res  # wasted space, no problem
    assert f"temp    {left} (65536 bytes, " in res.stdout
    assert "stale: --clear-stale-temp removes it" in res.stdout
    # a live writer's file, however old its writer's id, is left alone for an hour
    live = cache / f"fedcba9876543210.{os.getpid()}.00112233.tmp"
    live.write_bytes(b"being written")
    _age(live, 600)
    res = hydrate(repo, "doctor", "--clear-stale-temp")
    assert res.returncode == 0, res
    assert f"removed stale temporary file {left} (65536 bytes)" in res.stdout
    assert not left.exists() and live.exists()
    assert "being written" in res.stdout
    _age(live, 7200)
    hydrate(repo, "doctor", "--clear-stale-temp")
    assert not live.exists()


def test_writing_a_prompt_prunes_the_stale_temporary_files_of_the_cache(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("P-1", objective="prune", acceptance="nothing left")
        ledger.add_context("P-1", "a body\n" * 50, "notes")
    cache = repo / ".git" / "hydrate" / "prompt-cache"
    left = _killed_write(repo, cache / "0123456789abcdef")
    _age(left, 120)
    fresh = _killed_write(repo, cache / "1123456789abcdef")  # its writer gone just now
    assert hydrate(repo, "prompt", "P-1").returncode == 0
    names = sorted(p.name for p in cache.iterdir())
    assert not left.exists() and fresh.exists()
    assert len([n for n in names if not n.endswith(".tmp")]) == 1
