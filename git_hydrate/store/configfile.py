"""git's configuration files read without a process, where that is certainly
what ``git config -z --list`` would print.

:func:`read_config` reads the files git reads for a repository (system,
global, the repository's own) in git's order and gives the records as
``git config -z --list`` prints them, or ``None`` whenever git might read
anything else or read them differently: an ``include``/``includeIf``, a
worktree-specific configuration, configuration from the command line or the
environment (``git -c``, ``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``,
``GIT_CONFIG``), a file this parser refuses (git would stop on it with its own
message), a file it cannot read, or a git binary whose system file it cannot
name. ``None`` means: ask git, as before.

:func:`parse_config` follows git's own reader (``config.c``): ``\\r\\n`` is a
newline, a UTF-8 byte order mark at the start is skipped, ``#`` and ``;`` start
a comment outside quotes, section and key names are ASCII letters, digits and
``-`` folded to lower case (a ``[section "subsection"]``'s subsection keeps its
case and takes ``\\`` escapes; the old ``[section.subsection]`` is folded
whole), a key without ``=`` has no value, and a value drops its leading and
trailing blanks, turns each blank inside it into a space, and knows the escapes
``\\n``, ``\\t``, ``\\b``, ``\\\\``, ``\\"`` and a backslash before a newline.
``tests/test_discover_oracle.py`` holds it to git's own output.
"""

from __future__ import annotations

import os

from ..settings import parse_bool

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final

__all__ = ["Config", "git_program", "parse_config", "read_config"]

_LF: Final = 10
#: What git's own ``isspace`` takes for a blank (``sane_ctype``: not ``\v``, ``\f``).
_SPACE: Final = frozenset(b" \t\n\r")
_KEY: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_ALPHA: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ESCAPES: Final = {ord("n"): _LF, ord("t"): 9, ord("b"): 8, ord("\\"): 92, ord('"'): 34}
_BOM: Final = b"\xef\xbb\xbf"

#: Variables that give git configuration this module does not read: ``None`` when set.
_CONFIG_FROM_ENV: Final = ("GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")
#: Variables that name where configuration files are (read only when absolute).
_PATH_VARIABLES: Final = ("GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL", "HOME", "XDG_CONFIG_HOME")

Record = tuple[bytes, bytes | None]


class _Refused(Exception):
    """The text is not what this parser reads as git does (git may refuse it)."""


def _lower(c: int) -> int:
    return c + 32 if 65 <= c <= 90 else c


class _Reader:
    """One configuration text, read a byte at a time as git's ``get_next_char`` gives it
    (past the end: newlines)."""

    __slots__ = ("at", "data", "end")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.end = len(data)
        self.at = 0

    def next(self) -> int:
        at = self.at
        self.at = at + 1
        return self.data[at] if at < self.end else _LF

    def section(self) -> bytes:
        """A section header's name after its ``[``, as git folds it."""
        name = bytearray()
        while True:
            c = self.next()
            if c == 93:  # ]
                break
            if c in _SPACE:
                self._subsection(name, c)
                break
            if c not in _KEY and c != 46:  # .
                raise _Refused
            name.append(_lower(c))
        if not name:
            raise _Refused
        return bytes(name)

    def _subsection(self, name: bytearray, c: int) -> None:
        while c in _SPACE:
            if c == _LF:
                raise _Refused
            c = self.next()
        if c != 34:  # "
            raise _Refused
        name.append(46)
        while True:
            c = self.next()
            if c == _LF:
                raise _Refused
            if c == 34:
                break
            if c == 92:  # backslash: the next byte as it is
                c = self.next()
                if c == _LF:
                    raise _Refused
            name.append(c)
        if self.next() != 93:
            raise _Refused

    def key(self, first: int) -> tuple[bytes, bytes | None]:
        """A key's name (its first letter read) and its value, up to the end of its line."""
        name = bytearray((_lower(first),))
        c = self.next()
        while c in _KEY:
            name.append(_lower(c))
            c = self.next()
        while c in (32, 9):
            c = self.next()
        if c == _LF:
            return bytes(name), None
        if c != 61:  # =
            raise _Refused
        return bytes(name), self.value()

    def value(self) -> bytes:
        value = bytearray()
        quoted = comment = False
        blanks = 0
        while True:
            c = self.next()
            if c == _LF:
                if quoted:
                    raise _Refused
                return bytes(value)
            if comment:
                continue
            if not quoted:
                if c in _SPACE:
                    if value:
                        blanks += 1
                    continue
                if c in (35, 59):  # # ;
                    comment = True
                    continue
            if blanks:
                value += b" " * blanks
                blanks = 0
            if c == 92:
                c = self.next()
                if c == _LF:
                    continue  # a line continued
                escaped = _ESCAPES.get(c)
                if escaped is None:
                    raise _Refused
                value.append(escaped)
            elif c == 34:
                quoted = not quoted
            else:
                value.append(c)


def parse_config(data: bytes) -> list[Record] | None:
    """The ``(key, value)`` records of one configuration file's text, keys as git
    prints them, or ``None`` where git would refuse the text or this parser
    might read it otherwise (a NUL byte, a key before any section)."""
    if b"\0" in data:
        return None
    if data[:1] == _BOM[:1]:
        if not data.startswith(_BOM):
            return None  # git refuses a partial mark
        data = data[3:]
    reader = _Reader(data.replace(b"\r\n", b"\n"))
    records: list[Record] = []
    section = b""
    comment = False
    try:
        while reader.at < reader.end:
            c = reader.next()
            if c == _LF:
                comment = False
            elif comment or c in _SPACE:
                continue
            elif c in (35, 59):
                comment = True
            elif c == 91:  # [
                section = reader.section() + b"."
            elif c in _ALPHA and section:
                name, value = reader.key(c)
                records.append((section + name, value))
            else:
                return None
    except _Refused:
        return None
    return records


def git_program(environ: Mapping[str, str]) -> str | None:
    """The real path of the ``git`` that ``PATH`` in ``environ`` finds, or ``None``."""
    for directory in environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return None


#: The system file of a git installed under ``/usr`` (git's ``ETC_GITCONFIG`` there).
_SYSTEM_FILES: Final = {"/usr/bin/git": "/etc/gitconfig"}


def _flag(environ: Mapping[str, str], name: str) -> bool | None:
    """A boolean variable as git reads one (``git_env_bool``); ``None``: one git refuses."""
    value = environ.get(name)
    return False if value is None else parse_bool(value)


def _absolute(environ: Mapping[str, str], name: str) -> str | None:
    """A path variable git reads; ``""`` when unset, ``None`` when git would read
    it relative to a directory it changed to (or as ``/...`` from an empty one)."""
    value = environ.get(name)
    if value is None:
        return ""
    return value if value.startswith("/") else None


def config_files(environ: Mapping[str, str], common_dir: str) -> list[str] | None:
    """The files git reads, in its order (each may be missing), or ``None`` when
    git would read more than files, or a file this module cannot name."""
    if any(name in environ for name in _CONFIG_FROM_ENV):
        return None
    paths = {name: _absolute(environ, name) for name in _PATH_VARIABLES}
    no_system = _flag(environ, "GIT_CONFIG_NOSYSTEM")
    if no_system is None or None in paths.values():
        return None
    files = []
    if not no_system:
        system = paths["GIT_CONFIG_SYSTEM"] or _SYSTEM_FILES.get(git_program(environ) or "")
        if not system:
            return None
        files.append(system)
    if "GIT_CONFIG_GLOBAL" in environ:
        files.append(environ["GIT_CONFIG_GLOBAL"])  # "" names no file, as git reads it
    else:
        home, xdg = paths["HOME"], paths["XDG_CONFIG_HOME"]
        if xdg:
            files.append(os.path.join(xdg, "git", "config"))
        elif home:
            files.append(os.path.join(home, ".config", "git", "config"))
        if home:
            files.append(os.path.join(home, ".gitconfig"))
    files.append(os.path.join(common_dir, "config"))
    return files


def _read(path: str) -> bytes | None:
    """A file's bytes; ``b""`` when it is not there (git skips it); ``None`` when
    it cannot be read (git may stop, or warn)."""
    if not path:
        return b""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return b""
    except OSError:
        return None


def read_config(environ: Mapping[str, str], common_dir: str) -> Config | None:
    """What ``git config -z --list`` prints for the repository whose common
    directory is ``common_dir`` under ``environ`` (``None``: ask git)."""
    files = config_files(environ, common_dir)
    if files is None:
        return None
    printed = bytearray()
    every: list[Record] = []
    records: list[Record] = []
    for path in files:
        data = _read(path)
        if data is None:
            return None
        parsed = parse_config(data) if data else []
        if parsed is None:
            return None
        records = parsed
        for key, value in records:
            if key.startswith((b"include.", b"includeif.")):
                return None
            printed += key
            if value is not None:
                printed += b"\n" + value
            printed += b"\0"
        every += records
    return Config(bytes(printed), every, records)


class Config:
    """A repository's configuration as git reads it: ``printed`` as ``git config -z
    --list`` prints it, its ``records`` in git's order, and the ``own`` records of
    the repository's file (what git checks the repository's format against)."""

    __slots__ = ("own", "printed", "records")

    def __init__(self, printed: bytes, records: list[Record], own: list[Record]) -> None:
        self.printed = printed
        self.records = records
        self.own = own
