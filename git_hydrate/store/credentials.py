"""Credentials handed from one git process to the next, asking no person in between.

A first pull lists the remote, then fetches the listed tips by id: two
connections. The listing runs *unattended* (:data:`UNATTENDED`): git reads no
terminal and ssh runs no askpass program (started without a controlling
terminal, ssh cannot read a passphrase either), so what only a person can give
makes it fail, and the ``git fetch`` after it asks once. A credential helper or
git's own askpass program (often one that hands out a token) still answers the
listing; a helper of ours (:data:`TELL`) hears what git stored, or erased, and the
fetch gets it back from another (:data:`GIVE`) through a pipe: never a file, an
argument or the environment, and only for where it was given. Each pipe is served
by a thread while git runs (:class:`Told`, :class:`Given`), so neither side waits
on a full one.
"""

from __future__ import annotations

import os
import selectors
import shlex
import threading
from typing import Final, Self

from ..errors import GitFailed

__all__ = [
    "MAX_CREDENTIAL",
    "UNATTENDED",
    "CredentialsRefused",
    "Given",
    "Told",
    "heard",
    "read_now",
]


#: The environment of a git that must ask no person: git reads no terminal, and
#: ssh runs no askpass program (OpenSSH 8.4+; started without a controlling
#: terminal, it cannot read a passphrase from one either). What answers without
#: a person still does: credential helpers and git's askpass program (a token).
UNATTENDED: Final = {"GIT_TERMINAL_PROMPT": "0", "SSH_ASKPASS_REQUIRE": "never"}

#: A credential helper that tells descriptor ``{fd}`` what git asked of the helpers
#: (``action=get|store|erase`` and every line git sent): what the listing was
#: given, to hand to the fetch after it, or that the remote refused it.
#: (``/dev/fd/N``: a POSIX shell redirects descriptors 0-9 only, and git's are past 9.)
TELL: Final = '!f() {{ {{ echo "action=$1"; cat; }} >>/dev/fd/{fd}; }}; f'
#: A credential helper that answers ``get`` with what descriptor ``{fd}`` holds, and
#: only a request for where it was given: the lines ``{want}`` (the credential's
#: ``{keys}`` lines, sorted). Any other (a proxy's, another host's) it answers with
#: nothing, and git asks on.
GIVE: Final = (
    '!f() {{ if [ "$1" = get ] && '
    "[ \"$(grep -E '^({keys})=' | LC_ALL=C sort)\" = {want} ]; "
    "then cat </dev/fd/{fd}; else cat >/dev/null; fi; }}; f"
)
#: What git tells helpers that is no part of a credential: the server's challenge.
_NOT_CREDENTIAL: Final = (b"wwwauth[]=",)
#: The most a credential handed on may hold (more is no credential git stored).
MAX_CREDENTIAL: Final = 65536


class CredentialsRefused(GitFailed):
    """The remote refused the credentials it was given (asking again would ask the
    person or program that just answered)."""


def read_now(fd: int) -> bytes:
    """What the pipe ``fd`` holds now, without waiting for it to close: a helper
    that started a daemon (``credential-cache``) leaves the write end open in it."""
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def heard(told: bytes) -> tuple[bytes | None, bool]:
    """What a :data:`TELL` helper heard: the credential last stored (the remote took
    it), and whether one that a person or git's askpass program gave was refused.

    :data:`TELL` is the last helper git asks, so it hears ``get`` only when no helper
    before it answered (git then asks its askpass program or the terminal); an
    ``erase`` after that is the refusal of that answer. An ``erase`` it hears without
    a ``get`` is a helper's saved credential refused: a ``git fetch`` asking the
    person then is what git itself does. A line of a credential holds no line feed
    (git refuses one in a value), so each ``action=`` line starts a message.
    """
    credential: bytes | None = None
    asked = refused = False
    action, lines = b"", []
    for line in [*told.split(b"\n"), b"action=end"]:
        if not line.startswith(b"action="):
            if line:
                lines.append(line + b"\n")
            continue
        if action == b"get":
            asked = True
        elif action == b"store":
            refused = False
            credential = b"".join(x for x in lines if not x.startswith(_NOT_CREDENTIAL))
        elif action == b"erase":
            credential, refused = None, asked
        action, lines = line[len(b"action=") :], []
    return credential, refused


class _Served:
    """A pipe a credential helper of git's opens as ``/dev/fd/N`` (:attr:`fd`, to pass
    to git), served by a thread while git runs, so that neither git nor this process
    waits on the other: begun by :meth:`started`, stopped (a second pipe wakes the
    thread) by :meth:`close` once git has exited. A context manager."""

    def __init__(self, mine: int, theirs: int) -> None:
        self.fd = theirs
        self._mine = mine
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def started(self) -> None:
        """git runs, with its own copy of :attr:`fd`: close this one, and serve."""
        os.close(self.fd)
        self.fd = -1
        self._thread.start()

    def close(self) -> None:
        """Stop serving (:meth:`_done` then), and close every descriptor left."""
        if self._wake_w < 0:
            return
        if self._thread.is_alive():
            os.write(self._wake_w, b".")
            self._thread.join()
        self._done()
        for fd in (self.fd, self._mine, self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self.fd = self._mine = self._wake_r = self._wake_w = -1

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._wake_r, selectors.EVENT_READ)
            self._serve(selector)

    def _serve(self, selector: selectors.BaseSelector) -> None:
        raise NotImplementedError

    def _done(self) -> None:
        pass


class Told(_Served):
    """The pipe :data:`TELL` writes to, read as it comes (git never waits on a full
    pipe); what it heard is :meth:`heard` once git has exited."""

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        super().__init__(read_end, write_end)
        self._chunks: list[bytes] = []

    @property
    def helper(self) -> str:
        """The ``credential.helper`` that writes here."""
        return TELL.format(fd=self.fd)

    def heard(self) -> tuple[bytes | None, bool]:
        """:func:`heard` of all :data:`TELL` wrote (stops serving)."""
        self.close()
        return heard(b"".join(self._chunks))

    def _serve(self, selector: selectors.BaseSelector) -> None:
        selector.register(self._mine, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fd == self._wake_r:
                    return
                chunk = os.read(self._mine, 65536)
                if not chunk:
                    return
                self._chunks.append(chunk)

    def _done(self) -> None:
        # (what came after the thread's last read: a helper that started a daemon,
        # credential-cache's, leaves the write end open in it, so no end is seen)
        self._chunks.append(read_now(self._mine))


class Given(_Served):
    """The pipe :data:`GIVE` reads ``credential`` from, written once git runs (a
    full pipe blocks nobody), and closed then, so the helper's ``cat`` ends."""

    def __init__(self, credential: bytes) -> None:
        read_end, write_end = os.pipe()
        super().__init__(write_end, read_end)
        self._data = credential

    def helper(self) -> str | None:
        """The ``credential.helper`` that answers from here, for the credential's
        protocol and host (and path, if it has one) only; ``None`` for a credential
        that names neither, handed to nobody."""
        lines = [line for line in self._data.split(b"\n") if line]
        keys = [b"protocol", b"host"]
        if any(line.startswith(b"path=") for line in lines):
            keys.append(b"path")
        want = sorted(line for line in lines if line.partition(b"=")[0] in keys)
        if sorted(line.partition(b"=")[0] for line in want) != sorted(keys):
            return None  # (none, or one twice)
        quoted = shlex.quote(os.fsdecode(b"\n".join(want)))
        return GIVE.format(fd=self.fd, keys=b"|".join(keys).decode(), want=quoted)

    def _serve(self, selector: selectors.BaseSelector) -> None:
        os.set_blocking(self._mine, False)
        selector.register(self._mine, selectors.EVENT_WRITE)
        data = memoryview(self._data)
        while data:
            for key, _ in selector.select():
                if key.fd == self._wake_r:
                    return
                try:
                    data = data[os.write(self._mine, data) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    return  # (git exited without asking)
        mine, self._mine = self._mine, -1
        os.close(mine)  # (the end: the helper's cat returns)
