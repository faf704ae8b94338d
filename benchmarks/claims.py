"""Claims through one remote: N contending workers against one, in the same run.

    python benchmarks/claims.py [--tasks 48] [--workers 8] [--runs 3] [--url file|daemon]

A planner pushes TASKS open tasks to a bare remote. Each worker is a process in its
own clone that runs ``git hydrate claim --next --remote origin --json`` (a new process
per claim, as a script or an agent would) until it exits "no task is ready". Reported:
claims per second for WORKERS contending workers and for one worker alone (the
reference, on a fresh remote, alternating with the contended run), the refused pushes
(retries), and CPU seconds of the whole process tree beside wall time. Every run
checks that each task was claimed exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_WORKER = """
import json, subprocess, sys
path, name, out = sys.argv[1:]
claimed = []
while True:
    proc = subprocess.run(
        [sys.executable, "-m", "git_hydrate", "claim", "--next", "--remote", "origin",
         "--as", name, "--another", "--json"],
        cwd=path, capture_output=True, text=True,
    )
    if proc.returncode != 0:
        if "no task is ready" in proc.stderr:
            break
        sys.exit(proc.stderr)
    result = json.loads(proc.stdout)
    claimed.append([result["task_id"], result["attempts"]])
with open(out, "w") as fh:
    json.dump(claimed, fh)
"""


def git(*args: str, cwd: str | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def start_daemon(base: str) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
         "--export-all", "--enable=receive-pack", f"--base-path={base}", base],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(100):
        url = f"git://127.0.0.1:{port}/remote.git"
        if subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0:
            return proc, port
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("git daemon did not start")


def one_run(tasks: int, workers: int, kind: str, env: dict[str, str]) -> dict[str, float]:
    scratch = tempfile.mkdtemp(prefix="hydrate-claims-")
    daemon = None
    try:
        bare = os.path.join(scratch, "remote.git")
        git("init", "-q", "--bare", bare)
        url = f"file://{bare}"
        if kind == "daemon":
            daemon, port = start_daemon(scratch)
            url = f"git://127.0.0.1:{port}/remote.git"
        planner = os.path.join(scratch, "planner")
        git("clone", "-q", url, planner)
        code = (
            "import sys\nfrom git_hydrate import Ledger, sync\n"
            "with Ledger(sys.argv[1]) as l:\n"
            f"    for n in range({tasks}):\n"
            "        l.add_task(f'T-{n:04d}', 'o', 'a', priority=1 + n % 3)\n"
            "    assert sync.push(l.refs).ok\n"
        )
        subprocess.run([sys.executable, "-c", code, planner], env=env, check=True)
        clones = []
        for w in range(workers):
            path = os.path.join(scratch, f"w{w}")
            git("clone", "-q", url, path)
            clones.append(path)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _WORKER, path, f"w{w}", f"{path}.json"], env=env
            )
            for w, path in enumerate(clones)
        ]
        for proc in procs:
            if proc.wait() != 0:
                raise SystemExit("a worker failed")
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        seen: list[str] = []
        pushes = 0
        for path in clones:
            for task_id, attempts in json.loads(Path(f"{path}.json").read_text()):
                seen.append(task_id)
                pushes += attempts
        if sorted(seen) != [f"T-{n:04d}" for n in range(tasks)]:
            raise SystemExit("a task was claimed twice or not at all")
        return {
            "wall": wall,
            "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "claims_per_s": tasks / wall,
            "refused": pushes - tasks,
        }
    finally:
        if daemon is not None:
            daemon.kill()
            daemon.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=48)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--url", choices=("file", "daemon"), default="file")
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key, value in (("NAME", "bench"), ("EMAIL", "bench@example.com")):
        env[f"GIT_AUTHOR_{key}"] = env[f"GIT_COMMITTER_{key}"] = value
    results: dict[str, list[dict[str, float]]] = {"contended": [], "alone": []}
    for run in range(options.runs):
        order = [("contended", options.workers), ("alone", 1)]
        for label, workers in order if run % 2 == 0 else order[::-1]:
            results[label].append(one_run(options.tasks, workers, options.url, env))
    print(
        f"{options.tasks} tasks, {options.url}, {options.runs} paired runs (medians); "
        f"{os.cpu_count()} cores"
    )
    for label, workers in (("contended", options.workers), ("alone", 1)):
        rows = results[label]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"{workers} worker(s): {med['claims_per_s']:.2f} claims/s, wall {med['wall']:.1f} s, "
            f"CPU {med['cpu']:.1f} s, refused pushes {med['refused']:.0f} "
            f"({med['refused'] / options.tasks:.2f} per claim)"
        )
    ratio = statistics.median(r["claims_per_s"] for r in results["contended"]) / statistics.median(
        r["claims_per_s"] for r in results["alone"]
    )
    print(f"contended / alone throughput: {ratio:.2f}x")


if __name__ == "__main__":
    main()
