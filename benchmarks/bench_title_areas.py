"""A title's areas (:func:`git_hydrate.hydrate.areas.area_files`) at 30,000 paths.

Usage::

    python benchmarks/bench_title_areas.py

Each area is looked for in all the paths; a title listing thousands of names in a
type's parentheses (a pasted log line) made that thousands of passes. Printed per
title: the files named, CPU and wall seconds of one call.
"""

from __future__ import annotations

import time

from git_hydrate.hydrate.areas import area_files

PATHS = [f"src/p{i}/m{i}.py" for i in range(30_000)]
TITLES = {
    "100,000 x 'walk' in parentheses": "fix(" + ", ".join(["walk"] * 100_000) + "): x",
    "20,000 distinct stems in parentheses": "fix("
    + ", ".join(f"m{i}" for i in range(20_000))
    + "): x",
    "one area (m1: x)": "m1: x",
}


def main() -> None:
    for name, title in TITLES.items():
        cpu, wall = time.process_time(), time.perf_counter()
        found = area_files(title, PATHS)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(f"{name}: {len(found)} files, {cpu:.3f} s CPU, {wall:.3f} s wall")


if __name__ == "__main__":
    main()
