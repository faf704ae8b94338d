"""A remote's copy of a task (or of the removal record, the archive) that names no
commit (a blob, a tree, a tag), or a commit no pull takes (it holds no task, a body
fails its sha256).

git refuses to push a commit over it without force (``fetch first`` when the
object is not here, ``needs force`` when it is), and no pull takes it: a
``sync`` cannot settle it, so a push names it at once, with the one command that
replaces it, instead of advising a sync that only leads there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ..errors import GitFailed
from ..store import PushResult
from ..taskrefs import TASK_REF_PREFIX, TaskRefs
from .outgoing import refused_shared_ref, refused_tasks
from .remotes import Remote, replace_command
from .union import UNION_REFS

__all__ = ["damaged_there"]

#: What git says of a ref it refused because the remote holds something the
#: pushed commit does not descend from (what a damaged copy there draws).
_UNFORCED: Final = ("fetch first", "needs force", "non-fast-forward")
#: Past this many refused refs, the mirror's task refs are typed whole.
_TYPED_BY_NAME: Final = 64


def damaged_there(
    refs: TaskRefs, remote: Remote, pushed: Sequence[PushResult], probe: bool
) -> dict[str, tuple[str, bytes]]:
    """``{task ref: (detail, the copy's id)}`` of the task refs the remote refused
    because its copy names no commit, or one a pull refuses, each detail saying so with
    :func:`replace_command`.

    What the remote holds is read from its mirror, except for a ref refused with
    ``fetch first`` (the remote holds an object this clone lacks: not the
    mirror's). With ``probe`` (the mirror may be behind: no fetch came just
    before), the refused refs not found so are fetched into the mirror, once,
    only those, and read again: a fetch that fails leaves them as git refused them.
    """
    shared = {ref.decode() for ref in UNION_REFS}
    refused = {
        dest: "fetch first" not in summary
        for flag, dest, summary in pushed
        if flag == "!"
        and (dest.startswith(TASK_REF_PREFIX.decode()) or dest in shared)
        and any(reason in summary for reason in _UNFORCED)
    }
    if not refused:
        return {}
    repo = refs.repo
    mirror = remote.mirror_prefix.decode()
    names = {dest: mirror + dest[len("refs/hydrate/") :] for dest in refused}
    known = {dest: name for dest, name in names.items() if refused[dest]}
    found = _named(refs, remote, known, _typed(refs, known, mirror)) if known else {}
    unsure = [dest for dest in refused if dest not in found]
    if probe and unsure:
        try:
            repo.fetch(
                remote.target,
                [f"+{dest}:{names[dest]}" for dest in unsure],
                negotiation_tips=["refs/hydrate/*", mirror + "*"],
                prune=False,
                what=f"git fetch {remote.display} (the refused tasks)",
            )
        except GitFailed:
            return found  # (as git refused the rest: a sync says more)
        unsure_names = {dest: names[dest] for dest in unsure}
        found.update(_named(refs, remote, unsure_names, _typed(refs, unsure_names, mirror)))
    return found


def _typed(refs: TaskRefs, names: dict[str, str], mirror: str) -> dict[bytes, tuple[bytes, str]]:
    """The mirror refs ``names`` holds (values), each with its object's type."""
    if len(names) <= _TYPED_BY_NAME:
        return refs.repo.typed_refs(names.values())
    return refs.repo.typed_refs([mirror + "tasks/"])


def _named(
    refs: TaskRefs, remote: Remote, names: dict[str, str], typed: dict[bytes, tuple[bytes, str]]
) -> dict[str, tuple[str, bytes]]:
    """``{task ref: (detail, id)}`` of the refs in ``names`` whose mirror copy is no
    commit, or a commit a pull refuses (no task in it, a body that fails its sha256)."""
    found: dict[str, tuple[str, bytes]] = {}
    commits: dict[str, bytes] = {}
    for dest, name in names.items():
        oid, kind = typed.get(name.encode(), (b"", "missing"))
        if kind in ("blob", "tree", "tag"):
            found[dest] = (f"is a {kind}, not a commit", oid)
        elif kind == "commit" and not dest.startswith(TASK_REF_PREFIX.decode()):
            why = refused_shared_ref(refs.repo, dest.encode(), oid)  # (the record, the archive)
            if why is not None:
                found[dest] = (f"is damaged ({why})", oid)
        elif kind == "commit":
            commits[dest[len(TASK_REF_PREFIX) :]] = oid
    for task_id, why in refused_tasks(refs, commits).items():
        found[TASK_REF_PREFIX.decode() + task_id] = (f"is damaged ({why})", commits[task_id])
    return {
        dest: (
            f"{remote.display}'s copy {what} (no pull or sync takes it); to replace it with "
            f"yours: {replace_command(dest, oid, remote.display)}",
            oid,
        )
        for dest, (what, oid) in found.items()
    }
