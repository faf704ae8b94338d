"""The one source of configuration: every ``git config`` value git-hydrate reads.

The whole configuration is read with one ``git config -z --list`` per
repository (includes, ``git -c`` and the ``GIT_CONFIG_*`` variables honoured
exactly as git honours them) and parsed here, by one parser per type that
reads values the way git itself reads them:

* booleans as ``git config --type=bool``: a key without ``=`` is true; an
  empty value is *false*; ``true``/``yes``/``on`` and ``false``/``no``/``off``
  in any case; otherwise an integer, true when non-zero;
* integers as ``git config --type=int``: ``strtoimax`` with base 0 (decimal,
  ``0x`` hex, ``0`` octal, leading blanks and a sign allowed) and an optional
  ``k``/``m``/``g`` unit (1024, 1024², 1024³), nothing after it.

Each ``hydrate.*`` setting is declared once in :data:`SETTINGS`, with its
type, default and description; the man page's CONFIGURATION section and the
``--help`` defaults are generated from these declarations.
"""

from __future__ import annotations

import os
import re

from .errors import ValidationError

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Final, Literal

    Kind = Literal["bytes", "tokens", "bool", "regex", "path", "name"]

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MCP_MAX_TOKENS",
    "ENCODINGS",
    "PROMPT_FORMATS",
    "SETTINGS",
    "Setting",
    "Settings",
    "default_help",
    "is_int",
    "parse_bool",
    "parse_int",
    "parse_records",
]

#: The packing budget when neither ``--max-bytes`` nor ``hydrate.maxBytes`` says.
DEFAULT_MAX_BYTES: Final = 131072
#: The token encodings ``--encoding`` accepts, and the default one.
ENCODINGS: Final = ("o200k_base", "cl100k_base")
DEFAULT_ENCODING: Final = "o200k_base"
#: The prompt formats ``--format`` accepts (see git_hydrate.pack.formats); the first
#: is the default.
PROMPT_FORMATS: Final = ("seed", "markdown", "xml")
#: The budget of one answer of ``git hydrate mcp``: a fifth under the 10,000 tokens
#: past which Claude Code warns about a tool result (it refuses past 25,000).
DEFAULT_MCP_MAX_TOKENS: Final = 8000


# A plain class, not a dataclass: importing dataclasses (and inspect) costs about
# 5 ms, a tenth of what the prompt cache's fast path may spend in all.
class Setting:
    """One ``git config`` key git-hydrate reads.

    Args:
        shown_default: How the default is shown when it is not the value itself.
    """

    __slots__ = ("default", "description", "key", "kind", "shown_default")

    def __init__(
        self,
        key: str,
        kind: Kind,
        default: int | bool | str | None,
        description: str,
        shown_default: str = "",
    ) -> None:
        self.key = key
        self.kind = kind
        self.default = default
        self.description = description
        self.shown_default = shown_default

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, {self.kind!r}, {self.default!r})"

    @property
    def metavar(self) -> str:
        """What the value is, as the man page names it."""
        return {
            "bytes": "BYTES",
            "tokens": "TOKENS",
            "bool": "BOOLEAN",
            "regex": "REGEX",
            "path": "PATH",
            "name": "NAME",
        }[self.kind]

    @property
    def default_text(self) -> str:
        """The default as people read it."""
        if self.shown_default:
            return self.shown_default
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default)


_SIZES = "The suffixes k, m and g multiply by 1024, 1024^2, 1024^3, as in git."

#: Every ``hydrate.*`` setting, in the order the man page lists them.
SETTINGS: Final[tuple[Setting, ...]] = (
    Setting(
        "hydrate.maxBytes",
        "bytes",
        DEFAULT_MAX_BYTES,
        "The byte budget of pack, expand and prompt when --max-bytes is not given, and of "
        "the pre-push artefacts. pack measures the packet's JSON, expand the packet and the "
        "prompt together, prompt and the pre-push artefacts the prompt alone. When a token "
        "budget is given (--max-tokens or hydrate.maxTokens) and this is not set, only the "
        f"token budget applies. {_SIZES}",
    ),
    Setting(
        "hydrate.maxTokens",
        "tokens",
        None,
        "A token budget of pack, expand, prompt and the pre-push artefacts when --max-tokens "
        "is not given, counted exactly in hydrate.encoding; with a byte budget as well, both "
        "apply. Needs the optional extra: pip install 'git-hydrate[tokens]'. "
        f"{_SIZES}",
        shown_default="none",
    ),
    Setting(
        "hydrate.encoding",
        "name",
        DEFAULT_ENCODING,
        "The token encoding token budgets are counted in: o200k_base or cl100k_base.",
    ),
    Setting(
        "hydrate.outline",
        "bool",
        True,
        "When true (the default), pack, expand, prompt and the pre-push artefacts keep the "
        "outline of an attachment that no longer fits in full (Python, Markdown, "
        "reStructuredText, AsciiDoc, manual pages, Erlang and Protocol Buffers always; "
        "JavaScript, TypeScript, "
        "Go, Rust, Java, C, C++, "
        "Ruby, Kotlin, C#, PHP, Swift, Scala, Lua, shell, Julia, OCaml, Haskell and Elixir with "
        "pip install 'git-hydrate[outline]'); false, or --no-outline, leaves it out instead.",
    ),
    Setting(
        "hydrate.promptFormat",
        "name",
        "seed",
        "How prompt, expand and the pre-push artefacts hold each attachment in the untrusted "
        "block, as --format does: seed (the seed's layout; a body line that could read as "
        "structure gets a backslash), markdown (each body unchanged in a fence nothing in it "
        "can close) or xml (<documents>, each body escaped). git hydrate mcp and the agent "
        "bridges use markdown unless this is set.",
    ),
    Setting(
        "hydrate.promptCache",
        "bool",
        True,
        "When true, prompt (and the pre-push artefacts) keep each prompt they build in "
        "<git common dir>/hydrate/prompt-cache/, keyed by the task's tip, the budget and which "
        "attachments have expired, and print it again byte for byte instead of rebuilding "
        "it. Disposable: deleting the directory is always safe.",
    ),
    Setting(
        "hydrate.mcpMaxTokens",
        "tokens",
        DEFAULT_MCP_MAX_TOKENS,
        "The budget of every answer git hydrate mcp sends: counted exactly in hydrate.encoding "
        "with pip install 'git-hydrate[tokens]' and then never over 5 bytes a token (40,000 "
        "bytes at the default), else as a byte budget of 5/2 bytes per token (20,000 bytes). "
        "A long prompt or attachment is sent in parts; a list that does not fit whole ends "
        "with a summary of what it left out. The default is a fifth under the 10,000 tokens "
        "and 50,000 characters past which Claude Code warns about a tool result or moves it "
        "to a file; the least is 400. "
        f"{_SIZES}",
    ),
    Setting(
        "hydrate.maxBodyBytes",
        "bytes",
        8 * 1024 * 1024,
        "The largest body context-add accepts (same suffixes); pull skips a remote's task "
        "holding a larger one, naming the body.",
    ),
    Setting(
        "hydrate.allowSecrets",
        "bool",
        False,
        "When true, context-add stores bodies that look like they contain credentials "
        "(private keys, cloud keys, tokens, passwords in URLs, .env secrets) instead of "
        "refusing them. Read as git reads booleans: an empty value is false. Prefer "
        "--allow-secrets for a single, deliberate exception.",
    ),
    Setting(
        "hydrate.maxFileBytes",
        "bytes",
        262144,
        "The largest file add-tree and add-diff attach; larger ones are reported as "
        "too_large (same suffixes).",
    ),
    Setting(
        "hydrate.maxTotalBytes",
        "bytes",
        10485760,
        "The total bytes one add-tree or add-diff run attaches; files past it are reported "
        "as total_budget (same suffixes).",
    ),
    Setting(
        "hydrate.taskPattern",
        "regex",
        r"\b[A-Z][A-Z0-9]*-[0-9]+\b",
        "A Python regular expression that finds task ids in pushed ref names and commit "
        "messages, and in the branch name when no current task was started (the whole match, "
        "or its first group when it has one). The default matches ids such as M-1002 or "
        "ABC-12. Only ids of existing tasks count.",
    ),
    Setting(
        "hydrate.artefactDir",
        "path",
        None,
        "Where the pre-push hook writes ID/ID.prompt.md, ID/ID.packet.json and "
        "ID/manifest.json. A leading ~ is expanded; a relative path is relative to the top "
        "of the work tree (the git directory of a bare repository). The default keeps the "
        "work tree clean.",
        shown_default="<git common dir>/hydrate/artefacts",
    ),
    Setting(
        "hydrate.claimRemote",
        "name",
        None,
        "The remote (name or URL) that claim, release and ready go through when --remote is "
        "not given, so that claims are atomic for everyone sharing it; --local overrides "
        "it. Unset, they work in this repository only.",
        shown_default="none",
    ),
    Setting(
        "hydrate.prePushStrict",
        "bool",
        False,
        "When true, the pre-push hook blocks the push (exit status 1, the reason on "
        "standard error) if a task the push concerns cannot be packed or has omissions. "
        "Otherwise it only warns: git-hydrate never blocks a push by default.",
    ),
)

_BY_KEY: Final = {setting.key.lower(): setting for setting in SETTINGS}


def default_help(key: str) -> str:
    """How ``--help`` names an option's default: ``git config KEY, else DEFAULT``."""
    setting = _BY_KEY[key.lower()]
    return f"git config {setting.key}, else {setting.default_text}"


# strtoimax(value, &end, 0): optional blanks and sign, then hex, octal or decimal
# digits (the longest run it reads); then git's unit; then nothing at all.
_INTEGER: Final = re.compile(
    r"[ \t\n\v\f\r]*([-+]?)(?:0[xX]([0-9a-fA-F]+)|(0[0-7]*)|([1-9][0-9]*))([kKmMgG]?)\Z"
)
_UNITS: Final = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def is_int(value: str) -> bool:
    """Whether ``value`` is written as ``git config --type=int`` reads an integer
    (of any size: :func:`parse_int` says whether it fits)."""
    return _INTEGER.match(value) is not None


def parse_int(value: str | None, bits: int = 64) -> int | None:
    """``value`` as ``git config --type=int`` reads it, or ``None`` if git refuses it.

    ``bits`` is the width git parses into: 64 for integers, 32 (a C ``int``)
    when git reads an integer as a boolean.
    """
    if value is None:
        return None
    match = _INTEGER.match(value)
    if match is None:
        return None
    sign, hexa, octal, decimal, unit = match.groups()
    if hexa is not None:
        number = int(hexa, 16)
    elif octal is not None:
        number = int(octal, 8)
    elif len(decimal.lstrip("0")) > bits * 0.302 + 1:
        return None  # out of range (and never more than int() reads: 4,300 digits)
    else:
        number = int(decimal)
    factor = _UNITS[unit.lower()]
    if number > (2 ** (bits - 1) - 1) // factor:
        return None  # out of range, as git says
    number *= factor
    return -number if sign == "-" else number


def parse_bool(value: str | None) -> bool | None:
    """``value`` as ``git config --type=bool`` reads it, or ``None`` if git refuses it.

    ``None`` in (a key given without ``=``) is true, as in git.
    """
    if value is None:
        return True
    if value == "":
        return False
    word = value.lower()
    if word in ("true", "yes", "on"):
        return True
    if word in ("false", "no", "off"):
        return False
    number = parse_int(value, bits=32)
    return None if number is None else number != 0


def parse_records(data: bytes) -> list[tuple[str, str | None]]:
    """``(key, value)`` records of ``git config -z`` output, keys lower-cased.

    The value is ``None`` for a key given without ``=`` (``-z`` tells it from
    an empty value: no newline after the name). Subsection names keep their case.
    """
    records: list[tuple[str, str | None]] = []
    for record in data.split(b"\0"):
        if not record:
            continue
        key, newline, value = record.partition(b"\n")
        name = key.decode("utf-8", "replace")
        section, dot, rest = name.partition(".")
        if dot and "." in rest:  # section.subsection.key: only the outer parts fold
            subsection, _, variable = rest.rpartition(".")
            name = f"{section.lower()}.{subsection}.{variable.lower()}"
        else:
            name = name.lower()
        records.append((name, value.decode("utf-8", "replace") if newline else None))
    return records


class Settings:
    """The configuration of one repository, as git would read it.

    Args:
        records: ``(key, value)`` pairs in git's order (the last one wins),
            as :func:`parse_records` returns them.
    """

    def __init__(self, records: Iterable[tuple[str, str | None]]) -> None:
        self._values: dict[str, list[str | None]] = {}
        for key, value in records:
            self._values.setdefault(key, []).append(value)

    def raw(self, key: str) -> str | None:
        """The last value of ``key`` (``None`` when unset *or* given without ``=``)."""
        values = self._values.get(self._fold(key))
        return values[-1] if values else None

    def has(self, key: str) -> bool:
        """Whether ``key`` is set at all."""
        return self._fold(key) in self._values

    def all(self, key: str) -> list[str | None]:
        """Every value of a multi-valued ``key``, in git's order."""
        return list(self._values.get(self._fold(key), []))

    def keys(self, prefix: str) -> list[str]:
        """Every key set that starts with ``prefix`` (as stored: outer parts lower-cased)."""
        return [key for key in self._values if key.startswith(prefix)]

    def boolean(self, key: str, default: bool | None = None) -> bool:
        """A boolean setting read as git reads it; a declared setting's default applies.

        Raises:
            ValidationError: a value git would refuse as a boolean.
        """
        if not self.has(key):
            return bool(self._default(key) if default is None else default)
        raw = self._values[self._fold(key)][-1]
        value = parse_bool(raw)
        if value is None:
            raise ValidationError(f"git config {self._name(key)} must be a boolean, not {raw!r}")
        return value

    def size(self, key: str, default: int | None = None) -> int:
        """A positive integer setting (``k``/``m``/``g`` allowed), as git reads integers.

        Raises:
            ValidationError: not an integer git reads, or not positive.
        """
        if not self.has(key):
            value = self._default(key) if default is None else default
            assert isinstance(value, int)
            return value
        raw = self._values[self._fold(key)][-1]
        number = parse_int(raw)
        if number is None:
            raise ValidationError(
                f"git config {self._name(key)} must be a whole number (k, m or g after it "
                f"allowed: 64k), not {raw!r}"
            )
        if number <= 0:
            raise ValidationError(f"git config {self._name(key)} must be positive, not {raw!r}")
        return number

    def text(self, key: str) -> str | None:
        """A text setting, or its declared default; ``None`` when neither."""
        raw = self.raw(key)
        if raw:
            return raw
        default = self._default(key)
        return default if isinstance(default, str) else None

    def path(self, key: str) -> str | None:
        """A path setting with a leading ``~`` expanded (as ``git config --path``)."""
        raw = self.raw(key)
        return os.path.expanduser(raw) if raw else None

    @staticmethod
    def _fold(key: str) -> str:
        section, dot, rest = key.partition(".")
        if dot and "." in rest:
            subsection, _, variable = rest.rpartition(".")
            return f"{section.lower()}.{subsection}.{variable.lower()}"
        return key.lower()

    @staticmethod
    def _name(key: str) -> str:
        declared = _BY_KEY.get(key.lower())
        return declared.key if declared is not None else key

    @staticmethod
    def _default(key: str) -> int | bool | str | None:
        declared = _BY_KEY.get(key.lower())
        return declared.default if declared is not None else None
