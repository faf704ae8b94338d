"""Detecting credentials in context bodies before they are stored (and later pushed).

Context travels to shared remotes and into prompts, so a body that looks like
it carries a credential is refused by default. Findings name the rule and the
line, never the matched text. The rules are one compiled alternation, so a
body is scanned in a single pass (about 20 MB in well under a second here; see
``benchmarks/bench_secrets.py``).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

__all__ = ["RULES", "Finding", "scan"]

#: (rule name, pattern, triggers). A rule's regular expression runs only when
#: one of its triggers (literals, case as the pattern requires) occurs in the
#: text: substring search is far faster than a regex tried at every position.
#: A rule without triggers starts with a literal, which the regex engine
#: skips to as fast as a substring search.
RULES: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
        ("PRIVATE KEY-----",),
    ),
    (
        "aws-access-key-id",
        # the literal first letter lets the regex engine skip ahead fast
        r"A(?<![0-9A-Za-z]A)(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}(?![0-9A-Za-z])",
        (),
    ),
    (
        "aws-secret-access-key",
        r"(?i:aws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
        ("ecret_access", "ECRET_ACCESS", "ecretAccess"),
    ),
    (
        "github-token",
        r"gh(?:[pousr]_[A-Za-z0-9]{36,255}|ub_pat_[A-Za-z0-9_]{60,255})(?![A-Za-z0-9_])",
        (),
    ),
    ("gitlab-token", r"glpat-[A-Za-z0-9_-]{20,}", ("glpat-",)),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}", ("xox",)),
    ("stripe-key", r"[rs]k_live_[A-Za-z0-9]{20,}", ("k_live_",)),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", ("AIza",)),
    (
        "openai-key",
        # from a token's first character only, so a run of "sk-sk-sk-..." is tried
        # once rather than at every "sk-" (which was quadratic)
        r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}",
        ("T3BlbkFJ",),
    ),
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{32,}", ("sk-ant-",)),
    ("npm-token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", ("npm_",)),
    (
        "jwt",
        # possessive runs: a part never gives back characters, which cannot be "."
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}+\.eyJ[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]{10,}",
        ("eyJ",),
    ),
    (
        "url-credentials",
        r"://[^\s/:@\"'<>\[]{1,64}:"
        r"(?!(?i:password|passwd|secret|token|changeme|x+|\*+)@)"
        r"[^\s/:@\"'<>$%{}]{6,128}@[^\s/@\"'<>]",
        ("://",),
    ),
    (
        # KEY=value / key: value assignments of a secret-looking literal to a key named
        # like a secret (.env, YAML, INI, shell, Python, JSON, JS, Go, Ruby...). The
        # key is matched in any case; a quoted value needs letters and digits, an
        # unquoted one needs upper and lower case letters and digits, which keeps code
        # such as `password = read_password_2()` or `token = settings.api_token1` out.
        # ASCII only: in Unicode mode "\u017f" (long s) would match "s" case-blind.
        "env-secret",
        r"(?a)^[ \t]*(?:-[ \t]+)?"  # a YAML / docker-compose list item
        r"(?:(?:export|ENV|const|let|var|readonly|declare|set)[ \t]+|\$env:)?"
        # the key, bare or quoted (JSON, Python dicts): a lookahead finds the secret
        # word, then a possessive run takes the name (no backtracking: a long line of
        # "token"s stays linear); dots and dashes join names (db.password, api-key).
        # The word must not run on in lower case: tokenizer and secretary name no
        # secret, while passwords, accessToken, passwordHash and SECRET_KEY_BASE do.
        r"(?P<kq>[\"']?)"
        r"(?i:(?=[a-z0-9_.-]*?(?:secret|password|passwd|token|api[_-]?key"
        r"|private[_-]?key|access[_-]?key|secret[_-]?key)(?-i:s?(?![a-z])))[a-z0-9_.-]*+)"
        # (possessive: a value never starts with a blank, and giving blanks back
        # one by one re-ran the lookahead below over the line, quadratically)
        r"(?P=kq)[ \t]*(?::=|=>|[=:])[ \t]*+"
        r"(?![^\n]*(?i:change.?me|example|your_|xxxx|dummy|placeholder|redacted)"
        r"|[^\n]*(?:<|\$\{|\$\())"
        r"(?:(?P<vq>[\"'])(?=[^\"'\n]*[0-9])(?=[^\"'\n]*[A-Za-z])"
        r"[A-Za-z0-9_\-+/=!@%^&*.~]{12,}(?P=vq)"
        # unquoted, and not a path: upper, lower and digits, or letters and digits
        # without "_" or "/" (hex, UUIDs, base32) — never ".", "(" or "_"-joined
        # names, which are code
        r"|(?!\.{0,2}/)(?=[^\s]*[0-9])(?=[^\s]*[a-z])(?=[^\s]*[A-Z])"
        r"[A-Za-z0-9_\-+/=!@%^&*~]{12,}"
        r"|(?!\.{0,2}/)(?=[^\s]*[0-9])(?=[^\s]*[A-Za-z])[A-Za-z0-9\-+=!@%^&*~]{12,})"
        # then the end of the line: a comma (JSON, a dict literal) or a semicolon, a
        # comment; possessive blank runs, so trailing blanks cost no backtracking
        r"[ \t]*+(?:[,;][ \t]*+)?(?:(?:#|//)[^\n]*)?\r?$",
        # every key the pattern accepts holds one of these (api_key, privatekey and
        # access_key all hold "key"): four passes over the text instead of eight
        ("secret", "passw", "token", "key"),
    ),
    (
        # A quoted key with a quoted value anywhere on a line: one-line JSON, dict and
        # hash literals ({"api_key": "..."}, {"a": 1, 'token': '...'}). The same keys
        # and values as env-secret; the value ends at its quote, then a "," "}" "]"
        # ")" ";" or the end of the line. Quotes bound every run: linear.
        "json-secret",
        r"(?a)(?<![A-Za-z0-9_])(?P<kq>[\"'])"
        r"(?i:(?=[a-z0-9_.-]*?(?:secret|password|passwd|token|api[_-]?key"
        r"|private[_-]?key|access[_-]?key|secret[_-]?key)(?-i:s?(?![a-z])))[a-z0-9_.-]*+)"
        r"(?P=kq)[ \t]*+(?::|=>|=)[ \t]*+(?P<vq>[\"'])"
        r"(?![^\"'\n]*(?i:change.?me|example|your_|xxxx|dummy|placeholder|redacted))"
        r"(?=[^\"'\n]*[0-9])(?=[^\"'\n]*[A-Za-z])[A-Za-z0-9_\-+/=!@%^&*.~]{12,}+(?P=vq)"
        r"(?=[ \t]*(?:[,;})\]]|\r?$))",
        ("secret", "passw", "token", "key"),
    ),
)

_COMPILED: Final = tuple(
    (name, re.compile(pattern, re.MULTILINE), triggers) for name, pattern, triggers in RULES
)


class Finding(NamedTuple):
    """A secret-looking match: which rule, on which line (1-based). Never the text."""

    rule: str
    line: int

    def __str__(self) -> str:
        return f"{self.rule} on line {self.line}"


#: Rules matched line by line: their triggers are looked for in the lower-cased text
#: (any case in the text), and the pattern runs only on the lines holding one.
_FOLDED: Final = frozenset({"env-secret", "json-secret"})
_FOLDED_RULES: Final = [(name, pattern) for name, pattern, _t in _COMPILED if name in _FOLDED]
_FOLDED_TRIGGERS: Final = tuple(
    dict.fromkeys(t for name, _p, triggers in _COMPILED if name in _FOLDED for t in triggers)
)


def _scan_lines(
    text: str, rules: list[tuple[str, re.Pattern[str]]], triggers: tuple[str, ...]
) -> list[tuple[int, str]]:
    """Run line-bounded patterns only on the lines where a trigger occurs (the
    text lower-cased and each trigger looked for once, for all of them)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        # a character whose lower case is longer: positions no longer line up
        return [(m.start(), name) for name, pattern in rules for m in pattern.finditer(text)]
    hits: list[tuple[int, str]] = []
    seen: set[int] = set()
    for trigger in triggers:
        found = lowered.find(trigger)
        while found != -1:
            end = text.find("\n", found)
            end = len(text) if end == -1 else end
            # The key holding the trigger is followed by "=" or ":": a line with
            # neither after the trigger cannot match (most lines that merely
            # mention a token), and costs no regex.
            if text.find("=", found, end) == -1 and text.find(":", found, end) == -1:
                found = lowered.find(trigger, end)
                continue
            start = text.rfind("\n", 0, found) + 1
            if start not in seen:
                seen.add(start)
                for name, pattern in rules:
                    match = pattern.search(text, start, end)
                    if match is not None:
                        hits.append((match.start(), name))
            found = lowered.find(trigger, end)
    return hits


def scan(text: str, *, limit: int = 20) -> list[Finding]:
    """Secret-looking matches in ``text`` (at most ``limit``), in text order."""
    hits = _scan_lines(text, _FOLDED_RULES, _FOLDED_TRIGGERS)
    for name, pattern, triggers in _COMPILED:
        if name in _FOLDED:
            continue
        if triggers and not any(trigger in text for trigger in triggers):
            continue
        for match in pattern.finditer(text):
            hits.append((match.start(), name))
            if len(hits) >= limit * 4:
                break
    hits.sort()
    findings: list[Finding] = []
    line, last = 1, 0
    for position, name in hits:
        line += text.count("\n", last, position)
        last = position
        findings.append(Finding(name, line))
    # A line env-secret already names needs no json-secret finding too.
    assigned = {f.line for f in findings if f.rule == "env-secret"}
    return [f for f in findings if f.rule != "json-secret" or f.line not in assigned][:limit]
