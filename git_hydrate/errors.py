"""The exception tree of git-hydrate.

Every error the library raises on purpose derives from :class:`HydrateError`
and carries the process exit status the command line uses for it. The CLI
turns these into one ``error: ...`` line on stderr in exactly one place
(``git_hydrate.cli``); library code never prints or exits. Anything else
that escapes is a bug: the CLI exits :data:`EXIT_BUG` with one line saying so.
"""

from __future__ import annotations

__all__ = [
    "EXIT_BUG",
    "EXIT_BUSY",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_A_REPOSITORY",
    "EXIT_USAGE",
    "Busy",
    "Conflict",
    "CorruptData",
    "GitFailed",
    "HydrateError",
    "NoIdentity",
    "NotARepository",
    "NotFound",
    "NotWritable",
    "SecretDetected",
    "TooSmall",
    "UnsupportedRepository",
    "ValidationError",
]

EXIT_FAILURE = 1
EXIT_USAGE = 2
#: An unexpected exception: a bug in git-hydrate, never the user's mistake.
EXIT_BUG = 3
#: EX_TEMPFAIL from sysexits.h: "try again later".
EXIT_BUSY = 75
#: What a shell reports for a process ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
#: What a shell reports for a process ended by SIGPIPE (128 + 13): the reader of
#: its output went away (``| head``), and it ends as git (and cat) then end.
EXIT_BROKEN_PIPE = 141
#: What git itself exits with when it finds no repository.
EXIT_NOT_A_REPOSITORY = 128


class HydrateError(Exception):
    """Base class of every error git-hydrate raises deliberately."""

    exit_code: int = EXIT_FAILURE
    #: The word the CLI puts before the message (git says ``error`` / ``fatal``).
    label: str = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ValidationError(HydrateError, ValueError):
    """Input that is not acceptable: bad id, bad option value, non-UTF-8 body..."""


class TooSmall(ValidationError):
    """A budget that cannot hold even the task's mandatory part (its fields and the
    prompt's structure): the seed's refusal, with the smallest budget that would."""


class SecretDetected(ValidationError):
    """A body looks like it carries a credential (refused unless explicitly allowed)."""


class NotFound(HydrateError, LookupError):
    """A task or context hash that does not exist."""


class Conflict(HydrateError):
    """The request contradicts the current state (exists already, cannot fit...)."""


class CorruptData(HydrateError):
    """Stored data that cannot be read: bad JSON, unknown format, missing blob.

    ``task_id`` names the stored task it was read from, if any (the command line
    then points at ``doctor``, which checks every task and names the ways out).
    """

    def __init__(self, message: str, *, task_id: str | None = None) -> None:
        super().__init__(message)
        self.task_id = task_id


class GitFailed(HydrateError):
    """A git command git-hydrate ran failed for a reason of git's (its message is kept).

    Distinct from :class:`CorruptData`: the stored data may be fine; git could
    not do what was asked (a network error, a remote that refused, a lock).
    """


class NotWritable(HydrateError):
    """The repository cannot be written (read-only file system, permissions, disk full)."""


class NoIdentity(HydrateError):
    """git has no author identity (``user.name``/``user.email``) to write commits with."""


class Busy(HydrateError):
    """A write kept losing the race for a ref; retrying later will succeed."""

    exit_code = EXIT_BUSY


class NotARepository(HydrateError):
    """No git repository where one was expected."""

    exit_code = EXIT_NOT_A_REPOSITORY
    label = "fatal"


class UnsupportedRepository(HydrateError):
    """A repository this version cannot safely write (reftable, unknown extension)."""

    exit_code = EXIT_NOT_A_REPOSITORY
    label = "fatal"
