"""How far back must ranking read the history? Recall with it cut, and git log's cost.

``replay``: each case of ``relevance_replay.py --dump``'s files ranked again with
its history (and the subjects beside it) cut to the newest N entries, for each N
of ``--cuts``; the mean recall over the repositories (objective, in play, at
relevance.BUDGETS), the paired change against the first N and, per repository,
the tasks won or lost (the sum over its cases of the change in recall). A dump's
history holds the non-sweep commits among the newest ``MAX_COMMITS`` it was made
with, newest first; an N at or past a case's length is that case as dumped.
With ``--exact``, a repository of relevance.REPOS is cut as git would cut it:
each case at the count of non-sweep commits among the newest N non-merge commits
of the repository's pinned tip (its mirror's ``HEAD`` if not pinned), with the
templates those N give (the dump's are from the N it was made with).

``cost``: ``git log`` as history.py runs it, for each N, on each git directory,
the Ns alternating in order run to run; medians of wall and CPU (git's, from
``RUSAGE_CHILDREN``) and of ``history._parse``'s CPU.

Usage::

    python benchmarks/history_reach.py replay --cache /tmp/replay --repos tmux,fmt,libuv
    python benchmarks/history_reach.py cost --runs 7 /tmp/mypy/.git
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import relevance  # noqa: E402
import relevance_replay as replay  # noqa: E402

from git_hydrate.hydrate.history import _parse  # noqa: E402
from git_hydrate.hydrate.rank import Weights  # noqa: E402
from git_hydrate.store.commands import _changed_paths_args  # noqa: E402

#: A case's recall per budget: (objective, in play).
Row = tuple[list[float], list[float]]


def _case(r: replay.Replay) -> Row:
    found = []
    for objective_only in (True, False):
        ordered = replay.order(r, replay.levels_of(r, Weights(), objective_only))
        wanted = r.changed if objective_only else [p for p in r.changed if p != r.in_play]
        found.append([replay.recall(r, ordered, wanted, b) for b in replay.BUDGETS])
    return found[0], found[1]


def _as_git_cuts(name: str, mirror: Path, n: int) -> tuple[int, list[str]]:
    """How many commits a history of the newest ``n`` holds at ``name``'s tip, and
    its templates."""
    source = relevance.locate(name, mirror)
    tip = relevance.REPOS[name][1] or relevance.git(source, "rev-parse", "HEAD").strip()
    argv = ["git", "--git-dir", source, *_changed_paths_args(tip, n)]
    read = _parse(subprocess.run(argv, capture_output=True, check=True).stdout)
    return len(read.commits), read.templates


def replay_cuts(
    cases: list[replay.Replay], cuts: list[int], exact: Callable[[int], tuple[int, list[str]]]
) -> dict[int, list[Row]]:
    """Each case's recall with its history cut to each of ``cuts`` (the first: as dumped
    when no case is longer); ``exact``: the entries and templates of each cut."""
    rows: dict[int, list[Row]] = {}
    for n in cuts:
        rows[n] = []
        keep, templates = exact(n) if n != cuts[0] else (n, None)
        for i, r in enumerate(cases):
            if keep >= len(r.history) and n != cuts[0]:
                rows[n].append(rows[cuts[0]][i])
                continue
            cut = dataclasses.replace(r, history=r.history[:keep], subjects=r.subjects[:keep])
            if templates is not None:
                cut.templates = templates
            rows[n].append(_case(cut))
    return rows


def _entries(n: int) -> tuple[int, None]:
    """A cut of ``n`` entries, the dump's templates."""
    return n, None


def _mean(rows: list[Row], mode: int, budget: int) -> float:
    return statistics.mean(row[mode][budget] for row in rows)


def report(found: dict[str, dict[int, list[Row]]], cuts: list[int]) -> None:
    base = cuts[0]
    print("| N | objective 32/64/128K | in-play 32/64/128K | change vs", base, "(mean, se) |")
    for n in cuts:
        cells, changes = [], []
        for mode in (0, 1):
            means = [
                statistics.mean(_mean(r[n], mode, b) for r in found.values()) for b in range(3)
            ]
            cells.append("/".join(f"{m:.3f}" for m in means))
            for b in range(3):
                d = [_mean(r[n], mode, b) - _mean(r[base], mode, b) for r in found.values()]
                se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else 0.0
                changes.append(f"{statistics.mean(d):+.4f}±{se:.4f}")
        print(f"| {n} | {cells[0]} | {cells[1]} | {' '.join(changes)} |")
    print("\nTasks won or lost against", base, "(objective 32/64/128; in play 32/64/128):")
    for name, rows in found.items():
        for n in cuts[1:]:
            tasks = [
                sum(a[mode][b] - z[mode][b] for a, z in zip(rows[n], rows[base], strict=True))
                for mode in (0, 1)
                for b in range(3)
            ]
            if any(abs(t) >= 0.5 for t in tasks):
                marks = " ".join(f"{t:+.1f}" for t in tasks)
                print(f"  {name} N={n}: {marks}{'  <- a whole task' if min(tasks) <= -1 else ''}")


def cost(git_dir: str, runs: int, cuts: list[int]) -> None:
    took: dict[int, list[tuple[float, float, float]]] = {n: [] for n in cuts}
    for run in range(runs):
        for n in cuts if run % 2 == 0 else cuts[::-1]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            argv = ["git", "--git-dir", git_dir, *_changed_paths_args("HEAD", n)]
            out = subprocess.run(argv, capture_output=True, check=True).stdout
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            start = time.process_time()
            _parse(out)
            took[n].append((wall, cpu, time.process_time() - start))
    for n in cuts:
        wall, cpu, parse = (statistics.median(t[k] for t in took[n]) * 1000 for k in range(3))
        print(f"{git_dir} N={n}: git wall {wall:.0f} ms, CPU {cpu:.0f} ms; parse {parse:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("replay", "cost"))
    parser.add_argument("git_dirs", nargs="*", help="cost: the repositories' git directories")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/replay"))
    parser.add_argument("--repos", default="tmux,fmt,libuv")
    parser.add_argument("--cuts", default="5000,3000,2000,1000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--exact", action="store_true", help="cut as git would (see above)")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_intermixed_args()
    cuts = [int(n) for n in args.cuts.split(",")]
    if args.what == "cost":
        for git_dir in args.git_dirs:
            cost(git_dir, args.runs, cuts)
        return
    import __main__

    __main__.Replay = replay.Replay  # type: ignore[attr-defined]  # (dumps run as a script)
    found = {}
    for name in args.repos.split(","):
        cases = pickle.loads((args.cache / f"{name}.pickle").read_bytes())
        exact = partial(_as_git_cuts, name, args.mirror) if args.exact else _entries
        found[name] = replay_cuts(cases, cuts, exact)
        print(f"{name}: {len(cases)} cases", file=sys.stderr, flush=True)
    report(found, cuts)


if __name__ == "__main__":
    main()
