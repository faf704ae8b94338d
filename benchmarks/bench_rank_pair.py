"""Paired, alternating whole-process timings of ``git hydrate rank`` under two codes.

Usage::

    python benchmarks/bench_rank_pair.py --clone-from REPO --base CODE_ROOT
        [--work DIR] [--runs 5] [--in-play PATH --in-play PATH]

Each side ("base": the code at ``--base``, "here": this checkout) gets its own clone
of ``REPO``, a task, and one ``add-tree`` with its own code. Then ``rank`` right
after it (what it moves is printed), and ``--runs`` rounds, each giving both sides
the same ``task-edit --file-in-play`` (the two ``--in-play`` paths in turn, so
every ``rank`` has work to do) and timing their ``rank`` in alternating order.
Wall time and CPU seconds (user + system of the process and its children) of each
``rank`` process; medians printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = "RB-1"
OBJECTIVE = (
    "table command panics on a record with an empty list column when the terminal is narrow"
)


def run(code: Path, cwd: Path, *args: str) -> tuple[float, float, str]:
    """Run git-hydrate from ``code`` in ``cwd``: wall and CPU seconds, stdout."""
    env = dict(os.environ, PYTHONPATH=str(code))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clone-from", required=True)
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-rank-pair"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--in-play",
        action="append",
        default=[],
        help="a file to put in play before a round's rank (give two, used in turn)",
    )
    args = parser.parse_args()
    in_play = args.in_play or ["crates/nu-command/src/viewers/table.rs", "src/main.rs"]
    sides = {"base": args.base.resolve(), "here": ROOT}
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for side, code in sides.items():
        clone = args.work / side
        subprocess.run(["rm", "-rf", str(clone)], check=True)
        subprocess.run(["git", "clone", "-q", args.clone_from, str(clone)], check=True)
        run(code, clone, "task-add", TASK, "--objective", OBJECTIVE, "--acceptance", "x")
        wall, cpu, _ = run(code, clone, "add-tree", TASK, "-q")
        print(f"{side}: add-tree {wall:.2f} s wall, {cpu:.2f} s CPU")
        wall, cpu, out = run(code, clone, "rank", TASK, "--json")
        moved = json.loads(out)["reranked"]
        print(f"{side}: rank right after add-tree: reranked {moved} ({wall:.2f} s, {cpu:.2f} CPU)")
    for round_ in range(args.runs):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for side in order:
            clone = args.work / side
            run(sides[side], clone, "task-edit", TASK, "--file-in-play", in_play[round_ % 2])
            wall, cpu, _ = run(sides[side], clone, "rank", TASK)
            times[side].append((wall, cpu))
    for side, pairs in times.items():
        wall = statistics.median(w for w, _ in pairs)
        cpu = statistics.median(c for _, c in pairs)
        print(f"{side}: rank after task-edit, median of {len(pairs)}: {wall:.2f} s, {cpu:.2f} CPU")


if __name__ == "__main__":
    main()
