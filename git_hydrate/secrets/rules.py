"""The rules: what a credential looks like, and each rule's compiled pattern.

A rule is a name, a regular expression and the trigger literals without which
it cannot match. The folded rules (keys named like secrets, assigned a
secret-looking value) are matched line by line, their triggers looked for in
any case. Patterns are compiled when a scan first needs them.
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = [
    "ANCHORED",
    "FOLDED",
    "FOLDED_INDICES",
    "FOLDED_TRIGGERS",
    "RULES",
    "compiled",
    "folded_rules",
    "rule_pattern",
]


#: A URL's password that says it is none, up to its ``@``: a word for one, maybe after
#: a word such as ``my`` (umami's README: ``postgresql://username:mypassword@``;
#: ``mysecretpassword``, ``dbpass``), a call to change it
#: (``replace-me-with-a-random-string``), or a mask (``xxxx``, ``****``).
_URL_PLACEHOLDER: Final = (
    r"(?!(?i:(?:my|your|some|the|db|example|dummy|fake)?[_-]?(?:secret)?[_-]?"
    r"(?:password|passwd|pass|pwd|secret|token)"
    r"|(?:change|replace)[_-]?me[^\s/:@\"'<>$%{}]*+|x+|\*+)@)"
)

#: A host reserved for documentation and tests (RFC 2606, RFC 6761), after a URL's
#: ``@``: ``example.com``, ``.net``, ``.org`` and their subdomains, any name under
#: ``.example``, ``.test`` or ``.invalid`` (ASCII letters, any case; a final dot), then
#: a port, then where the host ends (ccache's manual:
#: ``http://someusername:p4ssw0rd@example.com/cache/``). No credential reaches one. A
#: URL parser takes the host after the authority's last ``@`` (WHATWG, urllib:
#: ``//u:p@example.com@evil.io``), and it reads past a percent escape or another
#: script's full stop: a name followed by one, or by a later ``@`` in the authority
#: (``example.com\@evil.io`` for urllib; a C string's ``example.com\n"`` passes), is
#: no reserved host.
_DOCUMENTATION_HOST: Final = (
    r"(?!(?:[A-Za-z0-9-]++\.)*"
    r"(?ai:example\.(?:com|net|org)|[A-Za-z0-9-]++\.(?:example|test|invalid))"
    r"\.?(?::[0-9]*+)?(?=[/?#\\\s\"'<>()\[\]{},;`*+|!&=]|$)(?![^\s/?#\"'<>@]*+@))"
)

#: (rule name, pattern, triggers). A rule's regular expression runs only when
#: one of its triggers (literals, case as the pattern requires) occurs in the
#: text: substring search is far faster than a regex tried at every position.
#: Every rule has triggers: one without them was compiled (~0.7 ms each) by every
#: process that scanned anything, a pull of tasks without a credential included.
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
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    (
        "aws-secret-access-key",
        r"(?i:aws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
        ("ecret_access", "ECRET_ACCESS", "ecretAccess"),
    ),
    (
        "github-token",
        # (classic tokens; fine-grained ones: github_pat_, 22 + "_" + 59 characters)
        r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})(?![A-Za-z0-9_])",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
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
    ("twilio-api-key", r"SK(?<![0-9A-Za-z]SK)[0-9a-f]{32}(?![0-9A-Za-z])", ("SK",)),
    ("twilio-account-sid", r"AC(?<![0-9A-Za-z]AC)[0-9a-f]{32}(?![0-9A-Za-z])", ("AC",)),
    # tokens with a fixed prefix, each regex starting with it so the engine
    # skips ahead to it (a leading lookbehind would be tried at every position)
    (
        "shopify-token",
        r"shp(?<![A-Za-z0-9_]shp)(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9_])",
        ("shp",),
    ),
    ("vault-token", r"hv(?<![A-Za-z0-9_]hv)[sb]\.[A-Za-z0-9_-]{24,}", ("hvs.", "hvb.")),
    (
        "digitalocean-token",
        r"do(?<![A-Za-z0-9_]do)[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9_])",
        ("_v1_",),
    ),
    ("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}", ("pypi-AgE",)),
    ("huggingface-token", r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z]{34}(?![A-Za-z0-9_])", ("hf_",)),
    ("databricks-token", r"dapi(?<![A-Za-z0-9_]dapi)[a-f0-9]{32}(?![A-Za-z0-9_])", ("dapi",)),
    ("mailgun-key", r"key-(?<![A-Za-z0-9_]key-)[a-f0-9]{32}(?![A-Za-z0-9_])", ("key-",)),
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
        # .npmrc: _authToken=... and the legacy _auth=base64(user:pass); not an
        # attribute (self._auth = ...) nor a value that is a name called or dotted
        # (self._build_auth(auth)): no token holds a dot or ends at a parenthesis
        r"_auth(?<![A-Za-z0-9._]_auth)(?:Token)?[ \t]*=[ \t]*+[\"']?(?![\"']?\$\{)"
        r"[A-Za-z0-9+/=_:-]{12,}+(?![.(])",
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
        # user:password@, or an empty user: redis://:<password>@cache; a password that
        # is its user's (a CI service's postgres:postgres) or a placeholder passes, as
        # does one for a host reserved for documentation
        r"://(?:(?P<user>[^\s/:@\"'<>\[]{1,64}):(?!(?P=user)@)"
        + _URL_PLACEHOLDER
        + r"[^\s/:@\"'<>$%{}]{6,128}"
        r"|:"
        + _URL_PLACEHOLDER
        + r"[^\s/:@\"'<>$%{}]{2,128})@"
        + _DOCUMENTATION_HOST
        + r"[^\s/@\"'<>]",
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
        # names, which are code, nor a name ending a statement (C, Java, JS:
        # `tokenStart = tokenArg0Start;`, a variable: a literal would be quoted)
        r"|(?![A-Za-z_$][A-Za-z0-9_$]*+[ \t]*+;[ \t]*+(?://[^\n]*)?\r?$)"
        r"(?!\.{0,2}/)(?=[^\s]*[0-9])(?=[^\s]*[a-z])(?=[^\s]*[A-Z])"
        r"[A-Za-z0-9_\-+/=!@%^&*~]{12,}"
        r"|(?![A-Za-z_$][A-Za-z0-9_$]*+[ \t]*+;[ \t]*+(?://[^\n]*)?\r?$)"
        r"(?!\.{0,2}/)(?=[^\s]*[0-9])(?=[^\s]*[A-Za-z])[A-Za-z0-9\-+=!@%^&*~]{12,})"
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


def rule_pattern(index: int) -> re.Pattern[str]:
    """The compiled pattern of ``RULES[index]``."""
    found = _patterns[index]
    if found is None:
        found = _patterns[index] = re.compile(RULES[index][1], re.MULTILINE)
    return found


@functools.cache
def compiled() -> tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...]:
    """Every rule, compiled: (name, pattern, triggers), as the plain path runs them."""
    return tuple((name, rule_pattern(i), triggers) for i, (name, _p, triggers) in enumerate(RULES))


#: Rules matched line by line: their triggers are looked for in the lower-cased text
#: (any case in the text), and the pattern runs only on the lines holding one.
FOLDED: Final = frozenset(
    {"env-secret", "json-secret", "key-material", "connection-string-password"}
)
#: Folded rules anchored at the start of a line: tried there only (``match``).
ANCHORED: Final = frozenset({"env-secret", "key-material"})
#: The folded rules: (index in RULES, anchored).
FOLDED_INDICES: Final = tuple(
    (index, name in ANCHORED) for index, (name, _p, _t) in enumerate(RULES) if name in FOLDED
)
FOLDED_TRIGGERS: Final = tuple(
    dict.fromkeys(t for name, _p, triggers in RULES if name in FOLDED for t in triggers)
)


@functools.cache
def folded_rules() -> list[tuple[str, re.Pattern[str], bool]]:
    """The folded rules as :func:`scan_lines` runs them: (name, pattern, anchored)."""
    return [(RULES[index][0], rule_pattern(index), anchored) for index, anchored in FOLDED_INDICES]
