"""A big import: its objects in one pack, its refs in packed-refs, no reflogs (issue 33).

Written loose, an import of 10,000 tasks left ~30,000 object files, 10,000 ref files
and 10,000 reflogs, and the next pull waited seconds on ``git gc --auto``. The
threshold is the store's (``PACKED_CREATIONS``, 64): these tests import 64 items.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_hydrate import Ledger, NotWritable
from git_hydrate.store import Repository
from git_hydrate.store import packs as packs_module
from git_hydrate.store import refs as store_refs

from .conftest import cat_file_batch, from_template, fsck, git, hydrate, one_commit

COUNT = store_refs.PACKED_CREATIONS


def issues(count: int) -> str:
    """``gh issue list --json`` output of ``count`` open issues."""
    return json.dumps(
        [
            {
                "number": n,
                "title": f"Issue number {n}",
                "body": f"The retry path in src/mod{n % 7}.py fails.\n\n- [ ] fix it\n",
                "labels": [{"name": "bug"}],
                "state": "OPEN",
                "url": f"https://github.com/acme/shop/issues/{n}",
            }
            for n in range(1, count + 1)
        ]
    )


def counts(repo: Path) -> dict[str, int]:
    """``git count-objects -v`` as numbers."""
    lines = git(repo, "count-objects", "-v").splitlines()
    return {key: int(value) for key, value in (line.split(": ") for line in lines)}


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_a_big_import_is_one_pack_and_reads_back_as_a_loose_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packed = from_template("repo", one_commit, tmp_path / "packed")
    before = counts(packed)
    with Ledger(packed, clock=lambda: 1800000000.0) as ledger:
        assert len(ledger.import_tasks(issues(COUNT))["created"]) == COUNT
    # the same import, every object and ref written loose (the threshold out of reach)
    loose = from_template("repo", one_commit, tmp_path / "loose")
    with monkeypatch.context() as patched, Ledger(loose, clock=lambda: 1800000000.0) as ledger:
        patched.setattr(store_refs, "PACKED_CREATIONS", 10**9)
        assert len(ledger.import_tasks(issues(COUNT))["created"]) == COUNT
    # the same tasks at the same commits (one clock for both), read alike
    listed = git(packed, "for-each-ref", "refs/hydrate/tasks")
    assert listed == git(loose, "for-each-ref", "refs/hydrate/tasks")
    assert len(listed.splitlines()) == COUNT
    shown = hydrate(packed, "list", "--json").stdout
    assert shown == hydrate(loose, "list", "--json").stdout
    # one pack of every task's blob, tree and commit, and the import base's tree and commit
    after = counts(packed)
    assert after["packs"] == 1 and after["in-pack"] >= 3 * COUNT + 2
    assert after["count"] - before["count"] == 0 and after["garbage"] == 0
    assert counts(loose)["count"] - before["count"] >= 3 * COUNT
    # no ref file and no reflog per task: packed-refs holds them
    dot_git = packed / ".git"
    assert files_under(dot_git / "refs" / "hydrate") == ["imports"]
    assert files_under(dot_git / "logs" / "refs" / "hydrate") == ["imports"]
    assert (dot_git / "packed-refs").read_text().count("refs/hydrate/tasks/") == COUNT
    (index,) = (dot_git / "objects" / "pack").glob("pack-*.idx")
    git(packed, "verify-pack", str(index))
    fsck(packed)
    # git's housekeeping keeps all of it and finds nothing to do at once
    git(packed, "gc", "-q", "--prune=now")
    assert hydrate(packed, "list", "--json").stdout == shown
    fsck(packed)


def test_a_big_import_into_a_sha256_repository_is_one_pack_git_reads(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(repo))
    result = hydrate(repo, "import", "-", input=issues(COUNT))
    assert result.returncode == 0, result.stderr
    assert counts(repo)["packs"] == 1
    assert len(json.loads(hydrate(repo, "list", "--json").stdout)) == COUNT
    fsck(repo)


def test_objects_of_every_size_come_out_of_the_pack_as_written(repo: Path) -> None:
    # sizes around each step of the pack entry's size header, and one compressed fastest
    datas = [b"x" * size for size in (0, 1, 15, 16, 2047, 2048, 1 << 18, (1 << 18) + 1)]
    datas.append(b"another blob\n")
    with Repository(repo) as store, store.packed_writes():
        oids = store.write_blobs(datas)
        tree = store.write_tree({b"a": (0o100644, oids[0]), b"b": (0o100644, oids[-1])})
        commit = store.write_commit(tree, [], "packed\n")
    assert (repo / ".git" / "objects" / "pack").is_dir()
    answers = cat_file_batch(repo, [*oids, tree, commit])
    assert [a[1] for a in answers[: len(datas)] if a] == datas
    assert answers[-2] is not None and answers[-2][0] == b"tree"
    assert answers[-1] is not None and answers[-1][0] == b"commit"
    assert counts(repo)["in-pack"] == len(datas) + 2


def test_an_import_stopped_while_its_objects_are_made_leaves_nothing(
    repo: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = counts(repo)
    add = packs_module.PackBatch.add
    made = []

    def interrupted(self: packs_module.PackBatch, kind: bytes, data: bytes) -> bytes:
        made.append(kind)
        if len(made) == COUNT:  # (Ctrl-C, a third of the way)
            raise KeyboardInterrupt
        return add(self, kind, data)

    monkeypatch.setattr(packs_module.PackBatch, "add", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ledger.import_tasks(issues(COUNT))
    assert git(repo, "for-each-ref", "refs/hydrate") == ""
    assert counts(repo) == before
    assert list((repo / ".git" / "objects" / "pack").iterdir()) == []
    fsck(repo)


def test_a_pack_git_refuses_leaves_no_part_and_the_import_comes_in_loose(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git stopped half-way through the pack (here: the stream ends early) leaves
    its temporary file, which is removed; the tasks are then made one by one."""
    stream = packs_module.pack_stream
    monkeypatch.setattr(packs_module, "pack_stream", lambda e, s: stream(e, s)[:5000])
    pack_dir = repo / ".git" / "objects" / "pack"
    refused = pytest.raises(NotWritable, match="early EOF")
    with Repository(repo) as store, refused, store.packed_writes():
        store.write_blobs([b"blob %d\n" % n for n in range(1000)])
    assert list(pack_dir.iterdir()) == []
    result = hydrate(repo, "import", "-", input=issues(COUNT))
    assert result.returncode == 0, result.stderr
    assert len(git(repo, "for-each-ref", "refs/hydrate/tasks").splitlines()) == COUNT
    assert list(pack_dir.iterdir()) == [] and counts(repo)["garbage"] == 0
    fsck(repo)


def test_a_temporary_pack_of_another_writer_is_left_alone(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pack_dir = repo / ".git" / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    theirs = pack_dir / "tmp_pack_Th31rs"
    theirs.write_bytes(b"PACK\0\0\0\2\0\0\0\7another fetch's objects")
    stream = packs_module.pack_stream
    monkeypatch.setattr(packs_module, "pack_stream", lambda e, s: stream(e, s)[:20])
    with Repository(repo) as store, pytest.raises(NotWritable), store.packed_writes():
        store.write_blob(b"one\n")
    assert list(pack_dir.iterdir()) == [theirs]


def test_a_repack_while_the_refs_are_written_keeps_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git repack -a -d`` drops a pack no ref reaches: run between the pack and its
    refs (a gc of the user's or a maintenance job), it took every imported task's
    objects. The pack has a ``.keep`` until its refs are written, as a fetch's has."""
    repo = from_template("repo", one_commit, tmp_path / "repo")
    seen: list[list[str]] = []
    update_refs = Repository.update_refs

    def repack_first(self: Repository, *args: object, **kwargs: object) -> object:
        pack_dir = Path(self.common_dir) / "objects" / "pack"
        seen.append(sorted(p.name for p in pack_dir.glob("*.keep")))
        git(repo, "repack", "-a", "-d", "-q")
        return update_refs(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Repository, "update_refs", repack_first)
    with Ledger(repo) as ledger:
        assert len(ledger.import_tasks(issues(COUNT))["created"]) == COUNT
    monkeypatch.undo()
    assert len(seen[0]) == 1  # (held while the refs were written)
    assert list((repo / ".git" / "objects" / "pack").glob("*.keep")) == []
    fsck(repo)
    listed = json.loads(hydrate(repo, "list", "--json").stdout)
    assert len(listed) == COUNT
    git(repo, "gc", "-q", "--prune=now")
    fsck(repo)


def _edited(count: int) -> str:
    """:func:`issues` with every title edited upstream and issue 2's labels changed."""
    items = json.loads(issues(count))
    for item in items:
        item["title"] += " (edited)"
    items[1]["labels"] = [{"name": "enhancement"}]
    return json.dumps(items)


def test_a_big_update_is_one_pack_and_one_transaction(tmp_path: Path) -> None:
    """Re-importing 64 changed issues wrote, one task at a time, 3 loose objects and a
    `git update-ref` process each (3,000: 17 s, 9,000 loose objects): now one pack,
    one ref transaction, each task's new commit on its old tip, a local edit kept."""
    repo = from_template("repo", one_commit, tmp_path / "repo")
    with Ledger(repo) as ledger:
        ledger.import_tasks(issues(COUNT))
        ledger.edit_task("GH-3", objective="Made clearer here.")
        git(repo, "pack-refs", "--all")  # (the edit's ref file and reflog packed away)
        (repo / ".git" / "logs" / "refs" / "hydrate" / "tasks" / "GH-3").unlink()
        tips = {t: ledger.refs.tip(t) for t in ledger.refs.task_ids()}
        before = counts(repo)
        report = ledger.import_tasks(_edited(COUNT))
        assert sorted(report["updated"]) == sorted(tips) and not report["errors"]
        after = counts(repo)
        assert after["packs"] == before["packs"] + 1
        assert after["count"] - before["count"] <= 3  # (the import base's blob, tree, commit)
        for task_id, old in tips.items():
            assert git(repo, "rev-parse", f"refs/hydrate/tasks/{task_id}~1").strip() == (
                old.decode() if old else ""
            )
        # the refs moved inside packed-refs: no ref file and no reflog per task
        dot_git = repo / ".git"
        assert files_under(dot_git / "refs" / "hydrate") == ["imports"]
        assert files_under(dot_git / "logs" / "refs" / "hydrate") == ["imports"]
        assert ledger.get_task("GH-5")["title"] == "Issue number 5 (edited)"
        assert ledger.get_task("GH-3")["objective"] == "Made clearer here."  # (kept: a merge)
        again = ledger.import_tasks(_edited(COUNT))
        assert len(again["unchanged"]) == COUNT and not again["updated"]
    fsck(repo)


def test_a_ref_with_a_reflog_or_a_ref_file_is_moved_by_git(tmp_path: Path) -> None:
    """packed-refs is rewritten only where git would write nothing else: a task with
    a reflog (git appends to it) is moved by git, in a transaction of its own, and
    no longer sends every other task to a loose ref (review8: one checkpoint made a
    re-import of 1,000 write 1,000 ref files)."""
    repo = from_template("repo", one_commit, tmp_path / "repo")
    with Ledger(repo) as ledger:
        ledger.import_tasks(issues(COUNT + 1))  # (64 without a reflog)
        ledger.edit_task("GH-4", objective="Edited here.")  # (a ref file, and a reflog)
        git(repo, "pack-refs", "--all")  # (the ref file packed away: its reflog stays)
        ledger.import_tasks(_edited(COUNT + 1))
        log = git(repo, "reflog", "show", "--format=%gs", "refs/hydrate/tasks/GH-4")
        assert log.splitlines()[0] == "hydrate: import 65 update(s)"
        assert files_under(repo / ".git" / "refs" / "hydrate") == ["imports", "tasks/GH-4"]
        assert git(repo, "rev-parse", "refs/hydrate/tasks/GH-4~1").strip() in git(
            repo, "rev-list", "refs/hydrate/tasks/GH-4"
        )
        assert ledger.get_task("GH-4")["objective"] == "Edited here."
    fsck(repo)


def test_a_task_moved_during_a_big_update_is_merged_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer edits a task between the import's reading and its writing: the
    transaction moves nothing, and every update is then merged on the task as it is
    now, one by one, so neither the edit nor the import's change is lost."""
    from git_hydrate.taskrefs import TaskRefs

    repo = from_template("repo", one_commit, tmp_path / "repo")
    with Ledger(repo) as ledger:
        ledger.import_tasks(issues(COUNT))
    original = TaskRefs.update_many

    def edited_first(self: TaskRefs, *args: object, **kwargs: object) -> object:
        with Ledger(repo) as other:  # (a real second writer, its own repository handle)
            other.edit_task("GH-9", objective="Edited meanwhile.")
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(TaskRefs, "update_many", edited_first)
    with Ledger(repo) as ledger:
        report = ledger.import_tasks(_edited(COUNT))
        assert len(report["updated"]) == COUNT and not report["errors"]
        nine = ledger.get_task("GH-9")
        assert nine["objective"] == "Edited meanwhile." and nine["title"].endswith("(edited)")
        messages = git(repo, "log", "--format=%s", "refs/hydrate/tasks/GH-9").splitlines()
        assert messages[0] == "hydrate: import GH-9"
        assert messages[1].startswith("hydrate: task-edit GH-9")
    fsck(repo)


@pytest.mark.parametrize("count", [1, COUNT])
def test_an_interrupt_while_updates_land_waits_for_their_bases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """review10: an import's updated tasks landed, then (Ctrl-C, SIGTERM) its bases
    did not: the next import merged against the older base, took a local edit made
    since for a change on both sides, and the upstream's title replaced it. A real
    SIGINT delivered as the bases are saved now waits until they have landed (one
    update alone, and many in one transaction)."""
    import signal
    import threading

    from git_hydrate.interop import bases as bases_module

    repo = from_template("repo", one_commit, tmp_path / "repo")
    with Ledger(repo) as ledger:
        ledger.import_tasks(issues(count))
    save = bases_module.Bases.save

    def interrupted(self: bases_module.Bases, summary: str) -> None:
        # (the user's Ctrl-C, at the worst moment; to this thread, as in the command's
        # one-thread process: a test runner's other threads do not hold it)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        save(self, summary)

    monkeypatch.setattr(bases_module.Bases, "save", interrupted)
    v2 = issues(count).replace("Issue number", "Issue no.")
    with pytest.raises(KeyboardInterrupt), Ledger(repo) as ledger:
        ledger.import_tasks(v2)
    monkeypatch.setattr(bases_module.Bases, "save", save)
    assert hydrate(repo, "task-edit", "GH-1", "--title", "My own title").returncode == 0
    with Ledger(repo) as ledger:
        report = ledger.import_tasks(v2)
        assert report["conflicts"] == []
        assert ledger.get_task("GH-1")["title"] == "My own title"


def test_updates_another_import_wrote_first_are_not_reported_as_this_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review10: three imports of one file at once each said "40 updated" while each
    task had one import commit: a task moved by the other import (a race here, written
    again alone) was judged against the tip this run first read. Now a run counts an
    update only when its own write changed the task."""
    from git_hydrate.taskrefs import TaskRefs

    repo = from_template("repo", one_commit, tmp_path / "repo")
    with Ledger(repo) as ledger:
        ledger.import_tasks(issues(COUNT))
    v2 = issues(COUNT).replace("Issue number", "Issue no.")
    update_many = TaskRefs.update_many
    others: list[dict[str, list[str]]] = []
    started: list[bool] = []

    def after_another(self: TaskRefs, *args: object) -> object:
        if not started:  # (the other import writes first, between the read and the write)
            started.append(True)
            with Ledger(repo) as other:
                others.append(dict(other.import_tasks(v2)))
        return update_many(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(TaskRefs, "update_many", after_another)
    with Ledger(repo) as ledger:
        report = ledger.import_tasks(v2)
    assert len(others[0]["updated"]) == COUNT
    assert (report["updated"], len(report["unchanged"])) == ([], COUNT)
