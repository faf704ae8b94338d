"""Nothing is read or written through a symbolic link on a work-tree path's way.

With ``conf -> /etc`` in place of a tracked folder, git reports ``conf/passwd``
deleted; add-tree (``--worktree``, ``--dir``, ``prompt --refresh``), the
readers of work-tree copies, and the agent bridges must not take
``/etc/passwd`` for the repository's file, nor write into what a link names.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from git_hydrate import Ledger
from git_hydrate.hydrate import tree as hydrate_tree
from git_hydrate.store import Repository
from tests.conftest import git, hydrate

if TYPE_CHECKING:
    from git_hydrate.hydrate.sources import Source

#: What the file outside the work tree holds: found in no prompt, no body.
OUTSIDE = "OUTSIDE-SECRET-CONTENT line that must never be attached\n"


def _outside(tmp_path: Path) -> Path:
    """A folder outside the work tree holding ``passwd`` and ``hosts``."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "passwd").write_text(OUTSIDE)
    (folder / "hosts").write_text(OUTSIDE.upper())
    return folder


def _tracked_conf(repo: Path) -> None:
    """Commit ``conf/passwd``, ``conf/hosts`` and ``keep.txt``."""
    (repo / "conf").mkdir()
    (repo / "conf" / "passwd").write_text("x\n")
    (repo / "conf" / "hosts").write_text("y\n")
    (repo / "keep.txt").write_text("kept\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "conf")


def _swap_for_link(folder: Path, target: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.symlink_to(target)


def _bodies(repo: Path, task: str) -> str:
    """Every body the task's tree holds, concatenated."""
    listing = git(repo, "ls-tree", "-r", "--name-only", f"refs/hydrate/tasks/{task}", "bodies")
    return "".join(
        git(repo, "cat-file", "-p", f"refs/hydrate/tasks/{task}:{path}")
        for path in listing.split()
    )


def _task(repo: Path, task: str, *more: str) -> None:
    made = hydrate(repo, "task-add", task, "--objective", "o", "--acceptance", "a", *more)
    assert made.returncode == 0, made


def test_worktree_run_skips_a_path_beyond_a_symlink(repo: Path, tmp_path: Path) -> None:
    _tracked_conf(repo)
    _swap_for_link(repo / "conf", _outside(tmp_path))
    assert " D conf/passwd" in git(repo, "status", "--short")
    _task(repo, "S-1", "--file-in-play", "conf/passwd")
    run = hydrate(repo, "add-tree", "S-1", "--worktree")
    assert run.returncode == 0, run
    assert "  beyond_symlink conf/passwd (0 bytes; file in play, not attached)" in run.stdout
    assert "  beyond_symlink conf/hosts (0 bytes)" in run.stdout
    assert "  symlink        conf (0 bytes)" in run.stdout  # (the column as wide)
    data = json.loads(hydrate(repo, "--compact", "add-tree", "S-1", "--worktree", "--json").stdout)
    reasons = {item["path"]: item["reason"] for item in data["skipped"]}
    assert reasons["conf/passwd"] == reasons["conf/hosts"] == "beyond_symlink"
    prompt = hydrate(repo, "prompt", "S-1")
    assert prompt.returncode == 0, prompt
    assert "OUTSIDE" not in prompt.stdout.upper().replace("OUTSIDE-SECRET", "")
    assert "OUTSIDE-SECRET" not in prompt.stdout.upper()
    assert "`conf/passwd` (0 bytes): not attached, beyond_symlink" in prompt.stdout
    assert "OUTSIDE-SECRET" not in _bodies(repo, "S-1").upper()
    # (the task stays readable: the reason is one its stored pattern takes)
    assert hydrate(repo, "show", "S-1").returncode == 0


def test_refresh_of_an_earlier_worktree_run_drops_the_files(repo: Path, tmp_path: Path) -> None:
    _tracked_conf(repo)
    _task(repo, "S-2")
    assert hydrate(repo, "add-tree", "S-2", "--worktree").returncode == 0
    _swap_for_link(repo / "conf", _outside(tmp_path))
    refreshed = hydrate(repo, "prompt", "S-2", "--refresh")
    assert refreshed.returncode == 0, refreshed
    assert "OUTSIDE-SECRET" not in refreshed.stdout.upper()
    assert "removed 2" in refreshed.stderr
    assert "OUTSIDE-SECRET" not in _bodies(repo, "S-2").upper()


def test_dir_checkout_with_a_symlinked_folder(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    (other / "real").mkdir()
    (other / "real" / "passwd").write_text("x\n")
    (other / "notes.txt").write_text("notes\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "i")
    _swap_for_link(other / "real", _outside(tmp_path))
    _task(repo, "S-3")
    run = hydrate(repo, "--compact", "add-tree", "S-3", "--dir", str(other), "--json")
    assert run.returncode == 0, run
    reasons = {item["path"]: item["reason"] for item in json.loads(run.stdout)["skipped"]}
    assert reasons == {"real": "symlink", "real/passwd": "beyond_symlink"}
    assert "OUTSIDE-SECRET" not in _bodies(repo, "S-3").upper()


@pytest.mark.parametrize("held", [True, False])
def test_a_folder_swapped_for_a_link_after_the_listing_is_not_read(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: bool
) -> None:
    """The race: listed as a folder, a link by the time the file is read (``held``:
    the folder opened by the listing is still held, and holds no file now;
    otherwise it is opened again, and is a link)."""
    (repo / "conf").mkdir()
    (repo / "conf" / "passwd").write_text(OUTSIDE)  # (untracked: read from disk)
    outside = _outside(tmp_path)
    listed = hydrate_tree._source

    def listed_then_swapped(*args: object, **kwargs: object) -> Source:
        source = listed(*args, **kwargs)  # type: ignore[arg-type]
        _swap_for_link(repo / "conf", outside)
        if not held and source.files is not None:
            source.files.close()
        return source

    monkeypatch.setattr(hydrate_tree, "_source", listed_then_swapped)
    _task(repo, "S-4")
    with Ledger(repo) as ledger:
        result = ledger.add_tree("S-4", worktree=True)
    reasons = {item["path"]: item["reason"] for item in result["skipped"]}
    assert reasons["conf/passwd"] == ("unreadable" if held else "beyond_symlink")
    assert "OUTSIDE-SECRET" not in _bodies(repo, "S-4").upper()


def test_work_tree_copies_are_not_read_through_a_symlinked_folder(
    repo: Path, tmp_path: Path
) -> None:
    """What stands in for a blob (add-tree of a commit, the packer) is read from
    the work tree only below its top: a folder that is a link hides the file."""
    _tracked_conf(repo)
    outside = _outside(tmp_path)
    (outside / "passwd").write_text("x\n")  # (the same bytes as the blob: still refused)
    with Repository(repo) as store:
        assert store.worktree_file(b"conf/passwd", 2) == b"x\n"
        _swap_for_link(repo / "conf", outside)
        store.close()
        assert store.worktree_file(b"conf/passwd", 2) is None
        assert not store.worktree_has(b"conf/passwd", 2)
        assert store.worktree_file(b"../outside/passwd", 2) is None
        (repo / "link.txt").symlink_to(outside / "passwd")
        assert store.worktree_file(b"link.txt", 2) is None


def test_confined_tree_refuses_every_link_on_the_way(tmp_path: Path) -> None:
    from git_hydrate.store import BeyondSymlink, ConfinedTree

    top = tmp_path / "top"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f").write_text("inside")
    outside = _outside(tmp_path)
    (top / "a" / "l").symlink_to(outside)
    (top / "fl").symlink_to(outside / "passwd")
    with ConfinedTree(top) as files:
        assert files.read(b"a/b/f", 100) == b"inside"
        with pytest.raises(BeyondSymlink):
            files.read(b"a/l/passwd", 100)
        with pytest.raises(BeyondSymlink):
            files.lstat(b"a/l/passwd")
        with pytest.raises(OSError) as final:
            files.read(b"fl", 100)
        assert final.value.errno == errno.ELOOP
        for bad in (b"/etc/passwd", b"a/../fl", b"./a/b/f", b"a//b/f", b"a/b/f\0"):
            with pytest.raises(FileNotFoundError):
                files.read(bad, 100)
        # A folder opened once is held: swapped for a link, its file is not found
        # through the link (the folder held is the old one).
        assert files.read(b"a/b/f", 100) == b"inside"
        (top / "a" / "b" / "f").unlink()
        (top / "a" / "b").rmdir()
        (top / "a" / "b").symlink_to(outside)
        os.link(outside / "passwd", outside / "f")
        with pytest.raises(FileNotFoundError):
            files.read(b"a/b/f", 100)
    with ConfinedTree(top) as fresh, pytest.raises(BeyondSymlink):
        fresh.read(b"a/b/f", 100)


# -- agent install / uninstall ------------------------------------------------------------


def _key(tmp_path: Path) -> Path:
    key = tmp_path / "fake_id"
    key.write_text(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl...\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    return key


def _untouched(repo: Path) -> None:
    assert not (repo / ".git" / "hydrate" / "agents").exists()
    assert "git-hydrate" not in (repo / ".git" / "info" / "exclude").read_text()


def test_agent_install_refuses_a_symlinked_file(repo: Path, tmp_path: Path) -> None:
    key = _key(tmp_path)
    before = key.read_bytes()
    (repo / "AGENTS.md").symlink_to(os.path.relpath(key, repo))
    git(repo, "add", "AGENTS.md")
    git(repo, "commit", "-q", "-m", "link")
    refused = hydrate(repo, "agent", "install", "codex")
    assert refused.returncode != 0
    assert refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert "AGENTS.md is a symbolic link" in refused.stderr
    assert (repo / "AGENTS.md").is_symlink()
    assert key.read_bytes() == before
    assert git(repo, "status", "--short") == ""
    _untouched(repo)


def test_agent_install_refuses_a_symlinked_folder(repo: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victimdir"
    victim.mkdir()
    (repo / ".claude").symlink_to(os.path.relpath(victim, repo))
    git(repo, "add", ".claude")
    git(repo, "commit", "-q", "-m", "link")
    for agents in (["claude"], ["codex", "aider", "claude"]):
        refused = hydrate(repo, "agent", "install", *agents)
        assert refused.returncode != 0
        assert refused.stderr.count("\n") == 1
        assert ".claude (a folder of .claude/settings.local.json) is a symbolic link" in (
            refused.stderr
        )
        assert list(victim.iterdir()) == []
        assert not (repo / "AGENTS.md").exists()  # (nothing of the other agents either)
        _untouched(repo)


def test_agent_uninstall_refuses_a_link_put_in_since(repo: Path, tmp_path: Path) -> None:
    key = _key(tmp_path)
    before = key.read_bytes()
    (repo / "AGENTS.md").write_text("# team notes\n")
    git(repo, "add", "AGENTS.md")
    git(repo, "commit", "-q", "-m", "notes")
    assert hydrate(repo, "agent", "install", "codex").returncode == 0
    (repo / "AGENTS.md").unlink()
    (repo / "AGENTS.md").symlink_to(key)
    refused = hydrate(repo, "agent", "uninstall", "codex")
    assert refused.returncode != 0
    assert "AGENTS.md is a symbolic link" in refused.stderr
    assert (repo / "AGENTS.md").is_symlink()
    assert key.read_bytes() == before
    assert (repo / ".git" / "hydrate" / "agents" / "codex.json").exists()


def test_agent_round_trip_in_a_nested_folder_still_works(repo: Path) -> None:
    assert hydrate(repo, "agent", "install", "claude").returncode == 0
    assert (repo / ".claude" / "settings.local.json").is_file()
    assert git(repo, "status", "--short") == ""
    assert hydrate(repo, "agent", "uninstall", "claude").returncode == 0
    assert not (repo / ".claude").exists()
