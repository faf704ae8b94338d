"""The lock files git-hydrate makes: who made one, and what a command that holds one does
when a signal ends it.

Each lock file git-hydrate creates (its own ``hydrate-*.lock`` beside git's files,
and the ref locks of a packed write) holds one line naming its maker,
``git-hydrate PID HOST``: HOST tells this machine (its boot, on Linux) and pid
namespace apart from another sharing the repository. A command that finds such a
lock can tell at once that its maker is gone (same host, that pid not running)
and take it over, instead of waiting for it to age; one whose maker still runs is
never broken. A lock holding anything else (git's own hold a ref's new value) is
judged by its age, as before.

A command holding a lock (:func:`guarded`) ends on SIGTERM or SIGHUP by raising
``SystemExit(128 + signal)``, as Ctrl-C raises ``KeyboardInterrupt``, so that the
``finally`` that removes the lock runs; and an ending signal that comes while a
lock is made and recorded for that ``finally`` (:func:`deferred`) waits until both
are done. Only the main thread hears signals: elsewhere both are no-ops.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, ClassVar, Final

__all__ = [
    "CLEARED_AFTER_SECONDS",
    "clearing",
    "create",
    "deferred",
    "guarded",
    "maker",
    "maker_gone",
    "maker_runs",
    "take_over",
]

#: How old a lock file that no process is known to hold must be before ``git hydrate
#: doctor --clear-stale-locks`` removes it (its ``--older-than`` default).
CLEARED_AFTER_SECONDS: Final = 60.0
#: The first word of a lock file git-hydrate made.
_MARK: Final = b"git-hydrate"
#: This process's line (made once).
_line: bytes | None = None


def _host() -> str:
    """What tells this machine and pid namespace from another: the host's name,
    and on Linux its boot id and the pid namespace (no white space)."""
    parts = [os.uname().nodename if hasattr(os, "uname") else ""]
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id", "rb") as fh:
        parts.append(fh.read(64).decode("ascii", "replace").strip())
    with contextlib.suppress(OSError):
        parts.append(os.readlink("/proc/self/ns/pid"))
    return "/".join(parts).replace(" ", "_") or "-"


def _this_line() -> bytes:
    global _line
    if _line is None:
        _line = b"%s %d %s\n" % (_MARK, os.getpid(), _host().encode("utf-8", "replace"))
    return _line


def clearing(age: float) -> str:
    """What clears a lock file left behind ``age`` seconds ago, as doctor judges it:
    the command, at once past :data:`CLEARED_AFTER_SECONDS`; before, when it will.
    The command that found it never removes it: git closes a ref lock's file while
    it holds it, so no process is seen to have it open, and the git holding it may
    be alive where this process cannot look (a plain ``git fetch`` of another user,
    on another host)."""
    if age >= CLEARED_AFTER_SECONDS:
        return "clear it with: git hydrate doctor --clear-stale-locks"
    wait = max(1, int(CLEARED_AFTER_SECONDS - age + 0.999))
    return f"git hydrate doctor --clear-stale-locks clears it in {wait} s"


def stamp() -> str:
    """This process's line without its end: what a file that should name its maker
    holds (``git index-pack --keep=`` writes it into a pack's ``.keep``)."""
    return _this_line().decode("utf-8", "replace").strip()


def create(path: str) -> None:
    """Create the lock file ``path`` (``O_EXCL``), naming this process as its maker.

    Raises:
        FileExistsError: it exists (another writer holds it).
        OSError: it cannot be made here.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.write(fd, _this_line())
    except BaseException:
        # (a full disk: the file is made, its line is not. Left, it would name no
        # maker, and hold up the next writer until it is old enough to take over.)
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def maker(path: str) -> tuple[int, bool, os.stat_result] | None:
    """The lock file's maker: ``(pid, on this host, the file's stat)``; ``None``
    when it names none (not one of git-hydrate's, or gone)."""
    try:
        with open(path, "rb") as fh:
            stat = os.fstat(fh.fileno())
            words = fh.read(512).split()
    except OSError:
        return None
    if len(words) != 3 or words[0] != _MARK or not words[1].isdigit():
        return None
    host = words[2].decode("utf-8", "replace")
    return int(words[1]), host == _host_of_line(), stat


def _host_of_line() -> str:
    return _this_line().split()[2].decode("utf-8", "replace")


def _running(pid: int) -> bool:
    if pid <= 0:
        return True  # (names no one process: not provably gone)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # (another user's: it runs)
    return True


def maker_gone(path: str) -> os.stat_result | None:
    """The stat of the lock file ``path`` when its maker is provably gone (made on
    this host by a process no longer running), for :func:`take_over`; else ``None``."""
    found = maker(path)
    if found is None or not found[1] or _running(found[0]):
        return None
    return found[2]


def maker_runs(path: str) -> int | None:
    """The pid of the lock file's maker when it was made on this host and runs."""
    found = maker(path)
    return found[0] if found is not None and found[1] and _running(found[0]) else None


def take_over(path: str, judged: os.stat_result) -> None:
    """Remove the lock file ``path`` judged left behind (``judged``: its stat
    then), unless it is another file by now: it is moved aside (atomically) and
    removed if it is the one judged, else put back (another writer that took over
    the same lock a moment before holds it now)."""
    aside = f"{path}..{os.getpid()}.lock"  # (".." is in no ref name: no one's lock)
    try:
        os.rename(path, aside)
    except OSError:
        return  # removed meanwhile, or cannot be: the caller tries again
    try:
        moved = os.stat(aside)
        if (moved.st_dev, moved.st_ino) != (judged.st_dev, judged.st_ino):
            with contextlib.suppress(OSError):
                os.link(aside, path)  # (the other writer's again)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(aside)


class _Endings:
    """The ending signals' state while this process holds lock files (main thread)."""

    holds = 0  # nested guarded() blocks
    deferring = 0  # nested deferred() blocks
    came: int | None = None  # the signal that came while deferring
    previous: ClassVar[dict[int, Any]] = {}  # the handlers guarded() replaced


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _heard(signum: int, frame: FrameType | None) -> None:
    if _Endings.deferring:
        _Endings.came = _Endings.came or signum
        return
    _end(signum, frame)


def _end(signum: int, frame: FrameType | None) -> None:
    """What the signal does without the lock: the handler it had (Ctrl-C's
    ``KeyboardInterrupt``, a caller's own), else ``SystemExit(128 + signal)``."""
    previous = _Endings.previous.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """While the block runs (it holds lock files), SIGINT, SIGTERM and SIGHUP
    unwind it (see the module's docstring); a handler a caller set is called."""
    import signal

    if not _main_thread():
        yield
        return
    if not _Endings.holds:
        _Endings.previous = {}
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum: int | None = getattr(signal, name, None)
            if signum is None:
                continue
            if signal.getsignal(signum) not in (None, signal.SIG_IGN):  # (ignored: stays so)
                _Endings.previous[signum] = signal.signal(signum, _heard)
    _Endings.holds += 1
    try:
        yield
    finally:
        _Endings.holds -= 1
        if not _Endings.holds:
            for signum, handler in _Endings.previous.items():
                signal.signal(signum, handler)
            _Endings.previous = {}


class deferred:
    """While the block runs (a lock is made and recorded, or removed), an ending
    signal waits; it ends the command as the block ends. Only inside :func:`guarded`."""

    counted = False

    def __enter__(self) -> None:
        if _Endings.holds and _main_thread():
            self.counted = True
            _Endings.deferring += 1

    def __exit__(self, *_exc: object) -> None:
        if not self.counted:
            return
        _Endings.deferring -= 1
        came, _Endings.came = _Endings.came, None
        if came is not None and not _Endings.deferring:
            _end(came, None)
        elif came is not None:
            _Endings.came = came
