"""git-hydrate's benchmark suite: whole processes, medians, ratios against references.

Run from the project root with the package installed::

    python benchmarks/run.py            # the standard sizes, plus the add-tree and
                                        # sync scripts (several minutes)
    python benchmarks/run.py --quick    # smaller sizes, fewer repeats
    python benchmarks/run.py --write-results   # also rewrite benchmarks/RESULTS.md

Every figure is the median of several runs of a whole process after a warm-up,
interleaved with its reference so that machine noise hits both alike; the
ratios are what to read, not the absolute times.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
HYDRATE = [PY, "-m", "git_hydrate"]
FLOOR = [PY, "-c", "import dulwich.repo, msgspec, click"]
BIG = str(10**9)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT)
    # Measure what an installed copy does: modules loaded from byte code, not
    # compiled from source on every start (pip compiles them at install time).
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    e.setdefault("GIT_AUTHOR_NAME", "Bench")
    e.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    e.setdefault("GIT_COMMITTER_NAME", "Bench")
    e.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    return e


def run(cmd: Sequence[str], cwd: Path, stdin: bytes | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        list(cmd), cwd=cwd, env=env(), input=stdin, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark command failed: {cmd}\n{proc.stderr.decode()}")
    return elapsed


def medians(cmds: dict[str, Sequence[str]], cwd: Path, repeat: int) -> dict[str, float]:
    """Interleaved runs (after one warm-up each); the median of each in seconds."""
    for cmd in cmds.values():
        run(cmd, cwd)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            times[name].append(run(cmd, cwd))
    return {name: statistics.median(values) for name, values in times.items()}


def peak_rss_mib(cmd: Sequence[str], cwd: Path) -> float:
    proc = subprocess.Popen(
        list(cmd), cwd=cwd, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"benchmark command failed: {cmd}")
    return usage.ru_maxrss / 1024  # kilobytes on Linux


def peer_files_to_prompt() -> str:
    """files-to-prompt (PyPI), the fastest packer we measured, in its own venv."""
    found = shutil.which("files-to-prompt")
    if found:
        return found
    peers = HERE / ".peers"
    exe = peers / "bin" / "files-to-prompt"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(peers)], check=True)
        subprocess.run(
            [str(peers / "bin" / "pip"), "install", "-q", "files-to-prompt"], check=True
        )
    return str(exe)


def make_repo(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env())


def body(i: int, size: int) -> str:
    return (f"context body {i} " * (size // 16 + 1))[:size]


def fill_tasks(repo: Path, sizes: Sequence[int], body_bytes: int) -> None:
    sys.path.insert(0, str(ROOT))
    from git_hydrate import Ledger

    with Ledger(repo) as ledger:
        for n in sizes:
            task_id = f"T-{n}"
            ledger.add_task(task_id, objective="Benchmark packing", acceptance="all packed")
            ledger.add_contexts(
                task_id, [(body(i, body_bytes), f"src/{i}", i % 7, None) for i in range(n)]
            )


def fill_many_tasks(repo: Path, count: int) -> None:
    sys.path.insert(0, str(ROOT))
    from git_hydrate import Ledger

    with Ledger(repo) as ledger:
        for i in range(count):
            ledger.add_task(f"L-{i}", objective=f"task {i}", acceptance="done")


class Report:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, what: str, figure: str, ratio: str = "", goal: str = "") -> None:
        self.rows.append((what, figure, ratio, goal))
        print(f"{what:<58} {figure:>12} {ratio:>10} {goal}", flush=True)

    def markdown(self) -> str:
        lines = ["| measure | median | ratio | goal |", "|---|---:|---:|---|"]
        lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in self.rows]
        return "\n".join(lines)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--write-results", action="store_true", help="rewrite RESULTS.md")
    args = parser.parse_args()
    repeat = 5 if args.quick else 9
    scale = [100, 1000] if args.quick else [100, 1000, 10000]
    report = Report()
    subprocess.run(
        [PY, "-m", "compileall", "-q", str(ROOT / "git_hydrate")], check=True, env=env()
    )
    work = Path(tempfile.mkdtemp(prefix="hydrate-bench-"))
    try:
        repo = work / "repo"
        make_repo(repo)
        fill_tasks(repo, scale, 200)

        # 1. start-up
        m = medians(
            {
                "floor": FLOOR,
                "help": [*HYDRATE, "-h"],
                "version": [*HYDRATE, "--version"],
            },
            repo,
            repeat,
        )
        report.add("floor: python -c 'import dulwich.repo, msgspec, click'", ms(m["floor"]))
        report.add("git-hydrate -h", ms(m["help"]), f"{m['help'] / m['floor']:.2f}x", "<= 1.0x")
        report.add(
            "git-hydrate --version",
            ms(m["version"]),
            f"{m['version'] / m['floor']:.2f}x",
            "<= 1.0x",
        )

        # 2. small commands on a 100-attachment task, and the SQLite reference
        db = work / "ledger.sqlite"
        subprocess.run(
            [PY, str(HERE / "sqlite_ledger.py"), "load", str(db), "T-100", "100", "200"],
            check=True,
        )
        counter = iter(range(10**6))
        m = medians(
            {
                "floor": FLOOR,
                "pack": [*HYDRATE, "pack", "T-100", "--max-bytes", BIG],
                "prompt": [*HYDRATE, "prompt", "T-100", "--max-bytes", BIG],
                "sqlite": [PY, str(HERE / "sqlite_ledger.py"), "pack", str(db), "T-100", BIG],
            },
            repo,
            repeat,
        )
        adds = []
        for _ in range(repeat):
            text = f"bench body {next(counter)}"
            adds.append(run([*HYDRATE, "context-add", "T-100", "--text", text], repo))
        add = statistics.median(adds)
        for name in ("pack", "prompt"):
            report.add(
                f"{name} (100 attachments)",
                ms(m[name]),
                f"{m[name] / m['floor']:.2f}x",
                "<= 1.3x floor",
            )
        report.add(
            "context-add (100-attachment task)",
            ms(add),
            f"{add / m['floor']:.2f}x",
            "<= 1.3x floor",
        )
        report.add("SQLite ledger pack (100 attachments)", ms(m["sqlite"]))
        report.add("pack / SQLite ledger pack", "", f"{m['pack'] / m['sqlite']:.2f}x", "<= 3x")

        # 3. scaling of pack and expand
        cmds = {}
        for n in scale:
            cmds[f"pack {n}"] = [*HYDRATE, "pack", f"T-{n}", "--max-bytes", BIG]
            cmds[f"expand {n}"] = [*HYDRATE, "expand", f"T-{n}", "--max-bytes", BIG]
        m = medians(cmds, repo, max(3, repeat // 2))
        for name, value in m.items():
            report.add(f"{name} attachments", ms(value))
        if 10000 in scale:
            for verb in ("pack", "expand"):
                ratio = m[f"{verb} 10000"] / m[f"{verb} 1000"]
                report.add(f"{verb} 10k / 1k", "", f"{ratio:.2f}x", "<= 12x")
            # one write to a task with 10,000 attachments
            writes = []
            for i in range(max(3, repeat // 2)):
                writes.append(run([*HYDRATE, "add", "T-10000", "--text", f"one more {i}"], repo))
            report.add(
                "context-add to a 10k-attachment task",
                ms(statistics.median(writes)),
                f"{statistics.median(writes) / add:.2f}x",
                "~1x of a 100-attachment task",
            )

        # 4. list over many tasks, loose refs and packed refs
        for count in [100, 1000] if args.quick else [100, 1000, 5000]:
            many = work / f"many-{count}"
            make_repo(many)
            fill_many_tasks(many, count)
            cache = many / ".git" / "hydrate" / "list-cache"
            cold = []
            for _ in range(3):
                cache.unlink(missing_ok=True)
                cold.append(run([*HYDRATE, "list", "--json"], many))
            cmds = {
                "list": [*HYDRATE, "list", "--json"],
                "status": [*HYDRATE, "status", "--json"],
            }
            loose = medians(cmds, many, max(3, repeat // 3))
            subprocess.run(["git", "pack-refs", "--all", "--prune"], cwd=many, check=True)
            packed = medians(cmds, many, max(3, repeat // 3))
            report.add(f"list {count} tasks (loose refs, no cache)", ms(statistics.median(cold)))
            report.add(f"list {count} tasks (loose refs)", ms(loose["list"]))
            report.add(f"list {count} tasks (packed refs)", ms(packed["list"]))
            report.add(f"status {count} tasks (loose refs)", ms(loose["status"]))
            report.add(f"status {count} tasks (packed refs)", ms(packed["status"]))

        # 5. bulk writes against git fast-import
        n = 10000 if not args.quick else 2000
        script = work / "bulk.py"
        script.write_text(
            "import sys\n"
            "from git_hydrate import Ledger\n"
            f"with Ledger('.') as led:\n"
            "    led.add_task('B-1', objective='bulk', acceptance='bulk')\n"
            f"    led.add_contexts('B-1', [(('context body %d ' % i) * 12, 'src/%d' % i, 0, None)"
            f" for i in range({n})])\n"
        )
        stream = bytearray()
        for i in range(n):
            data = (f"context body {i} " * 12).encode()
            stream += b"blob\nmark :%d\ndata %d\n%s\n" % (i + 1, len(data), data)
        stream += b"commit refs/heads/bulk\ncommitter B <b@e> 0 +0000\ndata 4\nbulk\n"
        for i in range(n):
            stream += b"M 100644 :%d bodies/%d\n" % (i + 1, i)
        lib_times, fi_times = [], []
        for i in range(3):
            a, b = work / f"lib-{i}", work / f"fi-{i}"
            make_repo(a)
            make_repo(b)
            lib_times.append(run([PY, str(script)], a))
            fi_times.append(run(["git", "fast-import", "--quiet"], b, stdin=bytes(stream)))
        lib, fi = statistics.median(lib_times), statistics.median(fi_times)
        report.add(f"library: task + {n} attachments in one commit", ms(lib))
        report.add(f"git fast-import of the same {n} blobs", ms(fi))
        report.add("library / fast-import", "", f"{lib / fi:.2f}x", "report")

        # 7. memory of prompt on a ~20 MB task
        big = work / "big"
        make_repo(big)
        sys.path.insert(0, str(ROOT))
        from git_hydrate import Ledger

        with Ledger(big) as ledger:
            ledger.add_task("BIG-1", objective="big", acceptance="big")
            ledger.add_contexts(
                "BIG-1", [(body(i, 10_000), f"f/{i}", 0, None) for i in range(2000)]
            )
        rss = statistics.median(
            peak_rss_mib([*HYDRATE, "prompt", "BIG-1", "--max-bytes", BIG], big) for _ in range(3)
        )
        base = statistics.median(peak_rss_mib(FLOOR, big) for _ in range(3))
        report.add(
            "peak RSS of prompt, 20 MB task",
            f"{rss:.0f} MiB",
            f"floor {base:.0f} MiB",
            "<= 3x20 MB + floor",
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # 4 (repository to prompt, against files-to-prompt) and sharing: their own scripts
    extra = ""
    if not args.quick:
        for title, script, options in (
            (
                "Repository to prompt (benchmarks/bench_add_tree.py)",
                "bench_add_tree.py",
                ["--files-to-prompt", peer_files_to_prompt()],
            ),
            ("Sharing through a remote (benchmarks/bench_sync.py)", "bench_sync.py", []),
        ):
            print(f"\n{title}", flush=True)
            out = subprocess.run(
                [PY, str(HERE / script), *options],
                capture_output=True,
                text=True,
                env=env(),
                check=False,
            )
            print(out.stdout, flush=True)
            extra += f"\n## {title}\n\n```\n{out.stdout.strip()}\n```\n"

    if args.write_results:
        git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
        text = (
            "# Benchmark results\n\n"
            f"Last run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, `python benchmarks/run.py"
            f"{' --quick' if args.quick else ''}`\n\n"
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, {git_version.strip()}\n\n"
            + report.markdown()
            + "\n"
            + extra
        )
        (HERE / "RESULTS.md").write_text(text)


if __name__ == "__main__":
    main()
