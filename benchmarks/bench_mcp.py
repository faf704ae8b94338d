"""Issues 17 and 28: MCP answers and latency; ``prompt @`` from the cache; ``-h`` start-up.

Usage::

    python benchmarks/bench_mcp.py [--runs 15] [--reference /work/main]

Issue 28 (before the rest):

* a realistic session on the scratch repository, through the SDK client at the
  default budget: list_tasks, show_task, get_prompt part by part to the last,
  get_attachment of every attachment the prompt left out, claim, checkpoint,
  move, release. Reports the largest answer (tokens, o200k_base, and bytes),
  and whether the parts joined equal ``git hydrate prompt B-1``.
* tool-call latency, paired: the same read calls to a server of this checkout
  and one of ``--reference``, alternating, wall per call (medians, ratio).
* ``prompt @`` against ``prompt B-1`` (both prompt-cache hits, whole
  processes, paired and alternating): goal within 1.2x.

In a scratch repository with a task of 100 attachments (about 2 KiB each, so
that the answer budget leaves some out):

* one ``git hydrate mcp`` server is started and initialised (its start-up is
  reported apart), then, alternating in pairs, a ``get_prompt`` call over that
  session (round trip, wall; CPU of the server process from /proc) and a whole
  ``git hydrate prompt B-1`` process (the prompt whose first part the call
  answers), wall and CPU. Goal: the MCP call under 2x the command.
* ``git hydrate -h`` of this checkout against ``--reference`` (another
  checkout, e.g. main), paired and alternating, and whether ``-h`` loads any
  module of the MCP SDK.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def env_for(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root)}


def process(root: Path, repo: str, args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one whole git-hydrate process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args], cwd=repo, env=env_for(root),
        capture_output=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.decode()}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def server_pid() -> int | None:
    """The pid of the ``git_hydrate ... mcp`` child process."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"mcp" in cmdline:
                return int(pid)
    return None


def cpu_of(pid: int | None) -> float:
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def setup(repo: str) -> None:
    subprocess.run(["git", "init", "-q", repo], check=True)
    for key, value in (("user.name", "bench"), ("user.email", "bench@example.com")):
        subprocess.run(["git", "-C", repo, "config", key, value], check=True)
    subprocess.run(["git", "-C", repo, "commit", "-q", "--allow-empty", "-m", "i"], check=True)
    sys.path.insert(0, str(ROOT))
    from git_hydrate import Ledger

    with Ledger(repo) as ledger:
        ledger.add_task("B-1", "Refactor the parser", "the tests pass")
        ledger.add_contexts(
            "B-1",
            [
                (f"# notes {i}\n" + f"line {i}: the parser keeps commas in strings\n" * 48,
                 f"docs/notes-{i:03}.md", i % 10, None)
                for i in range(100)
            ],
        )  # fmt: skip


def bench_mcp(repo: str, runs: int) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "git_hydrate", "-C", repo, "mcp"],
        env=env_for(ROOT),
    )

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {"mcp": [], "mcp_cpu": [], "cli": [], "cli_cpu": []}
        start = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            out["startup"] = time.perf_counter() - start
            pid = server_pid()
            first = time.perf_counter()
            result = await s.call_tool("get_prompt", {"id": "B-1"})
            out["first"] = time.perf_counter() - first
            text = result.content[0].text
            out["bytes"] = len(text.encode())
            out["tail"] = text.rstrip().rsplit("\n", 1)[-1][:160]
            for i in range(runs):
                for side in ("mcp", "cli") if i % 2 == 0 else ("cli", "mcp"):
                    if side == "mcp":
                        cpu = cpu_of(pid)
                        t = time.perf_counter()
                        await s.call_tool("get_prompt", {"id": "B-1"})
                        out["mcp"].append(time.perf_counter() - t)
                        out["mcp_cpu"].append(cpu_of(pid) - cpu)
                    else:
                        args = ["prompt", "B-1", "-o", os.devnull]
                        wall, cpu = process(ROOT, repo, args)
                        out["cli"].append(wall)
                        out["cli_cpu"].append(cpu)
        return out

    out = anyio.run(main)
    med = {key: statistics.median(out[key]) for key in ("mcp", "mcp_cpu", "cli", "cli_cpu")}
    print(f"server start-up to initialised: {out['startup'] * 1000:.0f} ms; "
          f"first get_prompt (loads the tokenizer): {out['first'] * 1000:.0f} ms")  # fmt: skip
    print(f"answer: {out['bytes']:,} bytes; ends: {out['tail']}")
    for label, key in (("get_prompt over MCP", "mcp"), ("prompt (whole process)", "cli")):
        wall, cpu = med[key] * 1000, med[f"{key}_cpu"] * 1000
        print(f"{label:24} wall {wall:7.1f} ms  CPU {cpu:7.1f} ms")
    print(f"ratio MCP/CLI: wall {med['mcp'] / med['cli']:.2f}x (goal < 2x)")


def floor_run() -> tuple[float, float]:
    """The import floor: the three libraries every command needs, and nothing else."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import dulwich.repo, msgspec, click"], check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def bench_help(reference: Path, runs: int) -> None:
    walls: dict[str, list[float]] = {"this": [], "reference": [], "floor": []}
    cpus: dict[str, list[float]] = {"this": [], "reference": [], "floor": []}
    for i in range(runs):
        sides = ["this", "reference", "floor"]
        for label in sides if i % 2 == 0 else list(reversed(sides)):
            if label == "floor":
                wall, cpu = floor_run()
            else:
                wall, cpu = process(ROOT if label == "this" else reference, str(ROOT), ["-h"])
            walls[label].append(wall)
            cpus[label].append(cpu)
    med = {k: statistics.median(v) * 1000 for k, v in walls.items()}
    cmed = {k: statistics.median(v) * 1000 for k, v in cpus.items()}
    print(
        f"-h  wall this {med['this']:.1f} ms, reference {med['reference']:.1f} ms "
        f"({med['this'] / med['reference']:.2f}x), import floor {med['floor']:.1f} ms"
        f" | CPU this {cmed['this']:.1f}, reference {cmed['reference']:.1f}, "
        f"floor {cmed['floor']:.1f} ms"
    )
    probe = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom git_hydrate.cli import run\nrun(['-h'])\n"
         "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', "
         "'pydantic', 'anyio', 'starlette')), file=sys.stderr)"],
        env=env_for(ROOT), capture_output=True, text=True,
    )  # fmt: skip
    print(f"-h loads from the SDK and its dependencies: {probe.stderr.strip() or '[]'}")


def _server(root: Path, repo: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "git_hydrate", "-C", repo, "mcp"], env=env_for(root)
    )


def _omitted(repo: str) -> list[str]:
    """The hashes of B-1's attachments ``git hydrate prompt B-1 -v`` leaves out."""
    import json

    proc = subprocess.run(
        [sys.executable, "-m", "git_hydrate", "--compact", "show", "B-1", "--json"],
        cwd=repo, env=env_for(ROOT), capture_output=True, text=True, check=True,
    )  # fmt: skip
    every = [entry["hash"] for entry in json.loads(proc.stdout)["context"]]
    whole = subprocess.run(
        [sys.executable, "-m", "git_hydrate", "prompt", "B-1", "--format", "markdown"],
        cwd=repo, env=env_for(ROOT), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    kept = whole.count("### Context from ")
    return every[kept:]


def bench_session(repo: str) -> None:
    """Every answer of a realistic session, measured; the parts joined, checked."""
    import json

    import anyio
    from mcp import ClientSession, stdio_client

    sys.path.insert(0, str(ROOT))
    from git_hydrate.pack.tokens import count_tokens

    answers: list[tuple[str, str]] = []

    async def call(session: Any, name: str, args: dict[str, Any]) -> str:
        result = await session.call_tool(name, args)
        text = str(result.content[0].text)
        answers.append((name, text))
        return text

    async def pages(session: Any, name: str, args: dict[str, Any]) -> list[str]:
        parts = [await call(session, name, args)]
        while "the next: " in parts[-1][-200:]:
            following = json.loads(parts[-1].rsplit(f"the next: {name} ", 1)[1].rstrip("]\n"))
            parts.append(await call(session, name, following))
        return parts

    async def main() -> list[str]:
        async with stdio_client(_server(ROOT, repo)) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await call(s, "list_tasks", {})
            await call(s, "show_task", {"id": "B-1"})
            parts = await pages(s, "get_prompt", {"id": "B-1"})
            for digest in _omitted(repo):
                await pages(s, "get_attachment", {"id": "B-1", "hash": digest[:10]})
            await call(s, "ready", {})
            await call(s, "claim", {"id": "B-1", "as": "bench"})
            await call(s, "checkpoint", {"id": "B-1", "summary": "half way", "tokens": 900})
            await call(s, "move", {"id": "B-1", "station": "review"})
            await call(s, "move", {"id": "B-1", "station": "in_progress"})
            await call(s, "release", {"id": "B-1", "as": "bench"})
            await call(s, "get_prompt", {"id": "NO-1"})  # an error is an answer too
            return parts

    # (before the session's writes change the prompt)
    whole = subprocess.run(
        [sys.executable, "-m", "git_hydrate", "prompt", "B-1", "--format", "markdown"],
        cwd=repo, env=env_for(ROOT), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    parts = anyio.run(main)
    joined = "".join(p[: p.rindex("\n\n[part ")] if "\n\n[part " in p else p for p in parts)
    sizes = [
        (count_tokens(text, "o200k_base"), len(text.encode()), name) for name, text in answers
    ]
    tokens, size, name = max(sizes)
    print(
        f"session: {len(answers)} answers ({len(parts)} prompt parts); largest {tokens:,} tokens "
        f"(o200k_base), {size:,} bytes ({name}); largest in bytes {max(s[1] for s in sizes):,}; "
        f"parts joined == prompt B-1 --format markdown: {joined == whole}"
    )


def bench_latency(repo: str, reference: Path, runs: int) -> None:
    """The same read calls to this checkout's server and the reference's, paired."""
    import anyio
    from mcp import ClientSession, stdio_client

    calls = [("list_tasks", {}), ("show_task", {"id": "B-1"}), ("get_prompt", {"id": "B-1"})]

    async def main() -> dict[str, dict[str, list[float]]]:
        out: dict[str, dict[str, list[float]]] = {"this": {}, "reference": {}}
        async with (
            stdio_client(_server(ROOT, repo)) as (r1, w1),
            ClientSession(r1, w1) as this,
            stdio_client(_server(reference, repo)) as (r2, w2),
            ClientSession(r2, w2) as other,
        ):
            await this.initialize()
            await other.initialize()
            for session in (this, other):  # warm: tokenizer, caches
                for name, args in calls:
                    await session.call_tool(name, args)
            for i in range(runs):
                pairs = [("this", this), ("reference", other)]
                for label, session in pairs if i % 2 == 0 else pairs[::-1]:
                    for name, args in calls:
                        start = time.perf_counter()
                        await session.call_tool(name, args)
                        out[label].setdefault(name, []).append(time.perf_counter() - start)
        return out

    out = anyio.run(main)
    ref = subprocess.run(
        ["git", "-C", str(reference), "rev-parse", "--short", "HEAD"], capture_output=True,
        text=True,
    ).stdout.strip()  # fmt: skip
    print(f"tool-call latency, paired with the reference ({reference} at {ref}), medians:")
    for name, _ in calls:
        a = statistics.median(out["this"][name]) * 1000
        b = statistics.median(out["reference"][name]) * 1000
        print(f"  {name:12} this {a:7.1f} ms  reference {b:7.1f} ms  ratio {a / b:.2f}x")


def bench_current(repo: str, reference: Path, runs: int) -> None:
    """``prompt @`` against ``prompt B-1`` (both hits) and against the reference's
    ``prompt @`` (before issue 28: the full command line), whole processes, paired."""
    subprocess.run(
        [sys.executable, "-m", "git_hydrate", "start", "B-1"], cwd=repo, env=env_for(ROOT),
        capture_output=True, check=True,
    )  # fmt: skip
    sides = {
        "id": (ROOT, ["prompt", "B-1", "-o", os.devnull]),
        "at": (ROOT, ["prompt", "@", "-o", os.devnull]),
        "before": (reference, ["prompt", "@", "-o", os.devnull]),
    }
    for root, args in sides.values():
        process(root, repo, args)  # fill the caches
    walls: dict[str, list[float]] = {label: [] for label in sides}
    cpus: dict[str, list[float]] = {label: [] for label in sides}
    for i in range(runs):
        for label in list(sides) if i % 2 == 0 else list(sides)[::-1]:
            root, args = sides[label]
            wall, cpu = process(root, repo, args)
            walls[label].append(wall)
            cpus[label].append(cpu)
    w = {k: statistics.median(v) * 1000 for k, v in walls.items()}
    c = {k: statistics.median(v) * 1000 for k, v in cpus.items()}
    print(
        f"prompt @ {w['at']:.1f} ms (CPU {c['at']:.1f}) vs prompt B-1 {w['id']:.1f} ms "
        f"(CPU {c['id']:.1f}): {w['at'] / w['id']:.2f}x wall, {c['at'] / c['id']:.2f}x CPU "
        f"(goal within 1.2x); the reference's prompt @ {w['before']:.1f} ms "
        f"(CPU {c['before']:.1f}): {w['before'] / w['at']:.2f}x this one's wall"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--reference", type=Path, default=Path("/work/main"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hydrate-mcp-") as scratch:
        repo = os.path.join(scratch, "r")
        setup(repo)
        bench_session(repo)
        bench_latency(repo, options.reference, options.runs)
        bench_current(repo, options.reference, options.runs)
        bench_mcp(repo, options.runs)
    bench_help(options.reference, options.runs)


if __name__ == "__main__":
    main()
