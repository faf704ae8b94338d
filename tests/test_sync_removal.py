"""``task-rm --remote``: the deletion there and the removal record land together,
or neither does (a deletion without its record lets other clones push the task back)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate import sync as hsync
from git_hydrate.sync import manage

from .conftest import git, hydrate
from .test_sync import clone, make_task
from .test_sync import shared_refs as remote_refs

RECORD = "refs/hydrate/removed"


def recorded(bare: Path) -> list[str]:
    """The task ids the remote's removal record holds."""
    text = git(bare, "show", f"{RECORD}:removed.json")
    return sorted(json.loads(text)["removed"])


def two_clones_of_two_tasks(origin: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Clone ``a`` made T-1 and T-2 and pushed them; clone ``b`` pulled them."""
    a = clone(origin, tmp_path / "a")
    make_task(a, "T-1")
    make_task(a, "T-2")
    assert hydrate(a, "push").returncode == 0
    b = clone(origin, tmp_path / "b")
    assert hydrate(b, "pull").returncode == 0
    return a, b


def refuse_the_record(bare: Path, hook: str) -> None:
    """A server hook that refuses ``refs/hydrate/removed`` (and nothing else)."""
    if hook == "update":
        body = '[ "$1" = refs/hydrate/removed ] && { echo "no removals here" >&2; exit 1; }\n'
    else:
        body = (
            "while read old new ref; do\n"
            '  [ "$ref" = refs/hydrate/removed ] && { echo "no removals here" >&2; exit 1; }\n'
            "done\n"
        )
    path = bare / "hooks" / hook
    path.write_text("#!/bin/sh\n" + body + "exit 0\n")
    path.chmod(0o755)


@pytest.mark.parametrize("hook", ["update", "pre-receive"])
def test_a_refused_removal_record_deletes_nothing_there(
    origin: Path, tmp_path: Path, hook: str
) -> None:
    a = clone(origin, tmp_path / "a")
    make_task(a, "T-1")
    assert hydrate(a, "push").returncode == 0
    refuse_the_record(origin, hook)
    res = hydrate(a, "task-rm", "T-1", "--remote", "origin")
    assert res.returncode == 1, res
    assert remote_refs(origin) == ["refs/hydrate/tasks/T-1"]  # neither landed
    lines = res.stdout.splitlines()
    assert lines[0].startswith("removed task T-1 (was ")
    # (a pre-receive hook refuses the whole push: git names both refs)
    refused = {
        "update": "the removal record was",
        "pre-receive": "the deletion and the removal record were",
    }[hook]
    assert lines[1].startswith(
        f"not deleted on origin (nothing changed there: {refused} refused ("
    )
    assert "hook declined" in lines[1] and "no removals here" in lines[1]
    assert len(lines) == 2
    assert res.stderr == "error: task T-1 was not deleted on origin\n"
    # here it is removed all the same, and the record waits for the next push
    assert git(a, "rev-parse", "--verify", "-q", "refs/hydrate/tasks/T-1", check=False) == ""


def test_a_task_not_on_the_remote_says_its_record_was_refused(
    origin: Path, tmp_path: Path
) -> None:
    a = clone(origin, tmp_path / "a")
    make_task(a, "L-1")
    refuse_the_record(origin, "update")
    res = hydrate(a, "task-rm", "L-1", "--remote", "origin", "--json")
    assert res.returncode == 1, res
    there = json.loads(res.stdout)["remote"]
    assert there["deleted"] is False
    assert there["detail"].startswith("nothing changed there: the removal record was refused (")
    assert there["detail"].endswith("; not on origin")
    assert res.stderr == "error: the removal of task L-1 was not recorded on origin\n"
    assert remote_refs(origin) == []


def test_a_stale_lease_sends_no_record_either(
    origin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote's copy moves between the fetch and the push: the deletion is
    refused under its lease, and the record, all or nothing, is not sent."""
    a = clone(origin, tmp_path / "a")
    make_task(a, "T-1")
    assert hydrate(a, "push").returncode == 0
    b = clone(origin, tmp_path / "b")
    assert hydrate(b, "pull").returncode == 0
    real_fetch = manage.fetch_mirror

    def fetch_then_someone_pushes(*args: object) -> dict[bytes, bytes]:
        mirror = real_fetch(*args)  # type: ignore[arg-type]
        assert hydrate(b, "task-edit", "T-1", "--title", "still wanted").returncode == 0
        assert hydrate(b, "push").returncode == 0
        return mirror

    monkeypatch.setattr(manage, "fetch_mirror", fetch_then_someone_pushes)
    with Ledger(a) as ledger:
        result = hsync.remove_task(ledger.refs, "T-1", "origin")
    there = result["remote"]
    assert there["deleted"] is False
    assert there["detail"].startswith("nothing changed there: the deletion was refused (")
    assert "stale info" in there["detail"]
    assert remote_refs(origin) == ["refs/hydrate/tasks/T-1"]


def test_two_clones_removing_different_tasks_both_land(origin: Path, tmp_path: Path) -> None:
    """The second removal's record is pushed on top of the first's (taken from
    the remote before the push), not refused as non-fast-forward."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    assert hydrate(a, "task-rm", "T-1", "--remote", "origin").returncode == 0
    res = hydrate(b, "task-rm", "T-2", "--remote", "origin")
    assert res.returncode == 0, res
    assert res.stdout.endswith("\ndeleted on origin\n") and res.stderr == ""
    assert remote_refs(origin) == [RECORD]
    assert recorded(origin) == ["T-1", "T-2"]


def test_a_server_without_atomic_push_gets_the_record_first(origin: Path, tmp_path: Path) -> None:
    git(origin, "config", "receive.advertiseAtomic", "false")
    a = clone(origin, tmp_path / "a")
    make_task(a, "T-1")
    make_task(a, "T-2")
    assert hydrate(a, "push").returncode == 0
    res = hydrate(a, "task-rm", "T-1", "--remote", "origin")
    assert res.returncode == 0, res
    assert remote_refs(origin) == [RECORD, "refs/hydrate/tasks/T-2"]
    refuse_the_record(origin, "update")
    res = hydrate(a, "task-rm", "T-2", "--remote", "origin")
    assert res.returncode == 1, res
    assert "nothing changed there: the removal record was refused (" in res.stdout
    assert remote_refs(origin) == [RECORD, "refs/hydrate/tasks/T-2"]
    assert recorded(origin) == ["T-1"]


def refuse_a_shared_ref(bare: Path, ref: str) -> None:
    """A server ``update`` hook that refuses ``ref`` (and nothing else)."""
    path = bare / "hooks" / "update"
    path.write_text(
        f'#!/bin/sh\n[ "$1" = {ref} ] && {{ echo "not {ref}" >&2; exit 1; }}\nexit 0\n'
    )
    path.chmod(0o755)


@pytest.mark.parametrize("command", ["sync", "push"])
def test_a_refused_record_holds_back_the_deletions_of_sync_and_push(
    origin: Path, tmp_path: Path, command: str
) -> None:
    """A removal made here without --remote: the next sync (or push) deletes the
    task there only once the removal record landed; refused, the task stays there,
    and another clone's sync does not push it back."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    refuse_a_shared_ref(origin, RECORD)
    assert hydrate(a, "task-rm", "T-2").returncode == 0
    res = hydrate(a, command)
    assert res.returncode == 1, res
    assert remote_refs(origin) == ["refs/hydrate/tasks/T-1", "refs/hydrate/tasks/T-2"]
    assert "  not deleted    T-2  (origin did not take refs/hydrate/removed; " in res.stdout
    assert "  REFUSED        refs/hydrate/removed  ([remote rejected] (hook declined)" in (
        res.stdout
    )
    assert "deleted there" not in res.stdout
    tasks = json.loads(hydrate(a, command, "--json").stdout)["tasks"]
    assert [(t["task_id"], t["action"]) for t in tasks if t["action"] == "not-deleted"] == [
        ("T-2", "not-deleted")
    ]
    res = hydrate(b, "sync")
    assert "pushed" not in res.stdout and res.returncode == 0, res
    (origin / "hooks" / "update").unlink()
    res = hydrate(a, command)
    assert res.returncode == 0, res
    assert "  deleted there  T-2" in res.stdout
    assert remote_refs(origin) == [RECORD, "refs/hydrate/tasks/T-1"]
    assert recorded(origin) == ["T-2"]


def test_a_refused_archive_deletes_no_archived_task_there(origin: Path, tmp_path: Path) -> None:
    a = clone(origin, tmp_path / "a")
    make_task(a, "T-1")
    make_task(a, "T-2")
    assert hydrate(a, "push").returncode == 0
    refuse_a_shared_ref(origin, "refs/hydrate/archive")
    with Ledger(a) as ledger:
        ledger.set_status("T-1", "cancelled")
    assert hydrate(a, "archive", "T-1").returncode == 0
    res = hydrate(a, "sync")
    assert res.returncode == 1, res
    assert "  not deleted    T-1  (origin did not take refs/hydrate/archive; " in res.stdout
    assert remote_refs(origin) == ["refs/hydrate/tasks/T-1", "refs/hydrate/tasks/T-2"]


def test_task_rm_remote_leaves_the_mirror_as_the_remote_is(origin: Path, tmp_path: Path) -> None:
    """The mirror drops the deleted task, so the next push sends no second
    deletion under a lease that went stale."""
    a = clone(origin, tmp_path / "a")
    make_task(a, "T-5")
    make_task(a, "T-6")
    assert hydrate(a, "push").returncode == 0
    assert hydrate(a, "task-rm", "T-5", "--remote", "origin").returncode == 0
    mirror = git(a, "for-each-ref", "--format=%(refname)", "refs/hydrate-remotes/origin/")
    assert mirror.split() == [
        "refs/hydrate-remotes/origin/removed",
        "refs/hydrate-remotes/origin/tasks/T-6",
    ]
    assert git(a, "rev-parse", "refs/hydrate-remotes/origin/removed") == git(
        a, "rev-parse", RECORD
    )
    res = hydrate(a, "push")
    assert res.returncode == 0, res
    assert res.stdout == "push origin: 1 up to date\n"  # (T-6; the record is no task)


def test_task_rm_remote_drops_the_tasks_the_remote_record_holds(
    origin: Path, tmp_path: Path
) -> None:
    """b removes T-4 there, a removes T-5 there: a's record now holds T-4 too,
    so a drops T-4 as a pull would, and its next push does not bring it back."""
    a = clone(origin, tmp_path / "a")
    make_task(a, "T-4")
    make_task(a, "T-5")
    make_task(a, "T-6")
    assert hydrate(a, "push").returncode == 0
    b = clone(origin, tmp_path / "b")
    assert hydrate(b, "pull").returncode == 0
    assert hydrate(b, "task-rm", "T-4", "--remote", "origin").returncode == 0
    # T-6 removed by b too, but changed here since: kept, as a pull keeps it
    assert hydrate(b, "task-rm", "T-6", "--remote", "origin").returncode == 0
    assert hydrate(a, "task-edit", "T-6", "--title", "still wanted").returncode == 0
    res = hydrate(a, "task-rm", "T-5", "--remote", "origin")
    assert res.returncode == 0, res
    lines = res.stdout.splitlines()
    assert lines[1] == "removed task T-4 here too (removed by Hydrate Tester <tester@example.com>)"
    assert lines[2].startswith("kept task T-6 (removed on origin, but changed here since; ")
    assert lines[3:] == ["deleted on origin"]
    local = git(a, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks")
    assert local.split() == ["refs/hydrate/tasks/T-6"]
    assert recorded(origin) == ["T-4", "T-5", "T-6"]
    res = hydrate(a, "push")
    assert res.returncode == 0, res
    assert "T-4" not in res.stdout
    assert remote_refs(origin) == [RECORD, "refs/hydrate/tasks/T-6"]


@pytest.mark.parametrize("command", ["sync", "push"])
def test_a_refused_record_holds_back_a_new_task_of_a_removed_id(
    origin: Path, tmp_path: Path, command: str
) -> None:
    """A task removed here and made again with the same id replaces the remote's old
    copy only once the removal record landed: without it, a clone holding the old
    task merged the two unrelated tasks into one."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    old = git(origin, "rev-parse", "refs/hydrate/tasks/T-2").strip()
    refuse_a_shared_ref(origin, RECORD)
    assert hydrate(a, "task-rm", "T-2").returncode == 0
    made = hydrate(a, "task-add", "T-2", "--objective", "brand new", "--acceptance", "b")
    assert made.returncode == 0, made
    res = hydrate(a, command)
    assert res.returncode == 1, res
    assert "  not replaced   T-2  (origin did not take refs/hydrate/removed; " in res.stdout
    assert git(origin, "rev-parse", "refs/hydrate/tasks/T-2").strip() == old
    pulled = hydrate(b, "sync")
    assert pulled.returncode == 0 and "merged" not in pulled.stdout, pulled
    with Ledger(b) as ledger:
        assert ledger.get_task("T-2")["objective"] != "brand new"
    (origin / "hooks" / "update").unlink()
    res = hydrate(a, command)
    assert res.returncode == 0, res
    assert "  forced         T-2" in res.stdout
    assert git(origin, "rev-parse", "refs/hydrate/tasks/T-2") == git(
        a, "rev-parse", "refs/hydrate/tasks/T-2"
    )
    pulled = hydrate(b, "pull")
    assert pulled.returncode == 0 and "merged" not in pulled.stdout, pulled
    with Ledger(b) as ledger:
        assert ledger.get_task("T-2")["objective"] == "brand new"


def test_ids_differing_by_case_from_two_clones_say_how_to_keep_one(
    origin: Path, tmp_path: Path
) -> None:
    """Two clones each made one of two ids that differ only by case: every sync skipped
    the other's and exited 1, with no word of a way out. The skip names it, and taking
    it settles both clones."""
    a = clone(origin, tmp_path / "a")
    b = clone(origin, tmp_path / "b")
    make_task(a, "Case-1")
    make_task(b, "CASE-1")
    assert hydrate(a, "push").returncode == 0 and hydrate(b, "push").returncode == 0
    res = hydrate(a, "sync")
    assert res.returncode == 1
    advice = "one clone made each: a case-insensitive file system cannot hold both; keep one:"
    assert f"differs from local task 'Case-1' only by case ({advice}" in res.stdout
    assert "git hydrate task-rm Case-1 --remote origin here" in res.stdout
    assert hydrate(a, "task-rm", "Case-1", "--remote", "origin").returncode == 0
    for path in (a, b, a):
        settled = hydrate(path, "sync")
        assert settled.returncode == 0, settled
    with Ledger(a) as ledger:
        assert ledger.task_ids() == ["CASE-1"]


def test_a_new_task_of_a_removed_id_is_not_merged_into_the_old_one_changed_since(
    origin: Path, tmp_path: Path
) -> None:
    """Clone a removes T-2 and makes a new T-2; clone b changes the old T-2 and pushes
    first. a's sync merged the two unrelated tasks (the old objective kept, the new one
    dropped, and pushed). The pull now leaves them apart and says how to keep one; the
    advice, followed, restores b's."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    assert hydrate(a, "task-rm", "T-2").returncode == 0
    made = hydrate(a, "task-add", "T-2", "--objective", "brand new", "--acceptance", "b")
    assert made.returncode == 0, made
    assert (
        hydrate(b, "checkpoint", "T-2", "--summary", "b's work", "--tokens", "3").returncode == 0
    )
    assert hydrate(b, "push").returncode == 0
    res = hydrate(a, "sync")
    assert res.returncode == 1, res
    assert "  merged " not in res.stdout
    assert "origin's T-2 is the task removed here, changed there since, and T-2 here is " in (
        res.stdout
    )
    with Ledger(a) as ledger:
        assert ledger.get_task("T-2")["objective"] == "brand new"
    with Ledger(b) as ledger:
        old = ledger.get_task("T-2")["objective"]
    assert json.loads(git(origin, "show", "refs/hydrate/tasks/T-2:task.json"))["objective"] == old
    assert hydrate(a, "task-rm", "T-2").returncode == 0
    assert hydrate(a, "sync").returncode == 0
    with Ledger(a) as ledger:
        assert ledger.get_task("T-2")["objective"] == old


def test_a_behind_clones_push_says_it_made_again_what_was_there(
    origin: Path, tmp_path: Path
) -> None:
    """Clone a removes T-2 there; clone b, behind, pushes: git makes T-2 anew on the
    remote, which b reported as a plain "pushed (new)". It now says the remote had it at
    b's last pull, and how it goes again; b's sync removes it."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    assert hydrate(a, "task-rm", "T-2", "--remote", "origin").returncode == 0
    pushed = hydrate(b, "push")
    assert "  pushed (new)   T-2  (origin no longer had it, though it did at your last pull: " in (
        pushed.stdout
    )
    assert "git hydrate sync origin removes it again)" in pushed.stdout
    assert hydrate(b, "sync").returncode == 0
    assert remote_refs(origin) == [RECORD, "refs/hydrate/tasks/T-1"]


def test_a_task_removed_and_restored_in_one_pull_is_one_line(origin: Path, tmp_path: Path) -> None:
    """a removes T-2 there, b changes it and syncs (restored there); c, which had T-2
    unchanged, drops it for the removal and takes it back, changed: one sync said both
    "removed" and "restored" for T-2; one line now says both."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    c = clone(origin, tmp_path / "c")
    assert hydrate(c, "pull").returncode == 0
    assert hydrate(a, "task-rm", "T-2", "--remote", "origin").returncode == 0
    assert (
        hydrate(b, "checkpoint", "T-2", "--summary", "b's work", "--tokens", "3").returncode == 0
    )
    assert hydrate(b, "sync").returncode == 0
    res = hydrate(c, "sync")
    assert res.returncode == 0, res
    lines = [line for line in res.stdout.splitlines() if "T-2" in line]
    assert len(lines) == 1 and lines[0].startswith("  restored       T-2  (removed by "), lines
    with Ledger(c) as ledger:
        assert "T-2" in ledger.task_ids()


@pytest.mark.parametrize("stray", ["backup/T-1", "-rf", "T-1.x"])
def test_a_ref_no_pull_takes_is_never_deleted_there(
    origin: Path, tmp_path: Path, stray: str
) -> None:
    """A ref below refs/hydrate/tasks/ that names no valid task id is "ignored" by a
    pull; a sync after task-rm deleted it on the remote all the same when it pointed
    at the removed task's tip (explorer10); so did a copy of it under another valid
    id. Only the removed task's own ref goes."""
    a, _b = two_clones_of_two_tasks(origin, tmp_path)
    git(a, "push", "-q", "origin", f"refs/hydrate/tasks/T-1:refs/hydrate/tasks/{stray}")
    pulled = hydrate(a, "pull")
    assert stray in pulled.stdout  # (ignored; T-1.x, a valid id, is skipped as damaged)
    assert hydrate(a, "task-rm", "T-1").returncode == 0
    synced = hydrate(a, "sync")
    assert synced.returncode == 0, synced
    assert (
        "deleted there  T-1\n" in synced.stdout and f"deleted there  {stray}" not in synced.stdout
    )
    left = git(origin, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks").split()
    assert left == sorted(["refs/hydrate/tasks/T-2", f"refs/hydrate/tasks/{stray}"])


def test_a_removal_another_push_overtakes_says_to_sync(origin: Path, tmp_path: Path) -> None:
    """Another push lands on the task while task-rm's atomic push waits in the
    remote's hook: git refuses the transaction ("atomic transaction failed"), which
    was reported as a refusal "a pull cannot change", though a pull restores the task
    (explorer10). It is a race now, and the advice is sync."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    with Ledger(b) as ledger:
        ledger.claim("T-1", holder="bee")
    git(b, "push", "-q", "origin", "refs/hydrate/tasks/T-1:refs/other/T-1")
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(  # (another push lands while this one is on its way)
        "#!/bin/sh\n"
        "env -u GIT_QUARANTINE_PATH git update-ref refs/hydrate/tasks/T-1 refs/other/T-1\n"
    )
    hook.chmod(0o755)
    res = hydrate(a, "task-rm", "T-1", "--remote", "origin")
    assert res.returncode == 1
    assert "(atomic transaction failed); another push to origin landed while this one was " \
        "on its way: run git hydrate sync origin" in res.stdout  # fmt: skip
    assert "a pull cannot change that" not in res.stdout
    hook.unlink()
    synced = hydrate(a, "sync")
    assert synced.returncode == 0 and "restored       T-1" in synced.stdout, synced


def test_the_removal_record_is_listed_but_never_counted_as_a_task(
    origin: Path, tmp_path: Path
) -> None:
    """pull counted refs/hydrate/removed as a task "new here", push as one "pushed
    (new)" and, once there, as one "up to date" (its --json too) (review15). The
    counts are of tasks; the record keeps its own line, by ref name."""
    a, b = two_clones_of_two_tasks(origin, tmp_path)
    make_task(a, "T-3")
    assert hydrate(a, "push").returncode == 0
    assert hydrate(b, "pull").returncode == 0
    assert hydrate(a, "task-rm", "T-3").returncode == 0
    pushed = hydrate(a, "push")
    assert (pushed.returncode, pushed.stderr) == (0, "")
    assert pushed.stdout.splitlines() == [
        "push origin: 1 deleted there, 2 up to date",
        f"  pushed (new)   {RECORD}",
        "  deleted there  T-3",
    ]
    again = hydrate(a, "--compact", "push", "--json")
    assert json.loads(again.stdout)["counts"] == {"up-to-date": 2}
    pulled = hydrate(b, "pull")
    assert (pulled.returncode, pulled.stderr) == (0, "")
    assert pulled.stdout.splitlines()[:2] == [
        "pull origin: 1 removed, 2 up to date",
        f"  new here       {RECORD}",
    ]
    make_task(b, "T-4")
    assert hydrate(a, "task-rm", "T-1").returncode == 0
    assert hydrate(a, "push").returncode == 0
    synced = hydrate(b, "--compact", "sync", "--json")
    assert synced.returncode == 0, synced
    data = json.loads(synced.stdout)
    assert data["counts"] == {"pushed-new": 1, "removed": 1, "up-to-date": 1}
    assert [r["ref"] for r in data["refs"]] == [RECORD]
    assert json.loads(hydrate(b, "--compact", "sync", "--json").stdout)["counts"] == {
        "up-to-date": 2
    }
