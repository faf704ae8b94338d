"""add-tree + prompt against files-to-prompt and a `cat` floor, as whole processes.

Usage::

    python benchmarks/bench_add_tree.py [--files 2000] [--kib 10] [--runs 5]
        [--files-to-prompt PATH] [--small 10000] [--keep DIR] [--repo PATH ...]

``--files 0 --small 0 --repo PATH`` benches only the real checkout(s).

Generates a repository of ``--files`` source files (about ``--kib`` KiB each),
commits it, packs it (as a clone would be), and times, as the median of
``--runs`` runs:

* cold: ``task-add`` + ``add-tree`` + ``prompt`` with budgets large enough to
  take everything, on a fresh task with no sha256 cache;
* warm: the same on a fresh task once the sha256 cache exists;
* re-hydration of the unchanged tree + ``prompt``;
* ``add-tree --worktree`` of the same checkout (fresh task);
* ``git ls-files -z | xargs -0 cat`` — reading every file once, the floor;
* ``files-to-prompt`` (PyPI) on the same checkout, if found;
* ``add-tree`` of ``--small`` tiny files.

It also compares, in-process, reading every blob through one
``git cat-file --batch`` with reading them one by one through dulwich.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = "1000000000"
LIMITS = ("--max-total-bytes", BIG, "--max-file-bytes", BIG)
# every regular tracked file read once; submodules (160000) and symlinks (120000)
# are left out, as add-tree leaves them out (`cat` fails on a directory)
CAT_FLOOR = "git ls-files -z --stage | grep -zEv '^(160000|120000) ' | cut -z -f2 | xargs -0 cat"
WORDS = [
    "def",
    "class",
    "return",
    "import",
    "self",
    "value",
    "result",
    "config",
    "parser",
    "token",
    "buffer",
    "index",
    "request",
    "response",
    "handler",
    "error",
    "state",
    "commit",
    "tree",
    "blob",
    "budget",
    "context",
]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT)
    # Byte-compiled modules, as an installed copy runs (pip compiles at install).
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        e.pop(key, None)
    e.setdefault("GIT_AUTHOR_NAME", "Bench")
    e.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    e.setdefault("GIT_COMMITTER_NAME", "Bench")
    e.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    return e


ENV = env()


def sh(cmd: list[str] | str, cwd: Path, **kw: object) -> None:
    subprocess.run(
        cmd,
        cwd=cwd,
        env=ENV,
        check=True,
        stdout=subprocess.DEVNULL,
        shell=isinstance(cmd, str),
        **kw,  # type: ignore[call-overload]
    )


def hydrate(cwd: Path, *args: str) -> None:
    sh([sys.executable, "-m", "git_hydrate", *args], cwd)


def source_file(rng: random.Random, size: int) -> str:
    lines = []
    total = 0
    while total < size:
        indent = "    " * rng.randint(0, 3)
        line = indent + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)


def make_repo(path: Path, files: int, kib: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    sh(["git", "init", "-q", "-b", "main", str(path)], path.parent)
    sh(["git", "config", "gc.auto", "0"], path)
    total = 0
    for i in range(files):
        rel = Path(f"pkg{i % 20:02d}") / f"mod{(i // 20) % 10}" / f"file_{i:05d}.py"
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        text = source_file(rng, rng.randint(kib * 512, kib * 1536))
        (path / rel).write_text(text)
        total += len(text)
    sh(["git", "add", "-A"], path)
    sh(["git", "commit", "-q", "-m", "generated"], path)
    sh(["git", "gc", "-q"], path)
    return total


def median_time(
    fn: Callable[[], object], runs: int, setup: Callable[[], None] | None = None
) -> float:
    """The median wall time of ``runs`` calls of ``fn``; the median CPU seconds of its
    child processes (user + system) is left in ``LAST_CPU``."""
    global LAST_CPU
    times = []
    cpus = []
    for _ in range(runs):
        if setup is not None:
            setup()
        before = os.times()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        after = os.times()
        cpus.append(
            (after.children_user - before.children_user)
            + (after.children_system - before.children_system)
        )
    LAST_CPU = statistics.median(cpus)
    return statistics.median(times)


LAST_CPU = 0.0


def bench(repo: Path, runs: int, files_to_prompt: str | None) -> None:
    """Time the whole-process pipelines on ``repo`` and print the medians."""
    cache = repo / ".git" / "hydrate" / "sha256-cache"
    counter = iter(range(1_000_000))

    def fresh_task(drop_cache: bool) -> Callable[[], None]:
        def setup() -> None:
            if drop_cache and cache.exists():
                cache.unlink()

        return setup

    def full(mode: tuple[str, ...] = ()) -> Callable[[], None]:
        def run() -> None:
            task = f"B-{next(counter)}"
            hydrate(repo, "task-add", task, "--objective", "bench", "--acceptance", "fast")
            hydrate(repo, "add-tree", task, *mode, *LIMITS, "--json")
            hydrate(repo, "prompt", task, "--max-bytes", BIG)

        return run

    results: dict[str, float] = {}
    cpu: dict[str, float] = {}

    class Results(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: str, value: float) -> None:
            super().__setitem__(key, value)
            cpu[key] = LAST_CPU

    results = Results()
    results["cold: task-add + add-tree + prompt"] = median_time(full(), runs, fresh_task(True))
    results["warm cache: task-add + add-tree + prompt"] = median_time(full(), runs)
    results["worktree: task-add + add-tree --worktree + prompt"] = median_time(
        full(("--worktree",)), runs
    )
    hydrate(repo, "task-add", "R", "--objective", "bench", "--acceptance", "fast")
    hydrate(repo, "add-tree", "R", *LIMITS)

    def rehydrate() -> None:
        hydrate(repo, "add-tree", "R", *LIMITS, "--json")
        hydrate(repo, "prompt", "R", "--max-bytes", BIG)

    results["re-hydrate unchanged + prompt"] = median_time(rehydrate, runs)

    def prompt_only() -> None:
        hydrate(repo, "prompt", "R", "--max-bytes", BIG, "--no-cache")

    results["prompt alone (built)"] = median_time(prompt_only, runs)
    hydrate(repo, "prompt", "R", "--max-bytes", BIG)  # the prompt cache holds it now
    results["prompt alone (cache hit)"] = median_time(
        lambda: hydrate(repo, "prompt", "R", "--max-bytes", BIG), runs
    )

    def one_pass_cold() -> None:
        task = f"P-{next(counter)}"
        hydrate(repo, "task-add", task, "--objective", "bench", "--acceptance", "fast")
        hydrate(repo, "add-tree", task, *LIMITS, "--prompt", "--max-bytes", BIG)

    results["one pass, cold: task-add + add-tree --prompt"] = median_time(
        one_pass_cold, runs, fresh_task(True)
    )

    def refresh_warm() -> None:
        hydrate(repo, "prompt", "R", "--max-bytes", BIG, "--refresh")

    refresh_warm()  # the cache holds this prompt from here on
    results["one pass, warm: prompt --refresh (recognised, cache hit)"] = median_time(
        refresh_warm, runs
    )
    alone: list[str] = []

    def new_task_no_cache() -> None:
        alone.append(f"A-{next(counter)}")
        hydrate(repo, "task-add", alone[-1], "--objective", "bench", "--acceptance", "fast")
        if cache.exists():
            cache.unlink()

    results["add-tree alone, cold (new task, no cache)"] = median_time(
        lambda: hydrate(repo, "add-tree", alone[-1], *LIMITS, "--json"), runs, new_task_no_cache
    )
    results["add-tree alone, unchanged"] = median_time(
        lambda: hydrate(repo, "add-tree", "R", *LIMITS, "--json"), runs
    )
    results["floor: git ls-files -z | xargs -0 cat"] = median_time(
        lambda: sh(CAT_FLOOR, repo), runs
    )
    if files_to_prompt and os.path.exists(files_to_prompt):
        # stderr dropped: it warns once per binary file it skips (UnicodeDecodeError)
        quiet = {"stderr": subprocess.DEVNULL}
        results["files-to-prompt"] = median_time(
            lambda: sh([files_to_prompt, "."], repo, **quiet), runs
        )
        results["files-to-prompt --ignore-gitignore (raw read)"] = median_time(
            lambda: sh([files_to_prompt, ".", "--ignore-gitignore"], repo, **quiet), runs
        )
    else:
        print("files-to-prompt not found; skipped")

    # -- reading blobs: one cat-file --batch vs dulwich one by one -------------
    sys.path.insert(0, str(ROOT))
    from git_hydrate.hydrate.sources import list_tree
    from git_hydrate.store import Repository

    with Repository(repo) as r:
        entries = list_tree(r.ls_tree("HEAD"))
        oids = [e.oid for e in entries if e.oid and e.kind != "submodule"]
        t_batch = median_time(lambda: [0 for _ in r.stream_blobs(oids)], runs)

    def dulwich_reads() -> None:
        # a fresh Repository each run: dulwich's in-process delta cache starts cold,
        # as it does in a new git-hydrate process
        with Repository(repo) as fresh:
            for oid in oids:
                fresh.read_blob(oid.encode())

    t_dulwich = median_time(dulwich_reads, runs)

    width = max(len(k) for k in results) + 2
    print(f"\nmedian of {runs} runs, whole processes, output to /dev/null")
    for name, seconds in results.items():
        print(f"  {name:<{width}} {seconds:7.3f} s wall {cpu[name]:7.3f} s CPU")
    ftp = results.get("files-to-prompt")
    if ftp:
        cold = results["cold: task-add + add-tree + prompt"]
        again = results["re-hydrate unchanged + prompt"]
        one = results["one pass, cold: task-add + add-tree --prompt"]
        warm = results["one pass, warm: prompt --refresh (recognised, cache hit)"]
        print(
            f"  cold / files-to-prompt: {cold / ftp:.2f}x; re-hydrate / files-to-prompt: "
            f"{again / ftp:.2f}x\n  one pass cold / files-to-prompt: {one / ftp:.2f}x; "
            f"warm --refresh / files-to-prompt: {warm / ftp:.2f}x"
        )
    print(
        f"\nreading {len(oids)} blobs in-process: git cat-file --batch {t_batch:.3f} s, "
        f"dulwich one by one {t_dulwich:.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--kib", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--small", type=int, default=10000)
    parser.add_argument(
        "--files-to-prompt",
        default=shutil.which("files-to-prompt") or "files-to-prompt",
    )
    parser.add_argument("--keep", help="generate into this directory and keep it")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "git_hydrate")], check=True, env=ENV
    )
    parser.add_argument(
        "--repo", action="append", default=[], help="also bench a clone of this real repository"
    )
    args = parser.parse_args()

    base = Path(args.keep or tempfile.mkdtemp(prefix="bench-add-tree-"))
    base.mkdir(parents=True, exist_ok=True)
    repo = base / "repo"
    if args.files:  # --files 0: only the --repo checkouts
        if repo.exists():
            shutil.rmtree(repo)
        total = make_repo(repo, args.files, args.kib)
        print(f"repository: {args.files} files, {total / 1e6:.1f} MB, packed ({repo})")
        bench(repo, args.runs, args.files_to_prompt)
    for real in args.repo:
        clone = base / ("real-" + Path(real).name)
        if clone.exists():
            shutil.rmtree(clone)
        sh(["git", "clone", "-q", str(real), str(clone)], base)
        sh(["git", "config", "gc.auto", "0"], clone)
        out = subprocess.run(
            ["git", "ls-tree", "-r", "-l", "HEAD"], cwd=clone, capture_output=True, check=True
        ).stdout.split(b"\n")
        size = sum(int(line.split()[3]) for line in out if line and line.split()[3] != b"-")
        print(f"\nreal checkout {real}: {len([x for x in out if x])} files, {size / 1e6:.1f} MB")
        bench(clone, args.runs, args.files_to_prompt)

    if args.small:
        small = base / "small"
        if small.exists():
            shutil.rmtree(small)
        sh(["git", "init", "-q", "-b", "main", str(small)], base)
        sh(["git", "config", "gc.auto", "0"], small)
        for i in range(args.small):
            p = small / f"d{i % 100:02d}" / f"f{i:05d}.txt"
            p.parent.mkdir(exist_ok=True)
            p.write_text(f"small file {i}\n")
        sh(["git", "add", "-A"], small)
        sh(["git", "commit", "-q", "-m", "small"], small)
        sh(["git", "gc", "-q"], small)
        hydrate(small, "task-add", "S", "--objective", "bench", "--acceptance", "fast")
        start = time.perf_counter()
        hydrate(small, "add-tree", "S", "--json")
        first = time.perf_counter() - start
        start = time.perf_counter()
        hydrate(small, "add-tree", "S", "--json")
        again = time.perf_counter() - start
        print(f"\n{args.small} small files: add-tree {first:.3f} s; unchanged again {again:.3f} s")

    if not args.keep:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
