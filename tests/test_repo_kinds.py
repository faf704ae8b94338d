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
