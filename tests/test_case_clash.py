"""Task ids differing only by case are refused, exactly, without listing every task.

The check looks up each spelling of a new id (loose refs) and indexes the
packed refs by case; these tests hold it to what a full listing would say:
refs made behind git-hydrate's back, packed or loose, long ids past the
spelling limits, archived ids, and refs that only look alike.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.errors import Conflict
from git_hydrate.store import Repository

from .conftest import git
from .wrapper import python_command

PREFIX = b"refs/hydrate/tasks/"
#: 26 letters: more spellings than any lookup one by one would try.
LONG = "Bulk-Import-Of-Legacy-Records-From-Upstream"


def add(ledger: Ledger, task_id: str) -> None:
    ledger.add_task(task_id, objective="o", acceptance="a")


def by_hand(repo: Path, task_id: str, like: str) -> None:
    """A task ref written with plain git (as a fetch or a script would), not the library."""
    tip = git(repo, "rev-parse", f"refs/hydrate/tasks/{like}").strip()
    git(repo, "update-ref", f"refs/hydrate/tasks/{task_id}", tip)


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
@pytest.mark.parametrize("task_id", ["Abc-1", LONG])
def test_an_id_differing_only_by_case_is_refused(repo: Path, packed: bool, task_id: str) -> None:
    with Ledger(repo) as ledger:
        add(ledger, task_id)
        add(ledger, "other-1")
        if packed:
            git(repo, "pack-refs", "--all")
        for variant in (task_id.lower(), task_id.upper(), task_id.swapcase()):
            with pytest.raises(Conflict, match=f"differs from existing task '{task_id}'"):
                add(ledger, variant)
        add(ledger, task_id.lower() + "-2")  # a different id is fine
        with pytest.raises(Conflict, match="already exists"):
            add(ledger, task_id)


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
@pytest.mark.parametrize("task_id", ["Abc-1", LONG])
def test_a_ref_made_behind_the_librarys_back_is_seen_at_once(
    repo: Path, packed: bool, task_id: str
) -> None:
    """One Ledger keeps nothing between checks that could hide a ref git wrote."""
    with Ledger(repo) as ledger:
        add(ledger, "seed-1")
        add(ledger, "x-1")  # the check ran (and indexed what it could) before the new ref
        if packed:
            git(repo, "pack-refs", "--all")
            add(ledger, "x-2")
        by_hand(repo, task_id, "seed-1")
        if packed:
            git(repo, "pack-refs", "--all")
        with pytest.raises(Conflict, match=f"differs from existing task '{task_id}'"):
            add(ledger, task_id.swapcase())


def test_both_loose_and_packed_spellings_are_named(repo: Path) -> None:
    with Ledger(repo) as ledger:
        add(ledger, "ab-1")
        git(repo, "pack-refs", "--all")
        by_hand(repo, "AB-1", "ab-1")  # only on a case-sensitive file system
        store = Repository(repo)
        try:
            found = store.names_differing_by_case(PREFIX, "Ab-1")
            assert found == ["AB-1", "ab-1"]
            assert store.names_differing_by_case(PREFIX, "zz-1") == []
            assert store.names_differing_by_case(PREFIX, LONG) == []
            with pytest.raises(ValueError):
                store.names_differing_by_case(PREFIX, "caf\u00e9")
        finally:
            store.close()


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_refs_that_only_look_alike_are_no_clash(repo: Path, packed: bool) -> None:
    """A ref of another case of the prefix, a lock file, a stray non-ASCII name."""
    with Ledger(repo) as ledger:
        add(ledger, "seed-1")
        tip = git(repo, "rev-parse", "refs/hydrate/tasks/seed-1").strip()
        git(repo, "update-ref", "refs/Hydrate/tasks/K-1", tip)
        git(repo, "update-ref", "refs/hydrate/TASKS/K-2", tip)
        tasks = repo / ".git" / "refs" / "hydrate" / "tasks"
        if packed:
            git(repo, "pack-refs", "--all")
        tasks.mkdir(parents=True, exist_ok=True)
        (tasks / "k-3.lock").write_text(tip + "\n")
        (tasks / "\u212a-4").write_text(tip + "\n")  # KELVIN SIGN folds to "k"
        for task_id in ("k-1", "k-2", "K-3", "k-4"):
            add(ledger, task_id)
        assert ledger.exists("k-4")


def test_a_directory_of_thousands_is_checked_exactly(repo: Path) -> None:
    """Many loose refs and a long id: the listing path, with the same answers."""
    with Ledger(repo) as ledger:
        add(ledger, "seed-1")
        tip = git(repo, "rev-parse", "refs/hydrate/tasks/seed-1").strip()
        lines = "".join(f"create refs/hydrate/tasks/many-{i} {tip}\n" for i in range(3000))
        git(repo, "update-ref", "--stdin", input=lines)
        by_hand(repo, LONG, "seed-1")
        assert len(os.listdir(repo / ".git" / "refs" / "hydrate" / "tasks")) == 3002
        with pytest.raises(Conflict, match="differs from existing task 'many-2999'"):
            add(ledger, "MANY-2999")
        with pytest.raises(Conflict, match=f"differs from existing task '{LONG}'"):
            add(ledger, LONG.lower())
        add(ledger, "many-3000")


def test_an_archive_written_by_another_process_is_seen(repo: Path) -> None:
    """The archived ids are remembered by archive commit, so a newer one is read."""
    with Ledger(repo) as ledger, Ledger(repo) as other:
        add(ledger, "E-1")
        add(ledger, "F-1")  # the archive (none yet) was read for this check
        other.set_status("E-1", "cancelled")
        other.archive(["E-1"])
        with pytest.raises(Conflict, match="differs from archived task 'E-1' only by case"):
            add(ledger, "e-1")
        with pytest.raises(Conflict, match="task E-1 is archived"):
            add(ledger, "E-1")
        other.unarchive("E-1")
        with pytest.raises(Conflict, match="differs from existing task 'E-1'"):
            add(ledger, "e-1")


def test_concurrent_writers_of_ids_differing_by_case_take_turns(repo: Path) -> None:
    """Writers creating ``Race-N``, ``RACE-N`` and ``race-N`` at the same moment: the
    check and the creation are one step under a lock of the case-folded id, so
    exactly one spelling of each id is created and the others are refused."""
    import subprocess

    go = repo.parent / "go"
    script = (
        "import os, sys, time\n"
        "from git_hydrate import Ledger, Conflict\n"
        "with Ledger(sys.argv[1]) as ledger:\n"
        "    ledger.list_tasks()\n"
        "    print('ready', flush=True)\n"
        "    while not os.path.exists(sys.argv[3]):\n"
        "        time.sleep(0.001)\n"
        "    for n in range(20):\n"
        "        try:\n"
        "            ledger.add_task(sys.argv[2] + f'-{n}', 't', 'o')\n"
        "        except Conflict:\n"
        "            pass\n"
    )
    procs = [
        subprocess.Popen(
            [*python_command(), "-c", script, str(repo), spelling, str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for spelling in ("Race", "RACE", "race", "rAce")
    ]
    for proc in procs:  # every writer started and waiting
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    go.touch()
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0, 0]
    with Ledger(repo) as ledger:
        ids = [task["task_id"] for task in ledger.list_tasks()]
    assert sorted(i.casefold() for i in ids) == sorted(f"race-{n}" for n in range(20)), ids
    assert not list((repo / ".git").glob("hydrate-id-*.lock"))


def test_a_lock_left_by_a_dead_writer_is_taken_over(repo: Path) -> None:
    import hashlib
    import time

    name = hashlib.sha256(b"dead-1").hexdigest()[:32]
    lock = repo / ".git" / f"hydrate-id-{name}.lock"
    lock.touch()
    old = time.time() - 60
    os.utime(lock, (old, old))
    with Ledger(repo) as ledger:
        ledger.add_task("Dead-1", "t", "o")  # the lock of "dead-1", stale: taken over
        assert not lock.exists()
        with pytest.raises(Conflict, match="only by case"):
            ledger.add_task("DEAD-1", "t", "o")
