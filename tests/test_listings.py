"""Kept tree listings: a known tree is not listed again, a near one costs its diff."""

from __future__ import annotations

import os
from pathlib import Path

from git_hydrate.hydrate import listings
from git_hydrate.hydrate.sources import list_tree
from git_hydrate.store import Repository
from tests.conftest import commit_files, git


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
