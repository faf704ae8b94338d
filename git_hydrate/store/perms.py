"""Permissions as git gives them: ``core.sharedRepository`` and the umask.

A repository shared by a group asks git for group-writable files and setgid
directories. What git-hydrate creates itself (loose objects, packs, caches,
artefacts) gets the same modes, computed here from the setting read as git
reads it.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from ..errors import UnsupportedRepository
from ..settings import parse_bool

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = [
    "current_umask",
    "open_regular",
    "open_regular_fd",
    "private_file",
    "read_private",
    "shared_file_mode",
    "shared_repository_mode",
]


def shared_repository_mode(value: str | None, *, present: bool = True) -> int:
    """What ``core.sharedRepository`` asks of new files, read as git reads it.

    ``value`` is ``None`` for a key given without ``=`` (``group`` to git);
    ``present=False`` means the key is not set at all. Returns ``0``: the umask
    decides (unset, ``umask``, false, ``0``); a positive mode to add to every
    new file (``group``, true or ``1``: 0660; ``all``, ``world``, ``everybody``
    or ``2``: 0664); or a negative exact mode (``-0o640`` for ``0640``).

    Raises:
        UnsupportedRepository: a value git itself refuses.
    """
    if not present:
        return 0
    if value is None or value == "group":
        return 0o660
    if value == "umask":
        return 0
    if value in ("all", "world", "everybody"):
        return 0o664
    # An octal number, as strtol(value, &end, 8) reads it, must be all there is.
    octal = re.fullmatch(r"\s*([-+]?)([0-7]+)", value)
    if octal is None:
        flag = parse_bool(value)
        if flag is None:
            raise UnsupportedRepository(
                f"core.sharedRepository={value!r} is not a value git knows"
            )
        return 0o660 if flag else 0
    number = int(octal.group(2), 8) * (-1 if octal.group(1) == "-" else 1)
    if number in (0, 1, 2):  # the old numeric spellings of umask, group, everybody
        return (0, 0o660, 0o664)[number]
    if number & 0o600 != 0o600:
        raise UnsupportedRepository(
            f"core.sharedRepository={value} must let the owner read and write"
        )
    return -(number & 0o666)


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def shared_file_mode(setting: int, mode: int) -> int:
    """The permission bits git gives a new file or directory of ``mode`` in a
    repository whose ``core.sharedRepository`` reads as ``setting``."""
    if not setting:
        return mode & 0o7777
    tweak = -setting if setting < 0 else setting
    if not mode & stat.S_IWUSR:
        tweak &= ~0o222  # a read-only file (an object) stays read-only
    if mode & stat.S_IXUSR:
        tweak |= (tweak & 0o444) >> 2  # whoever may read may also search
    new = (mode & ~0o777) | tweak if setting < 0 else mode | tweak
    if stat.S_ISDIR(mode):
        new |= (new & 0o444) >> 2
        new |= stat.S_ISGID  # new entries inherit the directory's group
    return new & 0o7777


def private_file(status: os.stat_result) -> bool:
    """Whether a file can only have been written by this user: owned by this user
    and writable by nobody else (a derived file whose content is acted on
    unchecked, such as a cached prompt or a compiled scanner, is trusted only
    then: in a shared repository another member could have planted it)."""
    return status.st_uid == os.geteuid() and not status.st_mode & 0o022


def open_regular(path: str | bytes, *, follow_symlinks: bool = True) -> BinaryIO:
    """The regular file at ``path``, open for reading. A FIFO or a device in its
    place (in a shared repository another member can make one in ``hydrate/``) is
    refused rather than waited on: opening a FIFO blocks until a writer comes.
    ``follow_symlinks=False``: a symbolic link at ``path`` is refused too (a
    work-tree file read in place of a blob).

    Raises:
        OSError: missing, unreadable, or not a regular file.
    """
    return open(open_regular_fd(path, follow_symlinks=follow_symlinks), "rb")


def open_regular_fd(
    path: str | bytes, *, follow_symlinks: bool = True, dir_fd: int | None = None
) -> int:
    """:func:`open_regular` as a bare descriptor (for a reader that maps the file,
    or reads a few bytes with ``os.pread``); the caller closes it. ``dir_fd``: a
    relative ``path`` is taken from that open folder (as ``os.open`` takes it).

    Raises:
        OSError: missing, unreadable, or not a regular file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_private(path: str) -> bytes | None:
    """The content of the file at ``path`` if :func:`private_file` trusts it, else
    ``None`` (missing, unreadable, not a regular file, or one another user could
    have written)."""
    try:
        with open_regular(path) as fh:
            if not private_file(os.fstat(fh.fileno())):
                return None
            return fh.read()
    except OSError:
        return None
