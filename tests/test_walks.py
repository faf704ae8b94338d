"""add-tree's walks of a tree or directory: any depth, files that come and go.

A committed tree, a work tree or a plain directory thousands of folders deep is
walked without a call per level (Python's recursion limit is 1,000 frames).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.hydrate import sources
from git_hydrate.hydrate.rules import FileEntry, Skipped
from git_hydrate.hydrate.sources import list_directory
from git_hydrate.store import BeyondSymlink, ConfinedTree
from tests.conftest import Result, fsck, git, hydrate

TASK = "T-1"
#: Deeper than Python's recursion limit, with one-character folder names: the
#: path (about 2,200 characters) stays under PATH_MAX.
DEPTH = 1100


_MADE: list[Path] = []


@pytest.fixture(autouse=True)
def _removed_after() -> Iterator[None]:
    """Each deep folder removed after its test by rm, which walks without a call per
    level: pytest's own clean-up of an old run (shutil.rmtree) recurses once per
    level, and a later run's start failed on it with RecursionError."""
    yield
    while _MADE:
        subprocess.run(["rm", "-rf", "--", str(_MADE.pop())], check=False)


def _deep(top: Path, depth: int = DEPTH) -> str:
    """``a/a/…/a/leaf.py`` made below ``top``, ``depth`` folders deep: its path."""
    folder = top
    folder.mkdir(exist_ok=True)
    _MADE.append(top / "a")
    for _ in range(depth):  # (not os.makedirs: it calls itself once per level)
        folder /= "a"
        folder.mkdir()
    (folder / "leaf.py").write_text("x = 1\n")
    return "a/" * depth + "leaf.py"


def _task(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, objective="o", acceptance="a")


def _reasons(stdout: str) -> dict[str, str]:
    return {item["path"]: item["reason"] for item in json.loads(stdout)["skipped"]}


def test_a_confined_tree_opens_a_folder_thousands_deep(tmp_path: Path) -> None:
    assert sys.getrecursionlimit() < DEPTH
    top = tmp_path / "top"
    leaf = _deep(top).encode()
    (top / "a" / "a" / "b").mkdir()
    (top / "a" / "a" / "b" / "f").write_text("near\n")
    (top / "a" / "l").symlink_to(top / "a")
    with ConfinedTree(top) as files:
        assert files.read(leaf, 100) == b"x = 1\n"
        assert files.lstat(leaf).st_size == 6
        # (the deepest folders are kept, the top's closed: reached again from the top)
        assert files.read(b"a/a/b/f", 100) == b"near\n"
        assert files.read(leaf, 100) == b"x = 1\n"
        # a link on the way is refused however deep what follows it is
        with pytest.raises(BeyondSymlink):
            files.read(b"a/l/" + leaf[2:], 100)
        made = files.folder_fd(leaf.rpartition(b"/")[0] + b"/new/er", make=True)
        os.close(os.open("x", os.O_WRONLY | os.O_CREAT, dir_fd=made))
    assert (top / leaf.decode()).parent.joinpath("new", "er", "x").is_file()


def test_add_tree_of_a_tree_thousands_deep(repo: Path) -> None:
    leaf = _deep(repo)
    (repo / "top.py").write_text("top = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "deep")
    _task(repo)
    for source in ([], ["--worktree"]):
        result = hydrate(repo, "add-tree", TASK, *source, "--json")
        assert result.returncode == 0, result
        assert result.stderr == ""
        # (its path is too long to be a source label: read, then refused for that)
        assert _reasons(result.stdout) == {leaf: "bad_path"}
    fsck(repo)


def test_add_tree_dir_of_a_directory_thousands_deep(repo: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    leaf = _deep(data)
    (data / "a" / "top.py").write_text("top = 1\n")
    (data / "a" / "a" / ".hidden").mkdir()
    entries, skipped = list_directory(str(data))
    assert [e.path for e in entries] == [leaf, "a/top.py"]
    assert [(s.path, s.reason) for s in skipped] == [("a/a/.hidden/", "skipped_dir")]
    _task(repo)
    result = hydrate(repo, "add-tree", TASK, "--dir", str(data), "--json")
    assert result.returncode == 0, result
    assert result.stderr == ""
    assert json.loads(result.stdout)["added"] == 1
    assert _reasons(result.stdout)[leaf] == "bad_path"


def test_a_directory_walk_keeps_its_order(tmp_path: Path) -> None:
    """Skipped folders in the walk's order (each folder's entries by name, a folder's
    contents before its next sibling); files by path."""
    data = tmp_path / "data"
    for folder in ("b/.git", "b/c/node_modules", "b/.d", "a-b/.x", "a/.y", ".z", "a/b/.w"):
        (data / folder).mkdir(parents=True)
    for name in ("a/b/f", "a-b/g", "b/c/h", "a/i", "j"):
        (data / name).write_text(f"{name}\n")
    entries, skipped = list_directory(str(data))
    assert [e.path for e in entries] == ["a-b/g", "a/b/f", "a/i", "b/c/h", "j"]
    assert [s.path for s in skipped] == [
        ".z/",
        "a/.y/",
        "a/b/.w/",
        "a-b/.x/",
        "b/.d/",
        "b/.git/",
        "b/c/node_modules/",
    ]


# -- files that come and go while a directory is walked -------------------------------------


def _vanishing(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "keep.py").write_text("kept = 1\n")
    (data / "sub" / "tmp1.py").write_text("gone = 1\n")
    (data / "tmp2.py").write_text("gone = 2\n")
    return data


def _two_gone(repo: Path, data: Path) -> Result:
    """``add-tree --dir`` of :func:`_vanishing`'s folder, both temporary files gone
    on the way: each reported ``unreadable``, and nothing said on stderr."""
    _task(repo)
    result = hydrate(repo, "add-tree", TASK, "--dir", str(data), "--json")
    assert result.returncode == 0, result
    assert result.stderr == ""
    assert _reasons(result.stdout) == {"sub/tmp1.py": "unreadable", "tmp2.py": "unreadable"}
    return result


def test_a_file_gone_while_its_directory_is_walked_is_unreadable(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file listed by its directory and gone before its size is read (a build's
    temporary file) is reported ``unreadable``, as one gone before it is read is."""
    data = _vanishing(tmp_path)
    listed = sources._children

    def listed_then_removed(
        directory: bytes, rel: bytes, skipped: list[Skipped]
    ) -> list[os.DirEntry[bytes]]:
        children = listed(directory, rel, skipped)
        for child in children:
            if child.name.startswith(b"tmp"):
                os.unlink(child.path)
        return children

    monkeypatch.setattr(sources, "_children", listed_then_removed)
    result = _two_gone(repo, data)
    assert json.loads(result.stdout)["added"] == 1
    fsck(repo)


def test_a_file_gone_before_it_is_read_is_unreadable(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _vanishing(tmp_path)
    walk = sources.list_directory

    def walked_then_removed(root: str) -> tuple[list[FileEntry], list[Skipped]]:
        found = walk(root)
        (data / "sub" / "tmp1.py").unlink()
        (data / "tmp2.py").unlink()
        return found

    monkeypatch.setattr(sources, "list_directory", walked_then_removed)
    _two_gone(repo, data)
