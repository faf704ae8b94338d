"""Credentials are refused by default, named by rule and line, never echoed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_hydrate import Ledger, SecretDetected
from git_hydrate.secrets import RULES, scan
from tests.conftest import ROOT, git, hydrate

# Built at run time so that no credential-shaped literal sits in the source.
AWS_ID = "AKIA" + "IOSFODNN7" + "EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4" * 5
SAMPLES = {
    "private-key": "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n",
    "aws-access-key-id": f"aws_access_key_id = {AWS_ID}\n",
    "aws-secret-access-key": "aws_secret_access_key = "
    + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"
    + "A1b2C3d4e5"
    + "\n",
    "github-token": f"token: {GITHUB}\n",
    "gitlab-token": "glpat-" + "x1Y2z3W4v5U6t7S8r9Q0" + "\n",
    "slack-token": "xoxb-" + "1234567890-abcdefghij" + "\n",
    "stripe-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "\n",
    "google-api-key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q" + "\n",
    "openai-key": "sk-proj-" + "a1b2c3d4" * 3 + "T3Blbk" + "FJ" + "z9y8x7w6" * 3 + "\n",
    "anthropic-key": "sk-ant-" + "api03-" + "a1b2c3d4" * 5 + "\n",
    "npm-token": "npm_" + "a1b2c3d4e5f6" * 3 + "\n",
    "jwt": "eyJhbGciOiJIUzI1NiJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n",
    "url-credentials": "DATABASE=postgres://admin:" + "hunter2secret" + "@db.internal:5432/app\n",
    "env-secret": "DEBUG=1\nSTRIPE_CLIENT_SECRET=" + "s3cr3tValue9876543" + "\n",
    "json-secret": '{"name": "app", "api_key": "' + "sk9Jd8fK2mQ7xLp3" + '"}\n',
    "putty-private-key": "PuTTY-User-Key-" + "File-3: ssh-ed25519\n",
    "webhook-url": "https://hooks.slack.com/"
    + "services/T01ABCDEF/B02GHIJKL/"
    + "a1B2" * 6
    + "\n",
    "sendgrid-key": "SG." + "a1B2c3D4e5F6g7H8i9J0kL" + "." + "m1N2o3P4" * 5 + "q9R" + "\n",
    "twilio-api-key": "sid = SK" + "0123456789abcdef" * 2 + "\n",
    "twilio-account-sid": "sid = AC" + "fedcba9876543210" * 2 + "\n",
    "shopify-token": "token = shpat_" + "0123456789abcdef" * 2 + "\n",
    "vault-token": "VAULT=hvs." + "a1B2c3D4e5" * 3 + "\n",
    "digitalocean-token": "do = dop_v1_" + "0123456789abcdef" * 4 + "\n",
    "pypi-token": "pw = pypi-AgE" + "IcHlwaS5vcmc" * 5 + "\n",
    "huggingface-token": "hf = hf_" + "aBcDeFgHiJ" * 3 + "kLmN" + "\n",
    "databricks-token": "db = dapi" + "0123456789abcdef" * 2 + "\n",
    "mailgun-key": "mg = key-" + "fedcba9876543210" * 2 + "\n",
    "azure-connection-string": "AccountName=x;Account" + "Key=" + "a1B2c3D4+/" * 8 + "==\n",
    "connection-string-password": "Server=db;User ID=app;Pass" + "word=" + "Zx9Yw8Vu7T" + ";\n",
    "npmrc-auth": "//registry.npmjs.org/:_auth" + "Token=" + "0a1b2c3d-" * 4 + "\n",
    "docker-auth": '    "auth": "' + "ZGVwbG95OmFiYzEyMw" + '=="\n',
    "key-material": "hmac_key = " + "0123456789abcdef" * 4 + "\n",
}
LOWER_CASE_KEYS = [
    "password=" + "Tr0ub4dorXyz93",
    'db_password: "' + "hunter2hunter2x9" + '"',
    'api_key = "' + "sk9Jd8fK2mQ7xLp3" + '"',
    '    secret_key = "' + "django-insecure-abc123def456" + '"',
    # quoted keys (JSON, dict literals), dotted and dashed names, camelCase
    '  "password": "' + "hunter2hunter2x9" + '",',
    "    'api_key': '" + "sk9Jd8fK2mQ7xLp3" + "',",
    "db.password=" + "Tr0ub4dorXyz93",
    "api-key: " + "Tr0ub4dorXyz93",
    'secretKey: "' + "Abc123def456Xyz" + '"',
    "accessToken=" + "Abc123def456Xyz",
    "SECRET_KEY_BASE=" + "a8f5f167f44f4964e6c998dee827110c",
    # plurals and camelCase run-ons, list items, declarations, other separators
    "passwords: " + "Abc123Def456x",
    'passwordHash = "' + "Abc123Def456x" + '"',
    "- POSTGRES_PASSWORD=" + "S3cretPassw0rd",
    'const API_KEY = "' + "Abc123Def456x" + '";',
    "ENV API_TOKEN=" + "Abc123Def456x",
    '$env:API_TOKEN = "' + "Abc123Def456x" + '"',
    'API_KEY := "' + "Abc123Def456x" + '"',
    "password => '" + "Abc123Def456x" + "'",
]
HARMLESS = [
    "The edge proxy sets X-Request-Id on every response.",
    'PASSWORD = os.environ["DB_PASSWORD"]\n',
    "API_TOKEN=${API_TOKEN_FROM_VAULT}\n",
    "DB_PASSWORD=changeme123456\n",
    '"https://username:password@host.com:80/path"\n',
    # a URL's password that is its user's (a CI service's), or says it is none: umami's
    # README and podman/env.sample, maybe's CI were withheld whole (explorer22)
    "DATABASE_URL: postgres://postgres:postgres@localhost:5432\n",
    "postgresql://username:mypassword@localhost:5432/mydb\n",
    "DATABASE_URL=postgresql://umami:replace-me-with-a-random-string@db:5432/umami\n",
    "url = postgres://postgres:mysecretpassword@localhost/app\n",
    "REDIS_URL=redis://:your_password@cache:6379/0\n",
    # a host reserved for documentation (RFC 2606, 6761) reaches no one: ccache's
    # manual (87 KiB, ranked 1st-3rd for its --dry-run ticket) was withheld whole
    "* `+http://someusername:p4ssw0rd@example.com/cache/+`\n",
    "url = https://user:password123@example.org/path\n",
    "smtp://mailer:Wq81zLp0@mail.example.net:587\n",
    "redis://cache:Wq81zLp0@redis.internal.example\n",
    "amqp://worker:Wq81zLp0@mq.test/vhost\n",
    "ldap://bind:Wq81zLp0@dc1.corp.invalid\n",
    "See https://deploy:Wq81zLp0@example.com. Or (https://deploy:Wq81zLp0@EXAMPLE.ORG:8080).\n",
    'puts("fetch https://deploy:Wq81zLp0@example.com\\n");\n',
    "def get_token(self) -> str:\n    return self._token\n",
    "Use AKIA-style ids only in examples.\n",
    "password = read_password_2()\n",
    "token = settings.api_token1\n",
    "max_tokens = 4096\n",
    "DEBUG_TOKEN=abcdefghijklmnop\n",
    # the secret word inside a longer word names no secret
    '"tokenizer": "gpt2-medium-v2",\n',
    'tokenizer_name: "Abc123def456Xyz"\n',
    "secret_path=/etc/app/v2/keys\n",
    "token_url=/api/v2/login\n",
    "\u017fecret=abcDEF123456\n",
    '{"tokenizer": "gpt2-medium-v2", "max_tokens": 4096}\n',
    '{"password": "${DB_PASSWORD}"}\n',
    'print("token", "Abc123def456Xyz")\n',
    'secretary = "Abc123def456Xyz"\n',
    '"max_tokens": 4096,\n',
    '"password": "${DB_PASSWORD}",\n',
    # an attribute named _auth, and a name called or dotted, hold no npm token
    "self._auth = self._build_auth(auth)\n",
    "_auth = build_basic_auth(user)\n",
    "_authToken = settings.npm_token_value\n",
    # a variable ending a statement (htop's linux/LinuxProcessTable.c was left out whole)
    "            tokenStart = tokenArg0Start;\n",
    "accessToken = cachedToken2Value; // refreshed below\n",
]


#: Passwords in URLs that only begin like a placeholder or like their user's name.
URL_PASSWORDS = [
    "DATABASE_URL=postgres://postgres:postgres2024x@db.internal:5432/app\n",
    "postgresql://app:mypassword9Q@db.internal/app\n",
    "amqp://worker:Replace7Worker@mq.internal/vhost\n",
    "redis://:passwordXq81@cache:6379/0\n",
    # a host that only begins or ends like a reserved one is a real host
    "https://deploy:Wq81zLp0@example.com.attacker.net/x\n",
    "https://deploy:Wq81zLp0@myexample.com/x\n",
    "https://deploy:Wq81zLp0@examples.org/x\n",
    "https://deploy:Wq81zLp0@api.test-cluster.io/x\n",
    # the host is what follows the last "@" of the authority (WHATWG, urllib), nor does
    # a name go on past a percent escape, a backslash or a full stop of another script
    "https://deploy:Wq81zLp0@example.com@attacker.net/x\n",
    "https://deploy:Wq81zLp0@example.com:443@attacker.net/x\n",
    "https://:Wq81zLp0@example.org)x@attacker.net\n",
    "https://deploy:Wq81zLp0@example.com\\@attacker.net/x\n",
    "https://deploy:Wq81zLp0@example.com%2eattacker.net/x\n",
    "https://deploy:Wq81zLp0@example.com\u3002attacker.net/x\n",
    # no other script's letter folds into a reserved name ("ınvalid" is its own name)
    "https://deploy:Wq81zLp0@dc1.\u0131nvalid/x\n",
]


@pytest.mark.parametrize("text", URL_PASSWORDS)
def test_a_url_password_like_a_placeholder_is_still_caught(text: str) -> None:
    assert [f.rule for f in scan(text)] == ["url-credentials"]


@pytest.mark.parametrize("text", LOWER_CASE_KEYS)
def test_assignments_in_any_case_are_caught(text: str) -> None:
    assert [f.rule for f in scan(text)] == ["env-secret"]


def test_every_rule_has_a_sample() -> None:
    assert {name for name, _pattern, _triggers in RULES} == set(SAMPLES)


@pytest.mark.parametrize("rule", sorted(SAMPLES))
def test_each_rule_fires_with_its_line(rule: str) -> None:
    text = "first line\nsecond line\n" + SAMPLES[rule]
    lines = {f.line for f in scan(text) if f.rule == rule}
    assert lines == {3 + (1 if rule == "env-secret" else 0)}


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_passes(text: str) -> None:
    assert scan(text) == []


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200))
def test_scan_never_raises(text: str) -> None:
    for finding in scan(text):
        assert finding.line >= 1


def test_refused_by_default_without_echoing(repo: Path) -> None:
    hydrate(repo, "task-add", "S-1", "--objective", "o", "--acceptance", "a")
    (repo / ".env").write_text("HOST=db\n" + SAMPLES["env-secret"])
    before = git(repo, "for-each-ref")
    refused = hydrate(repo, "add", "S-1", "--file", ".env")
    assert refused.returncode == 1
    assert "env-secret on line 3" in refused.stderr
    assert "s3cr3tValue" not in refused.stderr and "s3cr3tValue" not in refused.stdout
    assert "--allow-secrets" in refused.stderr
    assert git(repo, "for-each-ref") == before
    allowed = hydrate(repo, "add", "S-1", "--file", ".env", "--allow-secrets", "--json")
    assert allowed.returncode == 0, allowed
    assert json.loads(allowed.stdout)["created"] is True


def test_config_switch_and_api(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("S-2", objective="o", acceptance="a")
        with pytest.raises(SecretDetected, match="github-token on line 1"):
            ledger.add_context("S-2", SAMPLES["github-token"], "src")
        with pytest.raises(SecretDetected):
            ledger.add_contexts("S-2", [("fine", "a", 0, None), (SAMPLES["jwt"], "b", 0, None)])
        assert ledger.context_entries("S-2") == []
        ledger.add_context("S-2", SAMPLES["github-token"], "src", allow_secrets=True)
    git(repo, "config", "hydrate.allowSecrets", "true")
    with Ledger(repo) as ledger:
        ledger.add_context("S-2", SAMPLES["jwt"], "src")
        assert len(ledger.context_entries("S-2")) == 2


def test_key_ids_inside_longer_tokens_are_not_flagged() -> None:
    assert scan("x = X" + AWS_ID) == []
    assert scan(AWS_ID)[0].rule == "aws-access-key-id"
    assert scan("id=" + AWS_ID + "Z") == []


@given(
    st.lists(
        st.sampled_from(
            [
                "x = 1",
                "password=Tr0ub4dorXyz93",
                'api_key = "sk9Jd8fK2mQ7xLp3"',
                "  TOKEN: Abc123def456Ghi",
                "secret",
                "token = settings.api_token1",
                "DB_PASSWORD=changeme123456",
                "İstanbul token=Xy12abcdefGHij",
                "SSH_PRIVATEKEY=Abc123def456Xyz",
                'rsa_privatekey: "abc123def456xyz"',
                "API_KEY=a8f5f167f44f4964e6c998dee827110c",
                '{"api_key": "sk9Jd8fK2mQ7xLp3"}',
                '{"a": 1, "token": "Abc123def456Xyz", "b": "x"}',
                "x = {'secret': 'Abc123def456Xyz'}",
                '{"tokenizer": "gpt2-medium-v2"}',
                "",
            ]
        ),
        max_size=12,
    )
)
def test_line_by_line_matching_equals_scanning_the_whole_text(lines: list[str]) -> None:
    from git_hydrate.secrets.plain import scan_lines
    from git_hydrate.secrets.rules import ANCHORED, FOLDED, compiled

    text = "\n".join(lines)
    for name, pattern, triggers in compiled():
        if name in FOLDED:
            # one match per line at most, from the line-by-line scan
            expected = sorted({text.rfind("\n", 0, m.start()) for m in pattern.finditer(text)})
            rules = [(name, pattern, name in ANCHORED)]
            got = sorted(
                text.rfind("\n", 0, p) for p, _n in scan_lines(text, rules.copy, triggers)
            )
            assert got == expected


@pytest.mark.parametrize(
    "text",
    [
        "API_KEY=" + "a8f5f167f44f4964e6c998dee827110c",
        "API_TOKEN=" + "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "DB_PASSWORD=" + "ABCD1234EFGH5678",
        "PRIVATEKEY=" + "Abc123def456Xyz",
        'PASSWORD="' + "Abc123def456Xyz" + '"\r\n',
    ],
)
def test_hex_uuid_upper_case_and_crlf_values_are_caught(text: str) -> None:
    assert [f.rule for f in scan(text)] == ["env-secret"]


#: Texts some rules once backtracked on (seconds to minutes each): found nothing
#: here; ``benchmarks/secrets_linear.py`` times them against benign text as long.
ONCE_QUADRATIC = [
    "password=Abc123Def456" + " " * 20_000 + "x",
    "password=" + " " * 20_000 + "x",
    "token: " + "\t" * 20_000 + "x",
    "- secret = " + " " * 20_000 + "x",
    "password=Abc123Def456" + "\t " * 10_000 + ",x",
    "eyJ" * 40_000,
    "sk-" * 40_000 + "T3BlbkFJ",
]
#: Long lines of key words (minutes before): the same.
KEY_WORD_LINES = ["token" * 40_000 + "\n" + "Password" * 20_000]


@pytest.mark.parametrize("text", ONCE_QUADRATIC)
def test_runs_that_once_backtracked_quadratically_are_linear(text: str) -> None:
    assert scan(text) == []


def test_long_lines_of_key_words_stay_linear() -> None:
    for text in KEY_WORD_LINES:
        assert scan(text) == []  # key words with no value


@pytest.mark.parametrize(
    "text",
    [
        '{"api_key": "' + "sk9Jd8fK2mQ7xLp3" + '"}',
        '{"a": 1, "token": "' + "Abc123def456Xyz" + '", "b": 2}',
        "x = {'secret': '" + "Abc123def456Xyz" + "'}",
        "opts = {'password' => '" + "Abc123def456Xyz" + "'}",
    ],
)
def test_quoted_keys_anywhere_on_a_line_are_caught(text: str) -> None:
    assert [f.rule for f in scan(text)] == ["json-secret"]


def test_text_without_a_trigger_compiles_no_rule() -> None:
    """Every rule names the literals it cannot match without, so a scan of text
    that holds none of them (a pull of tasks without credentials) compiles no
    pattern: rules without triggers were compiled by every scan, 15 of them
    (~10 ms) in a pull of 1,000 tasks."""
    probe = (
        "from git_hydrate.secrets import scan\n"
        "from git_hydrate.secrets import rules\n"
        "assert scan('objective 00001\\ndone\\ncode') == []\n"
        "print(sum(p is not None for p in rules._patterns))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out == "0\n"
    assert all(triggers for _name, _pattern, triggers in RULES)


def test_a_fine_grained_github_token_is_found_alone() -> None:
    """``github_pat_`` tokens (22 + ``_`` + 59 characters) with no key before them:
    the rule spelt the prefix ``ghub_pat_`` and found none (review9); the corpus's
    case has a ``token:`` key, which another rule finds."""
    token = "github_pat_11ABCDEFG0123456789abc_" + "AbCdEfGhIj" * 5 + "123456789"
    assert [f.rule for f in scan(f"clone with {token} please")] == ["github-token"]
    assert scan(f"clone with ghub_pat_{token[11:]} please") == []
