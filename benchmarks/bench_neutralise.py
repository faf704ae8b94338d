"""The untrusted block's marking (``rendering.neutralise``) over a repository's files.

    python benchmarks/bench_neutralise.py REPO [--runs 7] [--against TREE]

Reads every tracked file of REPO that is UTF-8, then times ``neutralise`` over all of
them (ASCII and non-ASCII files apart), median of ``--runs`` (wall and CPU seconds), in
a fresh process for this tree and, with ``--against``, for another source tree of
git-hydrate, alternating.
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

_CHILD = """
import json, subprocess, sys, time
from git_hydrate.pack.render import neutralise
repo = sys.argv[1]
names = subprocess.run(["git", "-C", repo, "ls-files", "-z"], capture_output=True, check=True)
texts = []
for name in names.stdout.split(b"\\0"):
    try:
        with open(repo.encode() + b"/" + name, "rb") as fh:
            texts.append(fh.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError):
        pass
out = {}
for label, group in (("ascii", [t for t in texts if t.isascii()]),
                     ("non-ascii", [t for t in texts if not t.isascii()])):
    start, cpu = time.perf_counter(), time.process_time()
    for text in group:
        neutralise(text)
    took = [time.perf_counter() - start, time.process_time() - cpu]
    out[label] = [len(group), sum(len(t.encode()) for t in group), *took]
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", help="another source tree of git-hydrate")
    options = parser.parse_args()
    trees = {"this tree": str(ROOT)}
    if options.against:
        trees["against"] = str(Path(options.against).resolve())
    seconds: dict[tuple[str, str], list[float]] = {}
    cpu_seconds: dict[tuple[str, str], list[float]] = {}
    sizes: dict[str, tuple[int, int]] = {}
    for run in range(options.runs):
        for tree in list(trees) if run % 2 == 0 else list(trees)[::-1]:
            env = {**os.environ, "PYTHONPATH": trees[tree]}
            proc = subprocess.run(  # from the repository: "-c" puts the cwd first on sys.path
                [sys.executable, "-c", _CHILD, os.path.abspath(options.repo)],
                cwd=options.repo,
                env=env,
                capture_output=True,
                check=True,
            )
            for label, (count, size, took, cpu) in json.loads(proc.stdout).items():
                sizes[label] = (count, size)
                seconds.setdefault((tree, label), []).append(took)
                cpu_seconds.setdefault((tree, label), []).append(cpu)
    print(f"{options.repo}; {options.runs} runs, medians")
    for (tree, label), rows in seconds.items():
        count, size = sizes[label]
        took = statistics.median(rows)
        cpu = statistics.median(cpu_seconds[tree, label])
        print(
            f"{tree:10} {label:10} {count:6} files {size / 1e6:7.2f} MB "
            f"{took * 1000:8.1f} ms {size / took / 1e6:8.0f} MB/s, CPU {cpu * 1000:8.1f} ms"
        )


if __name__ == "__main__":
    main()
