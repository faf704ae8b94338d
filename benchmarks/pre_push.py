"""How much the pre-push hook adds to `git push` (run: python benchmarks/pre_push.py).

Builds a throwaway repository with TASKS tasks (3 attachments each) and a bare
remote, installs the hook, and times pushes: a commit naming no task, a commit
naming one task, and a new branch of COMMITS commits naming every task — each
with the hook and with --no-verify. Prints the median of a few runs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASKS = int(os.environ.get("TASKS", "200"))
COMMITS = int(os.environ.get("COMMITS", "1000"))
RUNS = 3


def git(cwd: Path, *args: str, env: dict[str, str], input: bytes | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, input=input, capture_output=True, check=True
    )
    return proc.stdout.decode()


def timed_push(repo: Path, env: dict[str, str], branch: str, *extra: str) -> float:
    start = time.perf_counter()
    git(repo, "push", "-q", *extra, "origin", branch, env=env)
    return time.perf_counter() - start


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from git_hydrate import Ledger

    with tempfile.TemporaryDirectory(prefix="hydrate-bench-") as tmp:
        base = Path(tmp)
        bin_dir = base / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "git-hydrate"
        wrapper.write_text(
            f"#!/bin/sh\nPYTHONPATH='{ROOT}' exec '{sys.executable}' -m git_hydrate \"$@\"\n"
        )
        wrapper.chmod(0o755)
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        repo, remote = base / "repo", base / "remote.git"
        git(base, "init", "-q", "-b", "main", str(repo), env=env)
        git(base, "init", "-q", "--bare", str(remote), env=env)
        git(repo, "commit", "-q", "--allow-empty", "-m", "init", env=env)
        git(repo, "remote", "add", "origin", str(remote), env=env)
        git(repo, "push", "-q", "origin", "main", env=env)
        with Ledger(repo) as ledger:
            for i in range(TASKS):
                ledger.add_task(f"B-{i}", objective=f"objective {i}", acceptance="ok")
                for j in range(3):
                    ledger.add_context(f"B-{i}", f"context {i} {j} " * 50, f"src{j}", j)
        git(repo, "hydrate", "hooks", "install", env=env)

        results: dict[str, list[float]] = {}
        for run in range(RUNS):
            for label, message in (("no task", "plain change"), ("one task", "Fix B-7")):
                for verify in ("hook", "no-verify"):
                    git(repo, "commit", "-q", "--allow-empty", "-m", f"{message} {run}", env=env)
                    extra = ("--no-verify",) if verify == "no-verify" else ()
                    seconds = timed_push(repo, env, "main", *extra)
                    results.setdefault(f"{label}, {verify}", []).append(seconds)
            parent = git(repo, "rev-parse", "main", env=env).strip()
            stream = []
            for n in range(COMMITS):
                text = f"Work on B-{n % TASKS}".encode()
                stream.append(
                    b"commit refs/heads/bulk-%d\ncommitter B <b@example.com> %d +0000\n"
                    b"data %d\n%s\n" % (run, 1_800_000_000 + n, len(text), text)
                )
                if n == 0:
                    stream.append(b"from %s\n" % parent.encode())
            git(repo, "fast-import", "--quiet", env=env, input=b"".join(stream))
            seconds = timed_push(repo, env, f"bulk-{run}")
            results.setdefault(f"{COMMITS} commits naming {TASKS} tasks, hook", []).append(seconds)

    print(f"median of {RUNS} pushes ({TASKS} tasks in the repository):")
    for label, values in results.items():
        print(f"  {label:40} {statistics.median(values) * 1000:8.0f} ms")


if __name__ == "__main__":
    main()
