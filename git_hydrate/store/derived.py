"""Files derived from the repository: disposable, and written for this user only.

Caches under ``<common dir>/hydrate/`` (the sha256 cache, token counts,
outlines) are a header line and then lines appended run by run. What they
say is acted on unchecked, so they are readable and writable by this user
only and trusted only then (:func:`~git_hydrate.store.read_private`).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from .tempfiles import temporary_name

if TYPE_CHECKING:
    from .base import RepositoryBase

__all__ = ["write_derived"]


def write_derived(
    repo: RepositoryBase | None, path: str, header: bytes, lines: bytes, *, whole: bool
) -> None:
    """Write a derived file for this user only: ``header`` and ``lines`` whole when
    ``whole`` or when it is missing (a temporary file renamed over it), else
    ``lines`` appended (one ``O_APPEND`` write: concurrent runs interleave whole
    runs). ``repo`` shares the directories it creates as the repository asks.

    A write the system cuts short (a signal, a full disk, the file size limit) is
    followed by one for the rest, until all is written or one fails. Another run's
    append can fall between the two: the line cut there reads as damaged, which
    every reader of these files skips (it is a cache: a miss).

    Raises:
        OSError: whole: nothing was written; appended: nothing, or the start of
            ``lines`` up to a cut.
    """
    if whole or not os.path.exists(path):
        if repo is not None:
            repo.replace_file(path, [header, lines], private=True)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = temporary_name(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            with open(os.open(tmp, flags, 0o600), "wb") as fh:
                fh.write(header + lines)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        view = memoryview(lines)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
