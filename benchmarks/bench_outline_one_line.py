"""Outlines of minified code: one line holding thousands of declarations.

    python benchmarks/bench_outline_one_line.py [--runs 5] [--against TREE]

Times ``outline("a.js", body)`` for bodies of one line, each a unit repeated to
about 1 MB (a call with a function last, an assigned function, a function
declaration, each led by a comment; the same call without one), median of
``--runs`` (wall and CPU seconds), in a fresh process for this tree and, with
``--against``, for another source tree of git-hydrate, alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

UNITS = {
    "comment + call": "/**/f(function(){});",
    "comment + assignment": "/**/a.b=function(){};",
    "comment + declaration": "/**/function a(){}",
    "call, no comment": "f(function(){});",
}

_CHILD = """
import json, sys, time
from git_hydrate.pack.outline import outline
body = sys.stdin.read()
wall, cpu = time.perf_counter(), time.process_time()
outline("a.js", body)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def _once(tree: Path, body: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # (run in the tree: ``-c`` puts the current folder first on the path)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], input=body, capture_output=True, text=True,
        env=env, cwd=tree, check=True,
    )  # fmt: skip
    wall, cpu = json.loads(done.stdout)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", type=Path)
    args = parser.parse_args()
    trees = [ROOT, *([args.against] if args.against else [])]
    for name, unit in UNITS.items():
        body = unit * (1_000_000 // len(unit))
        times: dict[Path, list[tuple[float, float]]] = {tree: [] for tree in trees}
        for run in range(args.runs):
            for tree in trees if run % 2 == 0 else trees[::-1]:
                times[tree].append(_once(tree, body))
        said = "; ".join(
            f"{tree.name}: wall {statistics.median(w for w, _ in t):.2f} s, "
            f"CPU {statistics.median(c for _, c in t):.2f} s"
            for tree, t in times.items()
        )
        print(f"{name} ({len(body):,} chars): {said}")


if __name__ == "__main__":
    main()
