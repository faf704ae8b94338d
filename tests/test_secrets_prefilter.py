"""The one-pass prefilter (optional ``hyperscan``) finds exactly what the plain scan finds.

``plain.scan_plain`` runs every rule over the whole text, as the scanner
always did; ``prefilter.scan_prefiltered`` runs each rule only on the lines where
one Hyperscan pass found the rule's anchors. Their findings must be the same, on
every input: the existing vectors, random text with secrets placed anywhere (at
the start and end of lines and of the text, across lines, beside non-ASCII
letters whose lower case moves offsets) and real files.
"""

from __future__ import annotations

import os
import re
import string
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from git_hydrate import secrets
from git_hydrate.secrets import anchors, plain, prefilter, rules
from tests.conftest import examples
from tests.test_secret_corpus import CORPUS
from tests.test_secrets import GITHUB, HARMLESS, LOWER_CASE_KEYS, SAMPLES

pytest.importorskip("hyperscan")
PREFILTER = prefilter.shared_prefilter()
LIMITS = (1, 3, 20)


def same(text: str) -> None:
    assert PREFILTER is not None
    for limit in LIMITS:
        fast = prefilter.scan_prefiltered(PREFILTER, text, limit)
        assert fast == plain.scan_plain(text, limit), (limit, text[:200])


def test_the_prefilter_is_used_when_installed() -> None:
    assert PREFILTER is not None
    text = "x = 1\n" + GITHUB
    assert prefilter.scan_prefiltered(PREFILTER, text, 20) == secrets.scan(text)
    assert [f.rule for f in secrets.scan(text)] == ["github-token"]


def test_the_prefilter_compiles_only_the_rules_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that scans with the prefilter compiles a rule's pattern only when
    a text holds one of its anchors (all of them cost ~6 ms, most texts none)."""
    assert PREFILTER is not None
    monkeypatch.setattr(rules, "_patterns", [None] * len(secrets.RULES))
    assert prefilter.scan_prefiltered(PREFILTER, "x = 1\n" * 100 + HARMLESS[0], 20) == []
    assert rules._patterns == [None] * len(secrets.RULES)
    found = prefilter.scan_prefiltered(PREFILTER, "x = 1\n" + GITHUB, 20)
    assert [f.rule for f in found or ()] == ["github-token"]
    compiled = [secrets.RULES[i][0] for i, p in enumerate(rules._patterns) if p is not None]
    assert compiled == ["github-token"]


#: every anchored rule is listed, and names a rule that exists
def test_anchors_name_rules() -> None:
    names = {name for name, _pattern, _triggers in secrets.RULES}
    assert set(anchors.ANCHORS) <= names
    assert set(anchors.ANCHORS) | rules.FOLDED | {"aws-secret-access-key"} == names


#: the shortest values the line-bounded rules take, two findings of a rule on one
#: line, keys named iv (``"iv": ...`` only the whole-text fallback reaches) and a key
#: spelled with a long s, which a case-blind Unicode pattern takes for "s"
EDGES = [
    "Server=db;Password=" + "Zx9Yw8" + ";",
    "Server=db; password = " + "Zx9Yw8",
    "PASSWORD=" + "Abc123def456",
    'key = "' + "Abc123def456" + '"',
    "aesKey = " + "Abc123Def456Ghi7",
    "hmac_key = " + "0123456789abcdef" * 2,
    '{"token": "' + "Abc123def456Xyz" + '", "secret": "' + "Abc123def456Xyz" + '"}',
    '"iv": "' + "0123456789abcdef" * 2 + '"',
    # a key named iv with no trigger before its "=", a trigger in its value
    "iv = " + "Abc1keyDef2Ghi3Jkl4",
    "iv: " + "Abc1keyDef2Ghi3Jkl4",
    "token=1;pa\u017f\u017fword=" + "Abcdefgh12" + ";",
    "x=1;pa\u017f\u017fword=" + "Abcdefgh12" + "; # key:",
    # hex key material of letters alone (the one value without a digit), as short
    # as it can be
    'aes_key = "' + "abcdefABCDEF" * 3 + '"',
    "aes_key = " + "abcdefABCDEFabcd" * 2,
    # the rule's case-blind key without a trigger: the plain path never runs it
    "AWSSECRETACCESSKEY=" + "A1b2C3d4E5" * 4,
    # a key named iv with no trigger on its line (found only in text with İ, where
    # the plain path takes every match), or a Kelvin sign's "key" (lower-cased)
    "iv = " + "0123456789abcdef" * 2,
    "iv = " + "0123456789abcdef" * 2 + " # \u212aey:",
    # a long-s password alone on its line (no trigger: not run), twice on a line
    "x;pa\u017f\u017fword=" + "Abcdefgh12" + ";",
    "key=1;pa\u017fsword=" + "Abcdefgh12" + ";password=" + "Abcdefgh34" + ";",
]
VECTORS = [
    *EDGES,
    *SAMPLES.values(),
    *LOWER_CASE_KEYS,
    *HARMLESS,
    *(text for _category, text in CORPUS),
]


@pytest.mark.parametrize("text", VECTORS)
def test_vectors_alone_and_in_context(text: str) -> None:
    same(text)
    same("first line\n" + text + "\nlast line")
    same("x" + text + "x")
    same(text.rstrip("\n") + text)
    same(text.replace("\n", "\r\n"))
    same("İ " + text)  # a character whose lower case is two
    same(text + "\nİ")  # (on a line of its own)
    same("\u212a\n" + text)  # the Kelvin sign lower-cases to "k"
    same("ı" + text)  # a dotless i, which a case-blind i takes
    same("é" + text + "ſ")


def test_many_findings_are_cut_the_same_way() -> None:
    text = "\n".join(VECTORS * 3)
    same(text)
    same(text.replace("\n", " "))


#: pieces random text is built from: secrets, their parts, key words and the
#: characters the rules turn on (separators, quotes, blanks, line ends, non-ASCII)
PIECES = [
    *VECTORS,
    *(v[: len(v) // 2] for v in SAMPLES.values()),
    *(v[len(v) // 2 :] for v in SAMPLES.values()),
    "password",
    "Password",
    "PASSWD",
    "secret",
    "token",
    "KEY",
    "key",
    "iv",
    "api_key",
    "aws_secret_access_key",
    "AWSSECRETACCESSKEY",
    "ecret_access",
    "://",
    "@",
    ":",
    "=",
    ";",
    ",",
    "'",
    '"',
    " ",
    "\t",
    "\n",
    "\r\n",
    "\x1c",
    "\u2028",
    "\u00a0",
    "-----",
    "PRIVATE KEY",
    "BLOCK",
    "A1b2C3d4E5f6G7h8",
    "0123456789abcdef0123456789abcdef",
    "İ",
    "ı",
    "\u212a",
    "ſ",
    "é",
    "😀",
    "SK",
    "AC",
    "hf_",
    "key-",
    "dapi",
    "_auth",
    '"auth"',
    "eyJ",
]


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=12), max_size=30))
@example(["redis://:", "pw", "@", "cache:6379/0"])
@example(["PASSWORD", "=", "İ", "Abc123def456Xyz"])
def test_random_text_with_secrets_anywhere(pieces: list[str]) -> None:
    same("".join(pieces))


@settings(max_examples=examples(200), deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300),
    st.sampled_from(VECTORS),
    st.integers(min_value=0, max_value=300),
)
def test_a_secret_at_a_random_place(text: str, secret: str, at: int) -> None:
    at = min(at, len(text))
    same(text[:at] + secret + text[at:])
    same(text[:at] + secret.rstrip("\n") + text[at:])


def anchored_lines(text: str) -> dict[str, set[int]]:
    """For each rule, the starts of the lines on which the prefilter's one pass
    found one of the rule's anchors (what :func:`prefilter.scan_prefiltered` runs
    the rule on)."""
    assert PREFILTER is not None
    events: list[tuple[int, int]] = []
    PREFILTER.database.scan(
        text.encode("ascii", "replace"), match_event_handler=prefilter.collect, context=events
    )
    lines: dict[str, set[int]] = {}
    for end, expression in events:
        if expression < len(anchors.FOLDED_ANCHORS):
            names = anchors.FOLDED_ANCHORS[expression][1]
        else:
            rule, is_anchor = PREFILTER.owners[expression]
            names = (PREFILTER.rules[rule][0],) if is_anchor else ()
        for name in names:
            lines.setdefault(name, set()).add(text.rfind("\n", 0, end - 1) + 1)
    return lines


def held_by_anchors(rule: str, text: str) -> bool:
    """Whether the prefilter relies on ``rule``'s anchors in ``text``: not where a
    case-blind connection-string key may be spelled with ſ for s, which Hyperscan
    does not fold (that rule then runs on the lines holding a match of it)."""
    return rule != "connection-string-password" or "\u017f" not in text


#: the rules the prefilter runs by lines: every one of their matches must lie on a
#: line where one of their anchors is found
LINED = sorted(set(anchors.ANCHORS) | rules.FOLDED)
#: keys env-secret and json-secret take (hypothesis cannot draw them from the
#: patterns: a random name rarely holds a secret word), in the cases they take
KEYS = [
    "password",
    "DB_PASSWORD",
    "passwd",
    "api_key",
    "API-KEY",
    "apikey",
    "secret",
    "client_secret",
    "SECRET_KEY_BASE",
    "token",
    "accessToken",
    "auth.token",
    "private_key",
    "accessKey",
    "passwords",
    "passwordHash",
    "key",
    "hmac_key",
    "iv",
]


PATTERNS = {name: re.compile(pattern, re.MULTILINE) for name, pattern, _t in secrets.RULES}


def assignments() -> st.SearchStrategy[str]:
    """Lines like the folded rules' matches: a key among :data:`KEYS` (quoted or
    not) after what env-secret takes before a key, a separator, a value (quoted or
    not, 8 to 40 characters of the rules' classes, some too short, or 30 to 34 hex
    letters) and what the rules take after one (blanks, a comma, a comment, a
    carriage return)."""
    return st.tuples(
        st.sampled_from(["", "  ", "\t", "- ", "export ", "ENV ", "const ", "$env:", "x = {"]),
        st.sampled_from(["", '"', "'"]),
        st.sampled_from(KEYS),
        st.from_regex(r"[ \t]{0,2}(:=|=>|=|:)[ \t]{0,2}", fullmatch=True),
        st.from_regex(
            r"([\"'])[A-Za-z0-9_\-+/=!@%^&*.~]{8,40}\1|[A-Za-z0-9_\-+/=!@%^&*~]{8,40}"
            r"|([\"']?)[a-fA-F]{30,34}\2",
            fullmatch=True,
        ),
        st.from_regex(r"[ \t]{0,2}([,;})\]][ \t]{0,2})?((#|//)[^\n]{0,5})?\r?", fullmatch=True),
    ).map(lambda p: p[0] + p[1] + p[2] + p[1] + "".join(p[3:]))


def _drawn(rule: str) -> st.SearchStrategy[str]:
    """Matches of ``rule``: drawn from its own pattern, or for the rules whose keys a
    random name rarely holds, from :func:`assignments` (besides the pattern for
    key-material)."""
    if rule in ("env-secret", "json-secret"):
        return assignments()
    drawn = st.from_regex(PATTERNS[rule], fullmatch=True)
    return drawn | assignments() if rule == "key-material" else drawn


#: text to put before and after a match, and the matches of each rule (made once:
#: building them again for each example cost more than drawing from them)
CONTEXT = st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=3).map("".join)
DRAWN = {rule: _drawn(rule) for rule in LINED}


@pytest.mark.parametrize("rule", LINED)
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_a_rule_lies_on_a_line_where_its_anchor_is_found(
    rule: str, data: st.DataObject
) -> None:
    """Each rule's anchors hold every match of the rule: matches drawn from the
    rule's own pattern (its shortest and longest runs, any case, any character
    its classes take), put among other text, are each on a line the prefilter
    finds for the rule; and the findings are the plain path's."""
    pattern = PATTERNS[rule]
    text = data.draw(CONTEXT) + data.draw(DRAWN[rule]) + data.draw(CONTEXT)
    if held_by_anchors(rule, text):
        found = anchored_lines(text).get(rule, set())
        for match in pattern.finditer(text):
            assert text.rfind("\n", 0, match.start()) + 1 in found, (rule, match.group())
    same(text)


#: characters to put in place of each character of a match: printable ASCII, the
#: blanks and line ends the rules turn on, and a letter Hyperscan sees as "?"
ALPHABET = "".join(sorted(set(string.printable) - {"\n", "\x0c"})) + "\xe9"


def test_a_match_with_any_one_character_changed_lies_on_an_anchored_line() -> None:
    """Each character of each sample, in turn, replaced by each character of
    :data:`ALPHABET`: every match of the sample's rules then is on a line where
    the prefilter finds the rule (a class of an anchor that leaves out a
    character its rule takes fails here, where random text rarely tries it)."""
    bases = [
        *(SAMPLES[name].rstrip("\n") for name in LINED),
        *LOWER_CASE_KEYS,
        *EDGES,
        '{"api_key": "' + "sk9Jd8fK2mQ7xLp3" + '"}',
        "x = {'secret': '" + "Abc123def456Xyz" + "'}",
    ]
    for base in bases:
        # (the rules the base matches: a change makes it match others rarely)
        rules = [name for name in LINED if PATTERNS[name].search(base)]
        for at in range(len(base)):
            for character in ALPHABET:
                text = base[:at] + character + base[at + 1 :]
                matches = [
                    (n, m)
                    for n in rules
                    if held_by_anchors(n, text)
                    for m in PATTERNS[n].finditer(text)
                ]
                if not matches:
                    continue
                found = anchored_lines(text)
                for name, match in matches:
                    assert text.rfind("\n", 0, match.start()) + 1 in found.get(name, ()), (
                        name,
                        text,
                    )


def _real_files(limit_bytes: int) -> list[str]:
    texts: list[str] = []
    total = 0
    root = sysconfig.get_paths()["purelib"]
    for dirpath, _dirs, names in sorted(os.walk(root)):
        for name in sorted(names):
            if not name.endswith((".py", ".md", ".txt", ".json", ".cfg", ".toml", ".rst")):
                continue
            try:
                text = Path(dirpath, name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            texts.append(text)
            total += len(text)
            if total >= limit_bytes:
                return texts
    return texts


def test_real_files() -> None:
    texts = _real_files(3_000_000)
    assert len(texts) > 100
    for text in texts:
        same(text)


def test_a_scan_while_another_thread_scans_takes_the_plain_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert PREFILTER is not None
    monkeypatch.setattr(secrets, "_scanned", secrets.PREFILTER_AFTER)
    text = "x = 1\n" + SAMPLES["jwt"]
    scratch = PREFILTER.scratches.pop()  # as another thread's scan does
    try:
        assert prefilter.scan_prefiltered(PREFILTER, text, 20) is None
        assert [f.rule for f in secrets.scan(text)] == ["jwt"]
    finally:
        PREFILTER.scratches.append(scratch)
    assert [f.rule for f in secrets.scan(text)] == ["jwt"]


def test_a_compiled_prefilter_is_kept_and_loaded_with_the_same_findings() -> None:
    import hyperscan

    kept: dict[str, bytes] = {}
    compiled = prefilter.Prefilter(hyperscan, (kept.get, kept.__setitem__))
    assert len(kept) == 1  # compiled, then stored under its key
    (key, data) = next(iter(kept.items()))
    loaded = prefilter.Prefilter(hyperscan, (kept.get, lambda k, d: pytest.fail("saved twice")))
    texts = [*(s for s in SAMPLES.values()), *HARMLESS, *_real_files(400_000)]
    for text in texts:
        for limit in LIMITS:
            assert prefilter.scan_prefiltered(loaded, text, limit) == prefilter.scan_prefiltered(
                compiled, text, limit
            )
    # A damaged or foreign database is compiled again, and stored again.
    for bad in (data[: len(data) // 2], b"not a database", b""):
        kept = {key: bad}
        again = prefilter.Prefilter(hyperscan, (kept.get, kept.__setitem__))
        assert kept[key] != bad
        assert prefilter.scan_prefiltered(again, SAMPLES["jwt"], 20) == plain.scan_plain(
            SAMPLES["jwt"], 20
        )


def test_add_tree_keeps_the_compiled_prefilter_in_the_git_dir(repo: Path) -> None:
    from tests.conftest import git, hydrate, hydrate_process

    (repo / "a.py").write_text("x = 1\n")
    (repo / "b.env").write_text("token = " + GITHUB + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    kept = repo / ".git" / "hydrate" / "secret-prefilter"
    for run in range(3):
        task = f"K-{run}"
        assert (
            hydrate(repo, "task-add", task, "--objective", "o", "--acceptance", "a").returncode
            == 0
        )
        (repo / ".git" / "hydrate" / "sha256-cache").unlink(missing_ok=True)
        result = hydrate_process(repo, "add-tree", task, "-v")
        assert result.returncode == 0, result
        assert "  secret        b.env (53 bytes)" in result.stdout
        assert kept.read_bytes().startswith(b"# git-hydrate secret-prefilter ")
        assert kept.stat().st_mode & 0o777 == 0o600  # nobody else can plant a scanner
        if run == 1:
            kept.write_bytes(kept.read_bytes()[:200])  # damaged: rebuilt by the next run
    assert len(kept.read_bytes()) > 1000


def test_a_planted_prefilter_is_not_loaded(repo: Path) -> None:
    """A compiled database that someone else could have written (group- or
    world-writable, or another user's) is never loaded: one that finds nothing
    would let every secret through."""
    import hyperscan

    from git_hydrate.hydrate.cache import keep_compiled_prefilter
    from git_hydrate.store import Repository
    from tests.conftest import git, hydrate, hydrate_process

    blind = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    blind.compile(expressions=[b"zzz-never-zzz"], ids=[0], elements=1, flags=[0])
    (repo / "b.env").write_text("token = " + GITHUB + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    assert (
        hydrate(repo, "task-add", "P-0", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    assert hydrate_process(repo, "add-tree", "P-0").returncode == 0
    kept = repo / ".git" / "hydrate" / "secret-prefilter"
    header = kept.read_bytes().split(b"\n")[0] + b"\n"
    kept.write_bytes(header + hyperscan.dumpb(blind))  # the right key, a blind scanner
    with Repository(repo) as opened:
        loaded: list[bytes | None] = []
        original = secrets.keep_compiled
        try:
            secrets.keep_compiled = lambda load, save: loaded.append(load(header[31:-1].decode()))
            kept.chmod(0o600)
            keep_compiled_prefilter(opened)
            kept.chmod(0o664)
            keep_compiled_prefilter(opened)
        finally:
            secrets.keep_compiled = original
    assert loaded[0] is not None and loaded[1] is None  # group-writable: not trusted
    assert (
        hydrate(repo, "task-add", "P-1", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    (repo / ".git" / "hydrate" / "sha256-cache").unlink()
    found = hydrate_process(repo, "add-tree", "P-1", "-v")
    assert "  secret        b.env" in found.stdout, found
    assert kept.stat().st_mode & 0o777 == 0o600 and len(kept.read_bytes()) > 1000


def test_add_diff_keeps_the_prefilter_only_for_a_diff_worth_it(repo: Path) -> None:
    """A diff of more than PREFILTER_AFTER bytes loads (or compiles and keeps) the
    prefilter as add-tree does; a small one scans without it and keeps nothing."""
    from tests.conftest import git, hydrate, hydrate_process

    (repo / "small.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    assert (
        hydrate(repo, "task-add", "D-1", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    kept = repo / ".git" / "hydrate" / "secret-prefilter"
    (repo / "small.py").write_text("x = 2\n")
    assert hydrate_process(repo, "add-diff", "D-1", "--worktree").returncode == 0
    assert not kept.exists()
    lines = "".join(f"value_{n} = {n} * 3\n" for n in range(9_000))  # a 200 KB diff a file
    for n in range(1 + secrets.PREFILTER_AFTER // len(lines)):
        (repo / f"big{n}.py").write_text(lines)
    (repo / "key.env").write_text("token = " + GITHUB + "\n")
    git(repo, "add", "-A")
    result = hydrate_process(repo, "add-diff", "D-1", "--staged", "-v")
    assert result.returncode == 0, result
    assert "secret" in result.stdout, result  # found through the prefilter
    assert kept.read_bytes().startswith(b"# git-hydrate secret-prefilter ")
