"""Issue 19, "linear everywhere": task-add at 10,000 tasks, bulk creation, pack at 100,000 links.

Usage (from the project root, the package installed)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_scaling.py
    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_scaling.py --only task-add --runs 15

Three goals, each measured as a ratio within one run:

* ``task-add`` as a whole process in a repository holding 10,000 tasks (loose
  refs, then the same refs packed by ``git pack-refs --all``) against the same
  command in an empty repository: paired runs in alternating order, medians
  of wall time and of CPU seconds (the process and the git processes it
  waited for). Goal: <= 1.2x. The 10,000 tasks are distinct task commits
  written by ``git fast-import`` (ids ``task-00000``...), so that setting up
  does not depend on the speed being measured.
* Bulk creation through the library: ``Ledger.add_task`` in a loop in this
  process, 1,000 tasks then 10,000 then 1,000 again, each in a fresh
  repository (wall and CPU seconds, git's processes included). Goal: the
  10,000 take <= 10x the median 1,000.
* ``pack`` of a 10,000-link and a 100,000-link task (bodies 100-500 bytes)
  as whole processes, near a full budget: the budget is 90 % of what the whole
  packet needs, so the walk ends with the budget nearly used up and many small
  bodies left; also at the default budget (131,072 bytes), which fills at
  once. Goal: the 100,000-link task's time per link <= 2x the 10,000-link one's.
  "net" subtracts the start-up of ``git-hydrate --version`` measured in the
  same rounds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
HYDRATE = [PY, "-m", "git_hydrate"]
BIG = str(10**9)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT)
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code, as an installed copy runs
    e.setdefault("GIT_AUTHOR_NAME", "Bench")
    e.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    e.setdefault("GIT_COMMITTER_NAME", "Bench")
    e.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    return e


def children_cpu() -> float:
    """CPU seconds of every reaped child process and its reaped descendants so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: Sequence[str], cwd: Path) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds (with the git processes it waited for), stdout."""
    before = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=env(), capture_output=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark command failed: {cmd}\n{proc.stderr.decode()}")
    return wall, children_cpu() - before, proc.stdout


def git(args: Sequence[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env(), input=stdin, capture_output=True, check=True
    )
    return proc.stdout


def make_repo(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env())


# -- task-add -------------------------------------------------------------------------


def fill_tasks_fast(repo: Path, count: int) -> None:
    """``count`` distinct tasks, ``task-00000``..., written by ``git fast-import``
    from one task made by git-hydrate (its task.json with the id replaced)."""
    subprocess.run(
        [*HYDRATE, "task-add", "template-0", "--objective", "o", "--acceptance", "a"],
        cwd=repo,
        env=env(),
        check=True,
        capture_output=True,
    )
    tip = git(["rev-parse", "refs/hydrate/tasks/template-0"], repo).strip().decode()
    task_json = git(["cat-file", "blob", f"{tip}:task.json"], repo)
    links_json = git(["cat-file", "blob", f"{tip}:links.json"], repo)
    git(["update-ref", "-d", "refs/hydrate/tasks/template-0"], repo)
    stream = bytearray()
    stream += b"blob\nmark :1\ndata %d\n%s\n" % (len(links_json), links_json)
    for i in range(count):
        task_id = f"task-{i:05d}"
        data = task_json.replace(b'"template-0"', json.dumps(task_id).encode())
        stream += b"commit refs/hydrate/tasks/%s\n" % task_id.encode()
        stream += b"committer Bench <bench@example.com> 1700000000 +0000\n"
        message = f"hydrate: task-add {task_id}\n".encode()
        stream += b"data %d\n%s\n" % (len(message), message)
        stream += b"M 100644 inline task.json\ndata %d\n%s\n" % (len(data), data)
        stream += b"M 100644 :1 links.json\n\n"
    git(["fast-import", "--quiet"], repo, bytes(stream))
    names = git(["for-each-ref", "--format=x", "refs/hydrate/tasks/"], repo).count(b"x")
    assert names == count, names


def bench_task_add(work: Path, runs: int, tasks: int) -> list[tuple[str, str, str, str]]:
    empty, loose, packed = work / "empty", work / "loose", work / "packed"
    for repo in (empty, loose):
        make_repo(repo)
    fill_tasks_fast(loose, tasks)
    shutil.copytree(loose, packed)
    git(["pack-refs", "--all"], packed)
    loose_left = packed / ".git/refs/hydrate/tasks"
    assert not loose_left.exists() or not os.listdir(loose_left)
    repos = {"empty": empty, "loose": loose, "packed": packed}
    counter = iter(range(10**6))

    def add(repo: Path, long: bool = False) -> tuple[float, float, bytes]:
        n = next(counter)
        task_id = f"new-{n:05d}" if not long else f"Bulk-Import-Of-Legacy-Records-{n:05d}"
        return run([*HYDRATE, "task-add", task_id, "--objective", "o", "--acceptance", "a"], repo)

    for repo in repos.values():  # warm up
        add(repo)
    walls: dict[str, list[float]] = {name: [] for name in [*repos, "loose, long id"]}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    for i in range(runs):
        order = list(repos) if i % 2 == 0 else list(reversed(repos))
        for name in order:
            wall, cpu, _ = add(repos[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
        wall, cpu, _ = add(loose, long=True)
        walls["loose, long id"].append(wall)
        cpus["loose, long id"].append(cpu)
    base_wall = statistics.median(walls["empty"])
    base_cpu = statistics.median(cpus["empty"])
    rows = []
    for name in walls:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        what = f"task-add, {tasks} tasks ({name})" if name != "empty" else "task-add, empty"
        ratio = f"{w / base_wall:.2f}x wall, {c / base_cpu:.2f}x CPU" if name != "empty" else ""
        goal = "<= 1.2x" if name in ("loose", "packed") else ("report" if name != "empty" else "")
        rows.append((what, f"{w * 1000:.0f} ms ({c * 1000:.0f} ms CPU)", ratio, goal))
    return rows


# -- bulk creation through the library -------------------------------------------------


def bulk(work: Path, count: int, tag: str) -> tuple[float, float, list[float]]:
    sys.path.insert(0, str(ROOT))
    from git_hydrate import Ledger

    repo = work / f"bulk-{tag}"
    make_repo(repo)
    saved = dict(os.environ)
    os.environ.update({k: v for k, v in env().items() if k.startswith("GIT_")})
    try:
        cpu0, children0, start = time.process_time(), children_cpu(), time.perf_counter()
        marks = [start]
        with Ledger(repo) as ledger:
            for i in range(count):
                ledger.add_task(f"L-{i}", objective=f"task {i}", acceptance="done")
                if (i + 1) % 1000 == 0:
                    marks.append(time.perf_counter())
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0 + children_cpu() - children0
    finally:
        os.environ.clear()
        os.environ.update(saved)
    shutil.rmtree(repo, ignore_errors=True)
    return wall, cpu, [b - a for a, b in itertools.pairwise(marks)]


def bench_bulk(work: Path, small: int, large: int) -> list[tuple[str, str, str, str]]:
    first = bulk(work, small, "small-1")
    big = bulk(work, large, "large")
    second = bulk(work, small, "small-2")
    wall = statistics.median([first[0], second[0]])
    cpu = statistics.median([first[1], second[1]])
    thousands = big[2]
    return [
        (
            f"library: {small} add_task (two runs)",
            f"{first[0]:.2f} s, {second[0]:.2f} s ({first[1]:.2f}, {second[1]:.2f} s CPU)",
            "",
            "",
        ),
        (
            f"library: {large} add_task",
            f"{big[0]:.2f} s ({big[1]:.2f} s CPU)",
            f"{big[0] / wall:.2f}x wall, {big[1] / cpu:.2f}x CPU",
            "<= 10x",
        ),
        (
            f"library: last 1000 of the {large} / first 1000",
            f"{thousands[-1]:.2f} s / {thousands[0]:.2f} s",
            f"{thousands[-1] / thousands[0]:.2f}x",
            "report (1x: flat)",
        ),
    ]


# -- pack --------------------------------------------------------------------------------


def body(i: int) -> str:
    size = 100 + (i * 37) % 400
    return (f"context body {i} " * (size // 16 + 1))[:size]


def bench_pack(work: Path, runs: int, sizes: Sequence[int]) -> list[tuple[str, str, str, str]]:
    sys.path.insert(0, str(ROOT))
    from git_hydrate import Ledger

    repo = work / "pack"
    make_repo(repo)
    for n in sizes:
        with Ledger(repo) as ledger:
            ledger.add_task(f"P-{n}", objective="pack", acceptance="packed")
            ledger.add_contexts(
                f"P-{n}", [(body(i), f"src/{i}.py", i % 7, None) for i in range(n)]
            )
    full = {}
    for n in sizes:
        _w, _c, out = run([*HYDRATE, "--compact", "pack", f"P-{n}", "--max-bytes", BIG], repo)
        full[n] = json.loads(out)["packet_bytes"]
    cases = {
        "start-up": [*HYDRATE, "--version"],
        **{
            f"{n} near full": [*HYDRATE, "pack", f"P-{n}", "--max-bytes", str(full[n] * 9 // 10)]
            for n in sizes
        },
        **{f"{n} default": [*HYDRATE, "pack", f"P-{n}"] for n in sizes},
    }
    for cmd in cases.values():
        run(cmd, repo)
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(runs):
        order = list(cases) if i % 2 == 0 else list(reversed(cases))
        for name in order:
            wall, cpu, _ = run(cases[name], repo)
            walls[name].append(wall)
            cpus[name].append(cpu)
    med = {name: statistics.median(v) for name, v in walls.items()}
    cmed = {name: statistics.median(v) for name, v in cpus.items()}
    small, large = sizes
    rows = [("start-up: git-hydrate --version", f"{med['start-up'] * 1000:.0f} ms", "", "")]
    for kind in ("near full", "default"):
        for n in sizes:
            name = f"{n} {kind}"
            budget = f"{full[n] * 9 // 10} bytes" if kind == "near full" else "131072 bytes"
            rows.append(
                (
                    f"pack, {n} links, budget {budget}",
                    f"{med[name] * 1000:.0f} ms ({cmed[name] * 1000:.0f} ms CPU)",
                    "",
                    "",
                )
            )
        a, b = med[f"{small} {kind}"], med[f"{large} {kind}"]
        ca, cb = cmed[f"{small} {kind}"], cmed[f"{large} {kind}"]
        s = med["start-up"]
        per = (b / large) / (a / small)
        per_cpu = (cb / large) / (ca / small)
        net = ((b - s) / large) / ((a - s) / small)
        rows.append(
            (
                f"pack {kind}: per link, {large} / {small}",
                "",
                f"{per:.2f}x wall, {per_cpu:.2f}x CPU, {net:.2f}x net",
                "<= 2x",
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="paired runs per measure")
    parser.add_argument("--only", choices=["task-add", "bulk", "pack"], action="append")
    parser.add_argument("--tasks", type=int, default=10000, help="tasks held for task-add")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    which = args.only or ["task-add", "bulk", "pack"]
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "git_hydrate")], check=True)
    work = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    rows: list[tuple[str, str, str, str]] = []
    load = os.getloadavg()[0]
    print(
        f"{sys.version.split()[0]}, {git(['--version'], work).decode().strip()}, "
        f"{os.cpu_count()} CPUs, load {load:.2f}, {args.runs} paired runs",
        flush=True,
    )
    try:
        if "task-add" in which:
            rows += bench_task_add(work, args.runs, args.tasks)
            for row in rows:
                print(" | ".join(row), flush=True)
        if "bulk" in which:
            rows += bench_bulk(work, 1000, 10000)
        if "pack" in which:
            rows += bench_pack(work, max(3, args.runs // 2), [10000, 100000])
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print("| measure | median | ratio | goal |")
    print("|---|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
