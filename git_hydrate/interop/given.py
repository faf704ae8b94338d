"""Which task fields each key of a source's item gives, and so which fields an item
whose keys are fewer (``gh issue list --json number,state``) leaves out.

An update keeps a field its item leaves out as the task has it: read as empty,
it would erase the task's title, objective, criteria, labels or dependencies.
Only :mod:`.formats` uses this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["BEADS_FIELDS", "GITLAB_FIELDS", "ISSUE_FIELDS", "absent_fields", "issue_absent"]

#: A source key: the task fields it gives.
Given = Mapping[str, tuple[str, ...]]

#: The task fields a GitHub issue's keys give.
ISSUE_FIELDS: Final[Given] = {
    "title": ("title",),
    "body": ("objective", "acceptance", "acceptance_criteria", "files"),
    "labels": ("tags", "kind"),
    "state": ("status",),
}
#: A GitLab issue's: its body is ``description``.
GITLAB_FIELDS: Final[Given] = {
    ("description" if key == "body" else key): names for key, names in ISSUE_FIELDS.items()
}
#: A beads issue's (its ``design`` and ``notes`` give the objective too).
BEADS_FIELDS: Final[Given] = {
    "title": ("title",),
    "description": ("objective", "files"),
    "acceptance_criteria": ("acceptance", "acceptance_criteria"),
    "labels": ("tags",),
    "issue_type": ("kind",),
    "priority": ("priority",),
    "status": ("status",),
    "dependencies": ("depends_on", "parent"),
}


def absent_fields(raw: Mapping[str, Any], given: Given) -> set[str]:
    """The task fields of ``given`` whose source key ``raw`` does not have."""
    return {name for key, names in given.items() if key not in raw for name in names}


def issue_absent(raw: Mapping[str, Any], given: Given, url_key: str, criteria: bool) -> set[str]:
    """The task fields a GitHub or GitLab issue ``raw`` leaves out: without its URL
    (``gh issue list --json number,state``) the source too, which the importer
    takes from the task when it is this issue's, and the acceptance that names it
    (unless the body's ``criteria`` make it)."""
    absent = absent_fields(raw, given)
    if not raw.get(url_key):
        absent |= {"source"} if criteria else {"source", "acceptance"}
    return absent
