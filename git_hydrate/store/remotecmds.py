"""git's conversations with remotes: listing, fetching and pushing, unattended
when asked, a credential handed on through a pipe (mixed into
:class:`~git_hydrate.store.Repository`, as :mod:`.commands` is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from ..errors import GitFailed
from .base import RepositoryBase
from .credentials import MAX_CREDENTIAL, UNATTENDED, CredentialsRefused, Given, Told
from .process import GitRun, reason, run_git

__all__ = ["FetchRace", "Listing", "PushResult", "RemoteCommands"]

#: One ref of ``git push --porcelain``: ``(flag, destination ref, summary)``.
PushResult = tuple[str, str, str]


class FetchRace(GitFailed):
    """A fetch lost the race for a ref's lock to a concurrent fetch in this clone
    (git's ``cannot lock ref ...: is at X but expected Y``); fetch again."""


class Listing(NamedTuple):
    """What :meth:`RemoteCommands.ls_remote_unattended` found: ``{ref: id}``, and the
    credential the remote took (a helper's or an askpass program's answer), to
    hand to the fetch that follows (``None``: none was asked)."""

    refs: dict[bytes, bytes]
    credential: bytes | None


#: What git says when another process held, or moved, a ref it was updating.
_LOST_REF_LOCK: Final = (b"cannot lock ref", b"but expected")


class RemoteCommands(RepositoryBase):
    """git commands that reach a remote (mixed into :class:`~git_hydrate.store.Repository`)."""

    def remotes(self) -> list[str]:
        """The configured remote names (``git remote``'s words)."""
        configured = self._configured_remotes() if self.found_in_process else None
        if configured is not None:
            return configured
        proc = self.git(["remote"], check=False)
        return proc.stdout.decode("utf-8", "replace").split()

    def _configured_remotes(self) -> list[str] | None:
        """``git remote``'s list from the settings read in-process: every name a
        ``remote.<name>.url``, ``.pushurl`` or ``.fetch`` gives, in byte order.
        ``None`` (ask git, which may refuse the configuration) for any other key of
        a remote (git reads some of them as booleans), a value git might refuse (a
        refspec of another form than ``[+]refs/...:refs/...`` or ``^refs/...``, a
        key without a value), or a name git warns about or that did not decode."""
        import re

        ref = r"refs(/[\w-][\w.-]*)+"
        refspec = re.compile(  # a star on both sides or neither
            rf"\+?{ref}/\*:{ref}/\*|\+?{ref}:{ref}|\^{ref}(/\*)?"
        )
        odd = re.compile(r"\.(lock)?(/|:|$)")  # a name git refuses: "x.lock", "x."
        names = set()
        for key in self.settings.keys("remote."):
            name, dot, variable = key[len("remote.") :].rpartition(".")
            if not dot:
                continue  # remote.pushDefault and the like name no remote
            if not name or name.startswith("/") or "\ufffd" in name:
                return None
            for value in self.settings.all(key):
                if variable not in ("url", "pushurl", "fetch") or value is None:
                    return None
                if variable == "fetch" and (
                    not refspec.fullmatch(value) or ".." in value or odd.search(value)
                ):
                    return None
            names.add(name.encode("utf-8", "surrogateescape"))
        return b"\n".join(sorted(names)).decode("utf-8", "replace").split()

    def fetch(
        self,
        target: str,
        refspecs: Sequence[str],
        *,
        negotiation_tips: Sequence[str] = (),
        prune: bool = True,
        stdin: bytes | None = None,
        shared_nothing: bool | None = None,
        credential: bytes | None = None,
        what: str = "",
    ) -> None:
        """``git fetch`` of ``refspecs`` (or of the ids on ``stdin``) without a filter.

        With no ``negotiation_tips``, git is told to assume nothing is shared
        (a clone that has no hydrate history yet); ``shared_nothing`` says so
        for a fetch of ids too (by default, git negotiates from every ref).
        ``credential``: what :meth:`ls_remote_unattended` was given, handed to git
        through a pipe (never a file, an argument or the environment) when it asks.

        Raises:
            FetchRace: a concurrent fetch held or moved a ref this one updates.
            GitFailed: the fetch failed, with git's reason.
        """
        args: list[str] = []
        if shared_nothing is None:
            shared_nothing = not negotiation_tips and stdin is None
        if shared_nothing:
            args += ["-c", "fetch.negotiationAlgorithm=noop"]
        args += [
            "fetch",
            "--no-filter",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--quiet",
            # only the refspecs given: a remote's configured ones would also be
            # applied to the refs fetched ("opportunistic" updates), and one that
            # writes into refs/hydrate/ (a `git clone --mirror`'s +refs/*:refs/*)
            # force-moved the local tasks over their unpushed work
            "--refmap=",
        ]
        if prune:
            args.append("--prune")
        if stdin is not None:
            args.append("--stdin")
        args += [f"--negotiation-tip={tip}" for tip in negotiation_tips]
        args += [target, *refspecs]
        proc = self._git_given(args, stdin, credential)
        if proc.returncode != 0:
            message = f"{what or 'git fetch ' + target} failed: {reason(proc)}"
            if any(lost in proc.stderr for lost in _LOST_REF_LOCK):
                raise FetchRace(message)
            raise GitFailed(message)

    def _git_given(self, args: list[str], stdin: bytes | None, credential: bytes | None) -> GitRun:
        """``git ARGS``, answered ``credential`` when it asks for one for where it was
        given (through a pipe: see :class:`~git_hydrate.store.credentials.Given`)."""
        if credential is None or len(credential) > MAX_CREDENTIAL:
            return self.git(args, input=stdin, check=False)
        with Given(credential) as given:
            helper = given.helper()
            if helper is None:
                return self.git(args, input=stdin, check=False)
            return run_git(
                [*self._prefix(), "-c", "credential.helper=" + helper, *args],
                cwd=self._cwd,
                env=self._env,
                input=stdin,
                check=False,
                pass_fds=(given.fd,),
                started=given.started,
            )

    def ls_remote(
        self, target: str, patterns: Sequence[str], *, what: str = ""
    ) -> dict[bytes, bytes]:
        """``{ref: id}`` of the remote's refs matching ``patterns`` (``git ls-remote``).

        Raises:
            GitFailed: the remote could not be listed, with git's reason.
        """
        proc = self.git(["ls-remote", "--refs", target, *patterns], check=False)
        return _listed(proc, what or f"git ls-remote {target}")

    def ls_remote_unattended(
        self, target: str, patterns: Sequence[str], *, what: str = ""
    ) -> Listing:
        """:meth:`ls_remote` asking no person (see :data:`UNATTENDED`): a remote that
        wants a passphrase or a password typed fails as refused, and the ``git
        fetch`` after it asks once. A credential a helper or git's askpass program
        gave is returned, for :meth:`fetch` to use (``credential=``) instead of
        asking again.

        Raises:
            CredentialsRefused: the remote refused the credential it was given.
            GitFailed: the remote could not be listed, with git's reason.
        """
        with Told() as told:
            proc = run_git(
                [
                    *self._prefix(),
                    *("-c", "credential.helper=" + told.helper),
                    *("ls-remote", "--refs", target, *patterns),
                ],
                cwd=self._cwd,
                env=self._unattended_env(),
                check=False,
                pass_fds=(told.fd,),
                new_session=True,
                started=told.started,
            )
            credential, refused = told.heard()
        where = what or f"git ls-remote {target}"
        if proc.returncode != 0 and refused:
            raise CredentialsRefused(f"{where} failed: {reason(proc)}")
        return Listing(_listed(proc, where), credential)

    def _unattended_env(self) -> dict[str, str]:
        env = {**self._environ(), **UNATTENDED}
        askpass = env.pop("SSH_ASKPASS", None)
        # (git's own prompts fall back to SSH_ASKPASS: it stays theirs, not ssh's)
        if askpass and "GIT_ASKPASS" not in env and not self.settings.has("core.askpass"):
            env["GIT_ASKPASS"] = askpass
        return env

    def push(
        self, target: str, refspecs: Sequence[str], options: Sequence[str] = (), *, what: str = ""
    ) -> list[PushResult]:
        """``git push --porcelain --no-verify``; ``(flag, destination, summary)`` per ref.

        Raises:
            GitFailed: git reported no ref at all (the push did not happen).
        """
        return self.push_with_messages(target, refspecs, options, what=what)[0]

    def push_with_messages(
        self, target: str, refspecs: Sequence[str], options: Sequence[str] = (), *, what: str = ""
    ) -> tuple[list[PushResult], list[str]]:
        """:meth:`push`, plus the lines the remote's hooks printed (``remote: …``).

        Raises:
            GitFailed: git reported no ref at all (the push did not happen).
        """
        # (a `git clone --mirror`'s remote has remote.<name>.mirror, which git refuses
        # beside refspecs: these refspecs are all that is pushed, so it is turned off)
        mirror = self.settings.has(f"remote.{target}.mirror")
        proc = self.git(
            [
                *(["-c", f"remote.{target}.mirror=false"] if mirror else []),
                *("push", "--porcelain", "--no-verify", *options, target, *refspecs),
            ],
            check=False,
        )
        results = []
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            parts = line.split("\t")
            if len(parts) >= 3 and len(parts[0]) == 1 and ":" in parts[1]:
                results.append((parts[0], parts[1].rpartition(":")[2], parts[2]))
        if proc.returncode != 0 and not results:
            raise GitFailed(f"{what or 'git push ' + target} failed: {reason(proc)}")
        messages = [
            line.removeprefix("remote:").strip()
            for line in proc.stderr.decode("utf-8", "replace").splitlines()
            if line.startswith("remote:") and line.removeprefix("remote:").strip()
        ]
        return results, messages


def _listed(proc: GitRun, where: str) -> dict[bytes, bytes]:
    """``{ref: id}`` from ``git ls-remote``'s output.

    Raises:
        GitFailed: it failed, with git's reason.
    """
    if proc.returncode != 0:
        raise GitFailed(f"{where} failed: {reason(proc)}")
    found: dict[bytes, bytes] = {}
    for line in proc.stdout.splitlines():
        oid, sep, name = line.partition(b"\t")
        if sep:
            found[name] = oid
    return found
