"""Stopping the gits that other threads run: the server's calls run in threads.

:func:`~.process.run_git` notes here each git it starts in a session of its
own (those that wait on a remote) and the thread that runs it. From another
thread, :func:`stop_gits` stops them, with every process of their session:

- ``stop_gits(status)``, on SIGTERM or SIGHUP (which only the main thread
  hears): every such git, and each call that ran one, or starts one from then
  on, raises ``SystemExit(status)``, as the main thread does while it runs git
  (:func:`~.process.run_git`);
- ``stop_gits(thread=...)``, for a call its client cancelled: that thread's,
  and every git it would start next (any git) raises :class:`Stopped` until
  :func:`allow_gits` (a fallback must not take the stopped git for a remote's
  failure and start another).

While :func:`remotes_in_sessions` is on (the MCP server, as it serves), every
git that talks to a remote (fetch and push too, not only the ``ls-remote`` a
claim begins with) starts in a session of its own: a push a cancelled call
ran is stopped with it, rather than landing the claim after its call ended,
and no such git can ask at the terminal the server was started from.
"""

from __future__ import annotations

import _thread
import os

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from subprocess import Popen
    from typing import Final

__all__ = [
    "Stopped",
    "allow_gits",
    "in_session",
    "refuse_if_stopped",
    "remotes_in_sessions",
    "session_ends",
    "session_runs",
    "session_starts",
    "stop_gits",
    "stop_process",
]


class Stopped(BaseException):
    """Raised in a thread whose gits :func:`stop_gits` stopped: its call was
    cancelled. Not an ``Exception`` (as ``KeyboardInterrupt``): no handler of a
    git failure takes it for one."""


#: The gits running in a session of their own (``None`` while one starts), each
#: under a token of its own, with the thread that runs it.
_SESSIONS: Final[dict[object, tuple[int, Popen[bytes] | None]]] = {}
#: The status :func:`stop_gits` ended every session with, once it did.
_ENDED: Final[list[int]] = []
#: The threads whose calls were cancelled (see :func:`allow_gits`).
_STOPPED: Final[set[int]] = set()
_LOCK: Final = _thread.allocate_lock()
#: Set while :func:`remotes_in_sessions` is on (one item: on).
_SERVING: Final[list[bool]] = []
#: The git commands that talk to a remote.
_TO_REMOTE: Final = frozenset({"fetch", "ls-remote", "push"})


class remotes_in_sessions:  # (a class: no contextlib imported for it)
    """While the block runs, every git that talks to a remote runs in a session of
    its own (see the module's docstring)."""

    def __enter__(self) -> None:
        _SERVING.append(True)

    def __exit__(self, *_exc: object) -> None:
        _SERVING.pop()


def in_session(command: str) -> bool:
    """Whether the git ``command`` (``push``...) starts in a session of its own now."""
    return bool(_SERVING) and command in _TO_REMOTE


def stop_gits(status: int | None = None, thread: int | None = None) -> bool:
    """Stop the gits running in a session of their own, in every thread (or in
    ``thread``, an ident of :mod:`threading`), with every process of their
    session; whether one was running or starting. See the module's docstring
    for ``status`` and ``thread``."""
    with _LOCK:
        if status is not None and not _ENDED:
            _ENDED.append(status)
        if thread is not None:
            _STOPPED.add(thread)
        found = [run for run in _SESSIONS.values() if thread is None or run[0] == thread]
    for _ident, proc in found:
        if proc is not None:
            stop_process(proc, True)
    return bool(found)


def allow_gits(thread: int) -> None:
    """Let ``thread`` start gits again (its cancelled call has ended)."""
    with _LOCK:
        _STOPPED.discard(thread)


def refuse_if_stopped() -> None:
    """Raise :class:`Stopped` if this thread's call was cancelled (before a git starts)."""
    if _STOPPED and _thread.get_ident() in _STOPPED:
        raise Stopped


def session_starts() -> object:
    """A token for a git about to start in a session of its own; ``SystemExit``
    once :func:`stop_gits` ended the sessions."""
    token = object()
    with _LOCK:
        if _ENDED:
            raise SystemExit(_ENDED[0])
        _SESSIONS[token] = (_thread.get_ident(), None)
    return token


def session_runs(token: object | None, proc: Popen[bytes] | None) -> None:
    """Note that ``token``'s git runs as ``proc`` (``None``: it ended); raise
    ``SystemExit`` or :class:`Stopped` if :func:`stop_gits` stopped it meanwhile
    (the caller stops ``proc`` then)."""
    if token is None:
        return
    with _LOCK:
        thread, _proc = _SESSIONS[token]
        if proc is not None:
            _SESSIONS[token] = (thread, proc)
        if _ENDED:
            raise SystemExit(_ENDED[0])
        if thread in _STOPPED:
            raise Stopped


def session_ends(token: object | None) -> None:
    """Forget ``token``'s git."""
    if token is not None:
        with _LOCK:
            _SESSIONS.pop(token, None)


#: How long git and its session have, told to end (SIGTERM), before they are killed.
_STOP_GRACE: Final = 1.0


def stop_process(proc: Popen[bytes], session: bool) -> None:
    """End ``proc`` (and its process group, the session it leads, with ``session``):
    SIGTERM, then SIGKILL after :data:`_STOP_GRACE`; then reap it. Its group is
    signalled only while it is not reaped, so that its id names no other group."""
    import signal
    import time

    if proc.returncode is None and session:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + _STOP_GRACE
            while time.monotonic() < deadline and not os.waitid(
                os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT
            ):
                time.sleep(0.01)
            os.killpg(proc.pid, signal.SIGKILL)  # (what ignored SIGTERM, or still ends)
        except (ProcessLookupError, ChildProcessError):
            pass
    elif proc.returncode is None:
        proc.kill()
    proc.wait()
