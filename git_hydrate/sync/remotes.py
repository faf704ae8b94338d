"""Remotes: which one to use, how to show it, and where its mirror lives."""

from __future__ import annotations

import re
from shlex import quote
from typing import Final

import msgspec

from ..errors import ValidationError
from ..ids import TASK_ID_RE
from ..taskrefs import TaskRefs

__all__ = [
    "MIRROR_PREFIX",
    "Remote",
    "overwriting_refspecs",
    "replace_command",
    "resolve_remote",
]

MIRROR_PREFIX: Final = "refs/hydrate-remotes/"


class Remote(msgspec.Struct, frozen=True):
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

    @property
    def word(self) -> str:
        """``display`` as one word of a command a message suggests (quoted for a
        POSIX shell: a URL can hold ``&``, ``;`` or a space)."""
        return quote(self.display)


def _strip_credentials(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit  # (a URL remote only: 2 ms)

    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.scheme and "@" in parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host))
    return url


def _mirror_for_url(display: str) -> str:
    import hashlib  # (OpenSSL's start-up: only where a digest is made)

    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", display).strip("-")[-40:].strip("-")
    digest = hashlib.sha256(display.encode("utf-8")).hexdigest()[:10]
    return f"url-{slug}-{digest}" if slug else f"url-{digest}"


def resolve_remote(
    refs: TaskRefs, remote: str | None = None, *, takes_ids: bool = True, command: str = "pull"
) -> Remote:
    """The remote to use: the given name or URL, else the current branch's, else origin.

    ``takes_ids``: the command also takes task ids after the remote, so an
    unknown name that looks like a task id gets a hint about the order.
    ``command``: the command the hints name (``pull``, ``push``, ``sync``...).

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
                    f"'origin'; name one (git hydrate {command} REMOTE) or add one with: "
                    "git remote add origin URL"
                )
            remote = "origin"
    if not remote or remote.startswith("-") or "\n" in remote or "\0" in remote:
        raise ValidationError(f"invalid remote {remote!r}")
    if remote in names:
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", remote) or ".." in remote:
            raise ValidationError(_unusable_name(refs, remote, command))
        # "a/b" must not land inside the mirror of a remote named "a" (whose
        # fetch --prune would delete it).
        mirror = remote.replace("/", "%2F")
        return Remote(target=remote, display=remote, mirror=mirror, is_url=False)
    if ":" in remote or "/" in remote or remote in (".", ".."):
        # (a path of bytes that are not UTF-8 is shown, and its mirror named, with
        # them as \xNN: reports and JSON hold text)
        raw = _strip_credentials(remote).encode("utf-8", "surrogateescape")
        display = raw.decode("utf-8", "backslashreplace")
        return Remote(target=remote, display=display, mirror=_mirror_for_url(display), is_url=True)
    known = ", ".join(names) if names else "none"
    hint = "; or give a URL" if names else f"; add it with: git remote add {quote(remote)} URL"
    if takes_ids and names and TASK_ID_RE.match(remote):
        hint += _ids_hint(command, names[0], remote)
    raise ValidationError(f"no remote named {remote!r} (configured remotes: {known}){hint}")


def _unusable_name(refs: TaskRefs, remote: str, command: str) -> str:
    """Why the configured remote ``remote`` cannot be used, and what to do instead."""
    rename = f"git remote rename {quote(remote)} NEW"
    url = refs.repo.settings.raw(f"remote.{remote}.url") or ""
    instead = f"; or give its URL in its place: {quote(_strip_credentials(url))}"
    if not url or command == "setup":
        instead = ""
    return (
        f"remote name {remote!r} cannot name a mirror ref (letters, digits and . _ - / "
        f"only, no '..'); rename it: {rename}{instead}"
    )


def _ids_hint(command: str, remote: str, task_id: str) -> str:
    """How to name a task to ``command``: the remote comes first (issue 34)."""
    remote, task_id = quote(remote), quote(task_id)
    if command == "sync":
        return (
            f"; sync takes no task ids: git hydrate pull {remote} {task_id}, "
            f"then git hydrate push {remote} {task_id}"
        )
    return f"; to name tasks, give the remote first: git hydrate {command} {remote} {task_id}"


def _may_write_hydrate(destination: str) -> bool:
    """Whether a fetch refspec's destination can name a ref under ``refs/hydrate/``."""
    head, star, _tail = destination.partition("*")
    if not star:
        return destination.startswith("refs/hydrate/")
    return head.startswith("refs/hydrate/") or "refs/hydrate/".startswith(head)


def _excludes_hydrate(refspec: str) -> bool:
    """Whether a negative refspec (``^refs/hydrate/*``) keeps ``refs/hydrate/`` out."""
    pattern = refspec[1:]
    return pattern in ("refs/hydrate/*", "refs/hydrate*", "refs/*")


def overwriting_refspecs(refs: TaskRefs) -> list[dict[str, str]]:
    """Fetch refspecs of configured remotes that write into ``refs/hydrate/``.

    A plain ``git fetch`` through one of them (``git clone --mirror`` sets
    ``+refs/*:refs/*``) force-updates the task refs, overwriting unpushed
    task commits, and with ``--prune`` deletes local-only tasks. Each entry
    says which key and value, and how to fix it.
    """
    settings = refs.repo.settings
    found: list[dict[str, str]] = []
    for name in refs.repo.remotes():
        key = f"remote.{name}.fetch"
        values = [v for v in settings.all(key) if v]
        if any(v.startswith("^") and _excludes_hydrate(v) for v in values):
            continue
        for value in values:
            if value.startswith("^") or ":" not in value:
                continue
            destination = value.lstrip("+").rpartition(":")[2]
            if _may_write_hydrate(destination):
                fix = (
                    f"git config --add {quote(key)} '^refs/hydrate/*' (git 2.29+), then "
                    f"git hydrate setup {quote(name)}"
                )
                found.append(
                    {
                        "remote": name,
                        "key": key,
                        "refspec": value,
                        "problem": (
                            f"{key} {value} writes into refs/hydrate/: a plain git fetch "
                            "overwrites unpushed task commits (and --prune deletes "
                            f"local-only tasks); fix: {fix}"
                        ),
                    }
                )
    return found


def replace_command(ref: str, remote_tip: bytes, where: str) -> str:
    """The push that puts this clone's ``ref`` in place of the remote's copy,
    only while the remote still holds exactly ``remote_tip``."""
    return f"git push --force-with-lease={ref}:{remote_tip.decode()} {quote(where)} {ref}:{ref}"
