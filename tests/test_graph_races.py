"""Two writers each adding half of a cycle to different tasks, at the same time.

A cycle check reads every task and the write moves one ref, so two processes
editing ``A`` and ``B`` could each check a graph without the other's half and
both succeed. A ``reference-transaction`` hook (run by the ``git update-ref``
each write ends with) holds each writer's ref update until the other writer
reaches its own: without the graph lock both get there, each having checked
the old graph. With it, the second writer is still waiting for the lock, the
first one's hook gives up waiting after 2 s, and the second then
checks the graph the first wrote and is refused.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, hydrate
from .wrapper import hydrate_command

#: The hook: on ``prepared`` of a task ref's update in a run that names a
#: barrier, note this writer's arrival and wait (about 1 s) for the other's.
#: It counts the arrivals with the shell's own glob and sleeps 20 times at
#: most: a loaded machine must not stretch its wait towards the 10 s after
#: which a lock counts as left behind by a dead writer. (Both writers start
#: together, forked: without the lock the other arrives within ~0.2 s on an
#: idle machine; with it, the whole wait is spent, once a test.)
HOOK = """#!/bin/sh
[ "$1" = prepared ] && [ -n "$HYDRATE_TEST_BARRIER" ] || exit 0
grep -q refs/hydrate/tasks/ || exit 0
touch "$HYDRATE_TEST_BARRIER/$$"
i=0
set -- "$HYDRATE_TEST_BARRIER"/*
while [ $# -lt 2 ] && [ $i -lt 20 ]; do
    sleep 0.05
    i=$((i + 1))
    set -- "$HYDRATE_TEST_BARRIER"/*
done
exit 0
"""


def _race(repo: Path, barrier: Path, *edits: list[str]) -> list[subprocess.CompletedProcess[str]]:
    env = dict(os.environ, HYDRATE_TEST_BARRIER=str(barrier))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    procs = [
        subprocess.Popen(
            [*hydrate_command(), *args],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in edits
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.mark.parametrize("option", ["--parent", "--depends-on"])
def test_two_writers_cannot_close_a_cycle_between_them(
    repo: Path, tmp_path: Path, option: str
) -> None:
    for task_id in ("A", "B"):
        made = hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a")
        assert made.returncode == 0, made.stderr
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(HOOK)
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    barrier = tmp_path / "barrier"
    barrier.mkdir()

    first, second = _race(
        repo, barrier, ["task-edit", "A", option, "B"], ["task-edit", "B", option, "A"]
    )

    assert sorted([first.returncode, second.returncode])[0] == 0
    refused = first if first.returncode else second
    assert refused.returncode != 0, "both edits succeeded: the graph now has a cycle"
    assert "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1 and "cycle" in refused.stderr, refused.stderr
    report = hydrate(repo, "doctor", "--json")
    assert "cycle" not in json.dumps(json.loads(report.stdout)), report.stdout
    assert len(list(barrier.iterdir())) == 1, "only one writer may reach its ref update"
