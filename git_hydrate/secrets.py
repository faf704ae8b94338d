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
_FOLDED: Final = frozenset(
    {"env-secret", "json-secret", "key-material", "connection-string-password"}
)
#: Folded rules anchored at the start of a line: tried there only (``match``).
_ANCHORED: Final = frozenset({"env-secret", "key-material"})
_FOLDED_RULES: Final = [
    (name, pattern, name in _ANCHORED) for name, pattern, _t in _COMPILED if name in _FOLDED
]
_FOLDED_TRIGGERS: Final = tuple(
    dict.fromkeys(t for name, _p, triggers in _COMPILED if name in _FOLDED for t in triggers)
)


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
