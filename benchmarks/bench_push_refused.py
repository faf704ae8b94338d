"""What a refused push costs now that it looks at the refused tasks' remote copies.

Usage::

    python benchmarks/bench_push_refused.py [--tasks 500] [--changed 10] [--repeat 7]

Clone ``b`` holds N tasks; clone ``a`` changed ``--changed`` of them and pushed;
``b`` changed the same ones, so its push is refused (git's ``fetch first``).
Since review15 such a push fetches those refused tasks (only them) into the
mirror and checks them as a pull would, to name a remote copy no pull takes;
the other arm runs the same push with that look switched off. Both arms run
in this process on the same repository, alternating which goes first, the
mirror put back between runs; wall and CPU (this process and its git
children) are printed for each, with their medians.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from git_hydrate import Ledger  # noqa: E402
from git_hydrate.sync import pushing  # noqa: E402


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def hydrate(cwd: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "git_hydrate", *args], cwd=cwd, check=True,
                   capture_output=True)  # fmt: skip


def cpu() -> float:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def setup(base: Path, tasks: int, changed: int) -> Path:
    remote, a, b = base / "remote.git", base / "a", base / "b"
    git(base, "init", "-q", "--bare", str(remote))
    git(base, "init", "-q", "-b", "main", str(a))
    git(a, "commit", "-q", "--allow-empty", "-m", "init")
    git(a, "remote", "add", "origin", str(remote))
    git(a, "push", "-q", "origin", "main")
    with Ledger(a) as ledger:
        for k in range(tasks):
            ledger.add_task(f"B-{k}", f"task {k}", "done")
    hydrate(a, "push")
    git(base, "clone", "-q", str(remote), str(b))
    hydrate(b, "pull")
    for who in (a, b):
        with Ledger(who) as ledger:
            for k in range(changed):
                ledger.edit_task(f"B-{k}", title=f"{who.name} {k}")
    hydrate(a, "push")
    return b


def one(b: Path, probe: bool, mirror: dict[str, str]) -> tuple[float, float, int]:
    """One refused push of ``b`` (``probe``: as shipped), from the mirror ``mirror``."""
    lines = "".join(f"update {name} {oid}\n" for name, oid in mirror.items())
    subprocess.run(["git", "update-ref", "--stdin"], cwd=b, input=lines, text=True, check=True)
    original = pushing.damaged_there

    def switched(*args: object) -> object:
        return original(*args[:3], probe and bool(args[3]))  # type: ignore[arg-type]

    pushing.damaged_there = switched  # type: ignore[assignment]
    try:
        with Ledger(b) as ledger:
            c0, t0 = cpu(), time.perf_counter()
            report = pushing.push(ledger.refs, "origin")
            wall, used = time.perf_counter() - t0, cpu() - c0
    finally:
        pushing.damaged_there = original
    return wall, used, len(report.failed("rejected"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-push-refused-"))
    try:
        b = setup(base, args.tasks, args.changed)
        listed = git(b, "for-each-ref", "--format=%(refname) %(objectname)",
                     "refs/hydrate-remotes/")  # fmt: skip
        mirror = dict(line.split() for line in listed.splitlines())
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for i in range(args.repeat):
            for probe in (True, False) if i % 2 == 0 else (False, True):
                wall, used, rejected = one(b, probe, mirror)
                assert rejected == args.changed, rejected
                runs[probe].append((wall, used))
                print(
                    f"run {i} {'look' if probe else 'none'}: wall {wall:.3f} s, cpu {used:.3f} s"
                )
        for probe in (True, False):
            walls = [w for w, _ in runs[probe]]
            cpus = [c for _, c in runs[probe]]
            arm = "with the look" if probe else "without it  "
            wall_median, cpu_median = statistics.median(walls), statistics.median(cpus)
            print(f"{arm}: wall median {wall_median:.3f} s, cpu median {cpu_median:.3f} s")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
