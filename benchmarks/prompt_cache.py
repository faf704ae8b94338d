"""The prompt cache: a hit against a rebuild, `cat` of the same bytes and start-up.

    python benchmarks/prompt_cache.py [--dir DIR] [--mb 20] [--runs 7]

Commits a copy of DIR (default: this Python's standard library) and attaches it to a
task with ``add-tree``, up to MB megabytes, then times whole processes, in alternating
order, medians of wall and CPU time (children):

- ``prompt --no-cache``: the prompt built from the task;
- ``prompt``: a cache hit (the first run filled the cache);
- ``cat`` of the same prompt bytes, and ``python -c pass`` plus ``git hydrate -h``
  (the interpreter and import floor): the goal is hit <= 1.5x (cat + floor).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(
    args: list[str], cwd: str, env: dict[str, str], out: str | None = None
) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(out or os.devnull, "wb") as sink:
        subprocess.run(args, cwd=cwd, env=env, stdout=sink, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key, value in (("NAME", "bench"), ("EMAIL", "bench@example.com")):
        env[f"GIT_AUTHOR_{key}"] = env[f"GIT_COMMITTER_{key}"] = value
    hydrate = [sys.executable, "-m", "git_hydrate"]
    limit = f"{options.mb}m"
    with tempfile.TemporaryDirectory(prefix="hydrate-pc-") as scratch:
        repo = os.path.join(scratch, "r")
        subprocess.run(["git", "init", "-q", repo], check=True)
        # A copy committed in the scratch repository: --dir of a directory that lies
        # inside another work tree (a pyenv checkout, say) takes only its tracked files.
        shutil.copytree(
            options.dir,
            os.path.join(repo, "src"),
            ignore=shutil.ignore_patterns("__pycache__", "site-packages"),
            symlinks=True,
        )
        subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "src"], cwd=repo, env=env, check=True)
        subprocess.run([*hydrate, "task-add", "P-1", "--objective", "o", "--acceptance", "a"],
                       cwd=repo, env=env, check=True, capture_output=True)  # fmt: skip
        subprocess.run(
            [*hydrate, "add-tree", "P-1", "--max-total-bytes", limit,
             "--max-file-bytes", "1m", "--allow-secrets", "--no-rank"],
            cwd=repo, env=env, check=True, capture_output=True,
        )  # fmt: skip
        prompt = [*hydrate, "prompt", "P-1", "--max-bytes", limit]
        saved = os.path.join(scratch, "prompt.md")
        timed(prompt, repo, env, saved)  # fills the cache
        size = os.path.getsize(saved)
        cases = {
            "prompt --no-cache": [*prompt, "--no-cache"],
            "prompt (cache hit)": prompt,
            "cat": ["cat", saved],
            "python -c pass": [sys.executable, "-c", "pass"],
            "git hydrate -h": [*hydrate, "-h"],
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for run in range(options.runs):
            names = list(cases) if run % 2 == 0 else list(cases)[::-1]
            for name in names:
                results[name].append(timed(cases[name], repo, env))
    print(f"prompt of {size / 1e6:.1f} MB from {options.dir}; {options.runs} runs, medians")
    med = {
        name: (statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows))
        for name, rows in results.items()
    }
    for name, (wall, cpu) in med.items():
        print(f"{name:22} wall {wall * 1000:8.1f} ms   CPU {cpu * 1000:8.1f} ms")
    floor = med["cat"][0] + med["git hydrate -h"][0]
    print(
        f"hit / (cat + git hydrate -h): {med['prompt (cache hit)'][0] / floor:.2f}x wall "
        f"(goal <= 1.5x); hit / rebuild: "
        f"{med['prompt (cache hit)'][0] / med['prompt --no-cache'][0]:.2f}x"
    )


if __name__ == "__main__":
    main()
