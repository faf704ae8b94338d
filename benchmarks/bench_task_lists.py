"""What a task with many tags and dependencies costs to write.

Usage::

    python benchmarks/bench_task_lists.py [--items 1000,5000,20000] [--runs 3]
        [--reference DIR]

Each run is one whole ``git hydrate task-add`` process in a fresh repository,
given N ``--tag`` and N ``--depends-on`` options (ids of tasks not there yet:
kept, with a warning each). Validation kept the first of each repeated item by
looking it up in the list built so far, which is quadratic: 20,000 tags took
2.9 s of CPU before the task was written. With ``--reference`` (a checkout or
``git archive`` of another commit) the same runs alternate with that code's;
printed per size: the medians of CPU (user + system, the process and its git
children) and wall, and their ratio to the reference.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(code: Path, items: int) -> tuple[float, float]:
    """CPU and wall seconds of one ``task-add`` with ``items`` tags and dependencies."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        args = [sys.executable, "-m", "git_hydrate", "task-add", "BIG-1"]
        args += ["--objective", "many items", "--acceptance", "written"]
        for i in range(items):
            args += ["--tag", f"tag-{i:06d}", "--depends-on", f"DEP-{i}"]
        env = {**os.environ, "PYTHONPATH": str(code)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(args, cwd=tmp, env=env, check=True, capture_output=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", default="1000,5000,20000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", type=Path, help="another commit's code, alternated")
    opts = parser.parse_args()
    arms = {"this": ROOT} | ({"reference": opts.reference} if opts.reference else {})
    print(f"{'items':>7} {'arm':>10} {'cpu s':>8} {'wall s':>8} {'cpu ratio':>10}")
    for items in (int(n) for n in opts.items.split(",")):
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
        for round_ in range(opts.runs):
            order = list(arms) if round_ % 2 == 0 else list(reversed(arms))
            for name in order:
                times[name].append(run(arms[name], items))
        medians = {
            name: (statistics.median(c for c, _ in got), statistics.median(w for _, w in got))
            for name, got in times.items()
        }
        for name, (cpu, wall) in medians.items():
            ratio = f"{cpu / medians['reference'][0]:.2f}x" if "reference" in medians else ""
            print(f"{items:>7} {name:>10} {cpu:>8.3f} {wall:>8.3f} {ratio:>10}")


if __name__ == "__main__":
    main()
