"""Packing a stored task: its packet and prompt under an exact budget.

The budget walk itself is pure (:mod:`git_hydrate.context_expander`); this
module feeds it a task's fields and its attachments in packing order, with a
body loader that reads ahead through git while the walk measures.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple, cast

from . import context_expander, validate
from .budgeting import Budget, resolve_budget
from .errors import CorruptData
from .model import TREE_ORIGIN, Link
from .prompt_cache import PromptCache
from .results import ExpandResult, PackResult, PromptFields, PromptResult
from .store import Prefetch
from .taskrefs import TaskRefs
from .tasks import task_dict

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = [
    "Budget",
    "body_loader",
    "budget",
    "check_budget",
    "expand",
    "pack",
    "packing_input",
    "prompt",
    "write_prompt",
]

#: The header of the token-count cache: counts are of texts derived from a body
#: by context_expander's rendering rules; a change there bumps the version.
_TOKEN_CACHE_VERSION: Final = 1
_OUTLINE_CACHE_HEADER: Final = b"# git-hydrate outlines 2 %s\n"


def packing_input(refs: TaskRefs, task_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The task's fields and its attachments (with size and oid, no bodies), in
    packing order."""
    state = refs.load(task_id)
    task = dict(task_dict(state))
    entries = [
        {
            "hash": link.sha256,
            "source": link.source,
            "priority": link.priority,
            "expires": link.expires,
            "size": link.size,
            "oid": link.oid,
            # a file's link names where the work tree may hold the same blob
            **({"path": link.path} if link.origin == TREE_ORIGIN and link.path else {}),
        }
        for link in state.links
    ]
    return task, entries


def budget(
    refs: TaskRefs,
    max_bytes: int | None = None,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
) -> Budget:
    """The budget a packing uses: the arguments, else the ``hydrate.*`` settings
    (see :func:`git_hydrate.budgeting.resolve_budget`)."""
    return resolve_budget(refs.repo.settings, max_bytes, max_tokens, encoding, outline)


class _Job(NamedTuple):
    """Everything one packing needs: the task's fields, its entries, the budget,
    the moment expiry is judged at, the body loader, and the token meter and
    outliner when the budget asks for them."""

    task: dict[str, Any]
    entries: list[dict[str, Any]]
    budget: Budget
    moment: float
    load_body: Callable[[Mapping[str, Any]], str]
    meter: Any
    outliner: context_expander.Outliner | None
    caches: list[Any]

    def save(self) -> None:
        for cache in self.caches:
            cache.save()

    def walk_options(self, *, files: bool = False) -> dict[str, Any]:
        """The keyword arguments every packer walk takes (``files``: with the task's
        files in play and tests, for the prompt)."""
        options: dict[str, Any] = {
            "max_tokens": self.budget.max_tokens,
            "tokens": self.meter,
            "outline": self.outliner,
            "now": self.moment,
            "load_body": self.load_body,
        }
        if files:
            options["files"] = self.task.get("files") or ()
            options["tests"] = self.task.get("tests") or ()
        return options


def _job(refs: TaskRefs, task_id: str, limits: Budget, now: datetime | float | None) -> _Job:
    caches: list[Any] = []
    meter = None
    if limits.max_tokens is not None:
        # Before anything is read: a missing extra or a bad encoding refuses at once.
        meter = _meter(refs, limits.encoding, caches)
    shrink = _outliner(refs, caches) if limits.outline else None
    task, entries = packing_input(refs, task_id)
    moment = refs.now(now)
    window = limits.max_bytes if limits.max_bytes is not None else 1 << 20
    loader = body_loader(refs, task_id, entries, window, moment)
    return _Job(task, entries, limits, moment, loader, meter, shrink, caches)


def _meter(refs: TaskRefs, encoding: str, caches: list[Any]) -> Any:
    from .hydrate.cache import DerivedCache
    from .tokens import Meter

    meter = Meter(encoding)  # a missing extra or an unknown encoding refuses here
    header = b"# git-hydrate token-counts %d %s\n" % (_TOKEN_CACHE_VERSION, encoding.encode())
    cache = DerivedCache.of(refs.repo, f"token-counts-{encoding}", header)
    caches.append(cache)
    meter.remembered = cache.values
    return meter


def _outliner(refs: TaskRefs, caches: list[Any]) -> context_expander.Outliner:
    from .hydrate.cache import DerivedCache
    from .outline import grammars, language_for
    from .outline import outline as outline_text

    # the grammars installed decide outlines: another set, another cache
    state = hashlib.sha256(grammars().encode("utf-8", "surrogateescape")).hexdigest()[:16]
    header = _OUTLINE_CACHE_HEADER % state.encode("ascii")
    cache = DerivedCache.of(refs.repo, "outlines", header)
    caches.append(cache)

    def outline_of(entry: Mapping[str, Any], read: Callable[[], str]) -> str | None:
        language = language_for(str(entry["source"]))
        if language is None:
            return None
        key = f"{entry.get('oid') or entry['hash']} {language}"
        if key in cache.values:
            known = cache.values[key]
            return known if isinstance(known, str) else None
        text = outline_text(str(entry["source"]), read())
        cache.values[key] = text
        return text

    return outline_of


def pack(
    refs: TaskRefs,
    task_id: str,
    max_bytes: int | None = None,
    now: datetime | float | None = None,
    *,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
) -> PackResult:
    """The task as a packet whose compact JSON fits the budget (see ``Ledger.pack``)."""
    job = _job(refs, task_id, budget(refs, max_bytes, max_tokens, encoding, outline), now)
    result = context_expander.pack_packet(
        job.task, job.entries, job.budget.max_bytes, **job.walk_options()
    )
    job.save()
    return cast(PackResult, result)


def expand(
    refs: TaskRefs,
    task_id: str,
    max_bytes: int | None = None,
    now: datetime | float | None = None,
    *,
    extra: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
) -> ExpandResult:
    """The packet and its prompt, measured together (see ``Ledger.expand``)."""
    job = _job(refs, task_id, budget(refs, max_bytes, max_tokens, encoding, outline), now)
    if job.task.get("depends_on"):
        # A documented extra key of expand's packet only: pack's key set is the seed's.
        extra = {"depends_on": list(job.task["depends_on"]), **(extra or {})}
    result = context_expander.build_packet(
        job.task, job.entries, job.budget.max_bytes, extra=extra, **job.walk_options(files=True)
    )
    job.save()
    return cast(ExpandResult, result)


def prompt(
    refs: TaskRefs,
    task_id: str,
    max_bytes: int | None = None,
    now: datetime | float | None = None,
    *,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
    cache: bool = True,
) -> PromptResult:
    """The prompt measured alone (see ``Ledger.prompt``); with ``cache`` (and
    ``hydrate.promptCache``, on by default) a prompt built before for the same
    tip, budget and expired attachments is read back instead of rebuilt."""
    limits = budget(refs, max_bytes, max_tokens, encoding, outline)
    moment = refs.now(now)
    store = PromptCache.of(refs.repo) if cache else None
    if store is not None:
        hit = store.find(refs.tip(validate.task_id(task_id)), limits, moment)
        if hit is not None:
            refs.memo.clear()  # what add-tree kept for this prompt
            return cast(PromptResult, hit.result())
    job, result = _built_prompt(refs, task_id, limits, moment, pieces=False)
    if store is not None and job.task.get("tip"):
        store.put(store.key(job.task["tip"].encode(), limits), moment, _expiries(job), result)
    return cast(PromptResult, result)


def check_budget(
    refs: TaskRefs,
    task_id: str,
    max_bytes: int | None = None,
    *,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
) -> None:
    """Raise what :func:`prompt` would if the prompt without attachments did not
    fit the budget, without reading a body (see ``Ledger.check_prompt_budget``)."""
    limits = budget(refs, max_bytes, max_tokens, encoding, outline)
    meter = _meter(refs, limits.encoding, []) if limits.max_tokens is not None else None
    task: dict[str, Any] = dict(task_dict(refs.load(task_id)))
    context_expander.build_prompt(
        task,
        [],
        limits.max_bytes,
        max_tokens=limits.max_tokens,
        tokens=meter,
        files=task.get("files") or (),
        tests=task.get("tests") or (),
    )


def write_prompt(
    refs: TaskRefs,
    task_id: str,
    out: SupportsWrite[bytes],
    max_bytes: int | None = None,
    now: datetime | float | None = None,
    *,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
    cache: bool = True,
) -> PromptFields:
    """The prompt written to ``out`` as UTF-8 (see ``Ledger.write_prompt``).

    Nothing is written unless the whole prompt was built. The prompt is never
    held as one text: the attachments' bodies are read once and written piece
    by piece, to ``out`` and to the prompt cache.
    """
    limits = budget(refs, max_bytes, max_tokens, encoding, outline)
    moment = refs.now(now)
    store = PromptCache.of(refs.repo) if cache else None
    if store is not None:
        hit = store.find(refs.tip(validate.task_id(task_id)), limits, moment, packet=False)
        if hit is not None:
            refs.memo.clear()  # what add-tree kept for this prompt
            out.write(hit.prompt)
            return cast(PromptFields, hit.fields)
    job, result = _built_prompt(refs, task_id, limits, moment, pieces=True)
    pieces: list[bytes] = result.pop("prompt_pieces")
    if store is not None and job.task.get("tip"):
        key = store.key(job.task["tip"].encode(), limits)
        store.put_pieces(key, moment, _expiries(job), result, pieces)
    for piece in pieces:
        out.write(piece)
    return cast(PromptFields, result)


def _built_prompt(
    refs: TaskRefs, task_id: str, limits: Budget, moment: float, *, pieces: bool
) -> tuple[_Job, dict[str, Any]]:
    try:
        job = _job(refs, task_id, limits, moment)
        result = context_expander.build_prompt(
            job.task,
            job.entries,
            job.budget.max_bytes,
            pieces=pieces,
            **job.walk_options(files=True),
        )
    finally:
        refs.memo.clear()  # what add-tree kept for this prompt (see TaskRefs.memo)
    job.save()
    return job, result


def _expiries(job: _Job) -> list[float]:
    return [e["expires"] for e in job.entries if e["expires"] is not None]


def body_loader(
    refs: TaskRefs, task_id: str, entries: list[dict[str, Any]], max_bytes: int, now: float
) -> Callable[[Mapping[str, Any]], str]:
    """A body loader for the packer that reads ahead in packing order.

    The packer asks for bodies one by one, in the order of ``entries``. Each
    miss reads that body and the following ones in one pipelined
    ``cat-file`` round (up to 1 MiB, or the budget when smaller), and at once
    asks git for the round after, which git reads while the packer hashes
    and measures this one. A round leaves out what the packer will skip
    unread (expired, or larger than a round): such a body is read only if
    asked for. Bodies the packer has passed are dropped.
    """
    position = {entry["oid"]: index for index, entry in enumerate(entries)}
    ready: dict[str, bytes] = {}
    # (an invalid budget is the packer's to refuse, before any body is read)
    usable = max_bytes if isinstance(max_bytes, int) and max_bytes > 0 else 1 << 20
    window = max(64 * 1024, min(1 << 20, usable))
    inflight: list[tuple[list[str], Prefetch]] = []
    cursor = [0]  # the next entry a round may take
    suspect: set[str] = set()  # in a round git stopped on: read alone, if asked

    memo = refs.memo
    on_disk: dict[str, bytes] = {}  # oid -> the work-tree file that may hold it

    def in_worktree(entry: Mapping[str, Any]) -> bool:
        """Whether the work tree has a file of this body's size where the link says:
        then it is read from there (and through git only if it holds something else)."""
        path = entry.get("path")
        if not path:
            return False
        raw = os.fsencode(path)
        if not refs.repo.worktree_has(raw, int(entry["size"])):
            return False
        on_disk[str(entry["oid"])] = raw
        return True

    def unread_by_packer(entry: Mapping[str, Any]) -> bool:
        expires = entry.get("expires")
        return (
            int(entry["size"]) > window
            or (expires is not None and expires <= now)
            or str(entry["oid"]) in suspect
            or str(entry["oid"]) in memo  # read already, by add-tree
            or in_worktree(entry)
        )

    def round_from(start: int, size: int = 0) -> list[str]:
        names: list[str] = []
        index = start
        while index < len(entries) and len(names) < 256:
            later = entries[index]
            if not unread_by_packer(later):
                if size + int(later["size"]) > window:
                    break
                names.append(str(later["oid"]))
                size += int(later["size"])
            index += 1
        cursor[0] = max(cursor[0], index)
        return names

    def absorb(names: list[str], answers: list[tuple[bytes, bytes] | None]) -> None:
        for name, answer in zip(names, answers, strict=True):
            if answer is not None and answer[0] == b"blob":
                ready[name] = answer[1]

    def read_ahead() -> None:
        """Ask git for the next round, unless one is on its way."""
        if not inflight and cursor[0] < len(entries):
            names = round_from(cursor[0])
            if names:
                pending = refs.repo.prefetch([n.encode("ascii") for n in names])
                inflight.append((names, pending))

    def load(entry: Mapping[str, Any]) -> str:
        oid = str(entry["oid"])
        known = memo.take(oid, str(entry["hash"])) if oid in memo else None
        if known is not None:
            # hashed in this process already (the sha256 is the link's): only decoded
            try:
                return known.decode("utf-8")
            except UnicodeDecodeError:
                pass  # read again below, so that the error names the body
        link = Link(sha256=entry["hash"], oid=oid, size=entry["size"], source=entry["source"])
        if oid not in ready and oid not in on_disk:
            in_worktree(entry)
        path = on_disk.pop(oid, None)
        if path is not None:
            # the work tree's file is the body when it hashes to the link's sha256
            copy = refs.repo.worktree_file(path, int(entry["size"]))
            digest = hashlib.sha256(copy).hexdigest() if copy is not None else None
            if copy is not None and digest == entry["hash"]:
                if oid in position:
                    cursor[0] = max(cursor[0], position[oid] + 1)
                read_ahead()
                return refs.check_body(task_id, link, copy, sha256=digest)
        here = position.get(oid)
        if oid not in ready:
            for names, pending in inflight:
                # A round that fails (a damaged object in it) is read again
                # body by body, so the error names the body that is damaged.
                try:
                    absorb(names, pending.collect())
                except CorruptData:
                    suspect.update(names)
            inflight.clear()
            if here is not None:
                for name in [n for n in ready if position.get(n, here) < here]:
                    del ready[name]  # passed by the packer
        if oid not in ready:
            names = [oid]
            if here is not None:
                cursor[0] = max(cursor[0], here + 1)
                if not unread_by_packer(entry):
                    names += round_from(here + 1, int(entry["size"]))
            try:
                absorb(names, refs.repo.read_many([n.encode("ascii") for n in names]))
            except CorruptData:
                # read alone below, so that the error names the body
                suspect.update(names)
        read_ahead()
        data = ready.pop(oid, None)
        if data is None:
            return refs.read_body(task_id, link)  # names what is wrong
        return refs.check_body(task_id, link, data)

    return load
