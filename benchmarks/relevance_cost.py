"""What a ranking change costs add-tree: this code against another revision, paired.

Flask's tree copied ten times (about 2,600 files; its real history), a task with no
file in play, ``add-tree`` in fresh processes, the two codes alternating; each code
works in its own clone (their caches may differ in layout). ``warm``: the facts and
history caches filled; ``cold``: both deleted before each run. Prints the medians of
the child's CPU seconds (wall beside) and the median of the paired CPU ratios.

Usage::

    python benchmarks/relevance_cost.py --against e49422f --runs 7
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import relevance  # noqa: E402

OBJECTIVE = "Fix url_for with blueprints when the endpoint has a dot"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True).stdout.decode()


def build(scratch: str, mirror: Path) -> str:
    base = os.path.join(scratch, "base")
    git("clone", "-q", "--shared", relevance.locate("flask", mirror), base)
    git("-C", base, "checkout", "-q", str(relevance.REPOS["flask"][1]))
    tracked = git("-C", base, "ls-files").split()
    for copy in range(10):
        for path in tracked:
            target = Path(base, f"copy{copy}", path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(Path(base, path).read_bytes())
    git("-C", base, "add", "-A")
    git("-C", base, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "copies")
    return base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the revision to compare with")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="relevance-cost-")
    try:
        other = os.path.join(scratch, "other")
        os.mkdir(other)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.against, "git_hydrate"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", other], input=archive, check=True)
        codes = {"before": other, "after": str(ROOT)}
        base = build(scratch, args.mirror)
        work = {}
        for label in codes:
            work[label] = os.path.join(scratch, label)
            git("clone", "-q", "--no-hardlinks", base, work[label])

        def run(label: str, *argv: str) -> tuple[float, float]:
            env = {**os.environ, "PYTHONPATH": codes[label]}
            before, start = os.times(), time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "git_hydrate", *argv],
                cwd=work[label],
                env=env,
                check=True,
                capture_output=True,
            )
            after = os.times()
            cpu = (after.children_user - before.children_user) + (
                after.children_system - before.children_system
            )
            return time.perf_counter() - start, cpu

        for label in codes:  # fill the caches
            run(label, "task-add", "W-0", "--objective", OBJECTIVE, "--acceptance", "-")
            run(label, "add-tree", "W-0")
        found: dict[tuple[str, str], list[tuple[float, float]]] = {
            (label, mode): [] for label in codes for mode in ("warm", "cold")
        }
        for i in range(args.runs):
            for mode in ("warm", "cold"):
                order = list(codes) if i % 2 == 0 else list(codes)[::-1]
                for label in order:
                    task_id = f"T-{mode}-{i}"
                    run(label, "task-add", task_id, "--objective", OBJECTIVE, "--acceptance", "-")
                    if mode == "cold":
                        for name in ("blob-facts", "history"):
                            path = os.path.join(work[label], ".git", "hydrate", name)
                            if os.path.isdir(path):
                                shutil.rmtree(path)
                            elif os.path.exists(path):
                                os.remove(path)
                    found[(label, mode)].append(run(label, "add-tree", task_id))
        files = len(git("-C", base, "ls-files").split())
        print(f"{files} files, {args.runs} paired runs, before = {args.against}")
        for mode in ("warm", "cold"):
            b, a = found[("before", mode)], found[("after", mode)]
            ratio = statistics.median(y[1] / x[1] for x, y in zip(b, a, strict=True) if x[1])
            print(
                f"{mode}: before {statistics.median(x[1] for x in b):.3f} s CPU "
                f"({statistics.median(x[0] for x in b):.2f} s wall), after "
                f"{statistics.median(x[1] for x in a):.3f} s CPU "
                f"({statistics.median(x[0] for x in a):.2f} s wall), "
                f"after/before {ratio:.2f}"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
