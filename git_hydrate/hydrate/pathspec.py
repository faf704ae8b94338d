"""Pathspecs: which paths of a file set a hydration takes (and may later remove).

Also where a pathspec given in a subdirectory is turned into one relative to
the top of the work tree, as git does.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from .. import validate
from ..errors import ValidationError

__all__ = ["Pathspec", "relative_to_top"]


class Pathspec:
    """A subset of git's pathspec syntax, matched against repository-relative paths.

    * ``dir`` or ``dir/`` — everything below ``dir``; ``file`` — that file;
      ``.`` or ``:/`` — everything;
    * a pattern with ``*``, ``?`` or ``[`` — a glob on the whole path where
      ``*`` also crosses ``/`` (git's default), e.g. ``*.py``, ``src/*/test_*``;
    * ``:!spec``, ``:^spec`` or ``:(exclude)spec`` — leave these out.

    No pathspec, or only exclusions, means every file. The same matcher decides
    both which files are taken and which earlier links a re-hydration may
    remove, so the two always agree.
    """

    def __init__(self, specs: Iterable[str] = ()) -> None:
        self.specs = tuple(specs)
        self._include: list[tuple[str, bool]] = []
        self._exclude: list[tuple[str, bool]] = []
        for raw in self.specs:
            if not isinstance(raw, str):
                raise ValidationError(f"pathspec must be text, not {type(raw).__name__}")
            spec, exclude = self._parse(raw)
            target = self._exclude if exclude else self._include
            target.append((spec, any(ch in spec for ch in "*?[")))

    @staticmethod
    def _parse(raw: str) -> tuple[str, bool]:
        spec, exclude = raw, False
        if spec.startswith((":!", ":^")):
            spec, exclude = spec[2:], True
        elif spec.startswith(":(exclude)"):
            spec, exclude = spec[len(":(exclude)") :], True
        elif spec.startswith(":/"):
            spec = spec[2:]
        elif spec.startswith(":("):
            raise ValidationError(
                f"unsupported pathspec magic in {raw!r}: use a path, a glob, or :!exclude"
            )
        if spec.startswith(":/"):
            spec = spec[2:]
        elif spec.startswith("/"):  # (the command line reads one as in the work tree)
            raise ValidationError(
                f"pathspec {raw[:80]!r} is absolute: give it relative to the repository's "
                "top (with --dir, to that directory)"
            )
        parts: list[str] = []
        for part in spec.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise ValidationError(f"pathspec {raw!r} leaves the repository")
                parts.pop()
            else:
                parts.append(part)
        return "/".join(parts), exclude

    @staticmethod
    def _hit(path: str, spec: str, glob: bool) -> bool:
        if not spec:
            return True
        if path == spec or path.startswith(spec + "/"):
            return True
        return glob and (fnmatch.fnmatchcase(path, spec) or fnmatch.fnmatchcase(path, spec + "/*"))

    def matches(self, path: str) -> bool:
        """Whether ``path`` (repository-relative, ``/``-separated) is selected."""
        if self._include and not any(self._hit(path, s, g) for s, g in self._include):
            return False
        return not any(self._hit(path, s, g) for s, g in self._exclude)

    def unmatched(self, paths: Iterable[str]) -> list[str]:
        """The inclusion specs (as given) that match none of ``paths``, in order."""
        waiting = {
            raw: parsed for raw in self.specs if not (parsed := self._parse(raw))[1] and parsed[0]
        }
        for path in paths:
            if not waiting:
                break
            for raw, (spec, _exclude) in list(waiting.items()):
                if self._hit(path, spec, any(ch in spec for ch in "*?[")):
                    del waiting[raw]
        return list(waiting)

    def __bool__(self) -> bool:
        return bool(self.specs)


def relative_to_top(pathspecs: Iterable[str], top: str | None, cwd: str) -> list[str]:
    """Pathspecs given in the directory ``cwd`` as relative to the work tree's ``top``.

    Outside the work tree they are taken as they are; ``:/`` specs are already
    relative to the top; an absolute path inside the work tree is the file or
    directory it names (as git reads it), one outside it (or without a work tree)
    is refused; exclusion magic is kept in front.
    """
    specs = list(pathspecs)
    if not specs:
        return specs
    tops, here = validate.where(top, cwd) if top is not None else ((), "")
    result = []
    for spec in specs:
        magic = ""
        for mark in (":(exclude)", ":!", ":^"):
            if spec.startswith(mark):
                magic, spec = mark, spec[len(mark) :]
                break
        if spec.startswith("/") and top is None:
            raise ValidationError(
                f"pathspec {spec[:80]!r} is absolute and this repository has no work tree: "
                "give it relative to the repository's top"
            )
        if spec.startswith("/"):
            why = "a pathspec names the repository's files"
            result.append(magic + validate.from_absolute(spec, tops, "pathspec", why))
        elif not here or spec.startswith(":/"):
            result.append(magic + spec)  # (already relative to the top)
        else:
            result.append(f"{magic}{here}/{spec}")
    return result
