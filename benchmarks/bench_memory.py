"""Peak memory of `prompt` against the size of the prompt it prints, as whole processes.

    python benchmarks/bench_memory.py [--dir DIR] [--mb 30] [--runs 3] [--against TREE]

Commits a copy of DIR (default: this Python's standard library, which holds files with
wide characters) in a scratch repository, attaches up to MB megabytes of it to a task
with ``add-tree``, then measures the peak resident set of each process (``wait4``'s
``ru_maxrss``, the process's own), median of ``--runs``:

- ``prompt --no-cache``: the prompt built;
- ``prompt``: a cache hit;
- the floors: ``git hydrate -h`` (the command line's imports) and the imports of a
  build (``python -c 'import git_hydrate.ledger, git_hydrate.pack.stored'``).

The goal (issue 19): a build peaks at most at 2x its output + the import floor.
``--against TREE`` runs the same commands from another source tree of git-hydrate
(``git archive <rev> | tar -x -C TREE``) in the same run, for a before/after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_rss(args: list[str], cwd: str, env: dict[str, str], out: str = os.devnull) -> int:
    """The peak resident set of one process, in bytes (Linux reports KiB)."""
    with open(out, "wb") as sink:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}")
    return usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--mb", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--against", help="another source tree of git-hydrate to compare")
    options = parser.parse_args()
    base = {**os.environ}
    for key, value in (("NAME", "bench"), ("EMAIL", "bench@example.com")):
        base[f"GIT_AUTHOR_{key}"] = base[f"GIT_COMMITTER_{key}"] = value
    trees = {"this tree": str(ROOT)}
    if options.against:
        trees["against"] = str(Path(options.against).resolve())
    hydrate = [sys.executable, "-m", "git_hydrate"]
    limit = f"{options.mb}m"
    with tempfile.TemporaryDirectory(prefix="hydrate-mem-") as scratch:
        repo = os.path.join(scratch, "r")
        subprocess.run(["git", "init", "-q", repo], check=True)
        shutil.copytree(
            options.dir,
            os.path.join(repo, "src"),
            ignore=shutil.ignore_patterns("__pycache__", "site-packages"),
            symlinks=True,
        )
        env = {**base, "PYTHONPATH": str(ROOT)}
        subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "src"], cwd=repo, env=env, check=True)
        subprocess.run([*hydrate, "task-add", "P-1", "--objective", "o", "--acceptance", "a"],
                       cwd=repo, env=env, check=True, capture_output=True)  # fmt: skip
        subprocess.run(
            [*hydrate, "add-tree", "P-1", "--max-total-bytes", limit,
             "--max-file-bytes", "1m", "--allow-secrets", "--no-rank"],
            cwd=repo, env=env, check=True, capture_output=True,
        )  # fmt: skip
        prompt = [*hydrate, "prompt", "P-1", "--max-bytes", "1g"]
        saved = os.path.join(scratch, "prompt.md")
        cases = {
            "prompt --no-cache (build)": [*prompt, "--no-cache"],
            "prompt (cache hit)": prompt,
            "floor: git hydrate -h": [*hydrate, "-h"],
            "floor: build imports": [
                sys.executable,
                "-c",
                "import git_hydrate.ledger, git_hydrate.pack.stored, git_hydrate.context_expander",
            ],
        }
        results: dict[tuple[str, str], list[int]] = {}
        for path in trees.values():
            peak_rss(prompt, repo, {**base, "PYTHONPATH": path}, saved)  # fills the cache
        size = os.path.getsize(saved)
        for run in range(options.runs):
            order = list(trees) if run % 2 == 0 else list(trees)[::-1]
            for tree in order:
                tree_env = {**base, "PYTHONPATH": trees[tree]}
                for name, args in cases.items():
                    results.setdefault((tree, name), []).append(peak_rss(args, repo, tree_env))
    mib = 1 << 20
    print(f"prompt of {size / 1e6:.1f} MB from {options.dir}; {options.runs} runs, medians")
    print(f"{'tree':10} {'measure':28} {'peak MiB':>9} {'x output':>9}")
    for (tree, name), rows in results.items():
        value = statistics.median(rows)
        print(f"{tree:10} {name:28} {value / mib:9.1f} {value / size:9.2f}")
    for tree in trees:
        build = statistics.median(results[(tree, "prompt --no-cache (build)")])
        floor = statistics.median(results[(tree, "floor: build imports")])
        above = (build - floor) / size
        verdict = "met" if above <= 2 else "not met"
        print(f"{tree}: build - import floor = {above:.2f}x the output (goal <= 2x: {verdict})")


if __name__ == "__main__":
    main()
