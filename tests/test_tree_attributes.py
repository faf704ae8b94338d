"""Kept attribute answers: a known tree runs no check-attr, and answers as git would;
the staged .gitattributes asked once while the index stays the same."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from git_hydrate.hydrate import attributes
from git_hydrate.hydrate.attributes import tree_attribute_rules
from git_hydrate.hydrate.listings import tree_entries
from git_hydrate.hydrate.rules import attribute_rules
from git_hydrate.store import Repository
from git_hydrate.store.keyed import check_line
from tests.conftest import commit_files, git

GITATTRIBUTES = (
    "gen/** linguist-generated\n*.svg binary\nvendor/** linguist-generated=true\ncaf* binary\n"
)
FILES = {
    ".gitattributes": GITATTRIBUTES,
    "gen/api_models.py": "generated = True\n",
    "icon.svg": "<svg/>\n",
    "src/real.py": "real = True\n",
    "src/other.py": "other = True\n",
    "vendor/lib.js": "lib()\n",
    "caf\udce9.txt": "latin-1 name\n",
}


def _tree(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}").strip()


def _kept(repo: Path) -> Path:
    return repo / ".git" / "hydrate" / "tree-attributes"


def _answers(repo: Path, narrowed: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """(the kept path's answer, check-attr's) for the tree at HEAD."""
    tree = _tree(repo)
    with Repository(repo) as store:
        listed = tree_entries(store, tree)
        asked = [e for e in listed if e.path.startswith("src/")] if narrowed else listed
        return (
            tree_attribute_rules(store, tree, listed, asked),
            attribute_rules(store, asked, tree=tree),
        )


def _stock(repo: Path) -> None:
    commit_files(repo, FILES, "attributes")


def test_a_trees_answer_is_kept_and_equals_check_attr(repo: Path) -> None:
    _stock(repo)
    # (the first check-attr here may find that this git lacks --source: its answer,
    # read from the index instead, is not kept)
    for _ in range(2):
        first, reference = _answers(repo)
        assert first == reference
    assert reference == {
        "gen/api_models.py": "generated",
        "icon.svg": "binary",
        "vendor/lib.js": "generated",
        "caf\udce9.txt": "binary",  # (a name that is not UTF-8, kept as its bytes)
    }
    assert os.listdir(_kept(repo)) == [_tree(repo)]
    again, reference = _answers(repo)  # (from the kept answer)
    assert again == reference
    narrowed, reference = _answers(repo, narrowed=True)
    assert narrowed == reference == {}


def test_the_kept_answer_is_used_without_git(repo: Path) -> None:
    """A kept answer is what a known tree gets: shown by one planted (and private)."""
    _stock(repo)
    _answers(repo)
    tree = _tree(repo)
    with Repository(repo) as store:
        listed = tree_entries(store, tree)
        sources = attributes._sources(store)
        attributes._keep(store, tree, sources, {"src/real.py": "binary"})
        assert tree_attribute_rules(store, tree, listed, listed) == {"src/real.py": "binary"}


def test_what_else_decides_attributes_is_a_miss(repo: Path) -> None:
    """info/attributes and core.attributesFile change the answer: never the kept one."""
    _stock(repo)
    _answers(repo)
    info = repo / ".git" / "info" / "attributes"
    info.parent.mkdir(exist_ok=True)
    info.write_text("src/real.py linguist-generated\n")
    kept, reference = _answers(repo)
    assert kept == reference
    assert kept["src/real.py"] == "generated"
    elsewhere = repo.parent / "global-attributes"
    elsewhere.write_text("src/other.py binary\n")
    git(repo, "config", "core.attributesFile", str(elsewhere))
    kept, reference = _answers(repo)
    assert kept == reference
    assert kept["src/other.py"] == "binary"


def test_an_edit_keeping_size_and_time_and_ignore_case_are_misses(repo: Path) -> None:
    """An attributes file edited within one timestamp (or restored with its time) and
    core.ignoreCase (git then matches patterns ignoring case) change the answer too."""
    _stock(repo)
    info = repo / ".git" / "info" / "attributes"
    info.parent.mkdir(exist_ok=True)
    info.write_text("src/real.py  binary\n")
    _answers(repo)
    kept, _reference = _answers(repo)
    assert kept["src/real.py"] == "binary"
    before = info.stat()
    info.write_text("src/other.py binary\n")  # (same size, then the same times)
    os.utime(info, ns=(before.st_atime_ns, before.st_mtime_ns))
    kept, reference = _answers(repo)
    assert kept == reference and kept["src/other.py"] == "binary" and "src/real.py" not in kept
    info.write_text("SRC/REAL.PY binary\n")
    _answers(repo)
    for folded in ("true", "false"):
        git(repo, "config", "core.ignoreCase", folded)
        kept, reference = _answers(repo)
        assert kept == reference
        assert ("src/real.py" in kept) is (folded == "true")


def test_a_damaged_or_foreign_answer_is_a_miss(repo: Path) -> None:
    _stock(repo)
    _answers(repo)
    _answers(repo)
    path = _kept(repo) / _tree(repo)
    good = path.read_bytes()
    damaged = [
        b"",
        good[: len(good) // 2],
        good[:-1] + bytes([good[-1] ^ 1]),
        b"# git-hydrate tree-attributes 0\n" + good.split(b"\n", 1)[1],
        attributes.HEADER + b"00000000\n" + b"\xc1garbage",
        b"\x00" * 64,
    ]
    for data in damaged:
        path.write_bytes(data)
        os.chmod(path, 0o600)
        kept, reference = _answers(repo)
        assert kept == reference
        assert path.read_bytes() == good  # (checked again and rewritten)
    with Repository(repo) as store:
        sources = attributes._sources(store)
    planted = attributes._encoder.encode(attributes._Kept(sources, [(b"src/real.py", 1)]))
    path.write_bytes(attributes.HEADER + check_line(planted) + planted)
    os.chmod(path, 0o664)  # another user could have written it: not trusted
    kept, reference = _answers(repo)
    assert kept == reference
    assert "src/real.py" not in kept


def test_answers_kept_are_bounded(repo: Path) -> None:
    trees = []
    for i in range(attributes.MAX_TREES + 3):
        commit_files(repo, {".gitattributes": f"f{i} binary\n", f"f{i}": "x\n"}, f"c{i}")
        trees.append(_tree(repo))
        kept, reference = _answers(repo)
        assert kept == reference == {f"f{i}": "binary"}
    left = sorted(os.listdir(_kept(repo)))
    assert len(left) == attributes.MAX_TREES
    assert trees[-1] in left
    assert trees[0] not in left


def test_the_staged_attributes_are_asked_again_only_when_the_index_changed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process asks git for the staged .gitattributes once while the index file
    stays the same; a change staged (git writes a new index) is asked for again; an
    index that GIT_INDEX_FILE names is asked for each time."""
    _stock(repo)
    asked: list[list[str]] = []

    def counting(store: Repository) -> None:
        run = store.git

        def counted(args: list[str], **kw: Any) -> Any:
            asked.append(args)
            return run(args, **kw)

        monkeypatch.setattr(store, "git", counted)

    with Repository(repo) as store:
        counting(store)
        first = store.staged_attributes()
        assert b".gitattributes" in first
        assert store.staged_attributes() == first and len(asked) == 1
        (repo / "sub").mkdir()
        (repo / "sub" / ".gitattributes").write_text("*.txt binary\n")
        git(repo, "add", "sub/.gitattributes")
        second = store.staged_attributes()
        assert b"sub/.gitattributes" in second and len(asked) == 2
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    monkeypatch.chdir(repo)
    with Repository() as store:  # (the caller's repository: git's environment holds)
        counting(store)
        assert store.staged_attributes() == store.staged_attributes() == second
        assert len(asked) == 4


def test_a_restaged_index_that_looks_the_same_on_disk_is_asked_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index replaced by one of the same size whose inode and times read as the
    old one's (a file system can hand a freed inode back, and tick in whole
    seconds) is still known by its checksum: the staged .gitattributes are asked
    again, not the first answer given."""
    _stock(repo)
    (repo / ".gitattributes").write_text("*.a binary\n")
    git(repo, "add", ".gitattributes")
    index = repo / ".git" / "index"
    real_fstat, real_stat = os.fstat, os.stat
    with Repository(repo) as store:
        first = store.staged_attributes()
        old = real_fstat(os.open(index, os.O_RDONLY))

        def forged(fd: int) -> os.stat_result:
            found = real_fstat(fd)
            if os.readlink(f"/proc/self/fd/{fd}") == str(index):
                return old  # the old file's inode, size and times
            return found

        def forged_stat(path: Any, *args: Any, **kw: Any) -> os.stat_result:
            return old if str(path) == str(index) else real_stat(path, *args, **kw)

        (repo / ".gitattributes").write_text("*.b binary\n")  # (the same size)
        git(repo, "add", ".gitattributes")
        assert index.stat().st_size == old.st_size
        monkeypatch.setattr(os, "fstat", forged)
        monkeypatch.setattr(os, "stat", forged_stat)
        second = store.staged_attributes()
    staged = git(repo, "ls-files", "-s", "-z", "--", ".gitattributes").encode()
    assert second != first and second.split(b"\0")[0] == staged.split(b"\0")[0]


def test_the_staged_attributes_are_kept_for_the_next_process(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The staged .gitattributes are kept under the index file's state: the next
    process (a new repository object) asks git nothing while the index stays the
    same; a kept file that is damaged, cut short, another user's, or of another
    index is a miss (asked again, never an error), and every answer is git's."""
    _stock(repo)
    asked: list[list[str]] = []

    def answer() -> bytes:
        with Repository(repo) as store:
            run = store.git

            def counted(args: list[str], **kw: Any) -> Any:
                asked.append(args)
                return run(args, **kw)

            monkeypatch.setattr(store, "git", counted)
            return store.staged_attributes()

    kept = repo / ".git" / "hydrate" / "staged-attributes"
    first = answer()
    assert b".gitattributes" in first and len(asked) == 1
    assert answer() == first and len(asked) == 1
    body = kept.read_bytes()
    for damaged in (body[:-1], body[:-3] + b"xyz", body.replace(b"staged-attributes 1", b"-")):
        kept.write_bytes(damaged)
        assert answer() == first
    assert len(asked) == 4 and kept.read_bytes() == body  # (each miss kept anew)
    kept.chmod(0o666)  # (another user could have written it: not trusted)
    assert answer() == first and len(asked) == 5
    (repo / "sub").mkdir()
    (repo / "sub" / ".gitattributes").write_text("*.txt binary\n")
    git(repo, "add", "sub/.gitattributes")
    second = answer()
    assert b"sub/.gitattributes" in second and len(asked) == 6
    assert answer() == second and len(asked) == 6
    monkeypatch.setenv("GIT_LITERAL_PATHSPECS", "1")  # (git reads the pathspecs otherwise)
    specs = (":(glob)**/.gitattributes", ".gitattributes")
    assert answer() == git(repo, "ls-files", "-s", "-z", "--", *specs).encode()
    assert len(asked) == 7
