"""Files below a directory, reached without following a symbolic link on the way.

git reads no tracked path through a symbolic link in one of its folders (its
"beyond a symbolic link"): with ``conf -> /etc``, ``conf/passwd`` is a deleted
file to git, and its content is not the repository's. :class:`ConfinedTree`
holds the same line without a window between a check and an open: each folder
below the top is opened once, with ``O_DIRECTORY | O_NOFOLLOW``, relative to
its parent's descriptor, and each file relative to its folder's with
``O_NOFOLLOW``; a link swapped in meanwhile makes the open fail, it is never
followed. The top itself is taken as given (links above it are the user's).

The folders' descriptors are kept for a run, :data:`KEPT` at most (the least
recently used closed first): a listing in path order opens each folder once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from typing import Final

from .perms import open_regular_fd

__all__ = ["KEPT", "BeyondSymlink", "ConfinedTree"]

#: The folders' descriptors kept open at a time.
KEPT: Final = 64
_FOLDER_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: What ``open`` answers for a link opened with ``O_NOFOLLOW`` (``O_DIRECTORY`` too:
#: Linux says ``ENOTDIR``; FreeBSD ``EMLINK``).
_REFUSED: Final = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


class BeyondSymlink(OSError):
    """A path one of whose folders below the top is a symbolic link."""


class ConfinedTree:
    """The files below ``top``, each reached without following a link (see the module).

    Paths are relative to ``top``, ``/``-separated, as git lists them; one that
    is absolute, holds an empty, ``.`` or ``..`` part or a NUL is missing
    (``FileNotFoundError``). Safe to share between threads; :meth:`close`
    releases the descriptors (a later call opens them again).
    """

    def __init__(self, top: str | bytes) -> None:
        self.top = os.fsencode(top)
        self._folders: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> ConfinedTree:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the folders' descriptors."""
        with self._lock:
            folders, self._folders = self._folders, {}
        for fd in folders.values():
            os.close(fd)

    def lstat(self, path: bytes) -> os.stat_result:
        """The status of ``path`` itself (a link at its end is not followed).

        Raises:
            BeyondSymlink: a folder on its way is a symbolic link.
            OSError: it is missing (``FileNotFoundError``, ``NotADirectoryError``:
                a file where a folder is on its way), or cannot be read.
        """
        folder, name = _split(path)
        with self._lock:
            return os.stat(name, dir_fd=self._folder(folder), follow_symlinks=False)

    def open_fd(self, path: bytes) -> int:
        """The regular file at ``path`` open for reading, as a bare descriptor the
        caller closes (a link, FIFO or device there is refused, never followed
        nor waited on).

        Raises:
            BeyondSymlink: a folder on its way is a symbolic link.
            OSError: missing, unreadable, or not a regular file.
        """
        folder, name = _split(path)
        with self._lock:
            return open_regular_fd(name, follow_symlinks=False, dir_fd=self._folder(folder))

    def read(self, path: bytes, limit: int) -> bytes:
        """At most ``limit`` bytes of the regular file at ``path`` (see :meth:`open_fd`)."""
        with open(self.open_fd(path), "rb") as fh:
            return fh.read(limit)

    def folder_fd(self, folder: bytes, *, make: bool = False, mode: int = 0o777) -> int:
        """The descriptor of ``folder`` (``b""``: the top), kept by this tree (the
        caller must not close it, and uses it before the next call); ``make``:
        the folders missing on its way are made (``mode``, less the umask).

        Raises:
            BeyondSymlink: a folder on its way is a symbolic link.
            OSError: missing (without ``make``) or unreadable.
        """
        with self._lock:
            return self._folder(folder, make, mode)

    def _folder(self, folder: bytes, make: bool = False, mode: int = 0o777) -> int:
        """:meth:`folder_fd`, the lock held: from the nearest folder on its way that
        is kept (or the top), each folder below it opened in turn (a loop, not a
        call per level: a tree may be thousands of folders deep)."""
        below: list[tuple[bytes, bytes]] = []  # (folder, its name), deepest first
        fd = self._folders.pop(folder, None)
        while fd is None and folder:
            parent, name = _split(folder)
            below.append((folder, name))
            folder = parent
            fd = self._folders.pop(folder, None)
        if fd is None:
            fd = os.open(self.top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._keep(folder, fd)
        for folder, name in reversed(below):
            fd = _open_folder(fd, name, make, mode)
            self._keep(folder, fd)
        return fd

    def _keep(self, folder: bytes, fd: int) -> None:
        """Keep ``fd`` as ``folder``'s, the most recently used (the least recently
        used closed beyond :data:`KEPT`); the lock held."""
        self._folders[folder] = fd
        if len(self._folders) > KEPT:
            oldest = next(iter(self._folders))
            os.close(self._folders.pop(oldest))


#: Names that do not name an entry of their folder.
_NOT_NAMES: Final = (b"", b".", b"..")


def _split(path: bytes) -> tuple[bytes, bytes]:
    """``(folder, name)`` of a relative path; its last part checked to name an entry
    (each folder's own name is checked when it is first opened: :func:`_open_folder`).

    Raises:
        FileNotFoundError: it does not name one.
    """
    folder, slash, name = path.rpartition(b"/")
    if name in _NOT_NAMES or (slash and not folder) or b"\0" in name:
        raise FileNotFoundError(errno.ENOENT, "not a path below the top", path)
    return folder, name


def _open_folder(parent: int, name: bytes, make: bool, mode: int) -> int:
    """The folder ``name`` of the folder open as ``parent``, never through a link
    (``make``: made when missing).

    Raises:
        BeyondSymlink: ``name`` is a symbolic link.
    """
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not make:
            raise
    except OSError as exc:
        if exc.errno in _REFUSED and _is_link(parent, name):
            raise BeyondSymlink(errno.ELOOP, "a symbolic link on the way", name) from None
        raise
    with contextlib.suppress(FileExistsError):  # (made meanwhile: opened as any other)
        os.mkdir(name, mode, dir_fd=parent)
    return _open_folder(parent, name, False, mode)


def _is_link(parent: int, name: bytes) -> bool:
    """Whether the entry ``name`` of the folder ``parent`` is a symbolic link."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False
