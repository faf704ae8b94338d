"""Kept path verdicts: a known tree's paths are not judged again, and the files let
through and skipped (with their reasons) are those the rules give path by path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.hydrate import pathmarks
from git_hydrate.hydrate.attributes import tree_attribute_rules
from git_hydrate.hydrate.listings import tree_entries
from git_hydrate.hydrate.pathmarks import skipped_paths
from git_hydrate.hydrate.rules import FileEntry, Skipped
from git_hydrate.hydrate.tree import _judged
from git_hydrate.store import Repository
from git_hydrate.store.keyed import check_line
from tests.conftest import commit_files, git

FILES = {
    ".gitattributes": "gen/** linguist-generated\n*.dat binary\n",
    "src/app.py": "app = 1\n",
    "src/big.py": "x = 1\n" * 200,
    "src/empty.py": "",
    "node_modules/lib/index.js": "lib()\n",
    "logo.png": "not really a png\n",
    "package-lock.json": "{}\n",
    "M-1/M-1.prompt.md": "# Task M-1\n",
    "bad\tname.py": "tab = 1\n",
    "gen/api_models.py": "generated = True\n",
    "blob.dat": "data\n",
    "docs/guide.md": "# Guide\n",
}


def _tree(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}").strip()


def _kept(repo: Path) -> Path:
    return repo / ".git" / "hydrate" / "tree-paths"


def _stock(repo: Path) -> None:
    commit_files(repo, FILES, "files")
    os.symlink("src/app.py", repo / "link.py")
    git(repo, "add", "link.py")
    git(repo, "commit", "-q", "-m", "link")


Judged = tuple[list[FileEntry], list[Skipped]]


def _judgements(repo: Path, limits: tuple[int, int]) -> tuple[Judged, Judged, set[str] | None]:
    """(with the tree's path verdicts, judging every path, the verdicts) at HEAD."""
    tree = _tree(repo)
    with Repository(repo) as store:
        listed = tree_entries(store, tree)
        marked = tree_attribute_rules(store, tree, listed, listed)
        marks = skipped_paths(store, tree, listed, listed)
        return _judged(listed, limits, marked, marks), _judged(listed, limits, marked, None), marks


@pytest.mark.parametrize("limits", [(1 << 20, 10 << 20), (100, 10 << 20), (1 << 20, 100)])
def test_kept_verdicts_judge_as_the_rules_do(repo: Path, limits: tuple[int, int]) -> None:
    _stock(repo)
    for _ in range(2):  # (judged and kept, then read back)
        kept, judged, marks = _judgements(repo, limits)
        assert kept == judged
        assert marks == {
            "node_modules/lib/index.js",
            "logo.png",
            "package-lock.json",
            "M-1/M-1.prompt.md",
            "bad\tname.py",
        }
    assert os.listdir(_kept(repo)) == [_tree(repo)]
    taken = [entry.path for entry in kept[0]]
    reasons = {skip.path: skip.reason for skip in kept[1]}
    assert reasons["link.py"] == "symlink" and reasons["src/empty.py"] == "empty"
    assert reasons["gen/api_models.py"] == "generated" and reasons["blob.dat"] == "binary"
    assert ("src/big.py" in taken) is (limits[0] > 1200 and limits[1] > 1200)


_PIECES = st.sampled_from(
    ["src", "node_modules", "a", "b.py", ".png", "x.min.js", "package-lock.json", "M-1",
     "M-1.prompt.md", "\t", "build", ".py", "-"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_PIECES, min_size=1, max_size=4).map("/".join),
            st.sampled_from(["file", "file", "file", "symlink", "submodule", "unreadable"]),
            st.integers(0, 300),
            st.booleans(),
        ),
        max_size=12,
        unique_by=lambda row: row[0],
    ),
    st.integers(1, 300),
    st.integers(1, 300),
)
def test_a_path_let_through_is_one_the_rules_take(
    rows: list[tuple[str, str, int, bool]], max_file: int, max_total: int
) -> None:
    """Whatever the kinds, sizes, attribute marks and limits, the entries let through
    by their path's verdict being kept are those every rule judged one by one would
    let through, and the others are skipped for the same reasons, in order."""
    entries = [FileEntry(path, size, kind) for path, kind, size, _marked in rows]
    marked = {path: "generated" for path, _kind, _size, by_attribute in rows if by_attribute}
    marks = {path for path, *_ in rows if pathmarks._judged(path)}
    limits = (max_file, max_total)
    assert _judged(entries, limits, marked, marks) == _judged(entries, limits, marked, None)


def test_the_kept_verdicts_are_used_without_judging(repo: Path) -> None:
    """A kept answer is what a known tree gets: shown by one planted (and private)."""
    _stock(repo)
    _judgements(repo, (1 << 20, 10 << 20))
    tree = _tree(repo)
    with Repository(repo) as store:
        listed = tree_entries(store, tree)
        pathmarks._keep(store, tree, pathmarks._rules(), {"docs/guide.md"})
        assert skipped_paths(store, tree, listed, listed) == {"docs/guide.md"}
        # (only a part of a tree not kept is asked: its paths are judged by the caller)
        pathmarks._keep(store, tree, "another", set())
        assert skipped_paths(store, tree, listed, listed[:3]) is None
        assert skipped_paths(store, tree, listed, listed) == _judgements(repo, (1, 1))[2]


def test_a_damaged_foreign_or_stale_answer_is_a_miss(repo: Path) -> None:
    _stock(repo)
    _judgements(repo, (1 << 20, 10 << 20))
    path = _kept(repo) / _tree(repo)
    good = path.read_bytes()
    other_rules = pathmarks._encoder.encode(pathmarks._Kept("0" * 64, []))
    damaged = [
        b"",
        good[: len(good) // 2],
        good[:-1] + bytes([good[-1] ^ 1]),
        b"# git-hydrate tree-paths 0\n" + good.split(b"\n", 1)[1],
        pathmarks.HEADER + b"00000000\n" + b"\xc1garbage",
        pathmarks.HEADER + check_line(b"\xc1") + b"\xc1",
        pathmarks.HEADER + check_line(other_rules) + other_rules,  # (older rules)
        b"\x00" * 64,
    ]
    for data in damaged:
        path.write_bytes(data)
        os.chmod(path, 0o600)
        kept, judged, marks = _judgements(repo, (1 << 20, 10 << 20))
        assert kept == judged and marks is not None and "logo.png" in marks
        assert path.read_bytes() == good  # (judged again and rewritten)
    rules = pathmarks._rules()
    planted = pathmarks._encoder.encode(pathmarks._Kept(rules, []))
    path.write_bytes(pathmarks.HEADER + check_line(planted) + planted)
    os.chmod(path, 0o664)  # another user could have written it: not trusted
    kept, judged, marks = _judgements(repo, (1 << 20, 10 << 20))
    assert kept == judged and marks is not None and "logo.png" in marks


def test_answers_kept_are_bounded(repo: Path) -> None:
    trees = []
    for i in range(pathmarks.MAX_TREES + 3):
        commit_files(repo, {f"f{i}.png": "x\n", f"f{i}.py": "y\n"}, f"c{i}")
        trees.append(_tree(repo))
        kept, judged, marks = _judgements(repo, (1 << 20, 10 << 20))
        assert kept == judged and marks == {f"f{j}.png" for j in range(i + 1)}
    left = sorted(os.listdir(_kept(repo)))
    assert len(left) == pathmarks.MAX_TREES
    assert trees[-1] in left
    assert trees[0] not in left
