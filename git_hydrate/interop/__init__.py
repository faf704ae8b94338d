"""Tasks from where they live, and back: other tools' formats in and out.

- :mod:`.formats` — reading GitHub and GitLab issue JSON, beads JSONL,
  task-master ``tasks.json`` and spec-kit ``tasks.md`` into plain items;
- :mod:`.jsonread` — their JSON read, or refused: nested too deeply, a key twice;
- :mod:`.given` — the task fields each key of an item gives, so that an update
  keeps those its item leaves out;
- :mod:`.importer` — creating or updating one task per item;
- :mod:`.export` — a task as Markdown for an issue, or as another tool's JSON.
"""

from __future__ import annotations

from ..taskrefs import TaskRefs
from .export import EXPORT_FORMATS, export_tasks
from .formats import FORMATS, UNREAD, detect, parse
from .importer import ImportReport, import_items

__all__ = ["EXPORT_FORMATS", "FORMATS", "ImportReport", "export_text", "import_text"]


def import_text(
    refs: TaskRefs,
    text: str,
    fmt: str | None = None,
    *,
    origin: str = "-",
    prefix: str | None = None,
    dry_run: bool = False,
    allow_secrets: bool | None = None,
) -> ImportReport:
    """Import the tasks of ``text`` (its format detected unless ``fmt`` names it);
    ``origin`` names the file, for the sources of formats without URLs."""
    if fmt is None and text.strip() == "[]":  # an empty issue list, from gh or glab
        return import_items(refs, [], "empty", prefix=prefix, dry_run=dry_run)
    chosen, document = (fmt, UNREAD) if fmt else detect(text)
    items = parse(text, chosen, origin, document)
    return import_items(
        refs, items, chosen, prefix=prefix, dry_run=dry_run, allow_secrets=allow_secrets
    )


def export_text(refs: TaskRefs, task_ids: list[str], fmt: str = "markdown") -> str:
    """The tasks ``task_ids`` (live or archived) in ``fmt``."""
    tasks = [refs.load_any(task_id)[0].task for task_id in task_ids]
    return export_tasks(tasks, fmt)
