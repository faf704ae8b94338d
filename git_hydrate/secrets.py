"""Detecting credentials in context bodies before they are stored (and later pushed).

Context travels to shared remotes and into prompts, so a body that looks like
it carries a credential is refused by default. Findings name the rule and the
line, never the matched text. Each rule runs only where it could match: with
the optional ``hyperscan`` package (``pip install 'git-hydrate[fast]'``), one
pass over the text finds every line that holds a rule's anchor and the rules
run on those lines, and most texts have none (600-1,600 MB/s of real code
here, a call costing little more than the pass); without it, each rule runs
over the whole text when one of its trigger literals occurs (30-45 MB/s). Both
find the same; see ``benchmarks/bench_secrets.py``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable
from typing import Any, Final, NamedTuple

__all__ = ["PREFILTER_AFTER", "RULES", "Finding", "keep_compiled", "scan"]

#: (rule name, pattern, triggers). A rule's regular expression runs only when
#: one of its triggers (literals, case as the pattern requires) occurs in the
#: text: substring search is far faster than a regex tried at every position.
#: A rule without triggers starts with a literal, which the regex engine
#: skips to as fast as a substring search.
RULES: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
        # PGP's armour ends in "BLOCK-----": without its own trigger the rule never ran
        ("PRIVATE KEY-----", "PRIVATE KEY BLOCK-----"),
    ),
    ("putty-private-key", r"PuTTY-User-Key-File-[1-9]: ", ("PuTTY-User-Key-File-",)),
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
    (
        "webhook-url",
        # Slack and Discord incoming webhooks: the URL is the credential
        r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}"
        r"|discord(?:app)?\.com/api/webhooks/[0-9]{10,}/[A-Za-z0-9_-]{40,})",
        ("hooks.slack.com/", "/api/webhooks/"),
    ),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}", ("SG.",)),
    # the literal first letters let the regex engine skip ahead fast
    ("twilio-api-key", r"SK(?<![0-9A-Za-z]SK)[0-9a-f]{32}(?![0-9A-Za-z])", ()),
    ("twilio-account-sid", r"AC(?<![0-9A-Za-z]AC)[0-9a-f]{32}(?![0-9A-Za-z])", ()),
    # tokens with a fixed prefix, each regex starting with it so the engine
    # skips ahead to it (a leading lookbehind would be tried at every position)
    (
        "shopify-token",
        r"shp(?<![A-Za-z0-9_]shp)(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9_])",
        (),
    ),
    ("vault-token", r"hv(?<![A-Za-z0-9_]hv)[sb]\.[A-Za-z0-9_-]{24,}", ()),
    (
        "digitalocean-token",
        r"do(?<![A-Za-z0-9_]do)[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9_])",
        (),
    ),
    ("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}", ()),
    ("huggingface-token", r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z]{34}(?![A-Za-z0-9_])", ()),
    ("databricks-token", r"dapi(?<![A-Za-z0-9_]dapi)[a-f0-9]{32}(?![A-Za-z0-9_])", ()),
    ("mailgun-key", r"key-(?<![A-Za-z0-9_]key-)[a-f0-9]{32}(?![A-Za-z0-9_])", ()),
    (
        "azure-connection-string",
        r"(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{20,}+={0,2}",
        ("AccountKey=", "SharedAccessKey="),
    ),
    (
        "connection-string-password",
        # ...;User ID=app;Password=...; in ADO.NET, JDBC and ODBC strings; not a
        # template ({password}, $PASSWORD, %s, <password>)
        # (line-bounded: run only on lines holding "passw", any case)
        r"(?i:;[ \t]*password[ \t]*=[ \t]*+)[^;\s\"'{}$%<>]{6,}+(?=[;\"']|\s|$)",
        ("passw",),
    ),
    (
        "npmrc-auth",
        # .npmrc: _authToken=... and the legacy _auth=base64(user:pass)
        r"_auth(?<![A-Za-z0-9]_auth)(?:Token)?[ \t]*=[ \t]*+[\"']?(?![\"']?\$\{)"
        r"[A-Za-z0-9+/=_.:-]{12,}",
        ("_auth",),
    ),
    (
        "docker-auth",
        # ~/.docker/config.json: "auth": base64(user:password)
        r"\"auth\"[ \t]*:[ \t]*+\"(?:(?=[A-Za-z+/=]*+[0-9])|(?=[a-z0-9+/=]*+[A-Z])"
        r"(?=[A-Z0-9+/=]*+[a-z]))[A-Za-z0-9+/]{12,}+={0,2}\"",
        ('"auth"',),
    ),
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
        # user:password@, or an empty user: redis://:<password>@cache
        r"://(?:[^\s/:@\"'<>\[]{1,64}:"
        r"(?!(?i:password|passwd|secret|token|changeme|x+|\*+)@)"
        r"[^\s/:@\"'<>$%{}]{6,128}|:(?!(?i:password|passwd|secret|token|changeme|x+|\*+)@)"
        r"[^\s/:@\"'<>$%{}]{2,128})@[^\s/@\"'<>]",
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
    (
        # key = <base64 or hex> for keys named key, iv or *_key / *Key (hmac_key,
        # aesKey, encryption.key): the value must look like key material — hex of
        # 32 digits or more, or base64 of 16 characters or more mixing upper case,
        # lower case and digits. Line-bounded like env-secret.
        "key-material",
        r"(?a)^[ \t]*(?:-[ \t]+)?(?:(?:export|ENV|const|let|var|readonly|declare|set)[ \t]+)?"
        # the name: segments ending in "_", "." or "-" (possessive, each ends at its
        # delimiter: linear), then maybe a camelCase run (hmacKey), then key or iv —
        # a public key is no secret
        r"(?P<kq>[\"']?)(?:[A-Za-z0-9]*+[_.-])*+(?:[A-Za-z0-9]*?[a-z0-9](?=[KI]))?"
        r"(?i:key|iv)(?<!(?i:public.key))(?<!(?i:publickey))(?<!(?i:pub.key))"
        r"(?P=kq)[ \t]*(?::=|=>|[=:])[ \t]*+(?P<vq>[\"']?)"
        r"(?:[0-9a-fA-F]{32,}+(?![A-Za-z0-9+/=])|(?=[A-Za-z+/]*+[0-9])(?=[A-Z0-9+/]*+[a-z])"
        r"(?=[a-z0-9+/]*+[A-Z])[A-Za-z0-9+/]{16,}+={0,2})"
        r"(?P=vq)[ \t]*+(?:[,;][ \t]*+)?(?:(?:#|//)[^\n]*)?\r?$",
        # (iv only as iv= and iv: — each trigger is one more pass over the text)
        ("key", "iv=", "iv:"),
    ),
)


#: Each rule's compiled pattern, compiled when a scan first needs it: all of them
#: take ~6 ms, and with the prefilter most processes need few of them, or none.
_patterns: list[re.Pattern[str] | None] = [None] * len(RULES)


def _pattern(index: int) -> re.Pattern[str]:
    """The compiled pattern of ``RULES[index]``."""
    pattern = _patterns[index]
    if pattern is None:
        pattern = _patterns[index] = re.compile(RULES[index][1], re.MULTILINE)
    return pattern


@functools.cache
def _compiled() -> tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...]:
    """Every rule, compiled: (name, pattern, triggers), as the plain path runs them."""
    return tuple((name, _pattern(i), triggers) for i, (name, _p, triggers) in enumerate(RULES))


class Finding(NamedTuple):
    """A secret-looking match: which rule, on which line (1-based). Never the text."""

    rule: str
    line: int

    def __str__(self) -> str:
        return f"{self.rule} on line {self.line}"


#: Rules matched line by line: their triggers are looked for in the lower-cased text
#: (any case in the text), and the pattern runs only on the lines holding one.
_FOLDED: Final = frozenset(
    {"env-secret", "json-secret", "key-material", "connection-string-password"}
)
#: Folded rules anchored at the start of a line: tried there only (``match``).
_ANCHORED: Final = frozenset({"env-secret", "key-material"})
#: The folded rules: (index in RULES, anchored).
_FOLDED_INDICES: Final = tuple(
    (index, name in _ANCHORED) for index, (name, _p, _t) in enumerate(RULES) if name in _FOLDED
)
_FOLDED_TRIGGERS: Final = tuple(
    dict.fromkeys(t for name, _p, triggers in RULES if name in _FOLDED for t in triggers)
)


@functools.cache
def _folded_rules() -> list[tuple[str, re.Pattern[str], bool]]:
    """The folded rules as :func:`_scan_lines` runs them: (name, pattern, anchored)."""
    return [(RULES[index][0], _pattern(index), anchored) for index, anchored in _FOLDED_INDICES]


def _scan_lines(
    text: str, rules: list[tuple[str, re.Pattern[str], bool]], triggers: tuple[str, ...]
) -> list[tuple[int, str]]:
    """Run line-bounded patterns only on the lines where a trigger occurs (the
    text lower-cased and each trigger looked for once, for all of them)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        # a character whose lower case is longer: positions no longer line up
        return [(m.start(), name) for name, pattern, _a in rules for m in pattern.finditer(text)]
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
                for name, pattern, anchored in rules:
                    find = pattern.match if anchored else pattern.search
                    match = find(text, start, end)
                    if match is not None:
                        hits.append((match.start(), name))
            found = lowered.find(trigger, end)
    return hits


#: Where a rule can match, for the one-pass prefilter (:func:`_scan_prefiltered`):
#: every match of the rule lies on one line and holds a match of one of these
#: expressions (Hyperscan syntax, ASCII), which never matches a newline: the
#: rule's pattern with its lookarounds left out and each repeat cut to its least
#: (so that a token reports one end, not one per character past it): a superset
#: of the rule's matches (a non-ASCII character is a "?" to Hyperscan, which only
#: a negated class takes; where a rule's class takes one, the anchor's is such a
#: class). The rule runs on the lines they are found on, and most texts have
#: none (a bare "://" or "_auth" is on every other page of code). ``None``: every
#: match holds one of the rule's triggers, which serve. A rule missing here (its
#: match may span lines, and its case-blind key may be spelled with non-ASCII
#: letters) runs over the whole text when one of its triggers occurs.
#: ``tests/test_secrets_prefilter.py`` checks that the prefiltered scan finds what
#: the whole-text scan finds.
_ANCHORS: Final[dict[str, tuple[str, ...] | None]] = {
    "private-key": None,
    "putty-private-key": None,
    "aws-access-key-id": (r"A(KIA|SIA|BIA|CCA)[0-9A-Z]{16}",),
    "github-token": (r"gh[pousr]_[A-Za-z0-9]{36}", r"ghub_pat_[A-Za-z0-9_]{60}"),
    "gitlab-token": (r"glpat-[A-Za-z0-9_-]{20}",),
    "slack-token": (r"xox[abposr]-[A-Za-z0-9-]{10}",),
    "webhook-url": None,
    "sendgrid-key": (r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30}",),
    "twilio-api-key": (r"SK[0-9a-f]{32}",),
    "twilio-account-sid": (r"AC[0-9a-f]{32}",),
    "shopify-token": (r"shp(at|ca|pa|ss)_[a-fA-F0-9]{32}",),
    "vault-token": (r"hv[sb]\.[A-Za-z0-9_-]{24}",),
    "digitalocean-token": (r"do[opr]_v1_[a-f0-9]{64}",),
    "pypi-token": (r"pypi-AgE[A-Za-z0-9_-]{50}",),
    "huggingface-token": (r"hf_[A-Za-z]{34}",),
    "databricks-token": (r"dapi[a-f0-9]{32}",),
    "mailgun-key": (r"key-[a-f0-9]{32}",),
    "azure-connection-string": (r"(AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{20}",),
    "npmrc-auth": (r"_auth(Token)?[ \t]*=[ \t]*[\"']?[A-Za-z0-9+/=_.:-]{12}",),
    "docker-auth": (r"\"auth\"[ \t]*:[ \t]*\"[A-Za-z0-9+/]{12}",),
    "stripe-key": (r"[rs]k_live_[A-Za-z0-9]{20}",),
    "google-api-key": (r"AIza[0-9A-Za-z_-]{35}",),
    "openai-key": (r"T3BlbkFJ[A-Za-z0-9_-]{20}",),
    "anthropic-key": (r"sk-ant-[A-Za-z0-9_-]{32}",),
    "npm-token": (r"npm_[A-Za-z0-9]{36}",),
    "jwt": (r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10}",),
    # (a user of 1-64 characters or none, a password of 6-128 or 2-128: a run and 2)
    "url-credentials": (r"://[^\s/:@\"'<>\[]*:[^\s/:@\"'<>$%{}]{2,}@[^\s/@\"'<>]",),
}


#: What every match of a folded rule holds (caseless), each a superset of the
#: matches of the rules named beside: for env-secret and json-secret, a secret
#: word, the rest of the key, a separator and a value, quoted with a digit in it
#: or unquoted and of 12 characters or more up to the end of the line or a
#: comment; for key-material, "key" (or "iv") right before the separator and a
#: value of hex or base64 with a digit, or of 32 hex letters, up to the end of the
#: line or a comment; for connection-string-password, "; password =" and six
#: characters of a value. A line without one cannot match those rules, and most
#: lines that assign something to a "key" or a "token" have none (a call, a name,
#: an attribute: no digit, no line end after the value). All but the last hold a
#: trigger with "=" or ":" after it, so their lines are among those _scan_lines
#: runs on; a line of the last alone (a key named iv) is checked for its triggers.
_SECRET_KEY: Final = (
    r"(secret|passw|token|api[_-]?key|private[_-]?key|access[_-]?key)[a-z0-9_.-]*"
    r"[\"']?[ \t]*(:=|=>|=|:)[ \t]*"
)
_KEY_MATERIAL: Final = (
    r"[\"']?[ \t]*(:=|=>|=|:)[ \t]*[\"']?([a-z0-9+/]*[0-9][a-z0-9+/]*|[a-f]{32}[a-f]*)"
    r"={0,2}[\"']?[ \t]*([,;][ \t]*)?(#|//|\r|$)"
)
_FOLDED_ANCHORS: Final = (
    (
        # (after the closing quote: what env-secret and json-secret take there, a
        # line end (MULTILINE: before a newline) included)
        _SECRET_KEY + r"[\"'][a-z0-9_\-+/=!@%^&*.~]*[0-9][a-z0-9_\-+/=!@%^&*.~]*[\"']"
        r"[ \t]*([,;})\]]|#|//|\r|$)",
        ("env-secret", "json-secret"),
    ),
    (
        _SECRET_KEY + r"[a-z0-9_\-+/=!@%^&*~]{12}[a-z0-9_\-+/=!@%^&*~]*[ \t]*([,;][ \t]*)?"
        r"(#|//|\r|$)",
        ("env-secret",),
    ),
    ("key" + _KEY_MATERIAL, ("key-material",)),
    (r";[ \t]*password[ \t]*=[ \t]*[^;\s\"'{}$%<>]{6}", ("connection-string-password",)),
    # (last: the one whose lines are checked for triggers)
    ("iv" + _KEY_MATERIAL, ("key-material",)),
)
#: The two letters that make the folded rules' findings more than their anchors
#: tell (see :func:`_folded_hits`): İ, whose lower case is two characters
#: (_scan_lines then takes every match over the whole text), and ſ, which a
#: case-blind "password" takes for "s" where Hyperscan sees a "?". (Of the other
#: letters a case-blind pattern takes for an ASCII one, ı and the Kelvin sign,
#: none is in "password", and the other folded rules are ASCII-only.)
_DOTTED_I: Final = "\u0130"
_LONG_S: Final = "\u017f"
#: The index in RULES of connection-string-password, the folded rule that is not
#: ASCII-only.
_CONNECTION_PASSWORD: Final = next(
    index for index, (name, _p, _t) in enumerate(RULES) if name == "connection-string-password"
)


class _Prefilter:
    """One Hyperscan database of every rule's anchors and triggers (optional extra).

    Expression ids: first :data:`_FOLDED_ANCHORS` (caseless, "$" at each line's
    end), then for each other rule in order its anchors and its triggers (each
    reported once).
    """

    def __init__(self, hyperscan: Any, store: _Store | None = None) -> None:
        expressions = [expression.encode() for expression, _rules in _FOLDED_ANCHORS]
        flags = [hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_MULTILINE] * len(expressions)
        #: for each set of folded anchors found on a line (a bit each), the rules to
        #: run: (name, index in RULES, anchored)
        self.folded_rules = [
            [
                (RULES[index][0], index, anchored)
                for index, anchored in _FOLDED_INDICES
                if any(
                    mask & (1 << bit) and RULES[index][0] in names
                    for bit, (_e, names) in enumerate(_FOLDED_ANCHORS)
                )
            ]
            for mask in range(1 << len(_FOLDED_ANCHORS))
        ]
        #: per expression id past the folded anchors: (index in self.rules, is an anchor)
        self.owners: list[tuple[int, bool]] = [(-1, False)] * len(expressions)
        #: (rule name, index in RULES, gated by triggers, anchored to lines) of the others
        self.rules: list[tuple[str, int, bool, bool]] = []
        for rule, (name, _p, triggers) in enumerate(RULES):
            if name in _FOLDED:
                continue
            index = len(self.rules)
            lined = name in _ANCHORS
            anchors = _ANCHORS.get(name) or ()
            # A rule run by lines needs no gate: each of its matches holds one of
            # its triggers (the plain path's premise), and one of its anchors.
            gated = bool(triggers) and not lined
            self.rules.append((name, rule, gated, lined))
            for anchor in anchors or map(re.escape, triggers if lined else ()):
                expressions.append(anchor.encode())
                flags.append(0)
                self.owners.append((index, True))
            for trigger in triggers if gated else ():
                expressions.append(re.escape(trigger).encode())
                flags.append(hyperscan.HS_FLAG_SINGLEMATCH)
                self.owners.append((index, False))
        #: rules that run on every text: neither triggers nor anchors
        self.always = [
            index
            for index, (_n, _p, gated, lined) in enumerate(self.rules)
            if not (gated or lined)
        ]
        # Compiling takes ~40 ms: a database compiled by an earlier process for the
        # same expressions, library and machine is loaded instead (~0.1 ms).
        import hashlib  # (here: a process without the prefilter needs none)

        key = hashlib.sha256(
            repr((expressions, flags, _library_version(hyperscan), _machine())).encode()
        ).hexdigest()
        self.database = _load_compiled(hyperscan, store, key)
        if self.database is None:
            self.database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self.database.compile(
                expressions=expressions,
                ids=list(range(len(expressions))),
                elements=len(expressions),
                flags=flags,
            )
            if store is not None:
                with contextlib.suppress(Exception):  # only saves time
                    store[1](key, hyperscan.dumpb(self.database))
        #: the scratch spaces not in use: one, so that a second thread scanning
        #: meanwhile takes the plain path (popped and put back: atomic, and cheaper
        #: than a lock)
        self.scratches = [self.database.scratch]


#: Where compiled prefilters are kept between processes: ``load(key)`` gives the
#: bytes stored under ``key`` (or ``None``), ``save(key, data)`` stores them.
_Store = tuple[Callable[[str], "bytes | None"], Callable[[str, bytes], None]]
_store: _Store | None = None


def keep_compiled(load: Callable[[str], bytes | None], save: Callable[[str, bytes], None]) -> None:
    """Keep the prefilter's compiled database between processes through ``load``
    and ``save`` (see :data:`_Store`); from then on the prefilter is used from the
    first text, as loading it costs nothing. Call before the first scan."""
    global _store, _prefilter_after
    _store = (load, save)
    _prefilter_after = 0


def _machine() -> str:
    """``platform.machine()``, without importing ``platform`` (~1.5 ms) where
    ``os.uname()``, which it reads, is there."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def _library_version(hyperscan: Any) -> str:
    try:
        return str(hyperscan.__version__)
    except AttributeError:
        return "?"


def _load_compiled(hyperscan: Any, store: _Store | None, key: str) -> Any:
    """The database stored under ``key``, ready to scan; ``None`` if there is none
    or it does not load (another build of the library, a damaged file)."""
    if store is None:
        return None
    try:
        data = store[0](key)
        if not data:
            return None
        database = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)
        return database
    except Exception:  # anything wrong with it: compile instead
        return None


@functools.cache
def _prefilter() -> _Prefilter | None:
    """The Hyperscan prefilter, or None without the optional ``hyperscan`` package."""
    try:
        import hyperscan
    except ImportError:
        return None
    try:
        return _Prefilter(hyperscan, _store)
    except Exception:  # a build of the library that cannot compile these: the plain path
        return None


def _collect(expression: int, _start: int, end: int, _flags: int, events: Any) -> None:
    events.append((end, expression))


def _scan_prefiltered(prefilter: _Prefilter, text: str, limit: int) -> list[Finding] | None:
    """:func:`_scan_plain`'s findings, each rule run only on the lines where one
    pass over the text found its anchors; None if the pass could not run.
    """
    scratches = prefilter.scratches
    try:
        scratch = scratches.pop()
    except IndexError:  # another thread is scanning: the plain path decides
        return None
    events: list[tuple[int, int]] = []
    try:
        # One "?" for each other character: offsets in the bytes are the text's.
        # (Positional arguments: keywords cost a third of the call.)
        prefilter.database.scan(text.encode("ascii", "replace"), _collect, 0, events, scratch)
    except Exception:  # hyperscan.error: the plain path decides
        return None
    finally:
        scratches.append(scratch)
    if events or prefilter.always or (not text.isascii() and _LONG_S in text):
        return _verdicts(prefilter, text, events, limit)
    return []  # most texts: nothing to run a rule on


def _verdicts(
    prefilter: _Prefilter, text: str, events: list[tuple[int, int]], limit: int
) -> list[Finding] | None:
    """The findings in ``text``, given the (end, expression) of what the
    prefilter's pass found in it; None if that is not what it compiles."""
    events.sort()
    nfolded = len(_FOLDED_ANCHORS)
    owners = prefilter.owners
    folded: list[tuple[int, int]] = []
    anchors: dict[int, list[int]] = {}
    triggered: set[int] = set()
    for end, expression in events:
        if not 0 <= expression < len(owners) or not 0 < end <= len(text):
            return None  # not what this prefilter compiles: the plain path decides
        # the last character of what was found: on the line of the match
        if expression < nfolded:
            folded.append((end - 1, 1 << expression))
            continue
        rule, anchor = owners[expression]
        if anchor:
            anchors.setdefault(rule, []).append(end - 1)
        else:
            triggered.add(rule)
    hits = _folded_hits(prefilter, text, folded)
    size = len(text)
    rules = prefilter.rules
    for index in sorted({*anchors, *triggered, *prefilter.always}):
        name, rule, gated, lined = rules[index]
        if gated and index not in triggered:
            continue
        pattern = _pattern(rule)
        if not lined:
            for match in pattern.finditer(text):
                hits.append((match.start(), name))
                if len(hits) >= limit * 4:
                    break
            continue
        done = -1
        for position in anchors.get(index, ()):
            if position < done:
                continue
            end = text.find("\n", position)
            # the window takes the newline, so that a lookahead sees what it saw
            done = end = size if end == -1 else end + 1
            start = text.rfind("\n", 0, position) + 1
            for match in pattern.finditer(text, start, end):
                hits.append((match.start(), name))
                if len(hits) >= limit * 4:
                    break
            else:
                continue
            break
    return _findings(text, hits, limit)


def _folded_hits(
    prefilter: _Prefilter, text: str, folded: list[tuple[int, int]]
) -> list[tuple[int, str]]:
    """What :func:`_scan_lines` finds with the folded rules, each run on the lines
    where the prefilter found its anchors (``folded``: (position, bit), in order).

    Their matches lie within a line and hold their anchors, and those of
    env-secret, json-secret and key-material are ASCII, so they are on lines the
    rules run on here, which but for a line of a key named iv alone (checked) are
    among those _scan_lines runs on. In text with İ, _scan_lines takes every match
    over the whole text instead: here every match in each line, and no check. In
    text with ſ, a case-blind "password" may hold it where Hyperscan sees a "?":
    connection-string-password then runs as _scan_lines runs it, on the lines
    holding a match of it (only those can give one).
    """
    ascii = text.isascii()
    every = not ascii and _DOTTED_I in text
    long_s = not ascii and _LONG_S in text
    hits: list[tuple[int, str]] = []
    size = len(text)
    at, count = 0, len(folded)
    only_iv = 1 << (len(_FOLDED_ANCHORS) - 1)
    while at < count:
        position = folded[at][0]
        end = text.find("\n", position)
        end = size if end == -1 else end
        start = text.rfind("\n", 0, position) + 1
        mask = 0
        while at < count and folded[at][0] < end:
            mask |= folded[at][1]
            at += 1
        if mask == only_iv and not every and not _triggered_line(text, start, end):
            continue
        for name, rule, anchored in prefilter.folded_rules[mask]:
            if long_s and rule == _CONNECTION_PASSWORD:
                continue
            pattern = _pattern(rule)
            if every:
                hits += [(match.start(), name) for match in pattern.finditer(text, start, end)]
                continue
            find = pattern.match if anchored else pattern.search
            match = find(text, start, end)
            if match is not None:
                hits.append((match.start(), name))
    if long_s:
        name = RULES[_CONNECTION_PASSWORD][0]
        pattern = _pattern(_CONNECTION_PASSWORD)
        if every:
            return hits + [(match.start(), name) for match in pattern.finditer(text)]
        done = -1
        for match in pattern.finditer(text):
            if match.start() < done:
                continue  # on a line already run
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.start())
            done = end = size if end == -1 else end
            first = pattern.search(text, start, end) if _triggered_line(text, start, end) else None
            if first is not None:
                hits.append((first.start(), name))
    return hits


def _triggered_line(text: str, start: int, end: int) -> bool:
    """Whether :func:`_scan_lines` runs the folded rules on the line
    ``text[start:end]``: its leftmost trigger (lower-cased) has "=" or ":" after it
    (in text whose lower case is as long)."""
    line = text[start:end].lower()
    found = min((i for i in map(line.find, _FOLDED_TRIGGERS) if i != -1), default=-1)
    return found != -1 and (line.find("=", found) != -1 or line.find(":", found) != -1)


def scan(text: str, *, limit: int = 20) -> list[Finding]:
    """Secret-looking matches in ``text`` (at most ``limit``), in text order.

    With the optional ``hyperscan`` package installed, once this process has
    scanned a megabyte, one pass over the text finds every place a rule could
    match and the rules run only there (:func:`_scan_prefiltered`); otherwise
    each rule runs over the whole text (:func:`_scan_plain`). The findings are
    the same.
    """
    global _scanned
    if _scanned < _prefilter_after:
        # Building the prefilter costs about as much as scanning this much text
        # without it: a process that scans less never pays for it.
        _scanned += len(text)
        if _scanned < _prefilter_after:
            return _scan_plain(text, limit)
    prefilter = _prefilter()
    if prefilter is not None:
        found = _scan_prefiltered(prefilter, text, limit)
        if found is not None:
            return found
    return _scan_plain(text, limit)


#: Characters scanned in this process before the prefilter is built (Hyperscan
#: compiles the rules' anchors in about 40 ms; the plain path compiles every rule
#: in 6 ms, then scans 1 MB in 25-35 ms).
PREFILTER_AFTER: Final = 1_000_000
_prefilter_after = PREFILTER_AFTER
_scanned = 0


def _scan_plain(text: str, limit: int) -> list[Finding]:
    """Every rule over the whole text (its triggers first): the reference."""
    hits = _scan_lines(text, _folded_rules(), _FOLDED_TRIGGERS)
    for name, pattern, triggers in _compiled():
        if name in _FOLDED:
            continue
        if triggers and not any(trigger in text for trigger in triggers):
            continue
        for match in pattern.finditer(text):
            hits.append((match.start(), name))
            if len(hits) >= limit * 4:
                break
    return _findings(text, hits, limit)


def _findings(text: str, hits: list[tuple[int, str]], limit: int) -> list[Finding]:
    """The findings of ``hits`` (position, rule), at most ``limit``, in text order."""
    if not hits:
        return []
    hits.sort()
    findings: list[Finding] = []
    line, last = 1, 0
    for position, name in hits:
        line += text.count("\n", last, position)
        last = position
        findings.append(Finding(name, line))
    # A line env-secret already names needs no json-secret finding too, and a line
    # either names needs no key-material finding.
    assigned = {f.line for f in findings if f.rule == "env-secret"}
    named = assigned | {f.line for f in findings if f.rule == "json-secret"}
    return [
        f
        for f in findings
        if not (f.rule == "json-secret" and f.line in assigned)
        and not (f.rule == "key-material" and f.line in named)
    ][:limit]
