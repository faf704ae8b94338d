"""The git boundary: the only package that runs git or imports dulwich.

A :class:`Repository` is opened from any path git itself would accept (a work
tree or one of its subdirectories, a linked worktree, a ``.git`` directory, a
bare repository) and honours ``GIT_DIR`` and friends: it is found and its
configuration read in-process only where that is certainly git's answer
(:mod:`.discover`, :mod:`.configfile`), and by ``git rev-parse`` and ``git
config`` otherwise. Its parts, one concern a module:

* :mod:`.base` — opening, settings, identity, modes;
* :mod:`.discover`, :mod:`.configfile` — git's discovery and configuration
  files read without a process, or handed back to git;
* :mod:`.objects` — reading (loose objects in-process, :mod:`.loose`; the rest
  through one ``cat-file`` process), writing loose objects and packs (a bulk
  write's objects as one pack through ``git index-pack``: :mod:`.packs`);
  :mod:`.digests`, blobs' digests kept for a run (a body many tasks link is
  hashed once);
* :mod:`.refs` — reading refs, changing them through ``git update-ref``;
  :class:`Refs` alone is a repository that only needs its refs and settings;
* :mod:`.commands` — every other git command, by name; :mod:`.remotecmds`, those
  that reach a remote (listing, fetching, pushing), and :mod:`.credentials`, what
  one of them hands the next (a first pull's listing, its fetch);
* :mod:`.confined` — a work tree's (or a directory's) files read without following
  a symbolic link on the way, as git reads them;
* :mod:`.catfile`, :mod:`.commits`, :mod:`.perms`, :mod:`.process` — the helpers
  under them; :mod:`.stopping`, the gits of other threads stopped (the MCP
  server's calls run in threads);
* :mod:`.derived`, :mod:`.keyed`, :mod:`.tempfiles` — the caches' files (a keyed
  answer: one question's, good for one key), and the temporary files their writers
  leave when killed; :mod:`.lockfiles`, the lock files git-hydrate
  makes (who made one, and what a command holding one does when a signal ends it).

Names are resolved lazily (as in ``git_hydrate`` itself): what needs only a
task's ref and the settings (the prompt cache's lookup) opens a :class:`Refs`
without importing the object store, the ``cat-file`` reader and what they
import (tempfile, hashlib, zlib...).
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import Any, Final

    from .base import Identity
    from .catfile import Prefetch
    from .commands import git_in_directory
    from .commits import CommitInfo, parse_commit_tree
    from .confined import BeyondSymlink, ConfinedTree
    from .derived import write_derived
    from .objects import MODE_BLOB, MODE_TREE
    from .perms import (
        current_umask,
        open_regular,
        open_regular_fd,
        private_file,
        read_private,
        shared_file_mode,
        shared_repository_mode,
    )
    from .refs import RefRace, Refs, RefUpdate
    from .remotecmds import FetchRace, PushResult
    from .repository import Repository

__all__ = [
    "MODE_BLOB",
    "MODE_TREE",
    "BeyondSymlink",
    "CommitInfo",
    "ConfinedTree",
    "FetchRace",
    "Identity",
    "Prefetch",
    "PushResult",
    "RefRace",
    "RefUpdate",
    "Refs",
    "Repository",
    "current_umask",
    "git_in_directory",
    "open_regular",
    "open_regular_fd",
    "parse_commit_tree",
    "private_file",
    "read_private",
    "shared_file_mode",
    "shared_repository_mode",
    "write_derived",
]

#: Where each public name lives.
_HOME: Final = {
    "Identity": "base",
    "Prefetch": "catfile",
    "FetchRace": "remotecmds",
    "PushResult": "remotecmds",
    "git_in_directory": "commands",
    "MODE_BLOB": "objects",
    "MODE_TREE": "objects",
    "CommitInfo": "commits",
    "parse_commit_tree": "commits",
    "BeyondSymlink": "confined",
    "ConfinedTree": "confined",
    "current_umask": "perms",
    "open_regular": "perms",
    "open_regular_fd": "perms",
    "private_file": "perms",
    "read_private": "perms",
    "shared_file_mode": "perms",
    "shared_repository_mode": "perms",
    "RefRace": "refs",
    "Refs": "refs",
    "RefUpdate": "refs",
    "Repository": "repository",
    "write_derived": "derived",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{home}", fromlist=[name]), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
