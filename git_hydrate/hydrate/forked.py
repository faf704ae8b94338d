"""Work over a sequence of items shared with a forked second process.

A first task reads, hashes, scans and tokenises every file of a tree: work
per file, independent from file to file, that one process does on one core.
:func:`both_ends` lets a forked child take the items from the end while this
process takes them from the start; they meet where they cross, so neither
waits on a fixed half. The child only computes: it writes no file, starts no
process, and sends its results (bytes per item) through a pipe when it is
done; this process then takes them *in order*, each item's result merged
where it would have been computed, so what comes out is what one process
would have made, byte for byte. The child holds none of this process's
pipes (its stdin, stdout and stderr, those to the git processes it runs:
pointed at ``/dev/null``) and does not outlive it (on Linux the kernel kills
it when this process ends; elsewhere it stops at its next item).

Safe by construction: no fork in a process that runs threads (the child would
inherit locks held by threads it does not have; a child forked while Python
warns of threads is killed at once), nor where ``os.fork`` is missing, nor on
one core; the child leaves by ``os._exit`` (no buffer flushed twice, no
handler run); any item the child did not send (it failed, was killed, sent
damaged bytes, sent nothing for :data:`PATIENCE` seconds: it is killed) is
computed here, as it would have been without it. The two claim
items through a shared page: each writes the item it takes before it looks
at the other's; a race at the crossing point can leave an item to both (this
process's own result is used) or to neither (computed here after).
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import select
import signal
import stat
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Final

__all__ = [
    "MIN_ITEMS",
    "PATIENCE",
    "both_ends",
    "can_fork",
    "detach",
    "fork",
    "reap",
    "signals_held",
]

#: Fewer items than this are done here alone: a fork costs a few milliseconds.
MIN_ITEMS: Final = 256
#: The claim slots of the shared page, as 8-byte integers (:func:`_slots`): 0, the
#: item this process takes; 1, the lowest item the child took. Read and written as
#: items of a memoryview, each one 8-byte copy (an aligned store, an aligned load).
#: Not with ``struct.pack_into``, which zeroes the bytes before it writes them: the
#: other process read a slot as 0 now and then, and at 100,000 files the run stopped
#: its own part a few seconds in and waited 16-18 s for the child to do the rest.
_SLOTS: Final = "q"
#: A result's frame in the pipe: the item's position and its length.
_FRAME: Final = struct.Struct("=qq")
#: Seconds this process waits for the child's next bytes before it gives up on it
#: (it sends when it meets this process, having one item at most to finish).
PATIENCE: Final = 30
#: Bytes written or read at a time through the pipe.
_WRITE: Final = 1 << 20


def can_fork() -> bool:
    """Whether a second process may share the work: ``os.fork`` and ``poll``
    exist, this process runs no other thread, and it may run on more than one core."""
    if not hasattr(os, "fork") or not hasattr(select, "poll"):
        return False
    if threading.active_count() != 1 or _threads() != 1:
        return False
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return cores > 1


def both_ends(
    count: int,
    own: Callable[[int], None],
    remote: Callable[[int], bytes],
    merge: Callable[[int, bytes], None],
    *,
    minimum: int | None = None,
) -> int:
    """Do items ``0 .. count-1``, each once, in order: ``own(i)`` does item ``i``
    here; a forked child does items from the end as ``remote(j)`` (pure: its
    bytes are all that comes back), which this process then gives to
    ``merge(j, result)`` in its place (bytes ``merge`` cannot take: it does
    the item as ``own`` would). Without a child (too few items, see
    :func:`can_fork`; or the fork failed), ``own`` does every item. Returns
    how many items the child's results gave."""
    if count < (MIN_ITEMS if minimum is None else minimum) or not can_fork():
        for i in range(count):
            own(i)
        return 0
    page = mmap.mmap(-1, mmap.PAGESIZE)
    with _slots(page) as slots:
        slots[0] = -1  # this process: the item it takes
        slots[1] = count  # the child: the lowest item it took
    try:
        read_end, write_end = os.pipe()
    except OSError:
        page.close()
        for i in range(count):
            own(i)
        return 0
    parent, pid, writing = os.getpid(), -1, True
    try:
        with signals_held():  # (no interrupt before the child is known and the pipe ours)
            pid = _fork()
            if pid == 0:  # pragma: no cover - the child (its results are checked by the tests)
                os.close(read_end)
                _child(page, count, remote, write_end, parent)
            os.close(write_end)
            writing = False
        stop = _own_part(page, count, own) if pid > 0 else 0
        # (all done here: the child took none, and there is nothing to wait for)
        frames = _frames(read_end) if pid > 0 and stop < count else iter(())
        sent, merged = next(frames, None), 0
        for i in range(stop, count):
            while sent is not None and sent[0] < i:  # (done here too: a race)
                sent = next(frames, None)
            if sent is not None and sent[0] == i:
                merge(i, sent[1])
                merged += 1
                sent = next(frames, None)
            else:
                own(i)
        return merged
    finally:
        if writing:
            os.close(write_end)
        os.close(read_end)
        page.close()
        if pid > 0:
            _reap(pid)


def _fork() -> int:
    """``os.fork()``; -1 if it failed, or if Python warned that this process runs
    threads (3.12 and later; the child, which may deadlock, is killed at once:
    a warning raised as an error would leave it running)."""
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            pid = os.fork()
        except OSError:
            return -1
    if pid > 0 and warned:
        _reap(pid)
        return -1
    return pid


def _threads() -> int:
    """The threads this process runs, as the system counts them (those no
    :mod:`threading` object stands for, too); 1 where it does not say."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


@contextlib.contextmanager
def _slots(page: mmap.mmap) -> Iterator[memoryview]:
    """The claim slots of ``page`` (see :data:`_SLOTS`), released after the block."""
    with memoryview(page) as raw, raw.cast(_SLOTS) as slots:
        yield slots


def _own_part(page: mmap.mmap, count: int, own: Callable[[int], None]) -> int:
    """Items from the start, up to the child's: where this process stopped."""
    with _slots(page) as slots:
        for i in range(count):
            slots[0] = i
            if slots[1] <= i:
                return i
            own(i)
        return count


def _child(
    page: mmap.mmap, count: int, remote: Callable[[int], bytes], fd: int, parent: int
) -> None:
    """The child's part: items from the end down to this process's, then their
    results sent in item order (taken as they come); never returns."""
    code = 1
    try:
        gc.disable()  # (no finaliser of this process's objects runs in the child)
        _detach(parent, fd)
        slots, getppid = memoryview(page).cast(_SLOTS), os.getppid  # (never released)
        out: list[bytes] = []
        with contextlib.suppress(Exception):  # (what failed and below: done there)
            for j in range(count - 1, -1, -1):
                if getppid() != parent:  # (it ended: nobody takes the results)
                    os._exit(1)
                slots[1] = j
                if slots[0] >= j:
                    break
                result = remote(j)
                out.append(_FRAME.pack(j, len(result)) + result)
        out.reverse()  # (sent in order: taken as they come, a megabyte held at most)
        _send(fd, out)
        code = 0
    except BaseException:  # (the parent computes whatever did not come)
        code = 1
    finally:
        os._exit(code)


#: The signals that end a process, held while a child is forked (:func:`signals_held`).
_ENDINGS: Final = frozenset(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
#: The signal mask before :func:`signals_held`, while it holds them (the child's
#: :func:`detach` puts it back once the child no longer runs the parent's handlers).
_before: set[int | signal.Signals] | None = None


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold (block) the signals that end a process for the block's time: a fork and
    what records its child in the parent are not cut between the two (the parent
    would leave a child nobody reaps; the child would unwind through the parent's
    code). A child forked in the block lets them through in :func:`detach`."""
    global _before
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDINGS)
    _before = before
    try:
        yield
    finally:
        _before = None
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def fork() -> int:
    """``os.fork()`` for a child that leaves by ``os._exit``: 0 in the child, its
    pid here, -1 if it failed or this process runs threads (see :func:`can_fork`)."""
    return _fork()


def detach(parent: int, *keep: int) -> None:
    """A forked child's start (see :func:`_detach`)."""
    _detach(parent, *keep)


def reap(pid: int) -> bool:
    """Wait for the child ``pid``, killed first if it still runs: whether it had
    ended by itself, with status 0."""
    return _reap(pid)


def _detach(parent: int, *keep: int) -> None:
    """The child's start: it dies with ``parent`` (Linux), or leaves if that has
    ended already; it holds no pipe of the parent's but those of ``keep``; an interrupt
    ends it at once, unless the parent ignores interrupts (then so does it)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):  # (elsewhere: it checks between items)
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # (it ended before the kernel was told)
        os._exit(1)
    _let_go(*keep)
    if signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, None):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    for ending in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if ending is not None and callable(signal.getsignal(ending)):
            signal.signal(ending, signal.SIG_DFL)  # (no handler of the parent's runs here)
    if _before is not None:  # (forked while they were held: let them through now)
        signal.pthread_sigmask(signal.SIG_SETMASK, _before)


#: prctl's option: the signal the child gets when its parent ends.
_PR_SET_PDEATHSIG: Final = 1


def _let_go(*keep: int) -> None:
    """Point the child's descriptors 0, 1 and 2, and every other but those of ``keep``
    that is not a file or directory (the pipes to git processes, sockets), at
    ``/dev/null``: whoever reads the other end sees its end when the parent
    ends. Not closed: the numbers stay taken, so no object of the parent's that
    names one closes a file the child opens. (Files stay open: the child may
    read through them, an object store's packs.)"""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        try:
            fds = [int(name) for name in os.listdir("/dev/fd")]
        except OSError:
            fds = [0, 1, 2]
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in fds:
            if fd == null or fd in keep:
                continue
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                continue  # (the listing's own, closed since)
            if fd > 2 and (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                continue
            os.dup2(null, fd)
    finally:
        os.close(null)


def _send(fd: int, parts: list[bytes]) -> None:
    """Write ``parts`` to ``fd``, a megabyte or so at a time (not joined whole:
    the results twice over would be the child's peak)."""
    start = 0
    while start < len(parts):
        end, size = start, 0
        while end < len(parts) and size < _WRITE:
            size += len(parts[end])
            end += 1
        data = memoryview(b"".join(parts[start:end]))
        parts[start:end] = [b""] * (end - start)
        while data:
            data = data[os.write(fd, data) :]
        start = end


def _frames(fd: int) -> Iterator[tuple[int, bytes]]:
    """The child's results as they come through the pipe, in item order: a
    megabyte or so read at a time; the end of the pipe, or a frame cut short,
    ends them (this process does the items left)."""
    buffer, at = bytearray(), 0
    while True:
        if len(buffer) - at >= _FRAME.size:
            item, length = _FRAME.unpack_from(buffer, at)
            end = at + _FRAME.size + length
            if item < 0 or length < 0:
                return
            if end <= len(buffer):
                yield item, bytes(buffer[at + _FRAME.size : end])
                at = end
                continue
        if not _readable(fd):
            return  # (the child is stuck: _reap kills it)
        chunk = os.read(fd, _WRITE)
        if not chunk:
            return
        del buffer[:at]
        buffer += chunk
        at = 0


def _readable(fd: int) -> bool:
    """Whether ``fd`` has bytes (or its end) within :data:`PATIENCE` seconds."""
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(PATIENCE * 1000))


def _reap(pid: int) -> bool:
    """Wait for the child (killed first if it is still running: this process
    left early, or it has no more to send); whether it had ended with status 0."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return False
    except OSError:
        return False
    return os.waitstatus_to_exitcode(status) == 0
