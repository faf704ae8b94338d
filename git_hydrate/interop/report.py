"""What one import did: the report :func:`~.importer.import_items` returns."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["ImportReport"]


class ImportReport(TypedDict):
    """What one import did (or, with ``dry_run``, would do)."""

    format: str
    created: list[str]
    updated: list[str]
    unchanged: list[str]
    #: ``{"item": source id, "error": why}`` of each item left out.
    errors: list[dict[str, str]]
    #: ``{"item": source id, "warning": what}`` of what was left out of an item
    #: imported without it (a label that is none, a parent that is not here).
    warnings: list[dict[str, str]]
    #: Source fields git-hydrate does not use, with how many items had each.
    ignored: dict[str, int]
    #: ``{"task_id", "field", "kept"}`` where both sides had changed a field.
    conflicts: list[dict[str, Any]]
    dry_run: bool
