"""``add-tree --worktree`` on work trees whose files are not their index blobs as
they stand: checked out through line-ending conversion or a smudge filter.

A tracked file git reports unmodified is attached as its index blob (the bytes
git stores): its link's blob id, sha256 and size all describe those bytes,
whatever the work tree's copy holds (CRLF, smudged), and whether or not the
sha256 cache already knew the blob.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from git_hydrate import Ledger
from tests.conftest import commit_files, fsck, git

TASK = "T-1"
FILES = {"notes.txt": "one\ntwo\nthree\n", "src/app.py": "def run():\n    return 1\n"}


def _task(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, objective="Fix the parser", acceptance="tests pass")


def _check_links(repo: Path) -> dict[str, bytes]:
    """Each link's blob as git holds it, by source, after checking that its size and
    sha256 are those of that blob, that doctor finds nothing and fsck is clean."""
    bodies: dict[str, bytes] = {}
    with Ledger(repo) as ledger:
        for entry in ledger.context_entries(TASK):
            body = ledger.refs.repo.read_blob(entry["oid"].encode())
            assert entry["size"] == len(body), entry
            assert entry["hash"] == hashlib.sha256(body).hexdigest(), entry
            bodies[entry["source"]] = body
        report = ledger.doctor()
    assert [t for t in report["tasks"] if not t["ok"]] == []
    fsck(repo)
    return bodies


def _checkout_again(repo: Path) -> None:
    """Write the work tree's files again as the configuration now says."""
    for name in FILES:
        (repo / name).unlink()
    git(repo, "checkout", "--", *FILES)
    assert git(repo, "status", "--porcelain") == ""


def _crlf_config(repo: Path) -> None:
    git(repo, "config", "core.autocrlf", "true")


def _eol_attribute(repo: Path) -> None:
    (repo / ".git" / "info" / "attributes").write_text("*.txt text eol=crlf\n*.py text eol=crlf\n")


def _filter(repo: Path) -> None:
    # a smudge that adds a line, a clean that takes it away
    (repo / ".git" / "info" / "attributes").write_text("* filter=banner\n")
    git(repo, "config", "filter.banner.smudge", "sed '1i # checked out'")
    git(repo, "config", "filter.banner.clean", "sed '1{/^# checked out$/d;}'")


@pytest.mark.parametrize("convert", [_crlf_config, _eol_attribute, _filter])
@pytest.mark.parametrize("known", [False, True], ids=["first", "cached"])
def test_unmodified_converted_files_attach_their_index_blob(
    repo: Path, convert: object, known: bool
) -> None:
    """The work tree's copy differs from the blob in bytes and size; the link is the
    blob's, all of it: first read (the blob through git) and with the blob's
    sha256 cached by an earlier run from the commit."""
    commit_files(repo, FILES)
    _task(repo)
    if known:
        with Ledger(repo) as ledger:
            ledger.add_tree(TASK, ["notes.txt", "src"])
    assert callable(convert)
    convert(repo)
    _checkout_again(repo)
    assert (repo / "notes.txt").read_bytes() != FILES["notes.txt"].encode()
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, ["notes.txt", "src"], worktree=True)
    assert result["skipped"] == []
    assert result["total_bytes"] == sum(len(text.encode()) for text in FILES.values())
    bodies = _check_links(repo)
    assert bodies == {name: text.encode() for name, text in FILES.items()}


def test_modified_converted_file_attaches_its_bytes_on_disk(repo: Path) -> None:
    """A file git reports modified is read as it is on disk (no filter is run): a
    new blob of those bytes, written, its link describing them."""
    commit_files(repo, FILES)
    _task(repo)
    _crlf_config(repo)
    _checkout_again(repo)
    (repo / "notes.txt").write_bytes(b"one\r\ntwo\r\nthree\r\nfour\r\n")
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK, ["notes.txt"], worktree=True)
    bodies = _check_links(repo)
    assert bodies == {"notes.txt": b"one\r\ntwo\r\nthree\r\nfour\r\n"}


# -- the index's files git does not look for in the work tree -----------------------


def _sparse(repo: Path) -> None:
    """A sparse checkout leaving ``notes.txt`` out of the work tree."""
    git(repo, "sparse-checkout", "set", "--no-cone", "/src/")


def _skip_worktree(repo: Path) -> None:
    """The skip-worktree bit on ``notes.txt``, its file then removed."""
    git(repo, "update-index", "--skip-worktree", "notes.txt")
    (repo / "notes.txt").unlink()


def _skip_worktree_changed(repo: Path) -> None:
    """The skip-worktree bit on ``notes.txt``, its file then rewritten (git does not
    look: it still reports it unmodified)."""
    git(repo, "update-index", "--skip-worktree", "notes.txt")
    (repo / "notes.txt").write_text("a local change, longer than the committed text\n")


def _assume_unchanged(repo: Path) -> None:
    """The assume-unchanged bit on ``notes.txt``, its file then removed."""
    git(repo, "update-index", "--assume-unchanged", "notes.txt")
    (repo / "notes.txt").unlink()


@pytest.mark.parametrize(
    "leave_out", [_sparse, _skip_worktree, _skip_worktree_changed, _assume_unchanged]
)
def test_skip_worktree_files_are_taken_from_the_index(repo: Path, leave_out: object) -> None:
    """A file the index holds with the skip-worktree (or assume-unchanged) bit is
    tracked and unchanged as git sees it (``git status`` says nothing of it): it
    is attached as its index blob, never dropped."""
    commit_files(repo, FILES)
    _task(repo)
    assert callable(leave_out)
    leave_out(repo)
    assert git(repo, "ls-files", "-v", "notes.txt")[0] in "Ssh"
    assert git(repo, "status", "--porcelain") == ""
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, ["notes.txt", "src"], worktree=True)
    assert result["skipped"] == []
    bodies = _check_links(repo)
    assert bodies == {name: text.encode() for name, text in FILES.items()}
    oids = {e["source"]: e["oid"] for e in Ledger(repo).context_entries(TASK)}
    assert oids["notes.txt"] == git(repo, "rev-parse", "HEAD:notes.txt").strip()


def test_a_deleted_tracked_file_stays_out(repo: Path) -> None:
    """A tracked file deleted from the work tree (``git status``: `` D``) is not part
    of it: not attached, and its earlier link is removed (as it was before)."""
    commit_files(repo, FILES)
    _task(repo)
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK, worktree=True)
        (repo / "notes.txt").unlink()
        assert git(repo, "status", "--porcelain") == " D notes.txt\n"
        result = ledger.add_tree(TASK, worktree=True)
    assert result["removed_paths"] == ["notes.txt"]
    assert result["skipped"] == []
    assert sorted(_check_links(repo)) == ["README", "src/app.py"]
