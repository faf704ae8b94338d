"""One settings source: values read exactly as git reads them, each spelling checked
against git itself, and the security bug this fixes (an empty allowSecrets)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from git_hydrate import Ledger, SecretDetected, ValidationError
from git_hydrate.settings import SETTINGS, Settings, parse_bool, parse_int, parse_records
from tests.conftest import git, hydrate

SPELLINGS = [
    "",
    "true",
    "TRUE",
    "True",
    "yes",
    "YES",
    "on",
    "On",
    "false",
    "FALSE",
    "no",
    "off",
    "OFF",
    "1",
    "0",
    "2",
    "-1",
    "+1",
    "00",
    "0x0",
    "0x10",
    "0X1f",
    "010",
    "08",
    "1k",
    "0k",
    "1K",
    "2m",
    "1g",
    "0g",
    " 1",
    "\t0",
    "1 ",
    " true",
    "true ",
    "maybe",
    "nope",
    "1x",
    "k",
    "-",
    "0x",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775807",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483647",
    "2097151k",
    "2097152k",
    "8589934591g",
    "8589934592g",
]


def _git_reads(kind: str, value: str | None) -> str | None:
    """What ``git config --type=KIND`` prints for ``value`` (``None``: git refuses it)."""
    spec = "x.y" if value is None else f"x.y={value}"
    proc = subprocess.run(
        ["git", "-c", spec, "config", f"--type={kind}", "x.y"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


@pytest.mark.parametrize("value", [*SPELLINGS, None])
def test_booleans_read_as_git_reads_them(value: str | None) -> None:
    expected = _git_reads("bool", value)
    ours = parse_bool(value)
    assert (None if ours is None else ("true" if ours else "false")) == expected, repr(value)


@pytest.mark.parametrize("value", SPELLINGS)
def test_integers_read_as_git_reads_them(value: str) -> None:
    expected = _git_reads("int", value)
    ours = parse_int(value)
    assert (None if ours is None else str(ours)) == expected, repr(value)


#: The spellings that read as false, and as true: our reading, which
#: ``test_booleans_read_as_git_reads_them`` checks against git's for each (asking git
#: here ran ~200 git processes at every collection, in each xdist worker).
FALSE_SPELLINGS = [v for v in SPELLINGS if parse_bool(v) is False]
TRUE_SPELLINGS = [v for v in SPELLINGS if parse_bool(v) is True]


@pytest.mark.parametrize("value", [*FALSE_SPELLINGS, None])
def test_every_false_spelling_of_allow_secrets_refuses_a_secret(
    repo: Path, value: str | None
) -> None:
    secret = 'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n'
    if value is not None:
        git(repo, "config", "hydrate.allowSecrets", value)
    with Ledger(repo) as ledger:
        ledger.add_task("M-1", objective="o", acceptance="a")
        with pytest.raises(SecretDetected):
            ledger.add_context("M-1", secret, "notes")
    (repo / "s.txt").write_text(secret)
    refused = hydrate(repo, "add", "M-1", "--file", "s.txt")
    assert refused.returncode == 1 and "looks like it contains a secret" in refused.stderr


@pytest.mark.parametrize("value", TRUE_SPELLINGS)
def test_every_true_spelling_of_allow_secrets_allows_one(repo: Path, value: str) -> None:
    git(repo, "config", "hydrate.allowSecrets", value)
    with Ledger(repo) as ledger:
        ledger.add_task("M-1", objective="o", acceptance="a")
        entry = ledger.add_context("M-1", 'password = "hunter2-Secret99"\n', "notes")
        assert entry["created"]


def test_a_valueless_key_is_true_and_an_empty_one_false() -> None:
    records = parse_records(b"hydrate.allowsecrets\0hydrate.maxbytes\n8k\0")
    assert records == [("hydrate.allowsecrets", None), ("hydrate.maxbytes", "8k")]
    settings = Settings(records)
    assert settings.boolean("hydrate.allowSecrets") is True
    assert settings.size("hydrate.maxBytes") == 8192
    assert Settings([("hydrate.allowsecrets", "")]).boolean("hydrate.allowSecrets") is False


def test_bad_values_are_one_line_errors_naming_the_key(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("M-1", objective="o", acceptance="a")
    git(repo, "config", "hydrate.maxBytes", "lots")
    result = hydrate(repo, "pack", "M-1")
    assert result.returncode == 1
    whole = "a whole number (k, m or g after it allowed: 64k)"
    assert result.stderr == f"error: git config hydrate.maxBytes must be {whole}, not 'lots'\n"
    git(repo, "config", "hydrate.maxBytes", "-5")
    with Ledger(repo) as ledger, pytest.raises(ValidationError, match="must be positive"):
        ledger.settings.size("hydrate.maxBytes")


def test_one_config_read_serves_a_whole_command(repo: Path) -> None:
    """Every setting comes from one `git config` process per repository."""
    with Ledger(repo) as ledger:
        first = ledger.settings
        first.size("hydrate.maxBytes")
        first.boolean("hydrate.allowSecrets")
        assert ledger.repo.settings is first


def test_subsection_case_is_kept_and_the_rest_folded() -> None:
    settings = Settings(parse_records(b"branch.Feature/X.remote\nupstream\0"))
    assert settings.raw("branch.Feature/X.remote") == "upstream"
    assert settings.raw("BRANCH.Feature/X.REMOTE") == "upstream"
    assert settings.raw("branch.feature/x.remote") is None


def test_every_setting_is_declared_once_with_a_default_and_a_description() -> None:
    keys = [setting.key for setting in SETTINGS]
    assert len(keys) == len(set(keys))
    for setting in SETTINGS:
        assert setting.key.startswith("hydrate.") and setting.description
        assert setting.default_text


def test_every_size_setting_says_the_suffixes_its_parser_takes() -> None:
    """Each bytes or tokens setting is read by Settings.size, which takes git's k, m and g:
    its description says so (or points to the same suffixes), and 1g is read."""
    sizes = [setting for setting in SETTINGS if setting.kind in ("bytes", "tokens")]
    assert len(sizes) >= 4
    for setting in sizes:
        text = setting.description
        assert "k, m and g" in text or "(same suffixes)" in text, setting.key
        assert "k and m" not in text, setting.key
        settings = Settings(parse_records(f"{setting.key}\n1g\0".encode()))
        assert settings.size(setting.key) == 1024**3, setting.key
