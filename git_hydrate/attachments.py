"""Attaching context to a task, and reading it back in packing order.

The seed's rules: a body is stored once (keyed by its sha256); attaching the
same body to the same task again updates its source, priority and expiry; a
body that looks like it carries a credential is refused unless allowed.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterable
from typing import Final, cast

from . import textpolicy, validate
from .errors import NotFound, SecretDetected, ValidationError
from .model import Link
from .results import AddManyResult, ContextEntry, ContextResult, RemoveResult
from .settings import Settings
from .taskrefs import (
    Change,
    TaskRefs,
    TaskState,
    Unchanged,
    body_path,
    iso_utc,
    link_shard,
    task_message,
)

__all__ = [
    "add_context",
    "add_contexts",
    "check_secrets",
    "check_text_secrets",
    "context_entries",
    "entry",
    "find_attachment",
    "read_body",
    "remove_context",
    "remove_contexts",
    "secrets_allowed",
]

_HEX: Final = frozenset("0123456789abcdef")


def secrets_allowed(settings: Settings, allow: bool | None) -> bool:
    """Whether bodies that look like credentials may be stored: ``allow`` when given,
    else ``hydrate.allowSecrets`` read as git reads booleans (``""`` is false)."""
    return textpolicy.secrets_allowed(settings, allow)


def check_secrets(settings: Settings, data: bytes, what: str, allow: bool | None) -> None:
    """Refuse ``data`` if it looks like it holds a credential, unless allowed.

    Raises:
        SecretDetected: naming the rules and lines, never the matched text.
    """
    if secrets_allowed(settings, allow):
        return
    from .secrets import scan

    findings = scan(data.decode("utf-8"), limit=3)
    if findings:
        listed = ", ".join(str(f) for f in findings)
        raise SecretDetected(
            f"{what} looks like it contains a secret ({listed}); not stored. "
            + textpolicy.ALLOW_SECRETS_HINT
        )


def check_text_secrets(
    settings: Settings, fields: Iterable[tuple[str, str]], allow: bool | None
) -> None:
    """Refuse free text written by a user or a worker (a checkpoint's evidence, a
    source label...) that breaks the text policy (:mod:`git_hydrate.textpolicy`):
    control characters, length, or a credential unless allowed.

    ``fields`` are ``(what, text)`` pairs, several lines each; a source label is one.

    Raises:
        ValidationError: a control character, or too long.
        SecretDetected: naming the field, the rules and lines, never the text.
    """
    textpolicy.check_all(
        settings,
        [
            textpolicy.Field(
                what, text, textpolicy.LINE if what == "source label" else textpolicy.BLOCK
            )
            for what, text in fields
        ],
        allow,
    )


def entry(link: Link) -> ContextEntry:
    """One attachment as the seed's ``context_entries`` shows it."""
    return {
        "hash": link.sha256,
        "source": link.source,
        "priority": link.priority,
        "expires": iso_utc(link.expires) if link.expires is not None else None,
        "size": link.size,
        "oid": link.oid,
        "score": link.score,
        "reason": link.reason,
    }


def context_entries(refs: TaskRefs, task_id: str) -> list[ContextEntry]:
    """The task's attachments in packing order: priority descending, then hash.

    An archived task's attachments are read from the archive.
    """
    state, _archived = refs.load_any(task_id)
    return [entry(link) for link in state.links]


def read_body(refs: TaskRefs, task_id: str, digest: str) -> str:
    """The text of one attached body, checked against its sha256."""
    state = refs.load(task_id)
    for link in state.links:
        if link.sha256 == digest:
            return refs.read_body(task_id, link)
    raise NotFound(f"task {task_id} has no context {digest} (git hydrate show {task_id} lists it)")


def find_attachment(refs: TaskRefs, task_id: str, prefix: str) -> ContextEntry:
    """The task's attachment whose sha256 is ``prefix`` or starts with it (4 to 64
    hexadecimal digits), else whose source is ``prefix`` (``src/app.py``, as ``show``
    and the prompt's reasons name it: a worker asks for a file by its name).

    Raises:
        ValidationError: ``prefix`` starts the hashes of more than one attachment, or
            is the source of more than one (their hashes named), or is empty.
        NotFound: no attachment's hash starts with ``prefix`` and none has it as
            its source.
    """
    wanted = prefix.lower()
    shown = repr(prefix) if len(prefix) <= 80 else repr(prefix[:77]) + "…"
    if not prefix:
        raise ValidationError(
            f"give an attachment's hash (4 to 64 hexadecimal digits) or its source, as "
            f"git hydrate show {task_id} lists them"
        )
    entries = context_entries(refs, task_id)
    hexadecimal = 4 <= len(wanted) <= 64 and not wanted.strip("0123456789abcdef")
    found = [e for e in entries if e["hash"].startswith(wanted)] if hexadecimal else []
    if len(found) > 1:
        raise ValidationError(
            f"{wanted} starts the hashes of {len(found)} attachments of {task_id} "
            f"({_hashes(found)}); give more digits"
        )
    named = found or [e for e in entries if e["source"] == prefix]
    if len(named) > 1:  # (one source, several bodies: a diff's and a file's, say)
        raise ValidationError(
            f"{shown} is the source of {len(named)} attachments of {task_id} "
            f"({_hashes(named)}); give the hash of one"
        )
    if not named:
        raise NotFound(
            f"task {task_id} has no attachment whose hash starts with {wanted}"
            if hexadecimal
            else f"task {task_id} has no attachment whose source is {shown} nor whose "
            f"hash starts with it (git hydrate show {task_id} lists them)"
        )
    return named[0]


def _hashes(entries: list[ContextEntry]) -> str:
    """The first hashes of ``entries``, for an error: four, and how many more."""
    more = f" and {len(entries) - 4} more" if len(entries) > 4 else ""
    return ", ".join(e["hash"][:12] for e in entries[:4]) + more


def _expiry(now: float, ttl: float | None) -> int | None:
    seconds = validate.ttl(ttl)
    return None if seconds is None else int(now + seconds + 0.999999)


def _require_task(refs: TaskRefs, task_id: str) -> None:
    """Refuse a task that is not live before any body is written.

    The write loop checks again under its lock (the task may go meanwhile);
    this first look keeps a refused attachment from leaving an unreachable
    blob behind.
    """
    validate.task_id(task_id)
    if refs.tip(task_id) is None:
        raise refs.missing(task_id)


def add_context(
    refs: TaskRefs,
    task_id: str,
    body: str | bytes,
    source: str,
    priority: int = 0,
    ttl: float | None = None,
    *,
    allow_secrets: bool | None = None,
) -> ContextResult:
    """Attach ``body`` to a task; attaching it again updates source, priority, expiry.

    Returns the attachment's entry plus ``task_id``, ``created`` (a new link)
    and ``changed`` (anything written).
    """
    settings = refs.repo.settings
    _require_task(refs, task_id)
    source = validate.source_label(source)
    priority = validate.context_priority(priority)
    expires = _expiry(refs.clock(), ttl)
    data = validate.body_bytes(body, settings.size("hydrate.maxBodyBytes"))
    check_text_secrets(settings, [("source label", source)], allow_secrets)
    check_secrets(settings, data, "context body", allow_secrets)
    digest = hashlib.sha256(data).hexdigest()
    oid = refs.repo.write_blob(data)
    link = Link(
        sha256=digest,
        oid=oid.decode("ascii"),
        size=len(data),
        source=source,
        priority=priority,
        expires=expires,
    )
    base = cast(ContextResult, {**entry(link), "task_id": task_id})

    def apply(state: TaskState) -> Change[ContextResult]:
        others = [lk for lk in state.links if lk.sha256 != digest]
        existing = next((lk for lk in state.links if lk.sha256 == digest), None)
        if existing == link:
            raise Unchanged(cast(ContextResult, {**base, "created": False, "changed": False}))
        verb = "context-add" if existing is None else "context-update"
        return Change(
            task=state.task,
            links=[*others, link],
            bodies={body_path(digest): oid},
            message=task_message(
                f"{verb} {task_id} {digest[:12]} from {source}",
                verb,
                task_id,
                context=digest,
                source=source,
                priority=str(priority),
                **({"expires": iso_utc(expires)} if expires is not None else {}),
            ),
            result=cast(ContextResult, {**base, "created": existing is None, "changed": True}),
        )

    return refs.write(task_id, apply, only=link_shard(digest))


def _matching(task_id: str, links: list[Link], digest: str) -> Link:
    """The one link a hash or unique prefix names."""
    matches = [lk for lk in links if lk.sha256.startswith(digest)]
    if not matches:
        raise NotFound(
            f"task {task_id} has no context {digest} (git hydrate show {task_id} lists it)"
        )
    if len(matches) > 1:
        raise ValidationError(
            f"context hash prefix {digest} is ambiguous in task {task_id}; give more digits"
        )
    return matches[0]


def _check_digest(digest: object) -> str:
    """``digest`` in lower case, as ``show --attachment`` reads one (a hash copied
    from a tool that prints upper case is the same hash)."""
    wanted = digest.lower() if isinstance(digest, str) else ""
    if not 4 <= len(wanted) <= 64 or not set(wanted) <= _HEX:
        raise ValidationError(f"invalid context hash {digest!r}: give 4 to 64 hexadecimal digits")
    return wanted


def remove_contexts(
    refs: TaskRefs,
    task_id: str,
    digests: Iterable[str] = (),
    *,
    source: str | None = None,
    everything: bool = False,
) -> RemoveResult:
    """Detach several bodies in one commit: the hashes (or unique prefixes of 4+
    digits) given, the attachments whose source matches the glob ``source``
    (``src/*``, ``diff:*``), or with ``everything`` all of them.

    Raises:
        ValidationError: nothing named, a bad hash, an ambiguous prefix.
        NotFound: a hash the task does not have, or a glob that matches nothing.
    """
    validate.task_id(task_id)
    wanted = [_check_digest(d) for d in digests]
    if not wanted and source is None and not everything:
        raise ValidationError("name the context to remove: HASH..., --source GLOB or --all")

    def apply(state: TaskState) -> Change[RemoveResult]:
        gone = _chosen(task_id, state.links, wanted, source, everything)
        removed = [lk for lk in state.links if lk.sha256 in gone]
        result: RemoveResult = {
            "task_id": task_id,
            "removed": [entry(lk) for lk in removed],
            "count": len(removed),
        }
        if not removed:
            raise Unchanged(result)
        return Change(
            task=state.task,
            links=[lk for lk in state.links if lk.sha256 not in gone],
            bodies={body_path(lk.sha256): None for lk in removed},
            message=_removal_message(task_id, removed),
            result=result,
        )

    return refs.write(task_id, apply)


def _chosen(
    task_id: str, links: list[Link], wanted: list[str], source: str | None, everything: bool
) -> set[str]:
    """The sha256 of each attachment :func:`remove_contexts` is asked to remove."""
    gone = {_matching(task_id, links, d).sha256 for d in wanted}
    if source is not None:
        matched = {lk.sha256 for lk in links if fnmatch.fnmatchcase(lk.source, source)}
        if not matched:
            raise NotFound(f"task {task_id} has no context whose source matches {source!r}")
        gone |= matched
    if everything:
        gone = {lk.sha256 for lk in links}
    return gone


def _removal_message(task_id: str, removed: list[Link]) -> str:
    """The commit message of a context-rm of ``removed`` (one named, or a count)."""
    first = removed[0]
    if len(removed) == 1:
        summary = f"context-rm {task_id} {first.sha256[:12]} from {first.source}"
        named = {"context": first.sha256, "source": first.source}
    else:
        summary = f"context-rm {task_id} ({len(removed)} removed)"
        named = {"count": str(len(removed))}
    return task_message(summary, "context-rm", task_id, **named)


def remove_context(refs: TaskRefs, task_id: str, digest: str) -> ContextResult:
    """Detach the body ``digest`` (a full sha256, or a unique prefix of 4+ digits)."""
    validate.task_id(task_id)
    _check_digest(digest)
    removed = remove_contexts(refs, task_id, [digest])["removed"][0]
    return cast(ContextResult, {**removed, "task_id": task_id, "removed": True})


def _checked_items(
    settings: Settings,
    items: Iterable[tuple[str | bytes, str, int, float | None]],
    now: float,
    allow_secrets: bool | None,
) -> dict[str, tuple[bytes, str, int, int | None]]:
    """``{sha256: (body, source, priority, expires)}`` of :func:`add_contexts`'
    items, each checked as :func:`add_context` checks one (the last of a body
    met twice wins)."""
    limit = settings.size("hydrate.maxBodyBytes")
    prepared: dict[str, tuple[bytes, str, int, int | None]] = {}
    for body, source, priority, ttl in items:
        data = validate.body_bytes(body, limit)
        label = validate.source_label(source)
        check_text_secrets(settings, [("source label", label)], allow_secrets)
        check_secrets(settings, data, f"context body from {label}", allow_secrets)
        expires = _expiry(now, ttl)
        prepared[hashlib.sha256(data).hexdigest()] = (
            data,
            label,
            validate.context_priority(priority),
            expires,
        )
    return prepared


def add_contexts(
    refs: TaskRefs,
    task_id: str,
    items: Iterable[tuple[str | bytes, str, int, float | None]],
    *,
    allow_secrets: bool | None = None,
) -> AddManyResult:
    """Attach many bodies in one commit: ``(body, source, priority, ttl)`` each.

    The same rules as :func:`add_context` apply to every item (a body met
    twice keeps its last source, priority and expiry). New blobs are written
    as one pack when there are many.
    """
    settings = refs.repo.settings
    _require_task(refs, task_id)
    prepared = _checked_items(settings, items, refs.clock(), allow_secrets)
    digests = list(prepared)
    oids = refs.repo.write_blobs([prepared[d][0] for d in digests])
    new_links = {
        digest: Link(
            sha256=digest,
            oid=oid.decode("ascii"),
            size=len(prepared[digest][0]),
            source=prepared[digest][1],
            priority=prepared[digest][2],
            expires=prepared[digest][3],
        )
        for digest, oid in zip(digests, oids, strict=True)
    }

    def apply(state: TaskState) -> Change[AddManyResult]:
        current = {link.sha256: link for link in state.links}
        counts: AddManyResult = {"task_id": task_id, "added": 0, "updated": 0, "unchanged": 0}
        bodies: dict[bytes, bytes | None] = {}
        for digest, link in new_links.items():
            old = current.get(digest)
            if old == link:
                counts["unchanged"] += 1
                continue
            counts["added" if old is None else "updated"] += 1
            current[digest] = link
            bodies[body_path(digest)] = link.oid.encode("ascii")
        if not bodies:
            raise Unchanged(counts)
        return Change(
            task=state.task,
            links=list(current.values()),
            bodies=bodies,
            message=task_message(
                f"context-add {task_id} ({counts['added']} added, {counts['updated']} updated)",
                "context-add-many",
                task_id,
                added=str(counts["added"]),
                updated=str(counts["updated"]),
            ),
            result=counts,
        )

    return refs.write(task_id, apply)
