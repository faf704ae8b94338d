"""Bodies read from the work tree where it holds the very blob, else through git.

add-tree (from a commit or the work tree) and the packer read a file's blob from
the work tree when the file there hashes to the blob's id: git never inflates it.
Whatever else stands at that path — a modified file of the same size, a symlink,
a FIFO, a file in a repository whose objects are damaged — is read through git,
so what is attached and printed is always the committed content.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import zlib
from pathlib import Path

import pytest

from git_hydrate import CorruptData, Ledger
from git_hydrate.pack.memo import BodyMemo
from tests.conftest import commit_files, fsck, git, hydrate

TASK = "T-1"
FILES = {"src/app.py": "def run():\n    return 1\n", "src/lib.py": "VALUE = 'caf\u00e9'\n"}


def _task(repo: Path, task_id: str = TASK) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(task_id, objective="Fix the parser", acceptance="tests pass")


def _forget_digests(repo: Path) -> None:
    """Remove the sha256 cache, so the next add-tree reads every body again."""
    (repo / ".git" / "hydrate" / "sha256-cache").unlink(missing_ok=True)


def _corrupt_blobs(repo: Path) -> None:
    """Rewrite the loose objects of the committed files' blobs with other bytes of
    the same size: git still lists and sizes them, but reading one through git
    gives content that matches neither its id nor its link's sha256."""
    for rel, text in FILES.items():
        oid = git(repo, "rev-parse", f"HEAD:{rel}").strip()
        path = repo / ".git" / "objects" / oid[:2] / oid[2:]
        size = len(text.encode())
        os.chmod(path, 0o644)
        path.write_bytes(zlib.compress(b"blob %d\0" % size + b"X" * size))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(params=["sha1", "sha256"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    git(tmp_path, "init", "-q", f"--object-format={request.param}", str(path))
    return path


def test_add_tree_takes_unchanged_files_from_the_work_tree(repo: Path) -> None:
    """With the files' blobs corrupted in the object store, add-tree and the prompt
    still attach and print the committed text: they read nothing through git that
    the work tree held as committed."""
    commit_files(repo, FILES)
    _task(repo)
    _corrupt_blobs(repo)
    with Ledger(repo) as ledger:
        memo = BodyMemo(1 << 20)
        result = ledger.add_tree(TASK, memo=memo)
        assert result["added"] == 2
        out = io.BytesIO()
        ledger.write_prompt(TASK, out, cache=False, memo=memo)
        held = {c["source"]: c["hash"] for c in ledger.context_entries(TASK)}
    assert held == {rel: _sha(text) for rel, text in FILES.items()}
    for text in FILES.values():
        assert text.encode() in out.getvalue()


def test_a_changed_file_of_the_same_size_is_read_through_git(repo: Path) -> None:
    """The work tree file differs from the blob (same size): the committed text is
    attached and printed, never the edit."""
    commit_files(repo, FILES)
    _task(repo)
    edited = "def run():\n    return 2\n"
    assert len(edited) == len(FILES["src/app.py"])
    (repo / "src" / "app.py").write_text(edited)
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK)
        held = {c["source"]: c["hash"] for c in ledger.context_entries(TASK)}
        prompt = ledger.prompt(TASK, cache=False)["prompt"]
    assert held["src/app.py"] == _sha(FILES["src/app.py"])
    assert FILES["src/app.py"] in prompt and edited not in prompt
    fsck(repo)


def test_with_damaged_objects_a_changed_file_is_not_trusted(repo: Path) -> None:
    """A file that no longer holds its blob cannot stand in for it: with the
    blob corrupted, the prompt fails and names the task, as reading git does."""
    commit_files(repo, FILES)
    _task(repo)
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK)
    (repo / "src" / "lib.py").write_text("VALUE = 'cafe!'\n")  # same length in bytes
    _corrupt_blobs(repo)
    with Ledger(repo) as ledger, pytest.raises(CorruptData, match=TASK):
        ledger.prompt(TASK, cache=False)


def test_symlinks_and_fifos_at_a_path_are_never_read(repo: Path, tmp_path: Path) -> None:
    """A symlink (even to a file holding the same bytes) or a FIFO where the file
    was: read through git, without following or blocking."""
    commit_files(repo, FILES)
    _task(repo)
    elsewhere = tmp_path / "same.py"
    elsewhere.write_text(FILES["src/app.py"])
    (repo / "src" / "app.py").unlink()
    (repo / "src" / "app.py").symlink_to(elsewhere)
    (repo / "src" / "lib.py").unlink()
    os.mkfifo(repo / "src" / "lib.py")
    done: list[str] = []

    def run() -> None:
        with Ledger(repo) as ledger:
            ledger.add_tree(TASK)
            done.append(ledger.prompt(TASK, cache=False)["prompt"])

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert done, "add-tree or the prompt blocked on a FIFO"
    for text in FILES.values():
        assert text in done[0]


def test_a_link_path_outside_the_work_tree_is_not_read(repo: Path, tmp_path: Path) -> None:
    """A link whose path climbs out of the work tree (a task from a remote could
    carry one) is read through git only."""
    from git_hydrate.pack.entries import Attachment
    from git_hydrate.pack.loader import BodyReader
    from git_hydrate.store import Repository
    from git_hydrate.taskrefs import TaskRefs

    commit_files(repo, FILES)
    outside = tmp_path / "outside.py"
    outside.write_text(FILES["src/app.py"])
    oid = git(repo, "rev-parse", "HEAD:src/app.py").strip()
    entry = {
        "hash": _sha(FILES["src/app.py"]),
        "source": "src/app.py",
        "priority": 0,
        "expires": None,
        "size": len(FILES["src/app.py"]),
        "oid": oid,
        "path": "../outside.py",
    }
    _corrupt_blobs(repo)
    with Repository(repo) as store:
        assert store.worktree_blob(b"src/app.py", oid, entry["size"]) is not None
        assert store.worktree_blob(os.fsencode(outside), oid, entry["size"]) is None
        attachment = Attachment.of(entry)
        load = BodyReader(TaskRefs(store), TASK, [attachment], 1 << 20, 0.0)
        with pytest.raises(CorruptData):
            load(attachment)  # not from ../outside.py, though it holds the same bytes


def test_no_work_tree_reads_through_git(tmp_path: Path) -> None:
    """A bare clone has no work tree: everything comes from its objects."""
    source = tmp_path / "src-repo"
    git(tmp_path, "init", "-q", str(source))
    commit_files(source, FILES)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    _task(bare)
    with Ledger(bare) as ledger:
        assert ledger.refs.repo.work_tree is None
        ledger.add_tree(TASK)
        prompt = ledger.prompt(TASK, cache=False)["prompt"]
    for text in FILES.values():
        assert text in prompt


def test_a_blob_missing_from_the_object_store_is_reported_unreadable(repo: Path) -> None:
    """git ls-tree sizes a blob it cannot read as "BAD": that file is skipped as
    unreadable, by name, and the others are attached (it used to crash)."""
    commit_files(repo, FILES)
    _task(repo)
    oid = git(repo, "rev-parse", "HEAD:src/lib.py").strip()
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK)
    assert result["added"] == 1
    assert [(s["path"], s["reason"]) for s in result["skipped"]] == [("src/lib.py", "unreadable")]


@pytest.mark.parametrize("mode", ["--worktree", "--dir"])
def test_a_path_holding_a_tab_is_its_own_file_or_none(repo: Path, mode: str) -> None:
    """An untracked path holding a tab crashed the listing, and one spelled as an
    index entry (``<mode> <blob> 0<TAB>notes.py``) gave ``notes.py`` the body of
    any blob it named: each path is now itself (a tab makes it ``bad_path``)."""
    commit_files(repo, {"other.py": 'SECRET = "from other.py"\n'})
    oid = git(repo, "rev-parse", "HEAD:other.py").strip()
    (repo / "un\ttracked.py").write_text("u = 1\n")
    (repo / f"100644 {oid} 0\tnotes.py").write_text("junk\n")
    (repo / "notes.py").write_text("mine = 1\n")
    assert (
        hydrate(repo, "task-add", "T-1", "--objective", "x", "--acceptance", "ok").returncode == 0
    )
    where = ["--worktree"] if mode == "--worktree" else ["--dir", str(repo)]
    added = hydrate(repo, "add-tree", "T-1", *where, "--json")
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)
    bad = {s["path"] for s in result["skipped"] if s["reason"] == "bad_path"}
    assert bad == {"un\ttracked.py", f"100644 {oid} 0\tnotes.py"}
    prompt = hydrate(repo, "prompt", "T-1").stdout
    notes = prompt.index("### Context from notes.py\n")
    assert prompt[notes:].split("\n", 2)[1] == "mine = 1"
    assert prompt.count('SECRET = "from other.py"') == 1  # (other.py's own, once)


def test_a_work_tree_named_by_the_environment_is_taken_from_outside_it(
    repo: Path, tmp_path: Path
) -> None:
    """With GIT_DIR and GIT_WORK_TREE set, git has a work tree wherever the command
    runs from: ``--worktree`` takes it (it was refused from outside it)."""
    commit_files(repo, {"kept.py": "k = 1\n"})
    (repo / "new.py").write_text("n = 2\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}
    made = hydrate(elsewhere, "task-add", "E-1", "--objective", "o", "--acceptance", "a", env=env)
    assert made.returncode == 0, made.stderr
    added = hydrate(elsewhere, "add-tree", "E-1", "--worktree", "--json", env=env)
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)
    assert result["mode"] == "worktree" and result["added"] == 2
    prompt = hydrate(elsewhere, "prompt", "E-1", env=env).stdout
    assert "### Context from new.py\nn = 2\n" in prompt and "k = 1" in prompt
