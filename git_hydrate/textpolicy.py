"""One text policy for every string a person or a remote can set.

A task's fields, its links' labels and paths, its checkpoints, the claim's
holder, add-tree's file names and options: each is *line* text (one
printable line) or *block* text (several lines: an objective, a checkpoint's
evidence), with a length limit, and none may look like it holds a
credential (:mod:`git_hydrate.secrets`) unless secrets are allowed.

The same rules serve two directions:

* a local write is refused with one line naming the field and the rule
  (:func:`check`, :func:`check_all`), never the text;
* a value that came from a remote (``pull``, and what ``claim``/``ready``
  pull) is *neutralised* (:func:`neutralise`): control characters escaped
  as ``\\xNN``, a line that looks like a credential withheld, an overlong
  value cut. The pull reports which field was changed and why, never the
  value itself.

Block text may hold line feeds, tabs and carriage returns; line text none.
Both refuse every other control character (C0, DEL, C1). Line text also
refuses what Python does not call printable (format characters such as
bidi overrides and zero-width spaces, the line and paragraph separators) but
the space separators (a no-break space) and :data:`.chars.ALLOWED_INVISIBLE`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, NamedTuple

import msgspec

from .errors import SecretDetected, ValidationError
from .model import Checkpoint, Link, PathNote, Selection, Task
from .settings import Settings
from .validate import on_one_line, printable

#: How a refused secret may be stored anyway, ending every such refusal (the MCP
#: server, which has no options, says its own way instead).
ALLOW_SECRETS_HINT: Final = (
    "Remove it, or pass --allow-secrets (hydrate.allowSecrets=true) to store it anyway"
)

__all__ = [
    "BLOCK",
    "HOLDER",
    "LINE",
    "PATH",
    "STAMP",
    "TASK_FIELDS",
    "Field",
    "Rule",
    "check",
    "check_all",
    "findings",
    "message_text",
    "neutralise",
    "neutralised_task",
    "problem",
    "secret_values",
    "secrets_allowed",
    "task_fields",
    "untouched_tasks",
    "value_fields",
]


class Rule(NamedTuple):
    """What a field may hold: several lines or one, and how many characters."""

    block: bool
    limit: int


#: One line: a title, a tag, a scope key, a criterion, a label, a note.
LINE: Final = Rule(block=False, limit=1024)
#: A file path: one line, as long as file systems allow.
PATH: Final = Rule(block=False, limit=4096)
#: Who holds a task (``--as NAME`` or a git identity).
HOLDER: Final = Rule(block=False, limit=256)
#: A timestamp or a short code word (``claimed_at``, a link's origin).
STAMP: Final = Rule(block=False, limit=64)
#: Several lines: an objective, acceptance, a checkpoint's text.
BLOCK: Final = Rule(block=True, limit=1024 * 1024)


class Field(NamedTuple):
    """One value to check: what it is called in messages, the value, its rule."""

    what: str
    value: str
    rule: Rule


_BLOCK_CONTROLS: Final = frozenset("\t\n\r")
#: Every control character as ``\\xNN``: C0, DEL and C1 (line feeds kept in block text).
_ESCAPES: Final = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
_BLOCK_ESCAPES: Final = {k: v for k, v in _ESCAPES.items() if chr(k) not in _BLOCK_CONTROLS}


#: A control character block text may not hold: C0 but tab, line feed and return; DEL; C1.
_BLOCK_BAD: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _bad_character(value: str, rule: Rule) -> bool:
    if not rule.block:
        return not printable(value)
    # (searched in C: a body's line feeds failed the one-line test, and each of its
    # characters was then tried in Python, a third of an import's text checks)
    return _BLOCK_BAD.search(value) is not None


def problem(value: str, rule: Rule) -> str | None:
    """What is wrong with ``value`` under ``rule`` (secrets aside), or ``None``."""
    if len(value) > rule.limit:
        return f"is longer than {rule.limit} characters"
    if _bad_character(value, rule):
        if rule.block:
            return "holds control characters (only line feeds, returns and tabs may be in it)"
        return "must be one line without control characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode text"
    return None


def secrets_allowed(settings: Settings, allow: bool | None) -> bool:
    """Whether text that looks like a credential may be stored: ``allow`` when
    given, else ``hydrate.allowSecrets`` read as git reads booleans."""
    return settings.boolean("hydrate.allowSecrets") if allow is None else allow


def findings(fields: Iterable[Field], limit: int = 3) -> list[tuple[str, str]]:
    """``(what, rules and lines)`` of each field that looks like it holds a credential.

    The fields are scanned joined, once; only when something is found is each
    scanned alone to name it (most writes and pulls find nothing).
    """
    from .secrets import scan

    listed = [field for field in fields if field.value]
    if not listed or not scan("\n".join(field.value for field in listed), limit=1):
        return []
    found = []
    for field in listed:
        hits = scan(field.value, limit=limit)
        if hits:
            found.append((field.what, ", ".join(str(hit) for hit in hits)))
    return found


def check(what: str, value: str, rule: Rule = LINE) -> str:
    """``value`` if it passes ``rule`` (secrets aside); else a :class:`ValidationError`
    naming ``what``."""
    wrong = problem(value, rule)
    if wrong is not None:
        raise ValidationError(f"{what} {wrong}")
    return value


def check_all(settings: Settings, fields: Iterable[Field], allow_secrets: bool | None) -> None:
    """Refuse a local write of ``fields``: a rule broken, or a credential (unless allowed).

    Raises:
        ValidationError: naming the first field and what is wrong with it.
        SecretDetected: naming the field, the rules and lines, never the text.
    """
    listed = list(fields)
    for field in listed:
        check(field.what, field.value, field.rule)
    if secrets_allowed(settings, allow_secrets):
        return
    found = findings(listed)
    if found:
        what, where = found[0]
        raise SecretDetected(
            f"{what} looks like it contains a secret ({where}); not stored. " + ALLOW_SECRETS_HINT
        )


def neutralise(value: str, rule: Rule, *, secrets: bool = True) -> tuple[str, str | None]:
    """``value`` made safe to store, print and prompt, and why it had to be (``None``:
    it was already). Lines that look like a credential are withheld (with
    ``secrets``), control characters escaped, and what is left cut to the limit."""
    reasons = []
    if secrets:
        from .secrets import scan

        hits = scan(value, limit=1000) if value else []
        if hits:
            lines = value.split("\n")
            for hit in hits:
                if hit.line <= len(lines):
                    lines[hit.line - 1] = f"[withheld: looks like a {hit.rule}]"
            value = "\n".join(lines)
            reasons.append("looked like a credential")
    if not _encodable(value):
        # a lone surrogate (no UTF-8 for it): escaped in line and block text alike,
        # for the reason a local write of it is refused (:func:`problem`)
        value = "".join(_escape(ch) if "\ud800" <= ch <= "\udfff" else ch for ch in value)
        reasons.append("not valid Unicode text")
    if _bad_character(value, rule):
        if rule.block:
            value = value.translate(_BLOCK_ESCAPES)
        else:
            value = "".join(ch if on_one_line(ch) else _escape(ch) for ch in value)
        reasons.append("control characters")
    if len(value) > rule.limit:
        value = value[: rule.limit - 3] + "..."
        reasons.append(f"longer than {rule.limit} characters")
    return value, (", ".join(reasons) if reasons else None)


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    # (past U+FFFF in eight digits, as Python writes it: "\\u1fae8" reads as U+1FAE, "8")
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def message_text(value: str, limit: int = 200) -> str:
    """A value safe inside a one-line message: control and invisible characters
    escaped, at most ``limit`` characters."""
    text = (
        value
        if value.isprintable()
        else "".join(ch if on_one_line(ch) else _escape(ch) for ch in value)
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the fields of a task ------------------------------------------------------------

#: The fields of a task a person sets with ``task-add``/``task-edit``: how
#: messages name them, and their rule (``None``: path-and-note entries).
TASK_FIELDS: Final[dict[str, tuple[str, Rule | None]]] = {
    "objective": ("objective", BLOCK),
    "acceptance": ("acceptance", BLOCK),
    "title": ("title", LINE),  # after the objective its default comes from
    "acceptance_criteria": ("acceptance criterion", LINE),
    "scope": ("scope key", LINE),
    "tags": ("tag", LINE),
    "files": ("file in play", None),
    "tests": ("test", None),
}


def value_fields(name: str, value: object) -> list[Field]:
    """The :class:`Field` values of one editable task field (see :data:`TASK_FIELDS`)."""
    what, rule = TASK_FIELDS[name]
    if isinstance(value, str):
        return [Field(what, value, rule or LINE)]
    found: list[Field] = []
    for item in value or ():  # type: ignore[attr-defined]
        if isinstance(item, PathNote):
            found += [Field(what, item.path, PATH), Field(what, item.note, LINE)]
        elif isinstance(item, str):
            found.append(Field(what, item, rule or LINE))
    return found


def task_fields(task: Task, links: Iterable[Link] = ()) -> list[Field]:
    """Every string of ``task`` (and of ``links``) a person or a remote can set."""
    found: list[Field] = []
    for name in TASK_FIELDS:
        found += value_fields(name, getattr(task, name))
    found += [
        Field("holder", task.assignee, HOLDER),
        Field("taken from", task.taken_from, HOLDER),
        Field("claimed at", task.claimed_at, STAMP),
        Field("claimed via", task.claimed_via, LINE),
        Field("created at", task.created_at, STAMP),
        Field("imported from", task.source, LINE),
    ]
    for checkpoint in task.checkpoints:
        found += [
            Field("checkpoint summary", checkpoint.summary, BLOCK),
            Field("checkpoint evidence", checkpoint.evidence, BLOCK),
            Field("checkpoint next step", checkpoint.next_step, BLOCK),
            Field("checkpoint author", checkpoint.author, HOLDER),
            Field("checkpoint time", checkpoint.at, STAMP),
        ]
    for selection in task.selections:
        found += [
            Field("add-tree revision", selection.rev, LINE),
            Field("add-tree directory", selection.dir, PATH),
            Field("add-tree prefix", selection.prefix, PATH),
            Field("add-tree inputs", selection.inputs, LINE),
        ]
        found += [Field("add-tree pathspec", spec, PATH) for spec in selection.pathspecs]
    for link in links:
        found += [
            Field("source label", link.source, LINE),
            Field("context path", link.path, PATH),
            Field("ranking reason", link.reason, LINE),
            Field("context origin", link.origin, STAMP),
        ]
    return found


class _Fixer:
    """Neutralises values one by one, remembering which fields it changed and why."""

    def __init__(self, secrets: bool) -> None:
        self.secrets = secrets
        self.changed: dict[str, str] = {}

    def __call__(self, what: str, value: str, rule: Rule) -> str:
        if not value:
            return value
        fixed, why = neutralise(value, rule, secrets=self.secrets)
        if why is not None:
            self.changed.setdefault(what, why)
        return fixed

    def notes(self, what: str, notes: list[PathNote]) -> list[PathNote]:
        return [PathNote(self(what, n.path, PATH), self(what, n.note, LINE)) for n in notes]

    def task_field(self, task: Task, name: str) -> str | list[str] | list[PathNote]:
        """The value of one of :data:`TASK_FIELDS` (a string, a list, or notes), fixed."""
        what, rule = TASK_FIELDS[name]
        value = getattr(task, name)
        if rule is None:
            return self.notes(what, value)
        if isinstance(value, str):
            return self(what, value, rule)
        return [self(what, item, rule) for item in value]

    def checkpoint(self, c: Checkpoint) -> Checkpoint:
        return msgspec.structs.replace(
            c,
            summary=self("checkpoint summary", c.summary, BLOCK),
            evidence=self("checkpoint evidence", c.evidence, BLOCK),
            next_step=self("checkpoint next step", c.next_step, BLOCK),
            author=self("checkpoint author", c.author, HOLDER),
            at=self("checkpoint time", c.at, STAMP),
        )

    def selection(self, s: Selection) -> Selection:
        return msgspec.structs.replace(
            s,
            rev=self("add-tree revision", s.rev, LINE),
            dir=self("add-tree directory", s.dir, PATH),
            prefix=self("add-tree prefix", s.prefix, PATH),
            inputs=self("add-tree inputs", s.inputs, LINE),
            pathspecs=[self("add-tree pathspec", p, PATH) for p in s.pathspecs],
        )

    def link(self, link: Link) -> Link:
        return msgspec.structs.replace(
            link,
            source=self("source label", link.source, LINE) or "(withheld)",
            path=self("context path", link.path, PATH),
            reason=self("ranking reason", link.reason, LINE),
            origin=self("context origin", link.origin, STAMP),
        )


def neutralised_task(
    task: Task, links: list[Link], *, secrets: bool
) -> tuple[Task, list[Link], dict[str, str]]:
    """``task`` and ``links`` with every string that breaks the policy neutralised,
    and ``{field: why}`` of what changed (empty: nothing did; the same objects back).

    Cheap when nothing is wrong: one printable-and-length pass and one joined
    secret scan (with ``secrets``) over all the strings.
    """
    fields = task_fields(task, links)
    if _within_rules(fields) and not (secrets and findings(fields, limit=1)):
        return task, links, {}
    fix = _Fixer(secrets)
    # (in this order: the first reason given for a field is the one reported)
    simple = {name: fix.task_field(task, name) for name in TASK_FIELDS}
    checkpoints = [fix.checkpoint(c) for c in task.checkpoints]
    selections = [fix.selection(s) for s in task.selections]
    fixed = msgspec.structs.replace(
        task,
        **simple,
        assignee=fix("holder", task.assignee, HOLDER),
        taken_from=fix("taken from", task.taken_from, HOLDER),
        claimed_at=fix("claimed at", task.claimed_at, STAMP),
        claimed_via=fix("claimed via", task.claimed_via, LINE),
        created_at=fix("created at", task.created_at, STAMP),
        source=fix("imported from", task.source, LINE),
        checkpoints=checkpoints,
        selections=selections,
    )
    return fixed, [fix.link(link) for link in links], fix.changed


def _within_rules(fields: list[Field]) -> bool:
    """Whether :func:`problem` finds nothing in any of ``fields``: every length
    within its limit, then the line texts (and the block texts) printable as
    one string, which they are exactly when each is, and all of it encodable.
    Only when that fails is each field asked on its own."""
    if any(len(f.value) > f.rule.limit for f in fields):
        return False
    lines = "".join([f.value for f in fields if not f.rule.block])
    blocks = "".join([f.value for f in fields if f.rule.block])
    if lines.isprintable() and blocks.isprintable():
        try:
            lines.encode("utf-8")
            blocks.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    return all(problem(f.value, f.rule) is None for f in fields)


#: Tasks whose strings one secret scan covers in :func:`untouched_tasks` (a scan
#: that finds something sends only these back to be scanned one by one).
_SCAN_GROUP: Final = 256


def untouched_tasks(items: list[tuple[Task, list[Link]]], *, secrets: bool) -> list[bool]:
    """For each ``(task, links)``, whether :func:`neutralised_task`'s first check
    clears it (it then leaves the task as it is; ``False``: ask it): the same
    checks, but the secret scan of many tasks' strings joined (as :func:`findings`
    joins one task's), so that a pull of thousands of tasks scans their text in a
    few calls rather than one per task (a joined text holds a match exactly when
    one of its parts does: parts are whole lines)."""
    fields = [task_fields(task, links) for task, links in items]
    verdicts = [_within_rules(listed) for listed in fields]
    if not secrets or not any(verdicts):
        return verdicts  # (nothing to scan: a no-op pull does not load the rules)
    from .secrets import scan

    for start in range(0, len(items), _SCAN_GROUP):
        group = [i for i in range(start, min(start + _SCAN_GROUP, len(items))) if verdicts[i]]
        text = "\n".join(f.value for i in group for f in fields[i] if f.value)
        if text and scan(text, limit=1):
            for i in group:
                verdicts[i] = not findings(fields[i], limit=1)
    return verdicts


def secret_values(values: Iterable[str]) -> set[str]:
    """The values that look like they hold a credential (one joined scan first)."""
    listed = list(values)
    if not listed:
        return set()
    from .secrets import scan

    if not scan("\n".join(listed), limit=1):
        return set()
    return {value for value in listed if value and scan(value, limit=1)}
