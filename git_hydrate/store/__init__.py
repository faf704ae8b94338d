"""The git boundary: the only package that runs git or imports dulwich.

A :class:`Repository` is opened from any path git itself would accept (a work
tree or one of its subdirectories, a linked worktree, a ``.git`` directory, a
bare repository) and honours ``GIT_DIR`` and friends, because discovery is
delegated to ``git rev-parse``. Its parts, one concern a module:

* :mod:`.base` — discovery, settings (one ``git config`` read), identity, modes;
* :mod:`.objects` — reading through one ``cat-file`` process, writing loose
  objects and packs;
* :mod:`.refs` — reading refs, changing them through ``git update-ref``;
* :mod:`.commands` — every other git command, by name;
* :mod:`.catfile`, :mod:`.perms`, :mod:`.process` — the helpers under them.
"""

from __future__ import annotations

from .base import Identity, private_file
from .catfile import Prefetch
from .commands import Commands, PushResult, git_in_directory
from .objects import MODE_BLOB, MODE_TREE, CommitInfo, Objects, parse_commit_tree
from .perms import current_umask, shared_file_mode, shared_repository_mode
from .refs import RefRace, Refs, RefUpdate

__all__ = [
    "MODE_BLOB",
    "MODE_TREE",
    "CommitInfo",
    "Identity",
    "Prefetch",
    "PushResult",
    "RefRace",
    "RefUpdate",
    "Repository",
    "current_umask",
    "git_in_directory",
    "parse_commit_tree",
    "private_file",
    "shared_file_mode",
    "shared_repository_mode",
]


class Repository(Objects, Refs, Commands):
    """A git repository as git-hydrate uses it: objects, refs and git commands.

    Args:
        path: Any directory git accepts as (inside) a repository. ``None``
            means the current directory, honouring ``GIT_DIR`` like git does.

    Raises:
        NotARepository: ``path`` is not inside a git repository.
        UnsupportedRepository: a repository this version cannot use safely.

    Use it as a context manager so its helper process and files are closed.
    """

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
