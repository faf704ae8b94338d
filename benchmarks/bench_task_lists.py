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
import subprocess
import tempfile
from functools import partial
from pathlib import Path

from paired import Timing, alternate, header, rows, timed

ROOT = Path(__file__).resolve().parent.parent


def run(code: Path, items: int) -> Timing:
    """CPU and wall seconds of one ``task-add`` with ``items`` tags and dependencies."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        args = ["task-add", "BIG-1", "--objective", "many items", "--acceptance", "written"]
        for i in range(items):
            args += ["--tag", f"tag-{i:06d}", "--depends-on", f"DEP-{i}"]
        return timed(code, Path(tmp), args)


def _measure(arms: dict[str, Path], items: int, name: str, _round: int) -> Timing:
    return run(arms[name], items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", default="1000,5000,20000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", type=Path, help="another commit's code, alternated")
    opts = parser.parse_args()
    arms = {"this": ROOT} | ({"reference": opts.reference} if opts.reference else {})
    header("items", 7)
    for items in (int(n) for n in opts.items.split(",")):
        measure = partial(_measure, arms, items)
        rows(items, 7, alternate(list(arms), opts.runs, measure))


if __name__ == "__main__":
    main()
