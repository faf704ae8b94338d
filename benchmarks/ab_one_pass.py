"""Paired A/B of two checkouts of git-hydrate on repository -> prompt (issue 19).

    python benchmarks/ab_one_pass.py OLD_CHECKOUT [NEW_CHECKOUT] [--repo PATH]
        [--files 2000] [--kib 10] [--runs 7]

On a clone of ``--repo`` (default: the synthetic repository of bench_add_tree.py,
``--files`` files of about ``--kib`` KiB), old and new in alternating order, each as
whole processes under ``PYTHONPATH=<checkout>``:

- one pass, cold: ``task-add`` + ``add-tree --prompt`` with no sha256 cache;
- ``prompt --no-cache`` of a task holding the whole tree (the build alone);
- ``prompt --refresh`` of that task (recognised, a prompt-cache hit).

Prints medians of wall time and of the processes' CPU time, with new/old ratios, and
the peak resident set of each side's last one-pass process. Byte-compile both
checkouts first (this shell may set PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_add_tree import make_repo

ROOT = Path(__file__).resolve().parent.parent
BIG = "1000000000"
LIMITS = ["--max-total-bytes", BIG, "--max-file-bytes", BIG]


class Side:
    def __init__(self, label: str, root: str, repo: str) -> None:
        self.label = label
        self.env = {**os.environ, "PYTHONPATH": root}
        for key, value in (("NAME", "ab"), ("EMAIL", "ab@example.com")):
            self.env[f"GIT_AUTHOR_{key}"] = self.env[f"GIT_COMMITTER_{key}"] = value
        self.repo = repo
        self.peak = 0

    def run(self, *args: str) -> tuple[float, float]:
        """Wall and CPU seconds of one ``git hydrate`` process (and its children)."""
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "git_hydrate", *args],
            cwd=self.repo,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{self.label}: {' '.join(args)} failed: {err.decode()}")
        self.peak = usage.ru_maxrss * 1024
        return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", default=str(ROOT))
    parser.add_argument("--repo", help="a git repository to clone (default: synthetic)")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--kib", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hydrate-ab1-") as scratch:
        repo = os.path.join(scratch, "r")
        if options.repo:
            subprocess.run(["git", "clone", "-q", options.repo, repo], check=True)
            what = options.repo
        else:
            size = make_repo(Path(repo), options.files, options.kib)
            what = f"synthetic, {options.files} files, {size / 1e6:.1f} MB"
        sides = [Side("old", options.old, repo), Side("new", options.new, repo)]
        cache = os.path.join(repo, ".git", "hydrate", "sha256-cache")
        for side in sides:
            side.run("task-add", f"W-{side.label}", "--objective", "o", "--acceptance", "a")
            side.run("add-tree", f"W-{side.label}", *LIMITS)
            side.run("prompt", f"W-{side.label}", "--max-bytes", BIG, "--refresh")
        serial = iter(range(1_000_000))

        def one_pass(side: Side) -> tuple[float, float]:
            task = f"P-{next(serial)}"
            if os.path.exists(cache):
                os.unlink(cache)
            wall, cpu = side.run("task-add", task, "--objective", "o", "--acceptance", "a")
            more = side.run("add-tree", task, *LIMITS, "--prompt", "--max-bytes", BIG)
            return wall + more[0], cpu + more[1]

        cases = {
            "one pass, cold": one_pass,
            "prompt --no-cache": lambda s: s.run(
                "prompt", f"W-{s.label}", "--max-bytes", BIG, "--no-cache"
            ),
            "prompt --refresh (warm)": lambda s: s.run(
                "prompt", f"W-{s.label}", "--max-bytes", BIG, "--refresh"
            ),
        }
        print(f"repository: {what}; {options.runs} runs each, alternating; medians")
        peaks = {}
        for name, case in cases.items():
            wall: dict[str, list[float]] = {"old": [], "new": []}
            cpu: dict[str, list[float]] = {"old": [], "new": []}
            for i in range(options.runs):
                for side in sides if i % 2 == 0 else sides[::-1]:
                    w, c = case(side)
                    wall[side.label].append(w)
                    cpu[side.label].append(c)
                    if name == "one pass, cold":
                        peaks[side.label] = side.peak
            mo, mn = statistics.median(wall["old"]), statistics.median(wall["new"])
            co, cn = statistics.median(cpu["old"]), statistics.median(cpu["new"])
            print(
                f"{name:24} wall old {mo:6.3f} new {mn:6.3f} s ({mn / mo:.2f}x)"
                f" | CPU old {co:6.3f} new {cn:6.3f} s ({cn / co:.2f}x)"
            )
        print(
            "peak RSS of the last add-tree --prompt: "
            + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in peaks.items())
        )


if __name__ == "__main__":
    main()
