"""Remotes: which one to use, how to show it, and where its mirror lives."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from ..errors import ValidationError
from ..model import TASK_ID_RE
from ..taskrefs import TaskRefs

__all__ = ["MIRROR_PREFIX", "Remote", "resolve_remote"]

MIRROR_PREFIX: Final = "refs/hydrate-remotes/"


@dataclass(frozen=True)
class Remote:
    """Where to sync: a configured remote name or a URL.

    ``target`` is what ``git`` is given; ``display`` is safe to print and to
    put in commit messages (no credentials); ``mirror`` names the mirror
    namespace ``refs/hydrate-remotes/<mirror>/``.
    """

    target: str
    display: str
    mirror: str
    is_url: bool

    @property
    def mirror_prefix(self) -> bytes:
        return f"{MIRROR_PREFIX}{self.mirror}/".encode()


def _strip_credentials(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.scheme and "@" in parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host))
    return url


def _mirror_for_url(display: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", display).strip("-")[-40:].strip("-")
    digest = hashlib.sha256(display.encode("utf-8")).hexdigest()[:10]
    return f"url-{slug}-{digest}" if slug else f"url-{digest}"


def resolve_remote(refs: TaskRefs, remote: str | None = None) -> Remote:
    """The remote to use: the given name or URL, else the current branch's, else origin.

    Raises:
        ValidationError: no remote given and none can be chosen, or an unknown name.
    """
    names = refs.repo.remotes()
    if remote is None:
        current = refs.repo.symbolic_ref("HEAD")
        if current:
            configured = refs.repo.settings.raw(f"branch.{current}.remote") or ""
            if configured and configured != "." and configured in names:
                remote = configured
        if remote is None:
            if "origin" not in names:
                raise ValidationError(
                    "no remote to sync with: the current branch has none and there is no "
                    "'origin'; name one (git hydrate pull REMOTE) or add one with git remote add"
                )
            remote = "origin"
    if not remote or remote.startswith("-") or "\n" in remote or "\0" in remote:
        raise ValidationError(f"invalid remote {remote!r}")
    if remote in names:
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", remote) or ".." in remote:
            raise ValidationError(f"remote name {remote!r} cannot name a mirror ref")
        # "a/b" must not land inside the mirror of a remote named "a" (whose
        # fetch --prune would delete it).
        mirror = remote.replace("/", "%2F")
        return Remote(target=remote, display=remote, mirror=mirror, is_url=False)
    if ":" in remote or "/" in remote or remote in (".", ".."):
        display = _strip_credentials(remote)
        return Remote(target=remote, display=display, mirror=_mirror_for_url(display), is_url=True)
    known = ", ".join(names) if names else "none"
    hint = "; or give a URL"
    if names and TASK_ID_RE.match(remote):
        hint += f"; to name tasks, give the remote first: git hydrate pull {names[0]} {remote}"
    raise ValidationError(f"no remote named {remote!r} (configured remotes: {known}){hint}")
