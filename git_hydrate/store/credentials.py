"""Credentials handed from one git process to the next, asking no person in between.

A first pull lists the remote, then fetches the listed tips by id: two
connections. The listing runs *unattended* (:data:`UNATTENDED`): git reads no
terminal and ssh runs no askpass program (started without a controlling
terminal, ssh cannot read a passphrase either), so what only a person can give
makes it fail, and the ``git fetch`` after it asks once. A credential helper or
git's own askpass program (often one that hands out a token) still answers the
listing; a helper of ours (:data:`TELL`) hears what git stored, or erased, and the
fetch gets it back from another (:data:`GIVE`) through a pipe: never a file, an
argument or the environment.
"""

from __future__ import annotations

import os
from typing import Final

from ..errors import GitFailed

__all__ = [
    "GIVE",
    "MAX_CREDENTIAL",
    "TELL",
    "UNATTENDED",
    "CredentialsRefused",
    "heard",
    "read_now",
]


#: The environment of a git that must ask no person: git reads no terminal, and
#: ssh runs no askpass program (OpenSSH 8.4+; started without a controlling
#: terminal, it cannot read a passphrase from one either). What answers without
#: a person still does: credential helpers and git's askpass program (a token).
UNATTENDED: Final = {"GIT_TERMINAL_PROMPT": "0", "SSH_ASKPASS_REQUIRE": "never"}

#: A credential helper that tells descriptor ``{fd}`` what git asked of the helpers
#: (``action=get|store|erase`` and the credential's lines): what the listing was
#: given, to hand to the fetch after it, or that the remote refused it.
#: (``/dev/fd/N``: a POSIX shell redirects descriptors 0-9 only, and git's are past 9.)
TELL: Final = '!f() {{ {{ echo "action=$1"; cat; }} >>/dev/fd/{fd}; }}; f'
#: A credential helper that answers ``get`` with what descriptor ``{fd}`` holds.
GIVE: Final = '!f() {{ if [ "$1" = get ]; then cat </dev/fd/{fd}; else cat >/dev/null; fi; }}; f'
#: The lines of a stored credential handed on (not what git tells helpers beside them).
_CREDENTIAL_FIELDS: Final = tuple(
    f"{key}=".encode()
    for key in ("protocol", "host", "path", "username", "password", "password_expiry_utc")
)
#: The most a credential handed on may hold (it is written to a pipe before git reads it).
MAX_CREDENTIAL: Final = 16384


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
            credential = b"".join(x for x in lines if x.startswith(_CREDENTIAL_FIELDS))
        elif action == b"erase":
            credential, refused = None, asked
        action, lines = line[len(b"action=") :], []
    return credential, refused
