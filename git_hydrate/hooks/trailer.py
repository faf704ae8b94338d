"""The prepare-commit-msg hook: link a commit to the task and the packet behind it.

With a current task (:mod:`git_hydrate.current`), the commit message gets two
trailers, added by ``git interpret-trailers``: ``Hydrate-Task: ID`` and
``Hydrate-Packet: <sha256>``, the sha256 of the packet the task's prompt is
rendered from (``git hydrate prompt ID`` at the commit's time, with the
repository's budget), in its compact JSON encoding (what ``git hydrate prompt
ID --packet-sha256`` prints; ``expand``'s packet, measured with its prompt, may
keep fewer attachments, and ``pack``'s leaves out the files in play and tests).
A trailer already in the message is kept as it is (an amend keeps
what the first commit recorded). ``git hydrate log ID --commits`` finds them.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..audit import PACKET_TRAILER, TASK_TRAILER
from ..ledger import Ledger
from ..pack.render import packet_json

if TYPE_CHECKING:
    from ..pack.budget import Budget

__all__ = ["packet_sha256", "prepare_commit_msg"]


def packet_sha256(
    ledger: Ledger, task_id: str, budget: Budget | None = None, now: datetime | None = None
) -> str:
    """The sha256 of the packet the task's prompt renders now (or at ``now``), in
    compact JSON, under ``budget`` (``None``: the repository's)."""
    packet = ledger.prompt(task_id, now=now, budget=budget)["packet"]
    return hashlib.sha256(packet_json(packet)).hexdigest()


def prepare_commit_msg(ledger: Ledger, message_file: str) -> dict[str, Any] | None:
    """Add the trailers to the message in ``message_file``; ``None`` without a current task.

    Returns ``{task_id, packet}``.
    """
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
