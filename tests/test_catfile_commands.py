"""The cat-file reader asks in commands (``--batch-command --buffer``), and a git
without them (before 2.36) is met with ``--batch``: the same answers either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_hydrate.store import Repository
from tests.conftest import cat_file_batch, git, git_first_on_path


def _packed_history(repo: Path) -> tuple[bytes, bytes, list[bytes]]:
    """A commit (packed: git must answer, not the loose reader), its blob, and odd specs."""
    with Repository(repo) as store:
        blob = store.write_blob(b"body\n" * 100)
        tree = store.update_tree(None, {b"a/b.txt": blob, b"top c.txt": blob})
        tip = store.write_commit(tree, [], "hydrate: test\n", when=1_700_000_000)
    git(repo, "update-ref", "refs/hydrate/test", tip.decode())
    git(repo, "repack", "-adq")
    git(repo, "prune-packed")
    specs = [tip, tip + b":a/b.txt", tip + b":top c.txt", tip + b":a", b" " + tip]
    specs += [tip + b":a\nb", b"", b"0" * len(tip), tip + b":nothing", b"HEAD"]
    return tip, blob, specs


@pytest.fixture
def old_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH that refuses ``--batch-command`` as git 2.35 does
    (a usage error, status 129) and runs the real git otherwise; it logs each
    cat-file it starts."""

    def script(real: str, log: Path) -> str:
        return (
            "#!/bin/sh\n"
            'for arg in "$@"; do\n'
            '  case "$arg" in\n'
            f"    --batch-command) echo command >> {log}\n"
            '      echo "error: unknown option \\`batch-command\'" >&2\n'
            '      echo "usage: git cat-file <type> <object>" >&2\n'
            "      exit 129;;\n"
            f"    --batch) echo batch >> {log};;\n"
            "  esac\n"
            "done\n"
            f'exec {real} "$@"\n'
        )

    return git_first_on_path(tmp_path, monkeypatch, script)


def test_commands_answer_as_batch_does(repo: Path) -> None:
    """Ids, paths, a path with a space, a spec with a line break, an empty one, a
    missing object, in one read, a prefetch, a digest and a resolve."""
    tip, blob, specs = _packed_history(repo)
    expected = cat_file_batch(repo, specs)
    with Repository(repo) as store:
        assert store.read_many(specs) == expected
        assert store.prefetch(specs).collect() == expected
        assert store.blob_digest(blob, 1 << 20)[0] == 500
        assert store.resolve_object(b"refs/hydrate/test") == tip
        assert store.read_many(specs[:3]) == expected[:3]


def test_a_git_without_commands_is_asked_withcat_file_batch(repo: Path, old_git: Path) -> None:
    """The requests already sent are asked again of ``--batch``, whichever read came
    first (a read, a prefetch, a digest); the lack is remembered, so the next
    reader starts with ``--batch`` at once."""
    tip, blob, specs = _packed_history(repo)
    expected = cat_file_batch(repo, specs)
    with Repository(repo) as store:
        assert store.read_many(specs) == expected
        assert store.read_many(specs[::-1]) == expected[::-1]
    assert old_git.read_text().split() == ["batch", "command", "batch"]
    old_git.write_text("")
    with Repository(repo) as store:
        assert store.prefetch(specs).collect() == expected
        assert store.blob_digest(blob, 1 << 20)[0] == 500
        assert store.resolve_object(b"refs/hydrate/test") == tip
    assert old_git.read_text().split() == ["batch"]  # (the lack remembered)
    (repo / ".git" / "hydrate" / "git-features").unlink()
    old_git.write_text("")
    with Repository(repo) as store:
        prefetch = store.prefetch(specs[:4])
        assert store.blob_digest(blob, 1 << 20)[0] == 500
        assert prefetch.collect() == expected[:4]
        assert store.resolve_object(b"refs/hydrate/test") == tip
    assert old_git.read_text().split() == ["command", "batch"]


def test_a_path_remembered_as_its_entry_is_answered_as_git_would(repo: Path) -> None:
    """``remember_as`` answers ``tip:path`` with the kept entry it names, and only
    while remembering, only for an object kept; anything else is git's answer."""
    tip, blob, specs = _packed_history(repo)
    expected = cat_file_batch(repo, specs[:3])
    with Repository(repo) as store:
        store.remember_as([(tip + b":a/b.txt", blob)])  # (not remembering: nothing kept)
        with store.remembering():
            store.read_many([blob])
            store.remember_as([(tip + b":a/b.txt", blob), (tip + b":top c.txt", b"0" * len(tip))])
            store.close()  # (what is kept is answered without a reader)
            assert store.read_many(specs[1:2]) == expected[1:2]
            assert store._cat_file is None
            assert store.read_many(specs[:3]) == expected
