"""Kept tree listings: a known tree is not listed again, a near one costs its diff."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from git_hydrate.hydrate import listings
from git_hydrate.hydrate.sources import list_tree
from git_hydrate.store import Repository
from git_hydrate.store.keyed import check_line
from tests.conftest import commit_files, damaged_beside_a_copy, git, hydrate, next_task_runs


def _tree(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", f"{rev}^{{tree}}").strip()


def _listed(repo: Path, tree: str) -> list[object]:
    """What ``git ls-tree -r -l`` says of ``tree`` (the reference)."""
    with Repository(repo) as store:
        return list(list_tree(store.ls_tree(tree)))


def _kept(repo: Path) -> list[str]:
    folder = repo / ".git" / "hydrate" / "tree-listings"
    return sorted(os.listdir(folder)) if folder.exists() else []


def _stock(repo: Path) -> None:
    files = {
        "a.txt": "a\n",
        "a/b.py": "b = 1\n",
        "a-b/c.md": "c\n",
        "a0": "zero\n",
        "deep/er/still/x.py": "x\n",
        "sp ace/é.txt": "accent\n",
    }
    commit_files(repo, files, "first")
    os.symlink("a.txt", repo / "link")
    git(repo, "add", "link")
    git(repo, "commit", "-q", "-m", "link")


def test_a_tree_is_listed_as_ls_tree_lists_it_then_kept(repo: Path) -> None:
    _stock(repo)
    tree = _tree(repo)
    with Repository(repo) as store:
        first = listings.tree_entries(store, tree)
    assert first == _listed(repo, tree)
    assert _kept(repo) == [tree]
    with Repository(repo) as store:
        again = listings.tree_entries(store, tree)
    assert again == first


def test_a_near_tree_is_the_kept_one_patched_by_the_diff(repo: Path) -> None:
    """Added, modified, deleted, a file become a directory, a type change, a
    submodule: entry for entry what ls-tree gives."""
    _stock(repo)
    base = _tree(repo)
    with Repository(repo) as store:
        listings.tree_entries(store, base)
    (repo / "a.txt").write_text("changed\n")
    (repo / "a0").unlink()
    os.mkdir(repo / "a0")
    (repo / "a0" / "inside.py").write_text("in\n")
    (repo / "new.bin").write_bytes(b"\0\1" * 300)
    os.unlink(repo / "link")
    (repo / "link").write_text("now a file\n")
    git(repo, "rm", "-q", "deep/er/still/x.py")
    git(repo, "add", "-A")
    sub = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub},vendor/mod")
    git(repo, "commit", "-q", "-m", "second")
    tree = _tree(repo)
    with Repository(repo) as store:
        patched = listings.tree_entries(store, tree)
    assert patched == _listed(repo, tree)
    assert sorted(_kept(repo)) == sorted([base, tree])
    assert any(e.kind == "submodule" for e in patched)


def test_a_damaged_or_foreign_listing_is_a_miss(repo: Path) -> None:
    _stock(repo)
    tree = _tree(repo)
    with Repository(repo) as store:
        listings.tree_entries(store, tree)
    kept = repo / ".git" / "hydrate" / "tree-listings" / tree
    kept.write_bytes(listings.HEADER + b"\xc1 not msgpack")
    with Repository(repo) as store:
        assert listings.tree_entries(store, tree) == _listed(repo, tree)
    for row in ((b"a.txt", 9, b"\1" * 20, 2), (b"a.txt", 0, b"\1" * 19, 2)):
        body = msgspec.msgpack.encode([row])  # its check right, an entry out of shape
        kept.write_bytes(listings.HEADER + check_line(body) + body)
        with Repository(repo) as store:
            assert listings.tree_entries(store, tree) == _listed(repo, tree)
    kept.chmod(0o644)  # readable by others: not trusted, so listed again
    with Repository(repo) as store:
        assert listings.tree_entries(store, tree) == _listed(repo, tree)


def test_only_the_trees_used_last_are_kept(repo: Path) -> None:
    trees = []
    for n in range(listings.MAX_TREES + 2):
        commit_files(repo, {f"f{n}.txt": f"{n}\n"}, f"c{n}")
        trees.append(_tree(repo))
        with Repository(repo) as store:
            assert listings.tree_entries(store, trees[-1]) == _listed(repo, trees[-1])
    assert sorted(_kept(repo)) == sorted(trees[-listings.MAX_TREES :])


def test_a_kept_tree_git_pruned_is_no_neighbour(repo: Path) -> None:
    """The newest kept listing's tree is gone (unreachable, pruned): the next tree
    is listed whole, as ls-tree lists it."""
    commit_files(repo, {"gone.txt": "soon unreachable\n"}, "to drop")
    gone = _tree(repo)
    with Repository(repo) as store:
        listings.tree_entries(store, gone)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert git(repo, "cat-file", "-t", gone, check=False) == ""
    commit_files(repo, {"kept.txt": "here\n"}, "new")
    tree = _tree(repo)
    with Repository(repo) as store:
        assert listings.tree_entries(store, tree) == _listed(repo, tree)


def _swapped_ids(data: bytes, first: str, second: str) -> bytes:
    a, b = bytes.fromhex(first), bytes.fromhex(second)
    assert data.count(a) == data.count(b) == 1
    return data.replace(a, b"\0" * len(a)).replace(b, a).replace(b"\0" * len(a), b)


#: Ways a kept listing is damaged (the ids of a.txt and b.txt given): each a miss.
LISTING_DAMAGES = {
    "two ids swapped": lambda data, a, b: _swapped_ids(data, a, b),
    "a byte of an id": lambda data, a, b: data.replace(
        bytes.fromhex(a), bytes.fromhex(a)[:-1] + bytes([bytes.fromhex(a)[-1] ^ 1])
    ),
    "cut short": lambda data, a, b: data[:-1],
    "a byte more": lambda data, a, b: data + b"\0",
    "the check": lambda data, a, b: data.replace(listings.HEADER, listings.HEADER + b"0", 1),
    "no check": lambda data, a, b: data.replace(b"\n", b" ", 2),
}


#: One moment for every commit: two runs that record the same make the same commits.


@pytest.mark.parametrize("damage", list(LISTING_DAMAGES))
def test_a_damaged_listing_is_a_miss_and_attaches_nothing_wrong(
    repo: Path, tmp_path: Path, damage: str
) -> None:
    """The next task of a tree whose kept listing was damaged attaches and prints
    exactly what it would have without the damage (not b.txt's body under a.txt,
    nor an error naming a blob that is not there), and the listing is kept anew."""
    commit_files(repo, {"a.txt": "alpha body\n", "b.txt": "beta body\n"})
    oids = [git(repo, "rev-parse", f"HEAD:{name}").strip() for name in ("a.txt", "b.txt")]
    assert (
        hydrate(repo, "task-add", "L-1", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    assert hydrate(repo, "add-tree", "L-1").returncode == 0
    (kept,) = (repo / ".git" / "hydrate" / "tree-listings").iterdir()
    clean = tmp_path / "clean"
    good = damaged_beside_a_copy(
        repo, clean, kept, lambda data: LISTING_DAMAGES[damage](data, *oids)
    )
    runs = [next_task_runs(where, "L-2") for where in (repo, clean)]
    assert runs[0] == runs[1]
    assert runs[0][2][0] == 0 and "alpha body" in runs[0][2][1]
    assert kept.read_bytes() == good  # listed again, and kept


def _columns(rows: list[tuple[bytes, int, bytes, int]], cut: int = -1) -> bytes:
    """A listing's body of ``rows`` as layout 3 holds them (the test's own encoding);
    ``cut``: that column one byte short."""
    paths = b"\0".join(raw for raw, _k, _o, _s in rows)
    kinds = bytes(kind for _r, kind, _o, _s in rows)
    oids = b"".join(oid for _r, _k, oid, _s in rows)
    sizes = b"".join(size.to_bytes(8, "little") for _r, _k, _o, size in rows)
    columns = [paths, kinds, oids, sizes]
    if cut >= 0:
        columns[cut] = columns[cut][:-1]
    return msgspec.msgpack.encode(columns)


def test_a_listing_in_columns_out_of_shape_or_of_layout_2_is_a_miss(repo: Path) -> None:
    """A listing is kept as four columns (30,000 entries decode as four values);
    one whose columns do not hold one entry each, or whose kind is out of range,
    is a miss though its check is right; so is a listing of layout 2 (an entry a
    tuple), which an older version kept: each is listed again and kept anew."""
    _stock(repo)
    tree = _tree(repo)
    with Repository(repo) as store:
        listings.tree_entries(store, tree)
    kept = repo / ".git" / "hydrate" / "tree-listings" / tree
    good = kept.read_bytes()
    rows = [(raw.encode(), 0, b"\1" * 20, 2) for raw in ("a.txt", "b.txt")]
    assert good.startswith(b"# git-hydrate tree-listing 3\n")
    older = msgspec.msgpack.encode(rows)
    shapes = [
        (b"# git-hydrate tree-listing 2\n", older),
        (listings.HEADER, older),
        (listings.HEADER, _columns([(b"a.txt", 9, b"\1" * 20, 2)])),  # (no such kind)
        (listings.HEADER, _columns(rows).replace(b"a.txt\0b.txt", b"a.txt\1b.txt")),
        *((listings.HEADER, _columns(rows, cut)) for cut in (1, 2, 3)),  # (a column short)
    ]
    for header, body in shapes:
        kept.write_bytes(header + check_line(body) + body)
        with Repository(repo) as store:
            assert listings.tree_entries(store, tree) == _listed(repo, tree)
        assert kept.read_bytes() == good


def test_a_sha256_trees_listing_is_kept_and_read_back(tmp_path: Path) -> None:
    """In a SHA-256 repository a blob id is 32 bytes: the columns say so."""
    repo = tmp_path / "sha256"
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(repo))
    _stock(repo)
    tree = _tree(repo)
    with Repository(repo) as store:
        first = listings.tree_entries(store, tree)
    with Repository(repo) as store:
        assert listings.tree_entries(store, tree) == first == _listed(repo, tree)
    assert len(first[0].oid or "") == 64
