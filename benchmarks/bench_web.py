"""Issue 32: how fast `git hydrate web` answers on 10,000 tasks and a 30,000-attachment task.

Usage (from the project root)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_web.py [--tasks 10000]
        [--links 30000] [--runs 7] [--browser]

Everything is measured against a reference timed in the same run, in paired,
alternating rounds (medians; CPU seconds beside wall):

* **Start to first board**: a whole ``git hydrate web --port 0`` process, from
  its start to the answer of ``/api/board`` (the page's first data), against a
  whole ``git hydrate --compact list --json`` process on the same repository
  (whose summaries come from the same disk cache). The server's CPU is read
  from ``/proc`` before it is stopped.
* **Warm requests** to one running server, each against the same reference:
  the board, a page deep in a column, the dependency graph, the board just
  after a ref moved (the cards built again from the cache), and the task with
  30,000 attachments — its attachments page and its prompt at a budget that
  drops most of them — against ``git hydrate prompt ID --max-bytes N
  --no-cache`` as a whole process.
* ``--browser`` (Playwright and /usr/bin/chromium): the board's first paint of
  1,000 tasks in headless Chromium, from navigation to the cards on screen.

The 10,000 tasks are written by ``git fast-import`` from one task made by
git-hydrate (stations, kinds, tags, holders and dependencies varied), so that
setting up does not depend on what is measured.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
HYDRATE = [PY, "-m", "git_hydrate"]
STATIONS = ("open", "open", "open", "in_progress", "blocked", "review", "done", "cancelled")
KINDS = ("code", "fix", "closure", "planning", "product")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT)
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("AUTHOR", "COMMITTER"):
        e.setdefault(f"GIT_{key}_NAME", "Bench")
        e.setdefault(f"GIT_{key}_EMAIL", "bench@example.com")
    return e


def git(args: Sequence[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env(), input=stdin, capture_output=True, check=True
    )
    return proc.stdout


def children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: Sequence[str], cwd: Path) -> tuple[float, float]:
    before = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=env(), capture_output=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark command failed: {cmd}\n{proc.stderr.decode()}")
    return wall, children_cpu() - before


def fill_tasks(repo: Path, count: int) -> None:
    """``count`` tasks ``T-00000``..., varied, written by ``git fast-import``."""
    sys.path.insert(0, str(ROOT))
    from git_hydrate.codec import decode_task, encode

    subprocess.run(
        [*HYDRATE, "task-add", "template-0", "--objective", "o", "--acceptance", "a"],
        cwd=repo, env=env(), check=True, capture_output=True,
    )  # fmt: skip
    tip = git(["rev-parse", "refs/hydrate/tasks/template-0"], repo).strip().decode()
    template = decode_task(git(["cat-file", "blob", f"{tip}:task.json"], repo), "template")
    links_json = git(["cat-file", "blob", f"{tip}:links.json"], repo)
    git(["update-ref", "-d", "refs/hydrate/tasks/template-0"], repo)
    import msgspec

    stream = bytearray(b"blob\nmark :1\ndata %d\n%s\n" % (len(links_json), links_json))
    for i in range(count):
        task_id = f"T-{i:05d}"
        station = STATIONS[i % len(STATIONS)]
        held = station in ("in_progress", "review")
        deps = [f"T-{i - 1 - (i % 7):05d}"] if i % 5 == 0 and i > 7 else []
        task = msgspec.structs.replace(
            template,
            id=task_id,
            title=f"Task {i}: make part {i % 97} of the parser <faster>",
            status=station,
            kind=KINDS[i % len(KINDS)],
            priority=1 + i % 3,
            tags=[f"area-{i % 13}", *(["web"] if i % 4 == 0 else [])],
            depends_on=deps,
            assignee=f"worker-{i % 20} <w{i % 20}@example.com>" if held else "",
            claimed_at="2026-12-01T10:00:00Z" if held else "",
        )
        data = encode(task)
        stream += b"commit refs/hydrate/tasks/%s\n" % task_id.encode()
        stream += b"committer Bench <bench@example.com> 1700000000 +0000\n"
        message = f"hydrate: task-add {task_id}\n".encode()
        stream += b"data %d\n%s\n" % (len(message), message)
        stream += b"M 100644 inline task.json\ndata %d\n%s\n" % (len(data), data)
        stream += b"M 100644 :1 links.json\n\n"
    git(["fast-import", "--quiet"], repo, bytes(stream))


def body(i: int) -> str:
    size = 100 + (i * 37) % 400
    return (f"context body {i} " * (size // 16 + 1))[:size]


def big_task(repo: Path, links: int) -> None:
    from git_hydrate import Ledger

    with Ledger(repo) as ledger:
        ledger.add_task("BIG-1", objective="pack a big task", acceptance="packed")
        ledger.add_contexts("BIG-1", [(body(i), f"src/{i}.py", i % 7, None) for i in range(links)])


class Server:
    """A ``git hydrate web --port 0`` process and the time it took to answer."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            [*HYDRATE, "web", "--port", "0"],
            cwd=repo, env=env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not found:
            raise SystemExit(f"web did not start: {line}")
        self.port = int(found.group(1))

    def get(self, path: str) -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            data = response.read()
            if response.status != 200:
                raise SystemExit(f"{path}: {response.status} {data[:200]!r}")
            return data
        finally:
            conn.close()

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()  # the process this benchmark started, by its id
        self.proc.wait(timeout=30)


def first_board(repo: Path) -> tuple[float, float]:
    start = time.perf_counter()
    server = Server(repo)
    server.get("/")
    server.get("/static/common.js")
    server.get("/static/board.js")
    server.get("/api/board?limit=50")
    wall = time.perf_counter() - start
    cpu = server.cpu()
    server.stop()
    return wall, cpu


def paired(
    cases: dict[str, Callable[[], tuple[float, float]]], runs: int
) -> dict[str, tuple[float, float]]:
    for case in cases.values():
        case()  # warm-up
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(runs):
        for name in list(cases) if i % 2 == 0 else list(reversed(cases)):
            wall, cpu = cases[name]()
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {n: (statistics.median(walls[n]), statistics.median(cpus[n])) for n in cases}


def timed(server: Server, path: str) -> Callable[[], tuple[float, float]]:
    def case() -> tuple[float, float]:
        before = server.cpu()
        start = time.perf_counter()
        server.get(path)
        return time.perf_counter() - start, server.cpu() - before

    return case


def warmed(server: Server, path: str) -> Callable[[], tuple[float, float]]:
    """``path`` timed right after one untimed request for it (the page's packing memory)."""

    def case() -> tuple[float, float]:
        server.get(path)
        return timed(server, path)()

    return case


def row(name: str, value: tuple[float, float], ref: tuple[float, float] | None) -> str:
    text = f"| {name} | {value[0] * 1000:.1f} ms ({value[1] * 1000:.0f} ms CPU) |"
    return text + (f" {value[0] / ref[0]:.2f}x |" if ref else " reference |")


def browser_paint(repo: Path, runs: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    server = Server(repo)
    times = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page()
            for _ in range(runs + 1):
                start = time.perf_counter()
                page.goto(f"http://127.0.0.1:{server.port}/")
                page.wait_for_selector("body[data-loaded] .card")
                times.append(time.perf_counter() - start)
            browser.close()
    finally:
        server.stop()
    return times[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--links", type=int, default=30000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--browser", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env())
        git(["commit", "-q", "--allow-empty", "-m", "initial"], repo)
        setup = time.perf_counter()
        fill_tasks(repo, args.tasks)
        big_task(repo, args.links)
        print(f"set up {args.tasks} tasks and a {args.links}-attachment task "
              f"in {time.perf_counter() - setup:.1f} s")  # fmt: skip
        reference = [*HYDRATE, "--compact", "list", "--json"]
        print("\n| whole process | median | vs list --json |\n|---|---|---|")
        cold = paired(
            {"list": lambda: run(reference, repo), "web": lambda: first_board(repo)}, args.runs
        )
        print(row(f"git hydrate list --json ({args.tasks} tasks)", cold["list"], None))
        print(row("git hydrate web: start to first board answer", cold["web"], cold["list"]))

        server = Server(repo)
        try:
            server.get("/api/board")
            probe = json.loads(server.get("/api/task/BIG-1/attachments?limit=1"))
            budget = probe["packing"]["needed_bytes"] // 10
            moved = iter(range(10**6))

            def after_a_move() -> tuple[float, float]:
                git(
                    [
                        "update-ref",
                        f"refs/hydrate/tasks/MOVE-{next(moved)}",
                        "refs/hydrate/tasks/T-00000",
                    ],
                    repo,
                )
                return timed(server, "/api/board?limit=50")()

            cases = {
                "list": lambda: run(reference, repo),
                "board": timed(server, "/api/board?limit=50"),
                "deep page": timed(server, "/api/tasks?station=open&offset=3000&limit=100"),
                "graph": timed(server, "/api/graph"),
                "version": timed(server, "/api/version"),
            }
            warm = paired(cases, args.runs)
            # apart: for two seconds after a write, every request reads the refs again
            warm.update(
                paired({"list": lambda: run(reference, repo), "moved": after_a_move}, args.runs)
            )
            print("\n| warm server, one request | median | vs list --json |\n|---|---|---|")
            print(row("git hydrate list --json (whole process)", warm["list"], None))
            for name in ("board", "deep page", "graph", "version"):
                print(row(f"GET {name}", warm[name], warm["list"]))
            print(
                row("GET board after a ref moved (cards built again)", warm["moved"], warm["list"])
            )

            prompt_cmd = [*HYDRATE, "prompt", "BIG-1", "--max-bytes", str(budget), "--no-cache"]
            n = [0]

            def at_budget(path: str) -> Callable[[], tuple[float, float]]:
                def case() -> tuple[float, float]:
                    n[0] += 1  # a new budget each time: never the page's 10-second memory
                    return timed(server, f"{path}?max_bytes={budget + n[0]}&limit=100")()

                return case

            packed = paired(
                {
                    "prompt": lambda: run(prompt_cmd, repo),
                    "attachments": at_budget("/api/task/BIG-1/attachments"),
                    "prompt page": at_budget("/api/task/BIG-1/prompt"),
                    "next page, same budget": warmed(
                        server,
                        f"/api/task/BIG-1/attachments?max_bytes={budget}&offset=20000&limit=100",
                    ),
                },
                args.runs,
            )
            title = f"{args.links} attachments, budget {budget} bytes"
            print(f"\n| {title} | median | vs prompt --no-cache |")
            print("|---|---|---|")
            print(row("git hydrate prompt --no-cache (whole process)", packed["prompt"], None))
            print(
                row(
                    "GET attachments page at a new budget (packs)",
                    packed["attachments"],
                    packed["prompt"],
                )
            )
            print(
                row("GET prompt at a new budget (packs)", packed["prompt page"], packed["prompt"])
            )
            print(
                row(
                    "GET another attachments page, same budget",
                    packed["next page, same budget"],
                    packed["prompt"],
                )
            )
        finally:
            server.stop()
        if args.browser:
            small = Path(tmp) / "small"
            subprocess.run(["git", "init", "-q", str(small)], check=True, env=env())
            fill_tasks(small, 1000)
            times = browser_paint(small, args.runs)
            low, high = min(times) * 1000, max(times) * 1000
            print(
                "\nheadless Chromium, board of 1,000 tasks, navigation to cards shown: "
                f"median {statistics.median(times) * 1000:.0f} ms "
                f"(min {low:.0f}, max {high:.0f}; goal <= 1 s)"
            )


if __name__ == "__main__":
    main()
