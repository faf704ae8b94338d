"""The repository class: objects, refs and git commands together."""

from __future__ import annotations

from .commands import Commands
from .digests import Digests
from .refs import Refs
from .remotecmds import RemoteCommands

__all__ = ["Repository"]


class Repository(Digests, Refs, Commands, RemoteCommands):
    """A git repository as git-hydrate uses it: objects, refs and git commands.

    Args:
        path: Any directory git accepts as (inside) a repository. ``None``
            means the current directory, honouring ``GIT_DIR`` like git does.

    Raises:
        NotARepository: ``path`` is not inside a git repository.
        UnsupportedRepository: a repository this version cannot use safely.

    Use it as a context manager so its helper process and files are closed.
    """
