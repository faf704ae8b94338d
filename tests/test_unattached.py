"""Files the task names that add-tree left out are never missing silently.

A file in play or a named test that has no attachment (add-tree skipped it:
too large, a secret, a binary...; or no run read it) is named in the prompt's
``### Not included`` section with add-tree's reason and size, which the task
records with the run, and how to get it; the summary line and the results'
``flagged`` say so too, and the budget stays exact.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from git_hydrate.errors import CorruptData
from git_hydrate.hydrate.rules import REASONS
from git_hydrate.model import Selection, SkippedFile
from git_hydrate.pack.omissions import Unattached
from git_hydrate.store import Repository
from git_hydrate.taskrefs import Change, TaskRefs, TaskState

from .conftest import commit_files, git, hydrate, notice_of

OUTPUT_CONTRACT_END = "4. Stop and ask when a decision needs an operator.\n"

BIG = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(9000))
SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"


def _task(repo: Path, *named: str) -> None:
    out = hydrate(repo, "task-add", "B-1", "--objective", "fix f17 in big.py",
                  "--acceptance", "ok", *named)  # fmt: skip
    assert out.returncode == 0, out.stderr


@pytest.fixture
def big_repo(repo: Path) -> Path:
    """The tester's repro: one file in play over add-tree's per-file limit."""
    commit_files(repo, {"big.py": BIG, "small.py": "import big\n"})
    return repo


def test_a_too_large_file_in_play_is_named_with_its_reason_and_blob(big_repo: Path) -> None:
    _task(big_repo, "--file-in-play", "big.py")
    added = hydrate(big_repo, "add-tree", "B-1")
    assert added.returncode == 0, added.stderr
    assert "too_large     big.py (312780 bytes; file in play, not attached)" in added.stdout
    blob = git(big_repo, "rev-parse", "HEAD:big.py").strip()

    out = hydrate(big_repo, "prompt", "B-1", "-v")
    assert out.returncode == 0, out.stderr
    notice = notice_of(out.stdout)
    assert notice == (
        "### Not included\n"
        "Named by the task but not attached; the command on a line, if any, prints it.\n"
        f"- `big.py` (305 KiB): not attached, too_large; git show {blob}\n"
    )
    assert git(big_repo, "show", blob) == BIG  # the command prints it whole
    assert out.stdout.endswith(OUTPUT_CONTRACT_END)
    assert out.stderr.startswith("warning: B-1: kept 2 of 2 attachments; ")
    assert "; omitted 0; shrunk 0; file in play big.py not attached (too_large, 305 KiB)\n" in (
        out.stderr
    )
    assert "  unattached file in play big.py (too_large)\n" in out.stderr

    expanded = json.loads(hydrate(big_repo, "expand", "B-1", "--json").stdout)
    flag = {
        "source": "big.py",
        "named": "file in play",
        "size": len(BIG),
        "kept": "unattached",
        "reason": "too_large",
    }
    assert expanded["flagged"] == [flag]
    assert expanded["omitted"] == []  # (the seed's omissions: attachments only)
    assert notice_of(expanded["prompt"]) == notice
    packed = json.loads(hydrate(big_repo, "pack", "B-1").stdout)
    assert packed["flagged"] == [flag]
    assert "Not included" not in json.dumps(packed["packet"])


def test_a_secret_a_binary_and_a_missing_test(repo: Path) -> None:
    commit_files(repo, {"creds.env": SECRET, "small.py": "x = 1\n"})
    (repo / "logo.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\xff")
    git(repo, "add", "logo.bin")
    git(repo, "commit", "-qm", "logo")
    _task(repo, "--file-in-play", "creds.env", "--file-in-play", "logo.bin",
          "--test", "tests/test_new.py")  # fmt: skip
    assert hydrate(repo, "add-tree", "B-1").returncode == 0
    out = hydrate(repo, "prompt", "B-1")
    notice = notice_of(out.stdout)
    assert (
        "- `creds.env` (63 bytes): not attached, secret; withheld: attaching it is an "
        "operator's call (--allow-secrets)\n" in notice
    )
    assert "- `logo.bin` (12 bytes): not attached, binary\n" in notice
    assert "- `tests/test_new.py` (no such file): not attached, missing\n" in notice
    assert "wJalrXUtnFEMI" not in out.stdout  # (no command prints a secret)
    assert "git show" not in notice
    for words in (
        "file in play creds.env not attached (secret, 63 bytes)",
        "file in play logo.bin not attached (binary, 12 bytes)",
        "named test tests/test_new.py not attached (missing)",
    ):
        assert words in out.stderr


def test_a_secret_that_ranks_high_is_said_to_exist_never_shown(repo: Path) -> None:
    """explorer20: a test file holding test tokens was skipped as ``secret`` and the
    prompt never said it exists, so a worker may write it again or miss it. A
    secret add-tree withheld that ranked among the first attachments is named
    (path and size, no command, never its content) in ``### Not included``, after
    the files the task names, and flagged on the summary line; add-tree's own
    ``unattached`` stays the task's named files."""
    commit_files(repo, {"big.py": "def f17(x):\n    return x\n", "tests/test_big.py": SECRET})
    _task(repo, "--file-in-play", "big.py", "--test", "tests/test_new.py")
    added = hydrate(repo, "add-tree", "B-1", "--json")
    assert [u["path"] for u in json.loads(added.stdout)["unattached"]] == ["tests/test_new.py"]
    out = hydrate(repo, "prompt", "B-1")
    assert out.returncode == 0, out.stderr
    assert notice_of(out.stdout) == (
        "### Not included\n"
        "Named by the task but not attached; the command on a line, if any, prints it.\n"
        "- `tests/test_new.py` (no such file): not attached, missing\n"
        "Ranked high for the task but withheld as likely secrets: they exist, their "
        "content is not given.\n"
        "- `tests/test_big.py` (63 bytes): not attached, secret; withheld: attaching it is "
        "an operator's call (--allow-secrets)\n"
    )
    assert "wJalrXUtnFEMI" not in out.stdout
    assert "ranked high tests/test_big.py not attached (secret, 63 bytes)" in out.stderr
    # taken with --allow-secrets: attached, no longer said
    assert hydrate(repo, "add-tree", "B-1", "--allow-secrets").returncode == 0
    assert "test_big.py` (63" not in hydrate(repo, "prompt", "B-1").stdout


def test_a_file_named_after_add_tree_ran_is_not_attached_and_unexplained(repo: Path) -> None:
    commit_files(repo, {"small.py": "x = 1\n", "later.py": "y = 2\n"})
    _task(repo, "--file-in-play", "small.py")
    assert hydrate(repo, "add-tree", "B-1", "small.py").returncode == 0
    assert hydrate(repo, "task-edit", "B-1", "--file-in-play", "later.py").returncode == 0
    out = hydrate(repo, "prompt", "B-1")
    assert notice_of(out.stdout).endswith(
        "- `later.py` (size unknown): not attached; git hydrate add-tree B-1 attaches it\n"
    )
    assert "file in play later.py not attached (no add-tree run read it)" in out.stderr
    assert hydrate(repo, "add-tree", "B-1").returncode == 0
    after = hydrate(repo, "prompt", "B-1")
    assert "### Context from later.py" in after.stdout
    assert "Not included" not in after.stdout  # attached now: the seed's prompt
    assert after.stderr.startswith("prompt: B-1: ")


def test_a_task_that_never_hydrated_files_keeps_the_seeds_prompt(repo: Path) -> None:
    """Files in play of a task without add-tree are what to write, not context."""
    _task(repo, "--file-in-play", "app/new.py", "--test", "tests/test_new.py")
    hydrate(repo, "context-add", "B-1", "--text", "a note", "--source-label", "note")
    out = hydrate(repo, "prompt", "B-1")
    assert "Not included" not in out.stdout
    assert "not attached" not in out.stderr
    assert "flagged" not in json.loads(hydrate(repo, "pack", "B-1").stdout)


def test_a_named_file_add_tree_attached_later_is_no_longer_named(big_repo: Path) -> None:
    _task(big_repo, "--file-in-play", "big.py")
    assert hydrate(big_repo, "add-tree", "B-1").returncode == 0
    assert "big.py" in notice_of(hydrate(big_repo, "prompt", "B-1").stdout)
    assert hydrate(big_repo, "add-tree", "B-1", "--max-file-bytes", "1m").returncode == 0
    out = hydrate(big_repo, "prompt", "B-1", "--max-bytes", "400k")
    assert "### Context from big.py" in out.stdout
    assert "not attached" not in out.stdout + out.stderr


@pytest.mark.parametrize("layout", ["seed", "markdown", "xml"])
def test_the_budget_stays_exact(big_repo: Path, layout: str) -> None:
    """Every budget from the mandatory part up: the prompt fits, its size is what
    the result says, and the named lines come whole, as a count, or not at all."""
    commit_files(big_repo, {f"m{i}.py": f"v{i} = {'x' * 90 * i}\n" for i in range(8)})
    _task(big_repo, "--file-in-play", "big.py", "--file-in-play", "m1.py",
          "--test", "tests/test_big.py")  # fmt: skip
    assert hydrate(big_repo, "add-tree", "B-1").returncode == 0
    seen = set()
    for budget in range(700, 3200, 37):
        out = hydrate(big_repo, "prompt", "B-1", "--format", layout, "--max-bytes", str(budget),
                      "--no-cache")  # fmt: skip
        if out.returncode != 0:
            assert "mandatory ticket structure does not fit" in out.stderr
            continue
        assert len(out.stdout.encode()) <= budget
        assert f"; {len(out.stdout.encode()):,} of {budget:,} bytes;" in out.stderr
        assert "file in play big.py not attached (too_large, 305 KiB)" in out.stderr
        if "not attached, too_large" in out.stdout:
            seen.add("listed")
        elif "2 files the task names not attached: git hydrate prompt B-1 " in out.stdout:
            seen.add("counted")
        else:
            seen.add("none")
    assert seen == {"listed", "counted", "none"}


def test_the_record_leaves_recognising_a_run_as_it_was(big_repo: Path) -> None:
    _task(big_repo, "--file-in-play", "big.py")
    assert hydrate(big_repo, "add-tree", "B-1").returncode == 0
    shown = json.loads(hydrate(big_repo, "show", "B-1", "--json").stdout)
    (selection,) = shown["selections"]
    blob = git(big_repo, "rev-parse", "HEAD:big.py").strip()
    assert selection["skipped"] == [
        {"path": "big.py", "reason": "too_large", "bytes": len(BIG), "oid": blob}
    ]
    again = hydrate(big_repo, "prompt", "B-1", "--refresh")
    assert "recognised: same commit, nothing listed" in again.stderr
    assert "big.py not attached (too_large" in again.stderr
    git(big_repo, "fsck", "--strict")


def test_an_unattached_line_holds_no_repository_text_after_the_path() -> None:
    file = Unattached("a`b <c>.py", "file in play", "too_large", 5000, "0" * 40)
    assert "a`b" not in file.words("T-1") and "<" not in file.words("T-1")
    assert file.part()["reason"] == "too_large"
    assert Unattached("x.py", "named test").part() == {
        "source": "x.py",
        "named": "named test",
        "size": None,
        "kept": "unattached",
        "reason": None,
    }


def test_a_file_in_play_that_is_not_utf8_leaves_the_task_readable(repo: Path) -> None:
    """The skip reason ``not_utf8`` failed the stored reason's pattern (no digits): the
    add-tree commit was written and every command then refused the task, which no
    command could mend. It is named like any other reason now."""
    (repo / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    git(repo, "add", "latin1.txt")
    git(repo, "commit", "-qm", "latin-1")
    _task(repo, "--file-in-play", "latin1.txt")
    added = hydrate(repo, "add-tree", "B-1")
    assert added.returncode == 0, added.stderr
    assert "not_utf8      latin1.txt (5 bytes; file in play, not attached)" in added.stdout
    out = hydrate(repo, "prompt", "B-1")
    assert out.returncode == 0, out.stderr
    blob = git(repo, "rev-parse", "HEAD:latin1.txt").strip()
    assert f"- `latin1.txt` (5 bytes): not attached, not_utf8; git show {blob}\n" in (
        notice_of(out.stdout)
    )
    assert hydrate(repo, "doctor").returncode == 0


@pytest.mark.parametrize("reason", REASONS)
def test_every_reason_add_tree_gives_is_one_a_task_stores(reason: str) -> None:
    skipped = SkippedFile(path="x", reason=reason)
    assert msgspec.json.decode(msgspec.json.encode(skipped), type=SkippedFile) == skipped


def test_a_task_json_its_reader_refuses_is_never_written(repo: Path) -> None:
    """Whatever makes the stored task invalid (here a reason no rule gives), the
    write stops with a one-line error before anything is written."""
    _task(repo)
    refs = TaskRefs(Repository(repo))
    before = refs.tip("B-1")

    def damaging(state: TaskState) -> Change[None]:
        bad = Selection(mode="rev", rev="HEAD", skipped=[SkippedFile(path="x", reason="No!")])
        task = msgspec.structs.replace(state.task, selections=[bad])
        return Change(task=task, links=state.links, message="hydrate: damage", result=None)

    with pytest.raises(CorruptData, match=r"task B-1: task\.json as it would be written: "):
        refs.write("B-1", damaging)
    assert refs.tip("B-1") == before
