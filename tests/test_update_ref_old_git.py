"""Ref writes are explicit transactions (``start`` ... ``commit``, git 2.27), so a
git whose caller is killed aborts; a git before 2.27 knows no ``start`` and gets
the one implicit transaction, as before, remembered for the next write."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate import Ledger
from tests.conftest import git, git_first_on_path


@pytest.fixture
def old_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH whose ``update-ref --stdin`` refuses ``start`` as git
    2.26 does (``fatal: unknown command: start``, status 128, nothing written) and
    runs the real git otherwise; it logs each ``update-ref --stdin`` it is given."""

    def script(real: str, log: Path) -> str:
        return (
            "#!/bin/sh\n"
            'case " $* " in\n'
            '  *" update-ref "*" --stdin "*)\n'
            f'    input=$(mktemp "{log.parent}/in.XXXXXX"); cat > "$input"\n'
            '    if [ "$(head -n 1 "$input")" = start ]; then\n'
            f"      echo start >> {log}\n"
            '      echo "fatal: unknown command: start" >&2; exit 128\n'
            "    fi\n"
            f"    echo plain >> {log}\n"
            f'    exec {real} "$@" < "$input";;\n'
            "esac\n"
            f'exec {real} "$@"\n'
        )

    return git_first_on_path(tmp_path, monkeypatch, script)


def test_a_git_without_start_writes_in_one_implicit_transaction(repo: Path, old_git: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("OG-1", "Written by an old git.", "it is there")
    assert old_git.read_text().split() == ["start", "plain"]
    old_git.write_text("")
    with Ledger(repo) as ledger:  # (the lack remembered: asked plainly at once)
        ledger.add_context("OG-1", "a note\n", "notes/a")
        ledger.add_task("OG-2", "Another.", "there too")
        assert [t["task_id"] for t in ledger.list_tasks()] == ["OG-1", "OG-2"]
    assert old_git.read_text().split() == ["plain", "plain"]
    git(repo, "fsck", "--strict")


def test_a_git_with_start_is_asked_in_an_explicit_transaction(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("NG-1", "Written by this git.", "it is there")
    features = repo / ".git" / "hydrate" / "git-features"
    assert not features.exists() or "start" not in features.read_text()


def test_a_lack_is_looked_up_by_the_git_path_finds_without_shutil(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lack is remembered per git binary: the one ``PATH`` finds (a directory named
    git, or a file that cannot run, is passed over), as shutil.which finds it; looked
    up without importing shutil (its bz2 and lzma: 4 ms of each add-tree run)."""
    logged = git_first_on_path(tmp_path, monkeypatch, lambda real, log: f'exec {real} "$@"\n')
    fake = logged.parent / "git"
    (tmp_path / "dir" / "git").mkdir(parents=True)
    (tmp_path / "noexec").mkdir()
    (tmp_path / "noexec" / "git").write_text("#!/bin/sh\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'dir'}:{tmp_path / 'noexec'}:{os.environ['PATH']}")
    assert shutil.which("git") == str(fake)
    status = fake.stat()
    features = repo / ".git" / "hydrate" / "git-features"
    features.parent.mkdir(exist_ok=True)
    binary = f"{os.path.realpath(fake)} {status.st_size} {status.st_mtime_ns}"
    features.write_text(f"{binary}\tsome feature\n")
    probe = (
        "import sys\n"
        "from git_hydrate.store import Repository\n"
        f"with Repository({str(repo)!r}) as store:\n"
        "    print(store.lacks('some feature'), store.lacks('other'), 'shutil' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "False", "False"]
