"""Where each rule can match, as the one-pass prefilter looks for it.

Hyperscan expressions (ASCII, none matching a newline), each a superset of a
rule's matches; see :data:`ANCHORS` and :data:`FOLDED_ANCHORS`.
"""

from __future__ import annotations

from typing import Final

from .rules import RULES

__all__ = [
    "ANCHORS",
    "CONNECTION_PASSWORD",
    "DOTTED_I",
    "FOLDED_ANCHORS",
    "LONG_S",
]


#: Where a rule can match, for the one-pass prefilter (:func:`scan_prefiltered`):
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
ANCHORS: Final[dict[str, tuple[str, ...] | None]] = {
    "private-key": None,
    "putty-private-key": None,
    "aws-access-key-id": (r"A(KIA|SIA|BIA|CCA)[0-9A-Z]{16}",),
    "github-token": (r"gh[pousr]_[A-Za-z0-9]{36}", r"github_pat_[A-Za-z0-9_]{60}"),
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
#: trigger with "=" or ":" after it, so their lines are among those scan_lines
#: runs on; a line of the last alone (a key named iv) is checked for its triggers.
_SECRET_KEY: Final = (
    r"(secret|passw|token|api[_-]?key|private[_-]?key|access[_-]?key)[a-z0-9_.-]*"
    r"[\"']?[ \t]*(:=|=>|=|:)[ \t]*"
)
_KEY_MATERIAL: Final = (
    r"[\"']?[ \t]*(:=|=>|=|:)[ \t]*[\"']?([a-z0-9+/]*[0-9][a-z0-9+/]*|[a-f]{32}[a-f]*)"
    r"={0,2}[\"']?[ \t]*([,;][ \t]*)?(#|//|\r|$)"
)
FOLDED_ANCHORS: Final = (
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
#: (scan_lines then takes every match over the whole text), and ſ, which a
#: case-blind "password" takes for "s" where Hyperscan sees a "?". (Of the other
#: letters a case-blind pattern takes for an ASCII one, ı and the Kelvin sign,
#: none is in "password", and the other folded rules are ASCII-only.)
DOTTED_I: Final = "\u0130"
LONG_S: Final = "\u017f"
#: The index in RULES of connection-string-password, the folded rule that is not
#: ASCII-only.
CONNECTION_PASSWORD: Final = next(
    index for index, (name, _p, _t) in enumerate(RULES) if name == "connection-string-password"
)
