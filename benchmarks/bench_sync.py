"""Time push, pull and a no-op sync of many tasks through a bare remote on a file path.

Usage::

    python benchmarks/bench_sync.py [--tasks 1000] [--repeat 3]

Each run builds a fresh clone with N tasks (one context body each), then times
(median of --repeat runs, seconds):

* ``push``: the first push of all N tasks to an empty remote,
* ``pull``: a fresh clone pulling all N tasks,
* ``sync (no-op)``: a sync when nothing changed on either side,
* ``pull (10 changed)``: a pull after another clone changed 10 tasks.

Beside each, plain git on the same refs with the same options, in the same
run (objects packed by ``git gc`` first, as a real repository would be):

* ``git push``: ``git push --porcelain --no-verify`` of ``refs/hydrate/*``
  to an empty remote,
* ``git fetch``: a fresh clone fetching ``+refs/hydrate/*`` into the mirror
  namespace (``--no-tags --no-filter --prune``),
* ``git fetch+push (no-op)``: both again with nothing to do.

It uses the library (``git_hydrate.sync``) and the real git binary, with an
isolated git configuration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from git_hydrate import Ledger
from git_hydrate import sync as hsync


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def timed(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def one_run(root: Path, tasks: int) -> dict[str, float]:
    remote = root / "remote.git"
    git(root, "init", "-q", "--bare", str(remote))
    a = root / "a"
    git(root, "clone", "-q", str(remote), str(a))
    with Ledger(a) as ledger:
        for i in range(tasks):
            task_id = f"T-{i:05d}"
            ledger.add_task(task_id, objective=f"objective {i}", acceptance="done")
            ledger.add_context(task_id, f"context body {i}\n" * 20, "bench")
    git(a, "gc", "-q")
    figures: dict[str, float] = {}
    with Ledger(a) as ledger:
        report = hsync.push(ledger.refs)
        assert report.ok
    # Time a second, independent first push (the remote is re-created), then
    # plain git pushing the same refs to a third empty remote.
    for name in ("remote2.git", "remote3.git"):
        git(root, "init", "-q", "--bare", str(root / name))
    with Ledger(a) as ledger:
        figures["push"] = timed(lambda: hsync.push(ledger.refs, str(root / "remote2.git")))
    figures["git push"] = timed(
        lambda: git(
            a,
            *("push", "--porcelain", "--no-verify", str(root / "remote3.git")),
            "refs/hydrate/*:refs/hydrate/*",
        )
    )
    git(remote, "gc", "-q")
    b = root / "b"
    git(root, "clone", "-q", str(remote), str(b))
    with Ledger(b) as ledger:
        figures["pull"] = timed(lambda: hsync.pull(ledger.refs))
        assert len(ledger.task_ids()) == tasks
        figures["sync (no-op)"] = timed(lambda: hsync.sync(ledger.refs))
    c = root / "c"
    git(root, "clone", "-q", str(remote), str(c))
    fetch = (
        *("fetch", "--no-tags", "--no-filter", "--no-write-fetch-head", "--prune", "--quiet"),
        "origin",
        "+refs/hydrate/*:refs/hydrate-remotes/origin/*",
    )
    figures["git fetch"] = timed(lambda: git(c, *fetch))
    # make c hold the tasks as b does, then time plain git doing nothing
    git(c, "fetch", "-q", "origin", "+refs/hydrate/*:refs/hydrate/*")

    def noop() -> None:
        git(c, *fetch)
        git(c, "push", "--porcelain", "--no-verify", "origin", "refs/hydrate/*:refs/hydrate/*")

    figures["git fetch+push (no-op)"] = timed(noop)
    figures["git fetch (no-op)"] = timed(lambda: git(c, *fetch))
    with Ledger(a) as ledger:
        for i in range(10):
            ledger.edit_task(f"T-{i:05d}", title=f"changed {i}")
        hsync.push(ledger.refs)
    with Ledger(b) as ledger:
        figures["pull (10 changed)"] = timed(lambda: hsync.pull(ledger.refs))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ.update(
            HOME=home,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_AUTHOR_NAME="Bench",
            GIT_AUTHOR_EMAIL="bench@example.com",
            GIT_COMMITTER_NAME="Bench",
            GIT_COMMITTER_EMAIL="bench@example.com",
        )
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(one_run(Path(tmp), args.tasks))
    print(f"{args.tasks} tasks, median of {args.repeat} runs (git {_git_version()}):")
    median = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    for name, value in median.items():
        print(f"  {name:<24} {value:8.3f} s")
    for ours, theirs in (
        ("push", "git push"),
        ("pull", "git fetch"),
        ("sync (no-op)", "git fetch+push (no-op)"),
        ("sync (no-op)", "git fetch (no-op)"),
    ):
        print(f"  {ours} / {theirs}: {median[ours] / median[theirs]:.2f}x")


def _git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    return out.split()[-1] if out else "?"


if __name__ == "__main__":
    main()
