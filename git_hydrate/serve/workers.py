"""The requests that open the repository run in worker threads, a few at a time.

A handler of the SDK's server that runs a library call on the event loop holds
back every other request until it returns, ``ping`` too: a claim waiting on its
remote, a long prompt being packed. :class:`Workers` runs each such call in a
thread instead, at most :data:`WORKERS` at once (a request beyond them waits for
a free one, still without holding the loop). Each call opens the repository
afresh, and every write is a compare-and-swap of a ref, so two calls in two
threads write as two processes would.

A call the client cancels (``notifications/cancelled``), or that the end of
its input cuts short, stops the git it runs through a remote if it runs one
(``ls-remote``, ``fetch`` or ``push``),
and starts no other git (:func:`~git_hydrate.store.stopping.stop_gits`), so
that it ends soon; its answer is not sent. SIGTERM and SIGHUP, heard by the main thread only, stop
every such git and end the server with ``128 + signal``, quietly, once the call
that ran it unwound (:func:`terminating`).
Only :mod:`.server` uses this, when ``git hydrate mcp`` runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Final, NoReturn, TypeVar, cast

from ..store.stopping import Stopped, allow_gits, remotes_in_sessions, stop_gits

__all__ = ["WORKERS", "Workers", "leave", "silence_stdout", "terminating"]

#: The most calls run at once (the stdio transport's reader has a thread of its own).
WORKERS: Final = 4

_T = TypeVar("_T")


class Workers:
    """Run calls in worker threads, at most ``limit`` at once."""

    def __init__(self, limit: int = WORKERS) -> None:
        self._limit = limit
        self._limiter: Any = None  # (an anyio.CapacityLimiter, made in the event loop)

    async def run(self, work: Callable[[], _T]) -> _T:
        """``work()``'s result, computed in a worker thread.

        Cancelled meanwhile, the git that ``work`` runs through a remote is stopped
        and ``work`` is waited for (it is never left running behind its request).
        ``SystemExit`` in ``work`` (:func:`terminating`) ends the process at once.
        """
        import anyio
        import anyio.lowlevel

        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._limit)
        thread: list[int] = []
        done: list[_T] = []

        def inside() -> _T:
            thread.append(threading.get_ident())
            try:
                return work()
            except SystemExit as exc:  # SIGTERM or SIGHUP while git ran: git is stopped
                leave(exc)
            except Stopped:  # cancelled: what is returned is never sent
                return cast(_T, None)
            finally:
                allow_gits(thread[0])

        async def stop_if_cancelled() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                if not done and thread:  # (cancelled while work ran)
                    stop_gits(thread=thread[0])

        async with anyio.create_task_group() as group:
            group.start_soon(stop_if_cancelled)
            # (not abandoned when cancelled: the wait goes on, shielded, until work returns)
            done.append(await anyio.to_thread.run_sync(inside, limiter=self._limiter))
            group.cancel_scope.cancel()
        await anyio.lowlevel.checkpoint_if_cancelled()  # (cancelled: no result to check)
        return done[0]


@contextlib.contextmanager
def terminating() -> Iterator[None]:
    """SIGTERM and SIGHUP, while the block runs, stop the gits the calls run in a
    session of their own (every git that talks to a remote, while it runs:
    :func:`~git_hydrate.store.stopping.remotes_in_sessions`); the call that ran
    one raises ``SystemExit`` and ends the process (:meth:`Workers.run`). With
    none running, the process ends at once. A handler of the caller's own stays."""
    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            previous[signum] = signal.signal(signum, _on_termination)
    try:
        with remotes_in_sessions():
            yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _on_termination(signum: int, _frame: FrameType | None) -> None:
    status = 128 + signum
    if not stop_gits(status):
        leave(SystemExit(status))


def leave(exc: SystemExit) -> NoReturn:
    """End the server now with ``exc``'s status (``128 + signal``), as a command
    ends on SIGTERM: without a traceback, and without waiting for the SDK's
    reader of standard input, which a client that keeps its end open would hold
    for ever. :mod:`..store.process` has stopped git by now, and every ``with``
    and ``finally`` between it and the call has run."""
    silence_stdout()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(exc.code if isinstance(exc.code, int) else 1)


def silence_stdout() -> None:
    """Point standard output at the null device, so that flushing at exit cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
