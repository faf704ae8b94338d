"""Load and faults: many writers beside git's own maintenance, and writers killed mid-write.

Sized to finish in well under a minute on a 2-core machine. The figures
(writes/s, retries, kills survived) are printed; run with ``-s`` to see them.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import Popen

import pytest

from git_hydrate import Ledger
from tests.conftest import ROOT, fsck, git, hydrate

WRITER = """
import sys
from git_hydrate import Ledger, Busy
name, count, tasks = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
with Ledger(".") as led:
    print("ready", flush=True)
    sys.stdin.readline()  # every writer starts writing at once
    for i in range(count):
        task = tasks[i % len(tasks)]
        body = f"{name} write {i}"
        try:
            entry = led.add_context(task, body, f"writer/{name}")
        except Busy as exc:
            print("busy", task, exc, flush=True)
            continue
        print("ok", task, entry["hash"], flush=True)
    print("retries", led.retries, flush=True)
"""

pytestmark = pytest.mark.slow

ENDLESS_WRITER = """
import sys
from git_hydrate import Ledger
with Ledger(".") as led:
    i = int(sys.argv[1])
    while True:
        entry = led.add_context("K-1", f"kill round body {i}", "killer", priority=i % 5)
        print("ok", entry["hash"], flush=True)
        i += 1
"""


def python_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@contextlib.contextmanager
def _maintenance(repo: Path) -> Iterator[Callable[[], int]]:
    """git gc --auto, pack-refs and repack in a loop beside the block; yields a count
    of the rounds completed so far.

    Stopped by a file, not a signal: a signal would stop the loop but leave its
    running `git repack -d` pruning loose objects under a later fsck."""
    stop = repo.parent / "stop-maintenance"
    rounds = repo.parent / "maintenance-rounds"
    loop = subprocess.Popen(
        [
            "sh",
            "-c",
            f"while [ ! -e '{stop}' ]; do git gc --auto --quiet; git pack-refs --all --prune; "
            f"git repack -d -q; echo >> '{rounds}'; sleep 0.05; done",
        ],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield lambda: len(rounds.read_text().splitlines()) if rounds.exists() else 0
    finally:
        stop.touch()
        loop.wait(timeout=120)


def _writers(repo: Path, count: int, per_writer: int, tasks: list[str]) -> list[Popen[str]]:
    """``count`` writer processes, each up and waiting for its word on stdin; writers
    0-3 all hammer the first task, the others spread over every task."""
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                f"w{n}",
                str(per_writer),
                tasks[0] if n < 4 else ",".join(tasks),
            ],
            cwd=repo,
            env=python_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(count)
    ]
    for proc in procs:  # (nothing else is written before the word: no read-ahead)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "ready\n", line + proc.communicate()[1]
    return procs


def test_eight_writers_beside_gc_pack_refs_and_repack(repo: Path) -> None:
    tasks = ["S-0", "S-1", "S-2"]
    with Ledger(repo) as ledger:
        for task in tasks:
            ledger.add_task(task, objective="stress", acceptance="nothing lost")
    # 8 writers x 25 writes. They start writing together (each waits, once its
    # interpreter is up, for a word on stdin), so all eight race from the first write
    # whatever the machine's load; without that barrier each started as its
    # interpreter came up and wrote 50 times so that the last ones met the first.
    # The races are asserted below: some write had to retry its ref update (it was
    # ~2 retries a write), and maintenance rounds (pack-refs, repack) ended while
    # the writers wrote.
    writers, per_writer = 8, 25
    with _maintenance(repo) as rounds_done:
        procs = _writers(repo, writers, per_writer, tasks)
        start, before = time.perf_counter(), rounds_done()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [p.communicate(timeout=300) for p in procs]
        elapsed = time.perf_counter() - start
        # rounds that ended while the writers wrote: packs made, refs packed under them
        during = rounds_done() - before
    acknowledged: dict[str, set[str]] = {t: set() for t in tasks}
    retries = 0
    for (out, err), proc in zip(outputs, procs, strict=True):
        assert proc.returncode == 0, err
        assert "Traceback" not in err
        for line in out.splitlines():
            word, *rest = line.split()
            if word == "ok":
                acknowledged[rest[0]].add(rest[1])
            elif word == "retries":
                retries += int(rest[0])
    total = sum(len(v) for v in acknowledged.values())
    assert total == writers * per_writer  # no writer gave up with "busy"
    assert retries > 0, "no write ever had to retry: the writers did not race"
    assert during > 0, "no maintenance round completed while the writers wrote"
    with Ledger(repo) as ledger:
        for task in tasks:
            present = {e["hash"] for e in ledger.context_entries(task)}
            assert acknowledged[task] <= present, f"lost writes on {task}"
            assert len(present) == len(acknowledged[task])
    fsck(repo)
    print(
        f"\nload: {writers} writers x {per_writer} writes = {total} writes in {elapsed:.1f} s "
        f"({total / elapsed:.0f} writes/s), {retries} retries, {during} maintenance rounds, "
        "0 lost"
    )


def test_writers_killed_at_random_moments(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("K-1", objective="kill", acceptance="nothing acknowledged is lost")
    rng = random.Random(1234)
    acknowledged: set[str] = set()
    kills = 0
    stale_cleared = 0
    for round_no in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", ENDLESS_WRITER, str(round_no * 10_000)],
            cwd=repo,
            env=python_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        # Kill at a random moment once the writer is writing (its first write is
        # acknowledged), however slow this machine is to start an interpreter.
        assert proc.stdout is not None
        first = b""
        if select.select([proc.stdout], [], [], 30)[0]:
            first = proc.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        kills += 1
        for line in (first + out).decode().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "ok":
                acknowledged.add(parts[1])
        fsck(repo)
        lock = repo / ".git" / "refs" / "hydrate" / "tasks" / "K-1.lock"
        if lock.exists():
            # the killed writer held the ref lock: clearing it must be safe
            cleared = hydrate(repo, "doctor", "--clear-stale-locks", "--older-than", "0")
            assert "removed stale lock" in cleared.stdout
            stale_cleared += 1
    with Ledger(repo) as ledger:
        present = {e["hash"] for e in ledger.context_entries("K-1")}
    assert acknowledged <= present
    assert acknowledged, "the writer never got a write through; the test proves nothing"
    report = json.loads(hydrate(repo, "doctor", "--json").stdout)
    assert report["tasks"][0]["ok"], report
    git(repo, "gc", "--prune=now", "--quiet")
    fsck(repo)
    print(
        f"\nfaults: {kills} SIGKILLs survived, {len(acknowledged)} acknowledged writes all "
        f"present, {stale_cleared} stale lock(s) cleared"
    )
