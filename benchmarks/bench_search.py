"""Issue 31, search: `git hydrate search` on 10,000 tasks, warm, against `list --json`.

Usage (from the project root, the package installed)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_search.py [--tasks N] [--runs N]

The tasks are distinct commits written by ``git fast-import`` (bench_scaling's
way), each objective 30 words drawn from a 2,000-word vocabulary with a fixed
seed, so that every query term is in a few hundred tasks. After one warm-up
(which builds the index), ``search`` and the reference ``list --json`` (which
reads the same refs and its own summary cache) run as whole processes in
alternating order; medians of wall and CPU seconds (git's processes
included) are printed, with their ratio. Goal: search <= 0.3 s warm.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from pathlib import Path

from bench_scaling import HYDRATE, git, make_repo, run


def fill(repo: Path, count: int) -> None:
    """``count`` tasks with varied objectives, written by ``git fast-import``."""
    rng = random.Random(31)
    vocabulary = [f"w{i:04d}" for i in range(2000)] + ["retry", "header", "timeout", "cache"]
    links = b'{"format":1,"links":[]}\n'
    stream = bytearray(b"blob\nmark :1\ndata %d\n%s\n" % (len(links), links))
    for i in range(count):
        task_id = f"task-{i:05d}"
        objective = " ".join(rng.choice(vocabulary) for _ in range(30))
        task = {
            "format": 1,
            "id": task_id,
            "title": " ".join(objective.split()[:6]),
            "objective": objective,
            "acceptance": "it works",
            "acceptance_criteria": [],
            "scope": [],
            "kind": "code",
            "priority": 2,
            "token_budget": 0,
            "tags": [],
            "files": [],
            "tests": [],
            "status": "open",
            "checkpoints": [],
            "created_at": "2026-12-01T00:00:00Z",
        }
        data = json.dumps(task, separators=(",", ":")).encode() + b"\n"
        stream += b"commit refs/hydrate/tasks/%s\n" % task_id.encode()
        stream += b"committer Bench <bench@example.com> 1700000000 +0000\n"
        message = f"hydrate: task-add {task_id}\n".encode()
        stream += b"data %d\n%s\n" % (len(message), message)
        stream += b"M 100644 inline task.json\ndata %d\n%s\n" % (len(data), data)
        stream += b"M 100644 :1 links.json\n\n"
    git(["fast-import", "--quiet"], repo, bytes(stream))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        make_repo(repo)
        fill(repo, args.tasks)
        search = [*HYDRATE, "search", "retry", "header", "timeout"]
        listing = [*HYDRATE, "list", "--json"]
        cold = run(search, repo)
        run(listing, repo)
        hits = len(json.loads(run([*search, "--json"], repo)[2]))
        times: dict[str, list[tuple[float, float]]] = {"search": [], "list --json": []}
        for i in range(args.runs):
            order = [("search", search), ("list --json", listing)]
            for name, cmd in order if i % 2 == 0 else order[::-1]:
                wall, cpu, _out = run(cmd, repo)
                times[name].append((wall, cpu))
        print(f"{args.tasks} tasks; first search (builds the index) {cold[0]:.3f} s; {hits} hits")
        for name, samples in times.items():
            wall = statistics.median(w for w, _c in samples)
            cpu = statistics.median(c for _w, c in samples)
            print(f"{name:12s} median {wall:.3f} s wall, {cpu:.3f} s CPU")
        ratio = statistics.median(s[0] for s in times["search"]) / statistics.median(
            s[0] for s in times["list --json"]
        )
        print(f"search / list --json: {ratio:.2f}x (wall)")


if __name__ == "__main__":
    main()
