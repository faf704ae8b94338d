"""Paired, alternating runs of this code and a reference's, and their table.

Shared by the benchmarks that time one whole ``git hydrate`` process per run
against ``--reference DIR`` (a checkout or ``git archive`` of another commit,
run with ``PYTHONPATH=DIR``): ``bench_task_lists.py``, ``bench_in_play.py``,
``bench_long_ticket.py``, ``bench_value_tokens.py``, ``bench_outline_languages.py``.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

#: A run's CPU (user + system of the process and its git children) and wall seconds.
Timing = tuple[float, float]


def environment(code: Path) -> dict[str, str]:
    """The environment a run of the code at ``code`` gets: it imported from there,
    its byte code written, fixed commit identities."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "Bench", "bench@example.com"
    return env


def timed(
    code: Path,
    cwd: Path,
    args: Sequence[str],
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> Timing:
    """One whole ``python -m git_hydrate ARGS`` process of ``code`` in ``cwd`` (``env``:
    its environment, else this one's with ``PYTHONPATH=code``)."""
    env = env if env is not None else {**os.environ, "PYTHONPATH": str(code)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def alternate(
    arms: Sequence[str], runs: int, measure: Callable[[str, int], Timing]
) -> dict[str, list[Timing]]:
    """``runs`` rounds of ``measure(arm, round)`` for each arm, the order of the arms
    reversed every other round."""
    times: dict[str, list[Timing]] = {name: [] for name in arms}
    for round_ in range(runs):
        for name in list(arms) if round_ % 2 == 0 else list(reversed(arms)):
            times[name].append(measure(name, round_))
    return times


def header(what: str, width: int) -> None:
    print(f"{what:>{width}} {'arm':>10} {'cpu s':>8} {'wall s':>8} {'cpu ratio':>10}")


def rows(label: object, width: int, times: Mapping[str, list[Timing]]) -> None:
    """Each arm's medians of CPU and wall, and its CPU's ratio to the reference's."""
    medians = {
        name: (statistics.median(c for c, _ in got), statistics.median(w for _, w in got))
        for name, got in times.items()
    }
    for name, (cpu, wall) in medians.items():
        ratio = f"{cpu / medians['reference'][0]:.2f}x" if "reference" in medians else ""
        print(f"{label!s:>{width}} {name:>10} {cpu:>8.3f} {wall:>8.3f} {ratio:>10}")
