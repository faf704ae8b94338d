"""The commit-trailer hooks: link a commit to the task and the packet behind it.

With a current task (:mod:`git_hydrate.current`), the commit message gets two
trailers, added by ``git interpret-trailers``: ``Hydrate-Task: ID`` and
``Hydrate-Packet: <sha256>``, the sha256 of the packet the task's prompt is
rendered from (``git hydrate prompt ID`` at the commit's time, with the
repository's budget), in its compact JSON encoding (what ``git hydrate prompt
ID --packet-sha256`` prints; ``expand``'s packet, measured with its prompt, may
keep fewer attachments, and ``pack``'s leaves out the files in play and tests).
A trailer already in the message is kept as it is (an amend keeps
what the first commit recorded). ``git hydrate log ID --commits`` finds them.

The prepare-commit-msg hook adds them to a message git is given (``-m``, ``-F``,
a merge's, an amend's); a message the user writes in the editor gets them from
the commit-msg hook once the editor is closed, unless it was left empty.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from ..audit import PACKET_TRAILER, TASK_TRAILER
from ..ledger import Ledger
from ..pack.render import packet_json

if TYPE_CHECKING:
    from ..pack.budget import Budget

__all__ = ["commit_msg", "packet_sha256", "prepare_commit_msg"]


def packet_sha256(
    ledger: Ledger, task_id: str, budget: Budget | None = None, now: datetime | None = None
) -> str:
    """The sha256 of the packet the task's prompt renders now (or at ``now``), in
    compact JSON, under ``budget`` (``None``: the repository's)."""
    packet = ledger.prompt(task_id, now=now, budget=budget)["packet"]
    return hashlib.sha256(packet_json(packet)).hexdigest()


#: What git's prepare-commit-msg hook is told of a message the editor will open
#: for the user to write: none (a plain ``git commit``) or a template's.
_WRITTEN_IN_EDITOR: Final = (None, "", "template")


def prepare_commit_msg(
    ledger: Ledger, message_file: str, source: str | None = "message", *, after: bool = False
) -> dict[str, Any] | None:
    """Add the trailers to the message in ``message_file``; ``None`` without a current task.

    A message the user is about to write in the editor (``source`` ``None`` or
    ``template``) is left to the commit-msg hook when ``after`` (it is installed):
    trailers written before the editor opens made an emptied message a commit
    (git aborts an empty one) and sat under the subject's line, in its paragraph.

    Returns ``{task_id, packet}``.
    """
    if source not in _WRITTEN_IN_EDITOR:
        return _add_trailers(ledger, message_file)
    if after:
        return None
    # (no commit-msg hook: installed before there was one) laid out as git lays out
    # a sign-off, a line for the subject and a blank one above the trailers
    added = _add_trailers(ledger, message_file)
    if added is not None:
        with open(message_file, "rb+") as fh:
            text = fh.read()
            if text.startswith(b"\n") and not text.startswith(b"\n\n"):  # (no subject)
                fh.seek(0)
                fh.write(b"\n" + text)
    return added


def commit_msg(ledger: Ledger, message_file: str) -> dict[str, Any] | None:
    """The commit-msg hook: the trailers added to the message the user wrote, unless
    it is empty once git's cleanup is done (git then aborts the commit, as it would
    without the hook). ``None`` when nothing is added."""
    try:
        with open(message_file, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    if not _written(text, ledger.settings.text("core.commentChar"), _cleanup(ledger)):
        return None
    return _add_trailers(ledger, message_file)


def _cleanup(ledger: Ledger) -> str:
    return (ledger.settings.text("commit.cleanup") or "default").lower()


#: The characters git may choose with ``core.commentChar=auto``.
_AUTO_COMMENT: Final = tuple("#;@!$%^&|:")


def _auto_comment(text: str) -> tuple[str, ...]:
    """The comment character git chose for ``core.commentChar=auto``: one that no line
    of the message began with, and that its help text (at the end) begins with; read
    from the last line (``()`` when it begins with none: no comment to take out).
    A message's own line that begins with another (``:sparkles: add``) is text."""
    lines = [line for line in text.splitlines() if line.strip()]
    last = lines[-1][:1] if lines else ""
    return (last,) if last in _AUTO_COMMENT else ()


def _written(text: str, comment: str | None, cleanup: str) -> bool:
    """Whether ``text`` holds a message once git cleans it up: comment lines
    (``comment``: ``core.commentChar``) and what follows the scissors line go,
    unless ``cleanup`` keeps them."""
    if cleanup in ("verbatim", "whitespace"):
        return bool(text.strip())
    marks = ("#",) if not comment else _auto_comment(text) if comment == "auto" else (comment,)
    for line in text.splitlines():
        if line.startswith(marks):
            if line[1:].strip() == "-" * 24 + " >8 " + "-" * 24:
                break  # (the scissors: the rest is the diff shown)
            continue
        if line.strip():
            return True
    return False


def _add_trailers(ledger: Ledger, message_file: str) -> dict[str, Any] | None:
    found = ledger.current()
    if found is None:
        return None
    task_id = str(found["task_id"])
    packet = packet_sha256(ledger, task_id)
    _end_with_newline(message_file)
    ledger.repo.add_trailers(message_file, [(TASK_TRAILER, task_id), (PACKET_TRAILER, packet)])
    return {"task_id": task_id, "packet": packet}


def _end_with_newline(message_file: str) -> None:
    """End a message that lacks it with a newline (an empty one stays empty).

    ``git merge --no-edit`` and a merging ``git pull`` hand the hook a MERGE_MSG
    without one; ``git interpret-trailers`` then puts the trailers right under
    its last line, in the subject's paragraph, where git no longer reads them
    as trailers.
    """
    with open(message_file, "rb+") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            fh.write(b"\n")
