"""Repositories git-hydrate cannot (or must not) write: clear messages, nothing partial."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, hydrate


def test_unknown_extension_is_refused_clearly(repo: Path) -> None:
    git(repo, "config", "core.repositoryformatversion", "1")
    git(repo, "config", "extensions.frobnicate", "true")
    result = hydrate(repo, "list")
    assert result.returncode == 128
    assert result.stderr == "fatal: unknown repository extension found: frobnicate\n"


def test_reftable_is_refused_clearly(repo: Path) -> None:
    git(repo, "config", "core.repositoryformatversion", "1")
    git(repo, "config", "extensions.refStorage", "reftable")
    result = hydrate(repo, "task-add", "R-1", "--objective", "o", "--acceptance", "a")
    assert result.returncode == 128
    assert "refstorage" in result.stderr.lower() or "reftable" in result.stderr.lower()
    assert len(result.stderr.splitlines()) == 1


def _can_remount_read_only() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind / /mnt && mount -o remount,bind,ro /mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_remount_read_only(), reason="needs unshare -m and bind mounts")
def test_read_only_repository(repo: Path) -> None:
    assert (
        hydrate(repo, "task-add", "R-1", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    before = git(repo, "for-each-ref")
    script = (
        f"mount --bind {repo} {repo} && mount -o remount,bind,ro {repo} && cd {repo} && "
        f"PYTHONPATH={ROOT} {sys.executable} -m git_hydrate add R-1 --text hi; echo rc=$?; "
        f"PYTHONPATH={ROOT} {sys.executable} -m git_hydrate pack R-1 >/dev/null; echo rc=$?"
    )
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, check=False
    )
    assert proc.stdout.split() == ["rc=1", "rc=0"], proc
    assert proc.stderr.startswith("error: cannot write to the repository (")
    assert "Read-only file system" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert git(repo, "for-each-ref") == before


def test_no_git_identity_refuses_to_write(repo: Path, tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path / "nobody"),
        "GIT_CONFIG_GLOBAL": str(tmp_path / "nobody" / ".gitconfig"),
        "GIT_AUTHOR_NAME": "",
        "GIT_AUTHOR_EMAIL": "",
        "GIT_COMMITTER_NAME": "",
        "GIT_COMMITTER_EMAIL": "",
        "EMAIL": "",
    }
    git(repo, "config", "user.useConfigOnly", "true")
    result = hydrate(repo, "task-add", "I-1", "--objective", "o", "--acceptance", "a", env=env)
    assert result.returncode == 1, result
    assert result.stderr.startswith("error: git has no identity to write commits with")
    assert len(result.stderr.splitlines()) == 1
    assert git(repo, "for-each-ref", "refs/hydrate") == ""
    assert hydrate(repo, "list", env=env).returncode == 0  # reading needs no identity


#: Derived files whose content is acted on without a check of their own (a cached
#: verdict, a compiled scanner, the runs a refresh takes): this user's alone.
ACTED_ON_UNCHECKED = {
    "secret-prefilter",
    "staged-attributes",  # (it decides whether a kept attribute answer holds)
    "sha256-cache",
    "blob-facts",  # ranking reads its word counts as they are
    "own-selections",
    "refresh-memo",
    "token-counts-o200k_base",
    "token-counts-cl100k_base",
    "outlines",
}


#: Folders of derived files acted on unchecked: written 0600 whatever the sharing.
PRIVATE_FOLDERS = (
    "prompt-cache",
    "tree-listings",
    "tree-attributes",
    "tree-paths",
    "tree-verdicts",
    "rank-index",
)


@pytest.mark.parametrize(
    ("shared", "umask", "dirs", "objects", "files"),
    [
        ("group", 0o077, 0o2770, 0o440, 0o660),
        ("all", 0o077, 0o2775, 0o444, 0o664),
        ("0640", 0o022, 0o2750, 0o440, 0o640),
        (None, 0o022, 0o755, 0o444, 0o644),
    ],
)
def test_core_shared_repository_gives_what_we_write_gits_permissions(
    tmp_path: Path, shared: str | None, umask: int, dirs: int, objects: int, files: int
) -> None:
    import os
    import stat

    path = tmp_path / "shared"
    old = os.umask(umask)
    try:
        extra = [f"--shared={shared}"] if shared else []
        git(tmp_path, "init", "-q", "-b", "main", *extra, str(path))
        for i in range(80):
            (path / f"f{i}.txt").write_text(f"file {i}\n")
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", "S-1 files")  # what git itself writes, to compare
        for args in (
            ("task-add", "S-1", "--objective", "x", "--acceptance", "y"),
            ("add", "S-1", "--text", "hello shared"),
            ("add-tree", "S-1"),
            ("add-tree", "S-1", "--no-rank"),  # (keeps the attributes on any git)
            ("list",),
            ("status",),
        ):
            assert hydrate(path, *args).returncode == 0
        head = git(path, "rev-parse", "HEAD").strip()
        pushed = f"refs/heads/main {head} refs/heads/main {'0' * 40}\n"
        hook = hydrate(path, "hook", "pre-push", "origin", "url", input=pushed)
        assert hook.returncode == 0 and "S-1" in hook.stderr, hook
        from git_hydrate import Ledger

        with Ledger(path) as ledger:  # a bulk write: one pack through dulwich
            ledger.add_contexts("S-1", [(f"bulk {i}\n", "b", 0, None) for i in range(100)])
    finally:
        os.umask(old)
    git_dir = path / ".git"
    git_made = {
        "ref": git_dir / "refs/heads/main",
        "reflog": git_dir / "logs/refs/heads/main",
        "dir": git_dir / "refs/heads",
    }
    assert {k: stat.S_IMODE(p.stat().st_mode) for k, p in git_made.items()} == {
        "ref": files,
        "reflog": files,
        "dir": dirs if shared else 0o755,
    }
    ours = [
        git_dir / "refs/hydrate",
        git_dir / "logs/refs/hydrate",
        git_dir / "hydrate",
        *[p for p in (git_dir / "objects").rglob("*") if p.parent.name != "info"],
    ]
    checked = 0
    for top in ours:
        for item in [top, *(top.rglob("*") if top.is_dir() else [])]:
            mode = stat.S_IMODE(item.stat().st_mode)
            if item.is_dir():
                expected = dirs
            elif item.parent.name in PRIVATE_FOLDERS or item.name in ACTED_ON_UNCHECKED:
                expected = 0o600  # acted on unchecked: trusted only if nobody else wrote it
            elif "objects" in item.parts:
                expected = objects
            else:
                expected = files
            assert mode == expected, f"{item.relative_to(git_dir)}: {mode:o} != {expected:o}"
            checked += 1
    assert list((git_dir / "objects/pack").glob("*.pack"))
    assert len(list((git_dir / "hydrate/artefacts/S-1").iterdir())) == 3
    assert checked > 300
    subprocess.run(["git", "fsck", "--strict"], cwd=path, check=True, capture_output=True)


def test_core_shared_repository_values_read_as_git_reads_them(repo: Path) -> None:
    from git_hydrate import UnsupportedRepository
    from git_hydrate.store import shared_repository_mode

    assert shared_repository_mode("x", present=False) == 0
    assert [
        shared_repository_mode(v)
        for v in ("umask", "false", "0", "", "group", "true", "1", "all", "world", "2")
    ] == [0, 0, 0, 0, 0o660, 0o660, 0o660, 0o664, 0o664, 0o664]
    # a key without "=" is true, so group; git's integers count as booleans
    assert [shared_repository_mode(v) for v in (None, "9", "0x1b0", "yes")] == [0o660] * 4
    assert shared_repository_mode("0660") == -0o660
    assert shared_repository_mode("0640") == -0o640
    # what strtol and git refuse, refused (Python's int() would take them)
    for refused in ("0o660", "06_60", "0400", "sometimes", "08", "-09"):
        with pytest.raises(UnsupportedRepository):
            shared_repository_mode(refused)
    # end to end: the key alone in the config file gives group-writable refs
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tsharedRepository\n")
    made_alone = hydrate(repo, "task-add", "S-3", "--objective", "x", "--acceptance", "y")
    assert made_alone.returncode == 0
    ref = repo / ".git" / "refs" / "hydrate" / "tasks" / "S-3"
    assert ref.stat().st_mode & 0o060 == 0o060
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tsharedRepository = umask\n")  # the last value wins
    made = hydrate(repo, "task-add", "S-2", "--objective", "x", "--acceptance", "y")
    assert made.returncode == 0
    for bad in ("0400", "sometimes"):
        # as `git -c core.sharedRepository=... hydrate add` passes it on
        config = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.sharedRepository",
            "GIT_CONFIG_VALUE_0": bad,
        }
        result = hydrate(repo, "add", "S-2", "--text", "x", env=config)
        assert result.returncode == 128, result
        assert result.stderr.count("\n") == 1 and "core.sharedRepository" in result.stderr
    assert "Hydrate-Action: context-add" not in git(repo, "log", "refs/hydrate/tasks/S-2")
