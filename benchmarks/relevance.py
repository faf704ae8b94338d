"""Does ranking put the right files in the budget? Replayed on real history.

For each of the 30 most recent qualifying commits C of a repository (first
parent, one parent P, modifying 2-8 text files that existed in P, at most 8
paths in all): a task whose objective is C's message and whose one file in
play is C's most-changed file; ``add-tree --rev P`` through git-hydrate;
``pack`` under 32, 64 and 128 KiB of context (the mandatory packet plus the
budget); recall is the share of C's *other* changed files packed in full.
Beside git-hydrate's ranking, in the same run and through the same packer:
the order before ranking (flat priority, sha256), path order, co-change
alone, and a perfect ranker (C's own files first, smallest first) — the
ceiling. Nothing from C or later is used: the history the ranking read is
checked to hold ancestors of P only.

Usage::

    python benchmarks/relevance.py                   # click and flask (the goals)
    python benchmarks/relevance.py --repos click,flask,jinja,requests
    python benchmarks/relevance.py --cost            # ranking's share of add-tree time

Repositories are looked for as bare git directories in ``--mirror`` (default
``/work/.mirror/<owner>+<name>/repo``, where the session's fetch tool puts
them), else cloned from GitHub into ``benchmarks/.peers/``.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from git_hydrate import Ledger  # noqa: E402
from git_hydrate.context_expander import pack_packet  # noqa: E402
from git_hydrate.hydrate.history import read_history  # noqa: E402
from git_hydrate.hydrate.rank import Candidate, TaskText, Weights, rank  # noqa: E402

REPOS = {
    "click": ("pallets/click", "2c8cd3ac958a7eb316d67f2d316c27086c4c0369"),
    "flask": ("pallets/flask", "2ac89889f4cc330eabd50f295dcef02828522c69"),
    "jinja": ("pallets/jinja", None),
    "requests": ("psf/requests", None),
}
BUDGETS = (32 * 1024, 64 * 1024, 128 * 1024)
TASKS = 30
GOALS = {32 * 1024: 0.28, 64 * 1024: 0.50, 128 * 1024: 0.65}


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "-c", "core.quotePath=false", *args],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")


def locate(name: str, mirror: Path) -> str:
    slug, _pinned = REPOS[name]
    local = mirror / slug.replace("/", "+") / "repo"
    if local.is_dir():
        return str(local)
    peers = ROOT / "benchmarks" / ".peers" / f"{slug.replace('/', '+')}.git"
    if not peers.is_dir():
        subprocess.run(
            ["git", "clone", "-q", "--bare", f"https://github.com/{slug}", str(peers)],
            check=True,
        )
    return str(peers)


@dataclass
class Case:
    commit: str
    parent: str
    message: str
    in_play: str
    others: list[str]


def qualifying(git_dir: str, tip: str) -> list[Case]:
    """The most recent first-parent commits that modify 2-8 existing text files."""
    cases: list[Case] = []
    for line in git(git_dir, "rev-list", "--first-parent", "--parents", tip).splitlines():
        ids = line.split()
        if len(ids) != 2:
            continue
        commit, parent = ids
        status = git(git_dir, "diff-tree", "--no-commit-id", "-r", "--name-status", commit)
        rows = [row.split("\t") for row in status.splitlines() if row]
        if not 2 <= len(rows) <= 8 or any(row[0] != "M" for row in rows):
            continue
        numstat = git(git_dir, "diff-tree", "--no-commit-id", "-r", "--numstat", commit)
        changed: dict[str, int] = {}
        for row in numstat.splitlines():
            added, deleted, path = row.split("\t")
            if added != "-":  # text, as git sees it
                changed[path] = int(added) + int(deleted)
        if len(changed) < 2:
            continue
        in_play = sorted(changed, key=lambda p: (-changed[p], p))[0]
        message = git(git_dir, "log", "-1", "--format=%B", commit).strip()
        cases.append(Case(commit, parent, message, in_play, sorted(set(changed) - {in_play})))
        if len(cases) == TASKS:
            break
    return cases


def hydrate_case(
    workdir: str, case: Case, index: int
) -> tuple[dict[str, Any], list[dict[str, Any]], float]:
    """task-add + add-tree --rev P through git-hydrate; the task, its entries with
    bodies, and the add-tree time."""
    task_id = f"BENCH-{index}"
    with Ledger(workdir, clock=lambda: 1_700_000_000.0) as ledger:
        ledger.add_task(
            task_id, objective=case.message or "change", acceptance="-", files=[case.in_play]
        )
        start = time.perf_counter()
        ledger.add_tree(task_id, rev=case.parent)
        took = time.perf_counter() - start
        history = read_history(ledger.repo, case.parent)
        ancestors = set(git(workdir, "rev-list", case.parent).split())
        assert case.commit not in history.commits, "the history reached the commit itself"
        assert set(history.commits) <= ancestors, "the history reached past the parent"
        task = dict(ledger.get_task(task_id))
        entries = []
        for entry in ledger.context_entries(task_id):
            full = dict(entry)
            full["body"] = ledger.read_body(task_id, entry["hash"])
            entries.append(full)
    return task, entries, took


Order = Callable[[Case, list[dict[str, Any]], list[list[str]]], list[dict[str, Any]]]


def with_priorities(entries: list[dict[str, Any]], ranked: list[str]) -> list[dict[str, Any]]:
    place = {source: len(ranked) - i for i, source in enumerate(ranked)}
    return [{**e, "priority": place.get(e["source"], 0)} for e in entries]


def order_hydrate(case: Case, entries: list[dict[str, Any]], history: Any) -> list[dict[str, Any]]:
    return entries  # the priorities git-hydrate stored


def order_hash(case: Case, entries: list[dict[str, Any]], history: Any) -> list[dict[str, Any]]:
    return [{**e, "priority": 0} for e in entries]


def order_path(case: Case, entries: list[dict[str, Any]], history: Any) -> list[dict[str, Any]]:
    return with_priorities(entries, sorted(e["source"] for e in entries))


def order_cochange(
    case: Case, entries: list[dict[str, Any]], history: Any
) -> list[dict[str, Any]]:
    only = Weights(test_pair=0, lexical=0, directory=0, size_exponent=0)
    candidates = [Candidate(e["source"], e["size"]) for e in entries]
    found = rank(candidates, TaskText("", files_in_play=[case.in_play]), history, only)
    ranked = sorted(found, key=lambda p: (-found[p].score if p != case.in_play else -2, p))
    return with_priorities(entries, ranked)


def order_perfect(case: Case, entries: list[dict[str, Any]], history: Any) -> list[dict[str, Any]]:
    size = {e["source"]: e["size"] for e in entries}
    wanted = sorted((p for p in case.others if p in size), key=lambda p: (size[p], p))
    return with_priorities(entries, [*wanted, case.in_play])


METHODS: dict[str, Order] = {
    "git-hydrate": order_hydrate,
    "before ranking": order_hash,
    "path order": order_path,
    "co-change alone": order_cochange,
    "perfect": order_perfect,
}


def recall(task: dict[str, Any], entries: list[dict[str, Any]], case: Case, budget: int) -> float:
    base = pack_packet(task, [], 10**9, now=1_700_000_000)["packet_bytes"]
    packed = pack_packet(task, entries, base + budget, now=1_700_000_000)
    kept = {item["source"] for item in packed["packet"]["context"]}
    return sum(1 for p in case.others if p in kept) / len(case.others)


def measure(name: str, mirror: Path) -> tuple[dict[str, list[float]], str]:
    source = locate(name, mirror)
    pinned = REPOS[name][1]
    tip = pinned or git(source, "rev-parse", "HEAD").strip()
    with tempfile.TemporaryDirectory(prefix=f"relevance-{name}-") as scratch:
        workdir = os.path.join(scratch, "repo.git")
        subprocess.run(["git", "clone", "-q", "--bare", "--shared", source, workdir], check=True)
        cases = qualifying(workdir, tip)
        scores: dict[str, list[list[float]]] = {m: [] for m in METHODS}
        times = []
        for index, case in enumerate(cases):
            task, entries, took = hydrate_case(workdir, case, index)
            times.append(took)
            with Ledger(workdir) as ledger:
                history = read_history(ledger.repo, case.parent).paths
            for method, order in METHODS.items():
                ordered = order(case, entries, history)
                scores[method].append([recall(task, ordered, case, b) for b in BUDGETS])
        means = {
            m: [statistics.mean(row[i] for row in rows) for i in range(len(BUDGETS))]
            for m, rows in scores.items()
        }
        with Ledger(workdir) as ledger:
            first = attached = 0
            for index, case in enumerate(cases):
                result = ledger.pack(f"BENCH-{index}", max_bytes=10**9)
                sources = [c["source"] for c in result["packet"]["context"]]
                attached += case.in_play in sources
                first += sources[:1] == [case.in_play]
        info = (
            f"{name}: tip {tip[:12]}, {len(cases)} commits, oldest {cases[-1].commit[:12]}, "
            f"add-tree median {statistics.median(times) * 1000:.0f} ms, "
            f"file in play packed first {first} of the {attached} tasks that could attach it "
            f"({len(cases) - attached} others: a file add-tree skips, such as a lockfile)"
        )
    return means, info


def cost(mirror: Path, runs: int) -> None:
    """Ranking's share of add-tree: a ~2,000-file tree on flask's real history."""
    source = locate("flask", mirror)
    with tempfile.TemporaryDirectory(prefix="relevance-cost-") as scratch:
        work = os.path.join(scratch, "w")
        subprocess.run(["git", "clone", "-q", "--shared", source, work], check=True)
        subprocess.run(["git", "-C", work, "checkout", "-q", REPOS["flask"][1]], check=True)
        tracked = git(os.path.join(work, ".git"), "ls-files").split()
        for copy in range(10):
            for path in tracked:
                target = Path(work, f"copy{copy}", path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(Path(work, path).read_bytes())
        subprocess.run(["git", "-C", work, "add", "-A"], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                work,
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-q",
                "-m",
                "copies",
            ],
            check=True,
        )
        files = len(git(os.path.join(work, ".git"), "ls-files").split())
        commits = int(git(os.path.join(work, ".git"), "rev-list", "--count", "HEAD").strip())
        py = sys.executable
        env = {**os.environ, "PYTHONPATH": str(ROOT)}

        def run(*args: str) -> tuple[float, float]:
            before = os.times()
            start = time.perf_counter()
            subprocess.run(
                [py, "-m", "git_hydrate", *args],
                cwd=work,
                env=env,
                capture_output=True,
                check=True,
            )
            after = os.times()
            cpu = (after.children_user - before.children_user) + (
                after.children_system - before.children_system
            )
            return time.perf_counter() - start, cpu

        run(
            "task-add",
            "COST-1",
            "--objective",
            "Fix url_for with blueprints",
            "--acceptance",
            "-",
            "--file-in-play",
            "src/flask/helpers.py",
        )
        run("add-tree", "COST-1", "--no-rank")  # fill the sha256 cache
        run("add-tree", "COST-1")  # fill the history cache
        walls: dict[str, list[float]] = {"ranked": [], "no-rank": []}
        cpus: dict[str, list[float]] = {"ranked": [], "no-rank": []}
        for i in range(runs):
            for label in ("ranked", "no-rank") if i % 2 == 0 else ("no-rank", "ranked"):
                # a fresh task each run, so add-tree attaches every file
                task_id = f"COST-{label}-{i}"
                run(
                    "task-add",
                    task_id,
                    "--objective",
                    "Fix url_for with blueprints",
                    "--acceptance",
                    "-",
                    "--file-in-play",
                    "src/flask/helpers.py",
                )
                extra = ("--no-rank",) if label == "no-rank" else ()
                wall, cpu = run("add-tree", task_id, *extra)
                walls[label].append(wall)
                cpus[label].append(cpu)
        r, n = statistics.median(walls["ranked"]), statistics.median(walls["no-rank"])
        rc, nc = statistics.median(cpus["ranked"]), statistics.median(cpus["no-rank"])
        print(f"cost: {files} files, {commits} commits of history, {runs} paired runs")
        print(f"  add-tree ranked  {r * 1000:7.1f} ms wall  {rc * 1000:7.1f} ms CPU")
        print(f"  add-tree no-rank {n * 1000:7.1f} ms wall  {nc * 1000:7.1f} ms CPU")
        print(
            f"  ranking's share: {(r - n) / r:.0%} of wall, {(rc - nc) / rc:.0%} of CPU "
            "(goal <= 25%, history cached)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default="click,flask")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cost", action="store_true", help="measure ranking's cost too")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    names = args.repos.split(",")
    per_repo: dict[str, dict[str, list[float]]] = {}
    for name in names:
        means, info = measure(name, args.mirror)
        per_repo[name] = means
        print(info, flush=True)
    header = "".join(f"{b // 1024:>8}K" for b in BUDGETS)
    for name, means in per_repo.items():
        print(f"\n{name:<18}{header}")
        for method, values in means.items():
            print(f"{method:<18}" + "".join(f"{v:9.3f}" for v in values))
    primary = [n for n in names if n in ("click", "flask")] or names
    print(f"\nmean of {', '.join(primary):<10}{header}")
    for method in METHODS:
        values = [statistics.mean(per_repo[n][method][i] for n in primary) for i in range(3)]
        print(f"{method:<18}" + "".join(f"{v:9.3f}" for v in values))
    ours = [statistics.mean(per_repo[n]["git-hydrate"][i] for n in primary) for i in range(3)]
    for i, budget in enumerate(BUDGETS):
        goal = GOALS[budget]
        print(
            f"goal recall@{budget // 1024}K >= {goal}: {ours[i]:.3f} "
            f"{'met' if ours[i] >= goal else 'NOT met'}"
        )
    for name in names:
        gap = per_repo[name]["git-hydrate"][1] - per_repo[name]["co-change alone"][1]
        print(
            f"{name}: git-hydrate - co-change alone at 64K = {gap:+.3f} "
            f"({'met' if gap >= -0.05 else 'NOT met'}: no more than 0.05 below)"
        )
    if args.cost:
        cost(args.mirror, args.runs)


if __name__ == "__main__":
    main()
