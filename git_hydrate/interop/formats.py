"""Reading the task formats other tools write: each item as one :class:`Item`.

Nothing here touches the repository or the network: the user's own tools
fetch (``gh issue list --json …``, ``glab issue list --output json``, a beads
JSONL export, task-master's ``tasks.json``, a spec-kit ``tasks.md``) and this
module turns their text into plain items, with the fields git-hydrate does not
use named in ``ignored``. A malformed item is an :class:`Item` with ``error``
set, so one bad item never stops the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import ValidationError
from ..pack.outline_markup import unfenced
from .controls import without_controls
from .given import BEADS_FIELDS, GITLAB_FIELDS, ISSUE_FIELDS, absent_fields, issue_absent
from .jsonread import TOO_DEEP, KeyTwice, TooDeep, said
from .jsonread import loads as _loads

__all__ = ["BEADS_STATUS_KEY", "EVERY_CRITERION", "FORMATS", "Item", "detect", "parse"]

#: The formats ``import`` reads, as ``--from`` names them.
FORMATS: Final = ("github", "gitlab", "beads", "taskmaster", "speckit")
#: The id prefix of each format's tasks (``--prefix`` replaces it).
DEFAULT_PREFIX: Final = {
    "github": "GH-",
    "gitlab": "GL-",
    "beads": "",
    "taskmaster": "TM-",
    "speckit": "",
}
#: The acceptance of an item whose acceptance is its criteria alone.
EVERY_CRITERION: Final = "every acceptance criterion holds"
_CHECKBOX: Final = re.compile(r"^\s*[-*]\s+\[( |x|X)\]\s+(.+?)\s*$")
_PATHLIKE: Final = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.\w+)(?![\w/])")


@dataclass
class Item:
    """One task as another tool holds it, in git-hydrate's terms."""

    #: The id in the source (``123``, ``T001``, ``bd-a1b2``, ``4.2``).
    source_id: str
    title: str = ""
    objective: str = ""
    acceptance: str = ""
    criteria: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    kind: str = "code"
    priority: int = 2
    #: ``open``, ``in_progress``, ``blocked``, ``done`` or ``cancelled``.
    status: str = "open"
    #: Source ids this item depends on, and its parent's.
    depends_on: list[str] = field(default_factory=list)
    parent: str = ""
    #: Where it came from: the issue's URL, or ``FORMAT:ID`` (``beads:bd-a1``), which
    #: stays the same when the file moves.
    source: str = ""
    #: Fields of the source that git-hydrate does not use (``-v`` lists them).
    ignored: list[str] = field(default_factory=list)
    #: Why this item cannot be imported (the rest still are).
    error: str = ""
    #: What of this item was left out while the rest of it is imported.
    warnings: list[str] = field(default_factory=list)
    #: The task fields the source left out (no key of theirs in it): an update
    #: keeps them as they are, where reading them as empty would erase them.
    absent: set[str] = field(default_factory=set)


#: :func:`detect`'s document for a format it did not read as one JSON document.
UNREAD: Final = object()


def detect(text: str) -> tuple[str, Any]:
    """The format of ``text`` and the JSON document it read to tell (:data:`UNREAD`
    for JSONL and spec-kit), for :func:`parse` not to read it again; or
    :class:`ValidationError` naming what was seen."""
    stripped = text.lstrip()
    if not stripped:
        raise ValidationError("nothing to import: the input is empty")
    if stripped[0] not in "[{":
        if re.search(r"^\s*[-*]\s+\[[ xX]\]\s+T\d+", text, re.M):
            return "speckit", UNREAD
        raise ValidationError(
            "unrecognised input: not JSON, JSONL or a spec-kit tasks.md checklist; "
            f"name the format with --from ({', '.join(FORMATS)})"
        )
    try:
        data: Any = _loads(text)
    except KeyTwice as twice:
        raise ValidationError(f"unreadable JSON: {twice}") from None
    except ValueError as whole:  # (JSONL, or not JSON, or nested too deeply)
        lines = _lines_of(stripped)
        try:
            data = _loads(lines[0])
        except ValueError as first:
            raise _unreadable(whole, first, lines) from None
        if isinstance(data, dict) and "id" in data and "title" in data:
            return "beads", UNREAD  # JSONL: one issue per line
        raise ValidationError("unrecognised JSONL: lines without id and title") from None
    if isinstance(data, dict) and ("tasks" in data or _tagged_tasks(data)):
        return "taskmaster", data
    sample = data[0] if isinstance(data, list) and data else data
    if isinstance(sample, dict):
        if "iid" in sample or "web_url" in sample:
            return "gitlab", data
        if "number" in sample:
            return "github", data
        if "id" in sample and "title" in sample:
            return "beads", UNREAD  # (one issue alone: read again as a line)
    raise ValidationError(f"unrecognised JSON: name the format with --from ({', '.join(FORMATS)})")


def _unreadable(whole: ValueError, first: ValueError, lines: list[str]) -> ValidationError:
    """Why input that looks like JSON is none of the formats: read as one document
    (``whole``), then as JSONL by its first line (``first``). Of several lines,
    both are said, with ``--from``: a beads file whose first line alone is bad is
    read with ``--from beads``, which leaves that line out and imports the others."""

    def reason(exc: ValueError, where: str = "") -> str:
        if isinstance(exc, json.JSONDecodeError):
            return f"{said(exc)} {where or f'at line {exc.lineno}'}"
        if isinstance(exc, KeyTwice):
            return f"{exc} {where}".rstrip()
        return f"{TOO_DEEP.removeprefix('unreadable JSON: ')} {where}".rstrip()

    several = any(line.strip() for line in lines[1:])
    if isinstance(whole, TooDeep) and (not several or not isinstance(first, TooDeep)):
        return ValidationError(TOO_DEEP)  # (one document, nested too deeply)
    if not several:
        return ValidationError(f"unreadable JSON: {reason(first)}")
    return ValidationError(
        f"unreadable JSON: as one document (github, gitlab, taskmaster): {reason(whole)}; "
        f"as JSONL (beads): {reason(first, 'in its first line')}; name the format with --from "
        "(--from beads reads each line on its own and imports those it can)"
    )


def parse(text: str, fmt: str, origin: str, document: Any = UNREAD) -> list[Item]:
    """Every item of ``text`` in format ``fmt``; ``origin`` names the file (``-``: stdin).
    ``document`` is ``text`` already read as JSON (:func:`detect`'s), if it was.

    Raises:
        ValidationError: the input as a whole cannot be read in that format.
    """
    lines: dict[str, Callable[[str, str], Iterator[Item]]] = {
        "beads": _beads,
        "speckit": _speckit,
    }
    documents: dict[str, Callable[[Any, str], Iterator[Item]]] = {
        "github": _github,
        "gitlab": _gitlab,
        "taskmaster": _taskmaster,
    }
    if fmt in lines:
        return [without_controls(item) for item in lines[fmt](text, origin)]
    if fmt not in documents:
        raise ValidationError(f"unknown format {fmt!r}; one of: {', '.join(FORMATS)}")
    read = documents[fmt](_json(text) if document is UNREAD else document, origin)
    return [without_controls(item) for item in read]


# -- helpers ----------------------------------------------------------------------------


def _lines_of(text: str) -> list[str]:
    """The lines of JSONL: split at line feeds only (``str.splitlines`` also splits
    at U+2028 and U+2029, which JSON strings may hold raw, as export writes them)."""
    return text.split("\n")


def _json(text: str) -> Any:
    try:
        return _loads(text)
    except TooDeep:
        raise ValidationError(TOO_DEEP) from None
    except KeyTwice as twice:
        raise ValidationError(f"unreadable JSON: {twice}") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"unreadable JSON: {said(exc)} at line {exc.lineno}") from None


def _objects(data: Any, what: str) -> list[Any]:
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(item, dict) for item in items):
        raise ValidationError(f"unrecognised {what} JSON: expected objects")
    return items


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _brief(value: Any) -> str:
    """A JSON value as it reads in the input, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "\u2026"


def _labels(value: Any) -> tuple[list[str], list[str]]:
    """The labels of ``value`` and a warning for each entry that is none: a string is
    one label, an object its ``name`` (GitHub's, and GitLab's with
    ``with_labels_details``), a list those."""
    labels: list[str] = []
    warnings: list[str] = []
    for label in value if isinstance(value, list) else [] if value is None else [value]:
        name = label.get("name") if isinstance(label, dict) else label
        if isinstance(name, str):
            labels.append(name)
        else:
            warnings.append(
                f"label {_brief(label)} left out: not a string or an object with a name"
            )
    return labels, warnings


def _criteria(body: str) -> list[str]:
    """The checkbox lines of a Markdown body: acceptance criteria."""
    return [m.group(2) for line in body.splitlines() if (m := _CHECKBOX.match(line))]


def _without_checkboxes(text: str) -> str:
    """``text`` without its checkbox lines (what :func:`_criteria` takes), stripped;
    the other lines keep their own line breaks (``\r\n``, U+2028)."""
    lines = text.splitlines(keepends=True)
    return "".join(line for line in lines if not _CHECKBOX.match(line)).strip()


def _acceptance(text: str, otherwise: str) -> tuple[str, list[str]]:
    """The acceptance and the criteria of a text holding both: its checkbox lines
    are the criteria, the other lines the acceptance (when there are none:
    :data:`EVERY_CRITERION` with criteria, else ``otherwise``)."""
    criteria = _criteria(text)
    if not criteria:
        return text.strip() or otherwise, criteria
    return _without_checkboxes(text) or EVERY_CRITERION, criteria


def _paths(text: str) -> list[str]:
    """Paths a text names (``src/x.py``), in order, once each."""
    return list(dict.fromkeys(m.group(1) for m in _PATHLIKE.finditer(text)))


def _unused(raw: dict[str, Any], used: set[str]) -> list[str]:
    return sorted(key for key in raw if key not in used)


def _issue(raw: dict[str, Any], source_id: str, body: str, url: str) -> Item:
    """The fields GitHub and GitLab issues share."""
    title = _text(raw.get("title")).strip()
    labels, warnings = _labels(raw.get("labels"))
    criteria = _criteria(body)
    kind = "fix" if any(label.lower() in ("bug", "type::bug") for label in labels) else "code"
    return Item(
        source_id=source_id,
        title=title,
        objective=body.strip() or title,
        acceptance=EVERY_CRITERION if criteria else f"the issue is resolved: {url}",
        criteria=criteria,
        tags=labels,
        files=_paths(body),
        kind=kind,
        source=url,
        warnings=warnings,
    )


# -- the formats -------------------------------------------------------------------------


def _shown_id(value: Any) -> str:
    """An id that is none, as a report names its item: ``?`` when missing, else as
    JSON writes it (``null`` said ``None``, Python's word)."""
    if value is None:
        return "?"
    try:
        return json.dumps(value, ensure_ascii=False)[:40]
    except (TypeError, ValueError):
        return "?"


def _github(data: Any, origin: str) -> Iterator[Item]:
    used = {"number", "title", "body", "labels", "state", "stateReason", "url"}
    for raw in _objects(data, "GitHub"):
        number = raw.get("number")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            yield Item(source_id=_shown_id(number), error="GitHub issue without a positive number")
            continue
        url = _text(raw.get("url")) or f"github:{number}"
        item = _issue(raw, str(number), _text(raw.get("body")), url)
        item.absent = issue_absent(raw, ISSUE_FIELDS, "url", bool(item.criteria))
        if str(raw.get("state", "")).upper() == "CLOSED":
            reason = str(raw.get("stateReason") or "").upper()
            item.status = "cancelled" if reason == "NOT_PLANNED" else "done"
        item.ignored = _unused(raw, used)
        yield item


def _gitlab(data: Any, origin: str) -> Iterator[Item]:
    used = {"iid", "title", "description", "labels", "state", "web_url"}
    for raw in _objects(data, "GitLab"):
        iid = raw.get("iid")
        if not isinstance(iid, int) or isinstance(iid, bool) or iid < 1:
            yield Item(source_id=_shown_id(iid), error="GitLab issue without a positive iid")
            continue
        url = _text(raw.get("web_url")) or f"gitlab:{iid}"
        item = _issue(raw, str(iid), _text(raw.get("description")), url)
        item.absent = issue_absent(raw, GITLAB_FIELDS, "web_url", bool(item.criteria))
        if raw.get("state") == "closed":
            item.status = "done"
        item.ignored = _unused(raw, used)
        yield item


_BEADS_STATUS: Final = {
    "open": "open",
    "in_progress": "in_progress",
    "blocked": "blocked",
    "closed": "done",
}
_BEADS_KIND: Final = {"bug": "fix", "epic": "planning", "feature": "code", "task": "code"}
#: The key of beads' ``metadata`` that says an ``in_progress`` issue is in review.
BEADS_STATUS_KEY: Final = "hydrate_status"
#: A ``close_reason`` that says the issue was closed undone: the word alone, or
#: before ``:``, ``-`` or ``.`` and more (never "cancelled the flaky job, fixed").
_BEADS_CANCELLED: Final = re.compile(
    r"\s*(?:cancell?ed|won'?t[ -]?fix|not[ _]planned)\s*(?:[:.-].*)?", re.I | re.S
)


def _beads_status(raw: dict[str, Any]) -> str:
    """The station of a beads issue: its ``status``, a closing with a reason that
    says cancelled read as ``cancelled``, and ``in_progress`` marked in its
    ``metadata`` as in review read as ``review`` (what ``export`` writes)."""
    status = _BEADS_STATUS.get(_text(raw.get("status")), "open")
    if status == "done" and _BEADS_CANCELLED.fullmatch(_text(raw.get("close_reason"))):
        return "cancelled"
    metadata = raw.get("metadata")
    marked = isinstance(metadata, dict) and metadata.get(BEADS_STATUS_KEY) == "review"
    return "review" if status == "in_progress" and marked else status


def _beads(text: str, origin: str) -> Iterator[Item]:
    used = {"id", "title", "description", "acceptance_criteria", "status", "priority"}
    used |= {"issue_type", "labels", "dependencies", "design", "notes"}
    used |= {"close_reason", "metadata"}
    for number, line in enumerate(_lines_of(text), 1):
        if not line.strip():
            continue
        try:
            raw = _loads(line)
        except TooDeep:
            yield Item(source_id=f"line {number}", error=TOO_DEEP)
            continue
        except KeyTwice as twice:
            yield Item(source_id=f"line {number}", error=f"unreadable JSON: {twice}")
            continue
        except json.JSONDecodeError as exc:
            yield Item(source_id=f"line {number}", error=f"unreadable JSON: {said(exc)}")
            continue
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            yield Item(source_id=f"line {number}", error="a beads issue without an id")
            continue
        acceptance, criteria = _acceptance(
            _text(raw.get("acceptance_criteria")), "the issue is closed"
        )
        description = _text(raw.get("description"))
        extra = [_text(raw.get(k)) for k in ("design", "notes") if _text(raw.get(k)).strip()]
        priority = raw.get("priority")
        labels, warnings = _labels(raw.get("labels"))
        item = Item(
            source_id=raw["id"],
            title=_text(raw.get("title")).strip(),
            objective="\n\n".join([description.strip(), *extra]).strip(),
            acceptance=acceptance,
            criteria=criteria,
            tags=labels,
            files=_paths(description),
            kind=_BEADS_KIND.get(_text(raw.get("issue_type")), "code"),
            priority=(1 if priority <= 1 else 2 if priority == 2 else 3)
            if isinstance(priority, int)
            else 2,
            status=_beads_status(raw),
            source=f"beads:{raw['id']}",
            ignored=_unused(raw, used),
            warnings=warnings,
            absent=absent_fields(raw, BEADS_FIELDS) - ({"objective"} if extra else set()),
        )
        item.objective = item.objective or item.title
        _beads_links(item, raw.get("dependencies"))
        yield item


def _beads_links(item: Item, value: Any) -> None:
    """Set the parent and dependencies of ``item`` from beads' ``dependencies``; one
    that names no issue leaves the item out (waited for, it never resolves)."""
    bad: list[str] = []
    for dep in value if isinstance(value, list) else [] if value is None else [value]:
        target = dep.get("depends_on_id") if isinstance(dep, dict) else None
        if not isinstance(target, str) or not target.strip():
            bad.append(_brief(dep))
        elif dep.get("type") == "parent-child":
            item.parent = target
        else:
            item.depends_on.append(target)
    if bad:
        item.error = f"its dependencies {', '.join(bad)} name no issue (depends_on_id)"


def _tagged_tasks(data: dict[str, Any]) -> list[Any]:
    """task-master's tagged layout: ``{"master": {"tasks": [...]}, ...}``."""
    found: list[Any] = []
    for value in data.values():
        if isinstance(value, dict) and isinstance(value.get("tasks"), list):
            found += value["tasks"]
    return found


_TM_STATUS: Final = {
    "pending": "open",
    "in-progress": "in_progress",
    "review": "review",
    "done": "done",
    "deferred": "blocked",
    "cancelled": "cancelled",
    "blocked": "blocked",
}
_TM_PRIORITY: Final = {"high": 1, "medium": 2, "low": 3}


def _taskmaster(data: Any, origin: str) -> Iterator[Item]:
    if not isinstance(data, dict):
        raise ValidationError('unrecognised task-master JSON: expected {"tasks": [...]}')
    tasks = data["tasks"] if isinstance(data.get("tasks"), list) else _tagged_tasks(data)
    for raw in tasks:
        yield from _tm_task(raw, origin, parent="")


def _tm_id(value: Any) -> bool:
    """Whether ``value`` can be a task-master id: a number not below 0 (never
    ``true``) or a string (``"4.2"``) not starting with ``-`` (``-3`` would be read
    as ``TM-3``, another task)."""
    if isinstance(value, str):
        return bool(value.strip()) and not value.strip().startswith("-")
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tm_bad_dependencies(value: Any) -> str:
    """Why the ``dependencies`` of a task cannot be read (``""``: they can). One that
    names no task would be waited for forever; one dropped would make it ready."""
    if value is None:
        return ""
    if not isinstance(value, list):
        return f"its dependencies {_brief(value)} are not a list"
    bad = [_brief(dep) for dep in value if not _tm_id(dep)]
    if not bad:
        return ""
    return (
        f"its dependencies {', '.join(bad)} name no task: an id is a whole number (not "
        "below 0) or a string"
    )


def _tm_dependency(dep: Any, parent: str, named: frozenset[str]) -> str:
    """The source id a dependency names. A subtask's (``parent`` set) names a sibling by
    its number, another task's subtask as ``"4.2"``, and a top-level task by any other
    string (task-master reads a string there so), unless that string is the id of a
    sibling in the file (``named``)."""
    text = str(dep)
    if not parent or "." in text or (isinstance(dep, str) and dep not in named):
        return text
    return f"{parent}.{text}"


def _tm_task(
    raw: Any, origin: str, parent: str, named: frozenset[str] = frozenset()
) -> Iterator[Item]:
    if not parent and isinstance(raw, dict) and "." in _text(raw.get("id")):
        # a subtask exported without its task: ``"id": "4.2"`` names its parent
        parent = str(raw["id"]).rsplit(".", 1)[0]
        raw = {**raw, "id": str(raw["id"]).rsplit(".", 1)[1]}
    used = {"id", "title", "description", "details", "testStrategy", "status"}
    used |= {"dependencies", "priority", "subtasks", "acceptanceCriteria"}
    if not isinstance(raw, dict) or not _tm_id(raw.get("id")):
        error = "a task without an id"
        if isinstance(raw, dict) and raw.get("id") is not None:
            error = f"its id {_brief(raw['id'])} is not a whole number (not below 0) or a string"
        yield Item(source_id=f"{parent}.?" if parent else "?", error=error)
        return
    source_id = f"{parent}.{raw['id']}" if parent else str(raw["id"])
    # tm-core's own field (a list of strings); older files have none
    criteria = [c for c in _list(raw.get("acceptanceCriteria")) if isinstance(c, str)]
    details = _text(raw.get("details"))
    strategy = _text(raw.get("testStrategy"))
    description = _text(raw.get("description"))
    deps = [_tm_dependency(dep, parent, named) for dep in _list(raw.get("dependencies"))]
    error = _tm_bad_dependencies(raw.get("dependencies"))
    item = Item(
        source_id=source_id,
        title=_text(raw.get("title")).strip(),
        objective="\n\n".join(p for p in (description.strip(), details.strip()) if p),
        acceptance=strategy.strip() or (EVERY_CRITERION if criteria else "the task is done"),
        criteria=criteria,
        files=_paths(f"{description}\n{details}"),
        tests=_paths(strategy),
        priority=_TM_PRIORITY.get(_text(raw.get("priority")), 2),
        status=_TM_STATUS.get(_text(raw.get("status")), "open"),
        depends_on=deps,
        parent=parent,
        source=f"taskmaster:{source_id}",
        ignored=_unused(raw, used),
        error=error,
    )
    item.objective = item.objective or item.title
    yield item  # (its subtasks follow even when it is left out: they are, with that reason)
    subtasks = _list(raw.get("subtasks"))
    siblings = frozenset(
        s["id"] for s in subtasks if isinstance(s, dict) and isinstance(s.get("id"), str)
    )
    for sub in subtasks:
        yield from _tm_task(sub, origin, parent=source_id, named=siblings)


_SPECKIT_LINE: Final = re.compile(r"^\s*[-*]\s+\[( |x|X)\]\s+(T\d+)\b\s*(.*)$")
_SPECKIT_MARK: Final = re.compile(r"^\[([^\]]+)\]\s*")


def _speckit(text: str, origin: str) -> Iterator[Item]:
    """``- [ ] T001 [P] [US1] Create … in src/x.py`` lines; each ``## Phase`` heading
    starts a phase whose tasks depend on every task of the phase before. Lines in a
    fenced code block (an example of the format) are text, not tasks."""
    previous: list[str] = []
    current: list[str] = []
    phase = ""
    for _index, line in unfenced(text.splitlines()):
        if line.startswith("## "):
            if current:
                previous, current = current, []
            phase = line[3:].strip()
            continue
        match = _SPECKIT_LINE.match(line)
        if not match:
            continue
        done, task_id, rest = match.groups()
        tags: list[str] = []
        while mark := _SPECKIT_MARK.match(rest):
            tags.append("parallel" if mark.group(1) == "P" else mark.group(1))
            rest = rest[mark.end() :]
        description = rest.strip()
        yield Item(
            source_id=task_id,
            title=description[:80] or task_id,
            objective=description or task_id,
            acceptance="the checklist item is done",
            tags=tags + ([f"phase: {phase}"] if phase else []),
            files=_paths(description),  # (its tests: told apart on import, as any format's)
            status="done" if done in "xX" else "open",
            depends_on=list(previous),
            source=f"speckit:{task_id}",
        )
        current.append(task_id)
