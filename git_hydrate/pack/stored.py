"""Packing a stored task: its packet and prompt under an exact budget.

The walk and the assembly are pure (:mod:`.walk`, :mod:`.assemble`); this
module feeds them a task's fields and its attachments in packing order, with a
body reader that reads ahead through git while the walk measures
(:mod:`.loader`), and keeps what it can in the prompt cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple, cast

from .. import __version__, validate
from ..errors import CorruptData, NotFound, ValidationError
from ..model import TREE_ORIGIN, packing_sorted
from ..results import ExpandResult, PackResult, PromptFields, PromptResult
from ..taskrefs import TaskRefs, TaskState
from ..tasks import task_dict
from .assemble import pack_attachments, render_attachments
from .boundaries import forget_ahead
from .budget import Budget, resolve_budget
from .derived import DerivedCache
from .entries import Attachment, AttachmentOutliner
from .fingerprint import PACKAGE_DIR, code_fingerprint, installed_fingerprint, packer_modules
from .formats import layout
from .grammars import grammars, language_for
from .loader import BodyReader
from .memo import BodyMemo
from .omissions import WITHHELD, Unattached
from .prompt_cache import PromptCache

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    from .tokens import Meter

__all__ = [
    "check_budget",
    "expand",
    "pack",
    "packing_input",
    "parent_attachment",
    "prompt",
    "unattached",
    "write_prompt",
]

#: The header of the token-count cache (the encoding, the counting code's digest):
#: counts are of texts derived from a body by context_expander's rendering rules.
_TOKEN_CACHE_HEADER: Final = b"# git-hydrate token-counts 3 %s %s\n"
#: The modules outside ``pack/`` whose code decides a counted text (beside the
#: packer's own, which renders it, and the backend installed).
_TOKEN_TEXTS: Final = ("context_expander.py",)
_OUTLINE_CACHE_HEADER: Final = b"# git-hydrate outlines 2 %s\n"
#: Where the outliner's and the token counter's code is (a test points it
#: elsewhere): it decides each outline and count, so it is in their caches' headers.
_CODE: str = PACKAGE_DIR


def packing_input(refs: TaskRefs, task_id: str) -> tuple[dict[str, Any], list[Attachment]]:
    """The task's fields and its attachments (with size and oid, no bodies), in
    packing order. An attachment of a file the task names (by its path, or its
    source label) carries ``named``: ``file in play`` or ``named test``."""
    state = _written(refs, task_id) or refs.load(task_id)
    task = dict(task_dict(state))
    roles = _named_paths(task)
    entries = []
    for link in state.links:
        # a file's link names where the work tree may hold the same blob
        path = link.path if link.origin == TREE_ORIGIN and link.path else None
        entries.append(
            Attachment(
                link.sha256,
                link.source,
                priority=link.priority,
                expires=link.expires,
                size=link.size,
                oid=link.oid,
                path=path,
                named=roles.get(path or link.source),
            )
        )
    return task, entries


def _written(refs: TaskRefs, task_id: str) -> TaskState | None:
    """The task as this process just wrote it (:attr:`.TaskRefs.last_write`), while
    its tip is still the one written: add-tree's prompt does not read back the
    links it committed (3,687 at 30,000 files: 16 shards, 1.2 MB of JSON). ``None``
    otherwise, or when two links hold one body (their order would be the read's)."""
    last = refs.last_write
    if last is None or last[0] != task_id or refs.tip(task_id) != last[1]:
        return None
    _id, tip, task, links = last
    if len({link.sha256 for link in links}) != len(links):
        return None
    return TaskState(task=task, links=packing_sorted(links), tip=tip)


def _named_paths(task: Mapping[str, Any]) -> dict[str, str]:
    """Each path the task names, and how: ``file in play`` or ``named test`` (a
    file in play first, in the task's order, then the tests; one named both ways
    is a file in play)."""
    roles: dict[str, str] = {}
    for key, role in (("files", "file in play"), ("tests", "named test")):
        for item in task.get(key) or ():
            path = item.get("path") if isinstance(item, Mapping) else item
            if path:
                roles.setdefault(str(path), role)
    return roles


def unattached(task: Mapping[str, Any], entries: Sequence[Attachment]) -> list[Unattached]:
    """The files the task names (files in play, then tests) that no attachment
    holds, each with what the newest add-tree run that left it out recorded:
    its reason, size and blob (nothing, when no recorded run did); then the
    files a run withheld as secrets that ranked high (:data:`.omissions.WITHHELD`).

    Only for a task whose files were hydrated (an add-tree run recorded, or a
    file's link): a task that only names files (the seed's own example, whose
    files in play are to be written) keeps the seed's prompt byte for byte.
    """
    if not task.get("selections") and not any(entry.path for entry in entries):
        return []
    held = {entry.path or entry.source for entry in entries}
    skips: dict[str, Mapping[str, Any]] = {}
    for selection in task.get("selections") or ():  # (oldest first: the newest wins)
        for skip in selection.get("skipped") or ():
            skips[str(skip["path"])] = skip
    found: list[Unattached] = []
    roles = _named_paths(task)
    for path, role in roles.items():
        if path in held:
            continue
        skip = skips.get(path)
        if skip is None:
            found.append(Unattached(path, role))
        else:
            reason, size = str(skip["reason"]), int(skip.get("bytes", 0))
            found.append(Unattached(path, role, reason, size, str(skip.get("oid", ""))))
    # then the secrets a run withheld that ranked high (it records no other file
    # the task does not name): the worker learns they exist, never their content
    for path, skip in skips.items():
        if path not in roles and path not in held and skip["reason"] == "secret":
            size = int(skip.get("bytes", 0))
            found.append(Unattached(path, WITHHELD, "secret", size, str(skip.get("oid", ""))))
    return found


class _Job(NamedTuple):
    """Everything one packing needs: the task's fields, its entries, the budget,
    the moment expiry is judged at, the body loader, and the token meter and
    outliner when the budget asks for them."""

    task: dict[str, Any]
    entries: list[Attachment]
    budget: Budget
    moment: float
    load_body: BodyReader
    meter: Meter | None
    outliner: AttachmentOutliner | None
    caches: list[DerivedCache]
    #: The files the task names that have no attachment.
    unattached: list[Unattached]
    #: The budget the settings give when no option is (:meth:`.Budget.options`).
    settled: Budget | None

    def save(self) -> None:
        for cache in self.caches:
            cache.save()

    def pack(self) -> dict[str, Any]:
        """The ``pack`` walk over the task's attachments."""
        return pack_attachments(
            self.task,
            self.entries,
            self.budget.max_bytes,
            max_tokens=self.budget.max_tokens,
            tokens=self.meter,
            outline=self.outliner,
            now=self.moment,
            load_body=self.load_body,
            unattached=self.unattached,
        )

    def render(
        self, *, with_json: bool, pieces: bool = False, extra: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``expand`` walk (``with_json``) or the ``prompt`` walk, with the task's
        files in play and tests and the budget's format."""
        return render_attachments(
            self.task,
            self.entries,
            self.budget.max_bytes,
            max_tokens=self.budget.max_tokens,
            tokens=self.meter,
            outline=self.outliner,
            files=self.task.get("files") or (),
            tests=self.task.get("tests") or (),
            extra=extra,
            now=self.moment,
            load_body=self.load_body,
            with_json=with_json,
            pieces=pieces,
            layout=layout(self.budget.format),
            unattached=self.unattached,
            rebuild=self.budget.options(self.settled),
        )


def _job(
    refs: TaskRefs,
    task_id: str,
    limits: Budget,
    now: datetime | float | None,
    memo: BodyMemo | None = None,
) -> _Job:
    caches: list[DerivedCache] = []
    meter = None
    if limits.max_tokens is not None:
        # Before anything is read: a missing extra or a bad encoding refuses at once.
        meter = _meter(refs, limits.encoding, caches)
    shrink = _outliner(refs, caches) if limits.outline else None
    task, entries = packing_input(refs, task_id)
    moment = refs.now(now)
    loader = BodyReader(refs, task_id, entries, limits.max_bytes, moment, memo)
    # first in packing order (its body is at hand: the loader never sees it)
    top = max((e.priority for e in entries), default=0)
    parent = parent_attachment(refs, task.get("parent") or "", min(top + 1, 2**31 - 1))
    if parent is not None:
        entries = [parent, *entries]
    missing = unattached(task, entries)
    return _Job(
        task, entries, limits, moment, loader, meter, shrink, caches, missing, settled(refs)
    )


def settled(refs: TaskRefs) -> Budget | None:
    """The budget the ``hydrate.*`` settings give when no option is (``None``: a
    setting is bad; the command that reads it names it)."""
    try:
        return resolve_budget(refs.repo.settings)
    except ValidationError:
        return None


def parent_attachment(refs: TaskRefs, parent_id: str, priority: int = 0) -> Attachment | None:
    """The parent task's title and objective as the child's first attachment, at
    ``priority`` (``None``: no parent, or it is neither live nor archived here, or
    damaged). An archived parent still says what its child is a part of."""
    if not parent_id:
        return None
    tip = refs.tip(parent_id)
    if tip is not None:
        parent = refs.read_state(parent_id, tip).task
    else:
        try:
            parent = refs.load_any(parent_id)[0].task
        except (NotFound, CorruptData, ValidationError):
            return None
    objective = parent.objective.strip()
    body = objective if objective.startswith(parent.title) else f"{parent.title}\n\n{objective}"
    body += "\n"
    data = body.encode("utf-8")
    return Attachment(
        hashlib.sha256(data).hexdigest(),
        f"parent task {parent_id}",
        priority,
        size=len(data),
        body=body,
    )


def _code_state(modules: list[str], installed: str) -> bytes:
    """A short digest of git-hydrate's version, ``modules``' code (under :data:`_CODE`)
    and the ``installed`` packages' fingerprint: what a derived cache's header names."""
    state = f"{__version__} {code_fingerprint(modules, _CODE)} {installed}"
    return hashlib.sha256(state.encode("utf-8", "surrogateescape")).hexdigest()[:16].encode()


def _meter(refs: TaskRefs, encoding: str, caches: list[DerivedCache]) -> Meter:
    from .tokens import BACKEND_MODULES, Meter

    meter = Meter(encoding)  # a missing extra or an unknown encoding refuses here
    # a count is the backend's, of a text the packer rendered, through the code that
    # cleans texts and merges long pieces: an upgrade of any (or a development
    # install's edit), another cache
    modules = [*packer_modules(_CODE), *_TOKEN_TEXTS]
    digest = _code_state(modules, installed_fingerprint(BACKEND_MODULES))
    header = _TOKEN_CACHE_HEADER % (encoding.encode(), digest)
    cache = DerivedCache.of(refs.repo, f"token-counts-{encoding}", header)
    caches.append(cache)
    meter.remembered = cache.values
    return meter


def _outliner(refs: TaskRefs, caches: list[DerivedCache]) -> AttachmentOutliner:
    # the grammars installed and the outliner's code decide outlines: either
    # changed (an upgrade, a development install's edit), another cache
    outliner = [m for m in packer_modules(_CODE) if m.startswith("pack/outline")]
    header = _OUTLINE_CACHE_HEADER % _code_state(outliner, grammars())
    cache = DerivedCache.of(refs.repo, "outlines", header)
    caches.append(cache)

    def outline_of(entry: Attachment, read: Callable[[], str]) -> str | None:
        language = language_for(entry.source)
        if language is None:
            return None
        key = entry.cache_key(language)
        if key in cache.values:
            known = cache.values[key]
            return known if isinstance(known, str) else None
        # (imported only for an outline not kept yet: the outliners, their tables and
        # grammars cost a new task on a known tree 5-15 ms to import for nothing)
        from .outline import outline as outline_text

        text = outline_text(entry.source, read())
        cache.values[key] = text
        return text

    return outline_of


def pack(
    refs: TaskRefs, task_id: str, limits: Budget, now: datetime | float | None = None
) -> PackResult:
    """The task as a packet whose compact JSON fits the budget (see ``Ledger.pack``)."""
    job = _job(refs, task_id, limits, now)
    result = job.pack()
    job.save()
    return cast(PackResult, result)


def expand(
    refs: TaskRefs,
    task_id: str,
    limits: Budget,
    now: datetime | float | None = None,
    *,
    extra: dict[str, Any] | None = None,
) -> ExpandResult:
    """The packet and its prompt, measured together (see ``Ledger.expand``)."""
    job = _job(refs, task_id, limits, now)
    if job.task.get("depends_on"):
        # A documented extra key of expand's packet only: pack's key set is the seed's.
        extra = {"depends_on": list(job.task["depends_on"]), **(extra or {})}
    result = job.render(with_json=True, extra=extra)
    job.save()
    return cast(ExpandResult, result)


def prompt(
    refs: TaskRefs,
    task_id: str,
    limits: Budget,
    now: datetime | float | None = None,
    *,
    cache: bool = True,
    memo: BodyMemo | None = None,
) -> PromptResult:
    """The prompt measured alone (see ``Ledger.prompt``); with ``cache`` (and
    ``hydrate.promptCache``, on by default) a prompt built before for the same
    tip, budget and expired attachments is read back instead of rebuilt."""
    moment = refs.now(now)
    store = PromptCache.of(refs.repo) if cache else None
    if store is not None:
        hit = store.find(refs.tip(validate.task_id(task_id)), limits, moment)
        if hit is not None:
            return cast(PromptResult, hit.result())
    job, result = _built_prompt(refs, task_id, limits, moment, memo, pieces=False)
    if store is not None and _cacheable(job):
        store.put(store.key(job.task["tip"].encode(), limits), moment, _expiries(job), result)
    return cast(PromptResult, result)


def check_budget(refs: TaskRefs, task_id: str, limits: Budget) -> None:
    """Raise what :func:`prompt` would if the prompt without attachments did not
    fit the budget, without reading a body (see ``Ledger.check_prompt_budget``)."""
    meter = _meter(refs, limits.encoding, []) if limits.max_tokens is not None else None
    task: dict[str, Any] = dict(task_dict(refs.load(task_id)))
    render_attachments(
        task,
        [],
        limits.max_bytes,
        max_tokens=limits.max_tokens,
        tokens=meter,
        files=task.get("files") or (),
        tests=task.get("tests") or (),
        layout=layout(limits.format),
        with_json=False,
    )


def write_prompt(
    refs: TaskRefs,
    task_id: str,
    out: SupportsWrite[bytes],
    limits: Budget,
    now: datetime | float | None = None,
    *,
    cache: bool = True,
    memo: BodyMemo | None = None,
) -> PromptFields:
    """The prompt written to ``out`` as UTF-8 (see ``Ledger.write_prompt``).

    Nothing is written unless the whole prompt was built. The prompt is never
    held as one text: the attachments' bodies are read once and written piece
    by piece, to ``out`` and to the prompt cache.
    """
    moment = refs.now(now)
    store = PromptCache.of(refs.repo) if cache else None
    if store is not None:
        hit = store.find(refs.tip(validate.task_id(task_id)), limits, moment, packet=False)
        if hit is not None:
            out.write(hit.prompt)
            return cast(PromptFields, hit.fields)
    try:
        job, result = _built_prompt(refs, task_id, limits, moment, memo, pieces=True)
    finally:
        forget_ahead()  # (marks of bodies the prompt did not hold)
    pieces: list[bytes] = result.pop("prompt_pieces")
    if store is not None and _cacheable(job):
        key = store.key(job.task["tip"].encode(), limits)
        store.put_pieces(key, moment, _expiries(job), result, pieces)
    for piece in pieces:
        out.write(piece)
    return cast(PromptFields, result)


def _cacheable(job: _Job) -> bool:
    """Whether the prompt depends on this task's tip alone: a child's prompt holds
    its parent's text too, which changes without the child's tip changing."""
    return bool(job.task.get("tip")) and not job.task.get("parent")


def _built_prompt(
    refs: TaskRefs,
    task_id: str,
    limits: Budget,
    moment: float,
    memo: BodyMemo | None,
    *,
    pieces: bool,
) -> tuple[_Job, dict[str, Any]]:
    job = _job(refs, task_id, limits, moment, memo)
    result = job.render(with_json=False, pieces=pieces)
    job.save()
    return job, result


def _expiries(job: _Job) -> list[float]:
    return [e.expires for e in job.entries if e.expires is not None]
