"""A first task's word index built by a process forked before the listing
(issue 33, a first task's memory): the outputs, caches and index are byte for
byte those of one process, and a child that fails, hangs or answers wrongly
leaves the index to this process, with the same outputs. (Run where this
process may fork: ``tests/test_forked.py`` runs this file in a process of its
own, ``-n 0``.)"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from git_hydrate.hydrate import indexer, tree
from git_hydrate.hydrate.forked import can_fork
from git_hydrate.hydrate.index import Whereabouts
from git_hydrate.store import Repository
from tests.conftest import hydrate
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
    an index lies that is not the file there (``None``: a wrong inode): no index
    is read from it; this process ranks from the facts saved and keeps an index
    (built in path order: the order of the words in a bucket may differ), and
    the outputs, a second task's too, are those of one process."""
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
    shared = _first_task(repo), _second_task(repo)
    assert children and pids
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
