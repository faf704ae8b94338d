"""Fetching a remote's ``refs/hydrate/*`` into its mirror namespace.

Never straight into ``refs/hydrate/`` (a forced fetch would overwrite local,
unpushed work) and never into ``refs/remotes/``: into
``refs/hydrate-remotes/<remote>/``, from which pull merges task by task.
"""

from __future__ import annotations

from ..settings import parse_bool
from ..store import Repository
from .remotes import Remote

__all__ = ["fetch_mirror"]


def fetch_mirror(repo: Repository, remote: Remote) -> dict[bytes, bytes]:
    """Fetch every ``refs/hydrate/*`` of the remote into its mirror; return the mirror.

    Raises:
        GitFailed: the fetch failed (git's reason in the message).
    """
    mirror = remote.mirror_prefix
    # Tell the server only about hydrate history: its objects are complete here
    # even in a partial clone, whereas a branch's blobs may be missing and
    # must not be assumed present (bodies can equal files of the project).
    tips = [prefix for prefix in (b"refs/hydrate/", mirror) if repo.has_refs_under(prefix)]
    repo.fetch(
        remote.target,
        [f"+refs/hydrate/*:{mirror.decode()}*"],
        negotiation_tips=[f"{prefix.decode()}*" for prefix in tips],
        what=f"git fetch {remote.display}",
    )
    fetched = repo.refs_under(mirror)
    if fetched and _is_partial(repo):
        _fetch_missing(repo, remote, fetched)
    return fetched


def _is_partial(repo: Repository) -> bool:
    settings = repo.settings
    if settings.has("extensions.partialClone"):
        return True
    return any(
        key.endswith(".promisor") and parse_bool(settings.raw(key)) is True
        for key in settings.keys("remote.")
    )


def _fetch_missing(repo: Repository, remote: Remote, fetched: dict[bytes, bytes]) -> None:
    """Fetch objects a filtered ``git fetch`` left out of the mirror (partial clones).

    A plain ``git fetch`` after ``setup`` brings the mirror's commits with the
    clone's filter; ours then finds them present and fetches nothing, so the
    bodies it skipped are asked for by id.
    """
    missing = repo.missing_objects(list(fetched.values()), "refs/hydrate/*")
    if missing:
        repo.fetch(
            remote.target,
            [],
            prune=False,
            stdin="\n".join(missing).encode() + b"\n",
            what=f"git fetch {remote.display} (bodies missing from a partial clone)",
        )
