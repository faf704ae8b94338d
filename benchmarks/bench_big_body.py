"""Peak memory of `pull` and `doctor` over a task holding one large compressible body.

    python benchmarks/bench_big_body.py [--mb 300] [--against PATH]

A source repository gets a task with one body of MB megabytes (a short line
repeated: it packs to almost nothing, as a hostile remote's would), pushed to a
bare remote. A fresh clone then pulls it and runs `doctor`, each under
``/usr/bin/time -v``; the maximum resident set size printed is the largest of
the process tree (python or one of its git children). With ``--against PATH``
(another checkout, e.g. main) the same commands run from there too, alternating.
``hydrate.maxBodyBytes`` is raised in the clones so that the body is taken.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def hydrate(checkout: Path, cwd: Path, *args: str) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in KiB, output) of one git-hydrate process."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "git_hydrate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - start
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    assert found, proc.stderr
    return elapsed, int(found.group(1)), (proc.stdout + proc.stderr).strip().splitlines()[0]


def plain_fetch(cwd: Path, remote: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of the plain git fetch of the same refs: the floor."""
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v", "git", "fetch", "-q", str(remote), "refs/hydrate/*:refs/f/*"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    assert found, proc.stderr
    return time.perf_counter() - start, int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--against", type=Path, help="another checkout to measure too")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bigbody-"))
    try:
        source = work / "source"
        git(work, "init", "-q", "-b", "main", str(source))
        git(source, "commit", "-q", "--allow-empty", "-m", "initial")
        git(source, "config", "hydrate.maxBodyBytes", f"{args.mb + 1}m")
        body = work / "body.txt"
        with body.open("w") as fh:
            line = "a compressible line of a large body\n"
            fh.write(line * (args.mb * 1_000_000 // len(line)))
        env = dict(os.environ, PYTHONPATH=str(HERE))
        for command in (
            ["task-add", "BIG-1", "--objective", "o", "--acceptance", "a"],
            ["add", "BIG-1", "--file", str(body)],
            ["task-add", "SMALL-1", "--objective", "o", "--acceptance", "a"],
        ):
            subprocess.run(
                [sys.executable, "-m", "git_hydrate", *command], cwd=source, env=env, check=True
            )
        remote = work / "remote.git"
        git(work, "init", "-q", "--bare", str(remote))
        git(source, "push", "-q", str(remote), "refs/hydrate/*:refs/hydrate/*")
        packed = sum(f.stat().st_size for f in remote.rglob("*") if f.is_file())
        print(f"body {args.mb} MB; the remote holds {packed / 1e6:.1f} MB on disk")
        floor = work / "floor"
        git(work, "init", "-q", str(floor))
        seconds, rss = plain_fetch(floor, remote)
        print(
            f"{'git fetch alone':<16} {'fetch':<7} peak RSS {rss / 1024:8.1f} MiB {seconds:6.2f} s"
        )
        checkouts = {"this checkout": HERE}
        if args.against:
            checkouts = {f"{args.against}": args.against.resolve(), **checkouts}
        for name, checkout in checkouts.items():
            clone = work / f"clone-{len(name)}"
            git(work, "init", "-q", str(clone))
            git(clone, "config", "hydrate.maxBodyBytes", f"{args.mb + 1}m")
            pulled = hydrate(checkout, clone, "pull", str(remote))
            doctor = hydrate(checkout, clone, "doctor")
            for command, (seconds, rss, first) in (("pull", pulled), ("doctor", doctor)):
                print(
                    f"{name:<16} {command:<7} peak RSS {rss / 1024:8.1f} MiB "
                    f"{seconds:6.2f} s   {first[:70]}"
                )
            shutil.rmtree(clone)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
