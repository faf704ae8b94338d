"""How far back ranking reads a revision's history: the newest 2,000 non-merge commits
(``MAX_COMMITS``), and a history cached when it read 5,000 is read anew."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from git_hydrate import Ledger
from git_hydrate.hydrate import history as history_module
from git_hydrate.hydrate.history import read_history
from tests.conftest import git, head_of

#: Commits made past the reach (each changes one file of its own).
PAST = 2100


def _many_commits(repo: Path, count: int) -> None:
    """``count`` commits on main, each adding ``f<i>.txt``, by one fast-import."""
    stream = [f"reset refs/heads/main\nfrom {head_of(repo)}\n"]
    for i in range(count):
        message = f"change {i}\n"
        stream.append(
            "commit refs/heads/main\n"
            f"committer A <a@example.com> {1_700_000_000 + i} +0000\n"
            f"data {len(message)}\n{message}"
            f"M 100644 inline f{i}.txt\ndata 2\n{i % 10}\n\n"
        )
    git(repo, "fast-import", "--quiet", input="".join(stream))
    git(repo, "reset", "-q", "--hard", "main")


def test_the_history_reaches_the_newest_2000_commits(repo: Path) -> None:
    _many_commits(repo, PAST)
    head = head_of(repo)
    newest = git(repo, "rev-list", "--max-count=2000", head).split()
    with Ledger(repo) as ledger:
        read = read_history(ledger.repo, head)
    assert read.commits == newest
    assert read.paths[0] == [f"f{PAST - 1}.txt"] and read.paths[-1] == [f"f{PAST - 2000}.txt"]


def test_a_history_cached_when_it_read_5000_commits_is_read_anew(repo: Path) -> None:
    """A cache file of the layout before (version 4, which read 5,000 commits) would
    rank the commit otherwise than a fresh read: it is not used."""
    head = head_of(repo)
    with Ledger(repo) as ledger:
        fresh = read_history(ledger.repo, head)
        path = history_module._cached(ledger.repo, head)
        older = [4, ["0" * 40], [[b"elsewhere.txt"]], ["long ago"], []]
        with open(path, "wb") as fh:
            fh.write(msgspec.msgpack.encode(older))
        assert os.path.exists(path)
        assert read_history(ledger.repo, head) == fresh
        assert read_history(ledger.repo, head).commits == [head]
