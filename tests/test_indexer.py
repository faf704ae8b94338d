"""A first task's word index built by a process forked before the listing
(issue 33, a first task's memory): the outputs, caches and index are byte for
byte those of one process, and a child that fails, hangs or answers wrongly
leaves the index to this process, with the same outputs. (Run where this
process may fork: ``tests/test_forked.py`` runs this file in a process of its
own, ``-n 0``.)"""

from __future__ import annotations

import os
import select
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from git_hydrate.hydrate import forked, indexer, tree
from git_hydrate.hydrate.forked import can_fork
from git_hydrate.hydrate.kept import Whereabouts
from git_hydrate.store import Repository
from tests.conftest import git, hydrate
from tests.test_forked import _derived, _first_task, _tree

needs_fork = pytest.mark.skipif(not can_fork(), reason="no second process here")


def _forced(monkeypatch: pytest.MonkeyPatch) -> list[indexer.Indexer]:
    """Fork the indexer for any tree; the children forked, listed."""
    monkeypatch.setattr(indexer, "MIN_FILES", 0)
    started: list[indexer.Indexer] = []
    forked = indexer.Indexer.forked.__func__  # type: ignore[attr-defined]

    def recorded(cls: type[indexer.Indexer], repo: Repository) -> indexer.Indexer | None:
        made: indexer.Indexer | None = forked(cls, repo)
        if made is not None:
            started.append(made)
        return made

    monkeypatch.setattr(indexer.Indexer, "forked", classmethod(recorded))
    return started


def _alone(monkeypatch: pytest.MonkeyPatch, where: Path) -> tuple[tuple[str, str, str], str]:
    """The first task and a second one's prompt, with the index built here."""
    with monkeypatch.context() as patched:
        patched.setattr(tree, "start_indexer", lambda repo, tree: None)
        return _first_task(where), _second_task(where)


def _second_task(repo: Path) -> str:
    """A new task on the tree just indexed (served by the kept index): its prompt."""
    out = hydrate(repo, "task-add", "T-2", "--objective", "session schema", "--acceptance", "ok")
    assert out.returncode == 0, out
    added = hydrate(repo, "add-tree", "T-2", "--prompt", "--max-bytes", "4096")
    assert added.returncode == 0, added
    return added.stdout


def _answers(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each :meth:`indexer.Indexer.keep` returned (the index read from the
    child's file, or ``None``), listed."""
    answers: list[object] = []
    keep = indexer.Indexer.keep

    def kept(self: indexer.Indexer, *args: object) -> object:
        answers.append(keep(self, *args))  # type: ignore[arg-type]
        return answers[-1]

    monkeypatch.setattr(indexer.Indexer, "keep", kept)
    return answers


def _shrunk_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipe to the child shrunk to a page, so this process can be at most a
    page and a chunk ahead of what the child took. (Shrunk here, before anything
    is written: shrunk by the child, the pipe could take everything first when
    the child starts late.)"""
    import fcntl

    take = indexer.Indexer.take

    def shrunk(self: indexer.Indexer, paths: list[str]) -> object:
        fcntl.fcntl(self._down, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
        return take(self, paths)

    monkeypatch.setattr(indexer.Indexer, "take", shrunk)


def _reaped(children: list[indexer.Indexer], pids: list[int]) -> None:
    assert all(child.pid is None for child in children)
    for pid in pids:
        with pytest.raises(ChildProcessError):  # (reaped: no process left behind)
            os.waitpid(pid, os.WNOHANG)


@needs_fork
def test_an_index_built_by_a_child_is_byte_for_byte_one_process(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(repo)
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    children = _forced(monkeypatch)
    kept: list[object] = []
    keep = indexer.Indexer.keep

    def counted(self: indexer.Indexer, *args: object) -> object:
        pid = self.pid
        kept.append((pid, keep(self, *args)))  # type: ignore[arg-type]
        return kept[-1][1]

    monkeypatch.setattr(indexer.Indexer, "keep", counted)
    monkeypatch.setattr(forked, "MIN_ITEMS", 0)  # (the reader forked too, as at scale)
    shared = _first_task(repo)
    [(pid, index)] = kept
    assert pid is not None and index is not None  # (the child built and kept it)
    derived = _derived(repo)
    second = _second_task(repo)
    assert len(kept) == 1  # (the second task's index: the kept one, no child)
    assert _alone(monkeypatch, alone) == (shared, second)
    assert _derived(alone) == derived
    assert any(name.startswith("rank-index/") for name in derived)
    _reaped(children, [pid])


def _exits_at_once(repo: Repository, down: int, up: int, parent: int) -> None:
    os._exit(0)


def _hangs(repo: Repository, down: int, up: int, parent: int) -> None:
    indexer.detach(parent, down, up)
    while True:
        os.read(down, 1 << 20)  # (takes everything, answers nothing)


@needs_fork
@pytest.mark.parametrize("child", [_exits_at_once, _hangs, None])
def test_a_child_that_fails_leaves_the_index_to_this_process(
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    child: Callable[..., None] | None,
) -> None:
    """The child ends before it reads, hangs without answering, or answers where
    an index lies that is not the file there (``None``: a wrong inode): nothing is
    read where it said; this process ranks from the facts saved and keeps an index
    (built in path order: the order of the words in a bucket may differ), or, for
    the wrong inode, loads the file the child kept whole, CRC checked; the outputs,
    a second task's too, are those of one process."""
    _tree(repo)
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    children = _forced(monkeypatch)
    pids: list[int] = []
    if child is not None:
        monkeypatch.setattr(indexer, "_serve", child)
    else:
        of = Whereabouts.of.__func__  # type: ignore[attr-defined]

        def elsewhere(cls: type[Whereabouts], index: object) -> Whereabouts | None:
            where: Whereabouts | None = of(cls, index)
            if where is not None:
                where.inode += 1
            return where

        monkeypatch.setattr(Whereabouts, "of", classmethod(elsewhere))
    monkeypatch.setattr(indexer, "PATIENCE", 1)
    take = indexer.Indexer.take

    def taken(self: indexer.Indexer, paths: list[str]) -> object:
        pids.append(self.pid or 0)
        return take(self, paths)

    monkeypatch.setattr(indexer.Indexer, "take", taken)
    answers = _answers(monkeypatch)
    shared = _first_task(repo), _second_task(repo)
    assert children and pids
    assert answers == [None]  # (no index read where the child said)
    derived = _derived(repo)
    assert _alone(monkeypatch, alone) == shared
    alone_derived = _derived(alone)
    assert alone_derived.keys() == derived.keys()
    for name, data in derived.items():
        assert name.startswith("rank-index/") or alone_derived[name] == data, name
    assert any(name.startswith("rank-index/") for name in derived)
    _reaped(children, pids)


@needs_fork
def test_a_small_tree_forks_no_indexer(repo: Path) -> None:
    """The work tree's index lists fewer than MIN_FILES files: no child; and a
    child given fewer paths than that ends at once."""
    _tree(repo)
    with Repository(repo) as opened:
        assert indexer.start(opened, "0" * 40) is None
        child = indexer.Indexer.forked(opened)
        assert child is not None
        pid = child.pid
        assert child.take(["a.py", "b.py"]) is None
        _reaped([child], [pid or 0])


@needs_fork
def test_a_child_gone_while_reading_leaves_no_blob_read_twice(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child ends early (found gone at the run's next write): the files read
    after that are still known as read, so no blob is tokenised more often than
    in one process (none read again through git), and the index is kept here."""
    from git_hydrate.hydrate import building, reading

    _tree(repo)
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    tokenised: list[int] = []
    for module in (reading, building):
        facts_of = module.blob_facts

        def counted(data: bytes, facts_of: Callable[[bytes], object] = facts_of) -> object:
            tokenised.append(len(data))
            return facts_of(data)

        monkeypatch.setattr(module, "blob_facts", counted)
    _alone(monkeypatch, alone)
    in_one = len(tokenised)
    tokenised.clear()
    children = _forced(monkeypatch)

    def dies_early(repo_: Repository, down: int, up: int, parent: int) -> None:
        indexer.detach(parent, down, up)
        for taken, _message in enumerate(indexer._messages(down)):
            if taken == 20:  # (the paths and 19 blobs' facts)
                os._exit(1)

    monkeypatch.setattr(indexer, "_serve", dies_early)
    monkeypatch.setattr(indexer, "_CHUNK", 1 << 10)  # (written, and found gone, early)
    _shrunk_pipe(monkeypatch)  # (else a child scheduled late finds all written first)
    answers = _answers(monkeypatch)
    _first_task(repo)
    assert children and answers == []  # (gone before it was asked to keep)
    assert in_one > 100 and len(tokenised) == in_one
    assert any(name.startswith("rank-index/") for name in _derived(repo))
    _reaped(children, [])


@needs_fork
def test_a_child_that_takes_nothing_is_given_up(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child reads nothing (its pipe shrunk to a page): this process waits for
    room at most PATIENCE seconds, gives it up, and makes what one process makes."""
    _tree(repo)
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    children = _forced(monkeypatch)
    monkeypatch.setattr(indexer, "PATIENCE", 1)
    monkeypatch.setattr(indexer, "_CHUNK", 1 << 10)  # (written in small parts: past the page)
    waits: list[tuple[int, bool]] = []
    waited = indexer._waited

    def counted(fd: int, event: int) -> bool:
        waits.append((event, waited(fd, event)))
        return waits[-1][1]

    def stuck(repo: Repository, down: int, up: int, parent: int) -> None:
        indexer.detach(parent, down, up)
        while True:  # (takes nothing; ended by this process, which kills it)
            time.sleep(60)  # (not a read of ``up``, the pipe's write end: that fails)

    monkeypatch.setattr(indexer, "_waited", counted)
    monkeypatch.setattr(indexer, "_serve", stuck)
    _shrunk_pipe(monkeypatch)
    shared = _first_task(repo), _second_task(repo)
    assert (select.POLLOUT, False) in waits  # (gave up waiting for room)
    assert _alone(monkeypatch, alone) == shared
    _reaped(children, [])


@needs_fork
def test_a_child_killed_while_it_writes_leaves_no_temporary(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed (here: given up after PATIENCE) while it writes the index, the child
    leaves its temporary file behind; this process removes it."""
    _tree(repo)
    children = _forced(monkeypatch)
    monkeypatch.setattr(indexer, "PATIENCE", 1)
    folder = repo / ".git" / "hydrate" / "rank-index"

    def half_written(repo_: Repository, down: int, up: int, parent: int) -> None:
        indexer.detach(parent, down, up)
        for kind, _body in indexer._messages(down):
            if kind == b"K":
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{'0' * 40}.{os.getpid()}.00ff00ff.tmp").write_bytes(b"half")
                threading.Event().wait()

    monkeypatch.setattr(indexer, "_serve", half_written)
    _first_task(repo)
    assert children
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    assert [p.name for p in folder.iterdir()]  # (the index, kept by this process)
    _reaped(children, [])


@needs_fork
@pytest.mark.parametrize("beat", [0.05, 60.0])
def test_a_child_that_keeps_slowly_is_waited_for_while_it_beats(
    repo: Path, monkeypatch: pytest.MonkeyPatch, beat: float
) -> None:
    """Keeping the index takes longer than PATIENCE (each table's parts slowed):
    while the child sends signs of life this process waits and reads the index it
    kept; a child silent for PATIENCE seconds is given up (the index kept here)."""
    from git_hydrate.hydrate import indexing

    _tree(repo)
    children = _forced(monkeypatch)
    monkeypatch.setattr(indexer, "PATIENCE", 1)
    monkeypatch.setattr(indexer, "_BEAT", beat)
    streamed = indexing.keep_streamed

    def slowly(parts: Iterator[bytes]) -> Iterator[bytes]:
        for part in parts:
            threading.Event().wait(0.3)
            yield part

    def slow(
        repo_: Repository, tree_: str, files: object, head: object, tables: list[Iterator[bytes]]
    ) -> object:
        return streamed(repo_, tree_, files, head, [slowly(table) for table in tables])  # type: ignore[arg-type]

    monkeypatch.setattr(indexing, "keep_streamed", slow)
    answers = _answers(monkeypatch)
    _first_task(repo)
    assert children and len(answers) == 1
    assert (answers[0] is not None) == (beat < 1)  # (read from the child's file, or not)
    _reaped(children, [])


@needs_fork
def test_the_work_trees_index_tells_the_size(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The work tree's index counts the files (``GIT_INDEX_FILE`` names it): below
    MIN_FILES no child; no index at all (a bare repository): a child, which takes
    the count after listing."""
    _tree(repo)
    with Repository(repo) as opened:
        assert indexer._listed(opened) == len(git(repo, "ls-files").splitlines())
        monkeypatch.setattr(indexer, "MIN_FILES", 3)
        other = repo / ".git" / "other-index"
        monkeypatch.setenv("GIT_INDEX_FILE", str(other))
        root = git(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]
        git(repo, "read-tree", root)  # (the first commit: the template's few files)
        listed = indexer._listed(opened)
        assert listed is not None and 0 < listed < 3
        assert indexer.start(opened, "0" * 40) is None
        other.unlink()
        assert indexer._listed(opened) is None
        child = indexer.start(opened, "0" * 40)
        assert child is not None
        pid = child.pid
        child.close()
        _reaped([child], [pid or 0])


def test_a_sparse_index_does_not_tell_the_size(repo: Path) -> None:
    """A sparse index holds a folder outside the sparse checkout as one entry: its
    header undercounts the files, so it tells nothing (the count is taken after
    listing)."""
    _tree(repo)
    files = len(git(repo, "ls-files").splitlines())
    git(repo, "checkout", "--", ".")  # (a folder with a changed file is not collapsed)
    git(repo, "sparse-checkout", "set", "--cone", "docs")
    git(repo, "sparse-checkout", "reapply", "--sparse-index")
    with Repository(repo) as opened:
        assert indexer._listed(opened) is None
    with (repo / ".git" / "index").open("rb") as index:
        assert int.from_bytes(index.read(12)[8:12], "big") < files  # (as git wrote it)


@needs_fork
def test_an_interrupt_during_the_fork_leaves_no_child(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt that arrives as the child is forked is held until the parent
    has recorded it, then let through: the child, which nobody will use, is ended
    and reaped as the interrupt unwinds (not left blocked on its pipe)."""
    import signal

    _tree(repo)
    forked_pids: list[int] = []
    fork = indexer.fork

    def interrupted() -> int:
        pid = fork()
        if pid > 0:
            forked_pids.append(pid)
            os.kill(os.getpid(), signal.SIGINT)  # (held: let through after the block)
        return pid

    monkeypatch.setattr(indexer, "fork", interrupted)
    with Repository(repo) as opened, pytest.raises(KeyboardInterrupt):
        indexer.Indexer.forked(opened)
    assert forked_pids
    _reaped([], forked_pids)
