"""Paired A/B of two checkouts of git-hydrate: whole processes, alternating order, CPU beside wall.

    python benchmarks/ab.py OLD_CHECKOUT [NEW_CHECKOUT] [--runs N] [--only CASE ...] [--big MB]

Each command runs against the same scratch repository (a task of 100 attachments and three
small ones) under ``PYTHONPATH=<checkout>``, old and new in alternating order; medians of
wall time and of the child processes' CPU time are printed with new/old ratios. Read the
ratios: both sides suffer the same machine load. ``--big MB`` adds a task of the Python
standard library's files (about MB megabytes, attached by add-tree) and the ``*-big`` cases:
prompts and packs of thousands of attachments, built anew each time (``--no-cache``).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(root: str, repo: str, args: list[str]) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": root}
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args], cwd=repo, env=env, capture_output=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{root}: {' '.join(args)} failed: {proc.stderr.decode()}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return time.perf_counter() - start, cpu


def big_task(root: str, repo: str, megabytes: float) -> None:
    """Task B-5: the standard library's Python files (tests left out), about
    ``megabytes`` MB of them, committed and attached by add-tree."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    total = 0
    for path in sorted(stdlib.rglob("*.py")):
        if {"site-packages", "test", "tests"} & set(path.parts) or path.stat().st_size > 250_000:
            continue
        target = Path(repo, "lib", path.relative_to(stdlib))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        total += path.stat().st_size
        if total >= megabytes * 1e6:
            break
    subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
    subprocess.run(["git", "-C", repo, "commit", "-qm", "corpus"], check=True)
    run(root, repo, ["task-add", "B-5", "--objective", "o", "--acceptance", "a"])
    run(root, repo, ["add-tree", "B-5", "--max-total-bytes", "1000000000"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", default=str(ROOT))
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", nargs="*", help="run just these cases (default: all)")
    parser.add_argument("--big", type=float, default=0, help="MB of the *-big cases' task")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hydrate-ab-") as scratch:
        repo = os.path.join(scratch, "r")
        subprocess.run(["git", "init", "-q", repo], check=True)
        for key, value in (("user.name", "ab"), ("user.email", "ab@example.com")):
            subprocess.run(["git", "-C", repo, "config", key, value], check=True)
        subprocess.run(["git", "-C", repo, "commit", "-q", "--allow-empty", "-m", "i"], check=True)
        for task_id in ("B-1", "B-2", "B-3", "B-4"):
            run(options.new, repo, ["task-add", task_id, "--objective", "o", "--acceptance", "a"])
        for i in range(100):
            run(options.new, repo, ["add", "B-1", "--text", f"body {i} " * 20])
        cases: dict[str, Callable[[int], list[str]]] = {
            "-h": lambda _: ["-h"],
            "pack": lambda _: ["pack", "B-1"],
            "prompt": lambda _: ["prompt", "B-1"],
            # budgets that leave attachments out: the walk's omissions, the notice
            "pack-tight": lambda _: ["pack", "B-1", "--max-bytes", "4k"],
            "prompt-tight": lambda _: ["prompt", "B-1", "--no-cache", "--max-bytes", "4k"],
            "context-add": lambda n: ["add", "B-1", "--text", f"fresh {n}"],
            "list": lambda _: ["list"],
            # an edit that adds no edge, and one that does (the graph lock and cycle check)
            "task-edit": lambda n: ["task-edit", "B-2", "--title", f"title {n}"],
            "edge-edit": lambda n: ["task-edit", "B-2", "--depends-on", f"B-{3 + n % 2}"],
        }
        if options.big:
            big_task(options.new, repo, options.big)
            fresh = ["prompt", "B-5", "--no-cache", "--max-bytes"]
            cases |= {
                "prompt-big": lambda _: [*fresh, "400000"],
                "prompt-big-tight": lambda _: [*fresh, "64k"],
                "pack-big": lambda _: ["pack", "B-5", "--max-bytes", "400000"],
                "expand-big": lambda _: ["expand", "B-5", "--max-bytes", "400000"],
            }
        serial = 0
        for name, args in cases.items():
            if options.only and name not in options.only:
                continue
            wall: dict[str, list[float]] = {"old": [], "new": []}
            cpu: dict[str, list[float]] = {"old": [], "new": []}
            for i in range(options.runs):
                sides = [("old", options.old), ("new", options.new)]
                for label, root in sides if i % 2 == 0 else reversed(sides):
                    serial += 1
                    w, c = run(root, repo, args(serial))
                    wall[label].append(w)
                    cpu[label].append(c)
            mo, mn = statistics.median(wall["old"]), statistics.median(wall["new"])
            co, cn = statistics.median(cpu["old"]), statistics.median(cpu["new"])
            print(
                f"{name:12} wall old {mo * 1000:6.1f} new {mn * 1000:6.1f} ms ({mn / mo:.2f}x)"
                f" | CPU old {co * 1000:6.1f} new {cn * 1000:6.1f} ms ({cn / co:.2f}x)"
            )


if __name__ == "__main__":
    main()
