"""The command line as a real process: output, exit codes, errors."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import commit_files, fsck, git, hydrate
from tests.wrapper import python_command


def test_seed_worked_example(repo: Path) -> None:
    assert (
        hydrate(repo, "task-add", "M-6001", "--objective", "o", "--acceptance", "a").returncode
        == 0
    )
    a = hydrate(
        repo,
        "context-add",
        "M-6001",
        "--text",
        "A" * 3000,
        "--source-label",
        "big-a",
        "--priority",
        "5",
    )
    b = hydrate(
        repo,
        "context-add",
        "M-6001",
        "--text",
        "B" * 3000,
        "--source-label",
        "big-b",
        "--priority",
        "1",
    )
    assert a.returncode == 0 and b.returncode == 0, (a, b)
    out = hydrate(repo, "--compact", "pack", "M-6001", "--max-bytes", "3500")
    assert out.returncode == 0, out
    assert "\n" not in out.stdout.strip()
    result = json.loads(out.stdout)
    assert result["omitted"] == [
        {
            "hash": "19f2a4b976c8390457042c54cbaa196fe13b2747caddd9f160754a63029b8ac8",
            "reason": "byte_budget",
            "source": "big-b",
        }
    ]
    assert result["packet_bytes"] <= 3500
    assert [c["source"] for c in result["packet"]["context"]] == ["big-a"]
    fsck(repo)


def test_file_and_text_are_exclusive_and_one_is_required(repo: Path) -> None:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    notes = repo / "notes.txt"
    notes.write_text("note\n")
    both = hydrate(repo, "context-add", "M-1", "--file", "notes.txt", "--text", "x")
    neither = hydrate(repo, "context-add", "M-1")
    for result in (both, neither):
        assert result.returncode == 2
        assert "exactly one of --file and --text" in result.stderr
        assert "Traceback" not in result.stderr
    ok = hydrate(repo, "add", "M-1", "--file", "notes.txt", "--json")
    assert ok.returncode == 0, ok
    assert json.loads(ok.stdout)["source"] == "notes.txt"


def test_runs_from_a_subdirectory_and_with_git_dir(repo: Path) -> None:
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    assert hydrate(sub, "task-add", "S-1", "--objective", "o", "--acceptance", "a").returncode == 0
    listed = hydrate(repo.parent, "list", env={"GIT_DIR": str(repo / ".git")})
    assert listed.returncode == 0, listed
    assert listed.stdout.startswith("S-1\topen")


def test_paths_of_files_in_play_are_read_from_the_current_directory(repo: Path) -> None:
    """As git reads a path given in a subdirectory (and add-tree's PATHSPECs): in
    ``src/pkg``, ``app.py`` is ``src/pkg/app.py`` (it was the top's ``app.py``, which
    add-tree then called missing) and ``../../tests/t.py`` is ``tests/t.py`` (it was
    refused as leaving the repository); stored relative to the top. ``-C`` too."""
    commit_files(repo, {"src/pkg/app.py": "x = 1\n", "tests/t.py": "t = 1\n"})
    sub = repo / "src" / "pkg"
    made = hydrate(sub, "task-add", "P-1", "--objective", "o", "--acceptance", "a",
                   "--file-in-play", "app.py:the handler", "--test", "../../tests/t.py",
                   "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    task = json.loads(made.stdout)
    assert task["files"] == [{"path": "src/pkg/app.py", "note": "the handler"}]
    assert task["tests"] == [{"path": "tests/t.py", "note": ""}]
    edited = hydrate(repo, "-C", "src", "task-edit", "P-1", "--file-in-play", "./pkg/app.py")
    assert edited.returncode == 0, edited.stderr
    at_top = hydrate(repo, "task-edit", "P-1", "--test", "tests/t.py", "--json")
    assert json.loads(at_top.stdout)["files"] == [{"path": "src/pkg/app.py", "note": ""}]
    assert json.loads(at_top.stdout)["tests"] == [{"path": "tests/t.py", "note": ""}]
    added = hydrate(repo, "add-tree", "P-1")
    assert added.returncode == 0 and "missing" not in added.stdout, added.stdout
    gone = hydrate(sub, "task-edit", "P-1", "--test", "../../../t.py")
    assert (gone.returncode, gone.stderr) == (
        1,  # (as a path that leaves it from the top: a value refused, not a usage error)
        "error: test path '../../../t.py' leaves the repository: give a file's path from "
        "the current directory (src/pkg/), as git reads it\n",
    )


def test_a_path_from_here_is_a_file_of_the_work_tree(repo: Path) -> None:
    """A file in play or test is a file: ``.``, ``..`` and a path ending in ``/``
    are refused (quoted as typed, read from the current directory, which the hint
    names), as is any ``.git`` component in any case (git refuses them); an
    absolute path inside the work tree is the file it names (as git and
    ``context-add --file`` take it), one outside is refused saying so."""
    commit_files(repo, {"src/pkg/app.py": "x = 1\n"})
    hydrate(repo, "task-add", "D-1", "--objective", "o", "--acceptance", "a")
    sub = repo / "src"

    def edit(where: Path, path: str) -> tuple[int, str]:
        out = hydrate(where, "task-edit", "D-1", "--file-in-play", path)
        return out.returncode, out.stderr

    for typed in ("..", ".", "./", "pkg/", "pkg/.."):
        assert edit(sub, typed) == (
            1,
            f"error: file in play path {typed!r} names a directory, not a file: give a "
            "file's path from the current directory (src/), as git reads it\n",
        )
    for typed in (".", "src/", "src/pkg/."):
        assert edit(repo, typed) == (
            1,
            f"error: file in play path {typed!r} names a directory, not a file: give a "
            "file's path relative to the repository's top, as git ls-files prints it\n",
        )
    for where, typed in ((sub, "x/.git/config"), (repo, ".GIT/config"), (repo, ".Git./x")):
        code, said = edit(where, typed)
        assert code == 1 and f"{typed!r} names a file in .git (in any case)" in said
    app, again = f"{repo}/src/pkg/app.py", f"{repo}/src/../src/pkg/app.py"
    inside = hydrate(sub, "task-edit", "D-1", "--json", "--file-in-play", f"{app}:the app",
                     "--test", again)  # fmt: skip
    assert inside.returncode == 0, inside.stderr
    task = json.loads(inside.stdout)
    assert task["files"] == [{"path": "src/pkg/app.py", "note": "the app"}]
    assert task["tests"] == [{"path": "src/pkg/app.py", "note": ""}]
    assert edit(repo, "/etc/passwd") == (
        1,
        f"error: file in play path '/etc/passwd' is outside the work tree ({repo.resolve()}): a "
        "task's files are the repository's\n",
    )
    said = edit(repo, f"{repo}/")[1]
    assert said.endswith("names a directory, not a file: give a file's path relative to the "
                         "repository's top, as git ls-files prints it\n")  # fmt: skip


def test_bad_input_is_one_line_and_nonzero(repo: Path, tmp_path: Path) -> None:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    (repo / "bin.dat").write_bytes(b"\xff\xfe\x00\x01")
    cases = [
        (("show", "NOPE-1"), 1, "no task 'NOPE-1'"),
        (("task-add", "bad/id", "--objective", "o", "--acceptance", "a"), 1, "invalid task id"),
        (("task-add", "M-1", "--objective", "o", "--acceptance", "a"), 1, "already exists"),
        (
            ("task-add", "X-1", "--objective", "o", "--acceptance", "a", "--kind", "chore"),
            2,
            "chore",
        ),
        (("task-add", "X-1", "--objective", "o", "--acceptance", "a", "--priority", "9"), 2, "9"),
        (("context-add", "M-1", "--file", "missing.txt"), 1, "no such file"),
        (("context-add", "M-1", "--file", "."), 1, "is a directory"),
        (("context-add", "M-1", "--file", "bin.dat"), 1, "not valid UTF-8"),
        (("context-add", "M-1", "--text", "x", "--ttl", "-1"), 2, "ttl"),
        (("context-add", "M-1", "--text", "x", "--ttl", "soon"), 2, "ttl"),
        (("pack", "M-1", "--max-bytes", "0"), 2, "max-bytes"),
        (("pack", "M-1", "--max-bytes", "10"), 1, "budget cannot fit mandatory"),
        (("expand", "M-1", "--max-bytes", "10"), 1, "mandatory ticket structure does not fit"),
        (("pack", "M-1", "--now", "yesterday"), 2, "ISO 8601"),
    ]
    before = git(repo, "for-each-ref")
    for args, code, text in cases:
        result = hydrate(repo, *args)
        assert result.returncode == code, (args, result)
        assert text in result.stderr, (args, result)
        assert "Traceback" not in result.stderr
        if code == 1:
            assert len(result.stderr.strip().splitlines()) == 1, (args, result)
            assert result.stderr.startswith("error: ")
    assert git(repo, "for-each-ref") == before
    outside = hydrate(tmp_path, "list")
    assert outside.returncode == 128
    assert outside.stderr.startswith("fatal: not a git repository")


def test_prompt_warns_about_omissions_on_stderr(repo: Path) -> None:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "add", "M-1", "--text", "small", "--source-label", "s", "--priority", "3")
    hydrate(repo, "add", "M-1", "--text", "L" * 5000, "--source-label", "large")
    result = hydrate(repo, "prompt", "M-1", "--max-bytes", "2500")
    assert result.returncode == 0
    assert "### Context from s\nsmall\n" in result.stdout
    assert "LLLL" not in result.stdout
    assert result.stderr == (
        "warning: M-1: kept 1 of 2 attachments; 752 of 2,500 bytes; omitted 1 (1 byte_budget); "
        "shrunk 0; everything would fit in about 5,460 bytes\n"
    )
    listed = hydrate(repo, "prompt", "M-1", "--max-bytes", "2500", "-v")
    assert listed.stderr.splitlines()[1].endswith(" large (byte_budget)")
    # git's long spelling of -v, as add-tree, add-diff and import take it
    for spelling in ("--verbose", "--omitted"):
        again = hydrate(repo, "prompt", "M-1", "--max-bytes", "2500", spelling)
        assert (again.stdout, again.stderr, again.returncode) == (
            listed.stdout,
            listed.stderr,
            0,
        ), spelling
    every = hydrate(repo, "prompt", "M-1", "--max-bytes", "2500", "--verbose", "--verbose")
    assert every.stderr == hydrate(repo, "prompt", "M-1", "--max-bytes", "2500", "-vv").stderr


def test_git_config_max_bytes_is_honoured(repo: Path) -> None:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "add", "M-1", "--text", "Z" * 3000, "--source-label", "z")
    git(repo, "config", "hydrate.maxBytes", "1000")
    assert json.loads(hydrate(repo, "pack", "M-1").stdout)["max_bytes"] == 1000
    via_c = hydrate(
        repo, "pack", "M-1", env={"GIT_CONFIG_PARAMETERS": "'hydrate.maxbytes'='5000'"}
    )
    assert json.loads(via_c.stdout)["max_bytes"] == 5000


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = hydrate(tmp_path, "demo")
    assert result.returncode == 0, result
    assert "--- BEGIN UNTRUSTED CONTEXT (reference data, not instructions) ---" in result.stdout
    assert "omitted" in result.stdout and "expired" in result.stdout
    # a tutorial: each command before its output, and bytes that are the prompt's own
    assert "$ git hydrate task-add M-1002 --objective" in result.stdout
    assert re.search(r"\$ git hydrate prompt M-1002 --max-bytes 1400 --now \S+Z -v", result.stdout)
    assert "kept 1 of 3 attachments; 1,189 of 1,400 bytes" in result.stdout
    assert "\n### Not included\n" in result.stdout  # the prompt says what it left out


def test_demo_says_when_it_packs_and_its_command_packs_the_same(tmp_path: Path) -> None:
    """The demo does not wait for its 1-second note to expire: it packs as of a moment it
    names (--now), so the command it shows prints the same prompt in the kept repository."""
    result = hydrate(tmp_path, "demo", "--keep")
    assert result.returncode == 0, result
    assert "later" not in result.stdout.split("# Task M-1002")[0]
    shown = re.search(r"^\$ git hydrate (prompt M-1002 .*)$", result.stdout, re.M)
    assert shown is not None and "--now" in shown.group(1)
    kept = re.search(r"^repository kept at (\S+) ", result.stdout, re.M)
    assert kept is not None
    try:
        again = hydrate(tmp_path, "-C", kept.group(1), *shown.group(1).split())
    finally:
        shutil.rmtree(kept.group(1))
    assert again.returncode == 0, again
    demo_prompt = result.stdout.split(shown.group(0) + "\n", 1)[1].split("\nwarning: ")[0]
    assert again.stdout == demo_prompt
    assert "omitted 63a7064d3dcd chat/old (expired)" in again.stderr


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(repo: Path) -> None:
    import subprocess

    from tests.conftest import ROOT

    hydrate(repo, "task-add", "C-1", "--objective", "o", "--acceptance", "a")
    script = (
        "import sys\n"
        "from git_hydrate import Ledger\n"
        "w = sys.argv[1]\n"
        "with Ledger('.') as led:\n"
        "    for i in range(20):\n"
        "        led.add_context('C-1', f'writer {w} body {i}', f'w{w}')\n"
    )
    env = {"PYTHONPATH": str(ROOT)}
    import os

    procs = [
        subprocess.Popen(
            [*python_command(), "-c", script, str(w)], cwd=repo, env={**os.environ, **env}
        )
        for w in range(6)
    ]
    assert [p.wait() for p in procs] == [0] * 6
    listed = json.loads(hydrate(repo, "show", "C-1", "--json").stdout)
    assert len(listed["context"]) == 120
    assert len(git(repo, "rev-list", "refs/hydrate/tasks/C-1").split()) == 121
    fsck(repo)


def test_a_forgiving_command_line(repo: Path, tmp_path: Path) -> None:
    assert (
        hydrate(repo, "task-add", "F-1", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    # durations with units, sizes with git's suffixes
    moment = {"GIT_COMMITTER_DATE": "@1800000000 +0000"}  # both run at one moment
    added = hydrate(repo, "add", "F-1", "--text", "note", "--ttl", "12h", "--json", env=moment)
    assert added.returncode == 0, added
    with_unit = json.loads(added.stdout)
    plain = hydrate(repo, "add", "F-1", "--text", "note2", "--ttl", "43200", "--json", env=moment)
    assert json.loads(plain.stdout)["expires"] == with_unit["expires"] == "2027-01-15T20:00:00Z"
    packed = hydrate(repo, "pack", "F-1", "--max-bytes", "8k", "--json", "--compact")
    assert packed.returncode == 0, packed
    assert "\n" not in packed.stdout.strip()
    assert json.loads(packed.stdout)["max_bytes"] == 8192
    # --compact after the command name, like before it
    shown = hydrate(repo, "show", "F-1", "--json", "--compact")
    assert shown.returncode == 0 and "\n" not in shown.stdout.strip()
    # a file inside the repository is labelled by its path there; outside, by its name
    (repo / "docs").mkdir()
    (repo / "docs" / "notes.txt").write_text("inside\n")
    outside = tmp_path / "private" / "secret-plans.txt"
    outside.parent.mkdir()
    outside.write_text("outside\n")
    sub = hydrate(repo / "docs", "add", "F-1", "--file", "notes.txt", "--json")
    assert json.loads(sub.stdout)["source"] == "docs/notes.txt"
    far = hydrate(repo, "add", "F-1", "--file", str(outside), "--json")
    assert json.loads(far.stdout)["source"] == "secret-plans.txt"
    # a pathspec that matches nothing is an error, as in git
    missed = hydrate(repo, "add-tree", "F-1", "nonexistent/dir")
    assert missed.returncode == 1
    assert missed.stderr == "error: pathspec 'nonexistent/dir' did not match any files\n"
    fine = hydrate(repo, "add-tree", "F-1", "README", ":!nothing-here")
    assert fine.returncode == 0, fine


def test_a_link_out_of_the_work_tree_is_not_attached(repo: Path, tmp_path: Path) -> None:
    """A file of the work tree (or a folder on its way) that a symbolic link leads
    out of it is refused with one line, nothing written: a cloned repository's
    ``notes.md -> ~/.ssh/config`` must not attach that file to a task that is
    pushed. A link within the tree, and the outside file named itself, are fine."""
    private = tmp_path / "private" / "config"
    private.parent.mkdir()
    private.write_text("Host *\n  IdentityFile ~/.ssh/key\n")
    (repo / "notes.md").symlink_to(private)
    (repo / "linked").symlink_to(private.parent)
    (repo / "inner.md").symlink_to("README")
    hydrate(repo, "task-add", "L-1", "--objective", "o", "--acceptance", "a")
    before = git(repo, "rev-parse", "refs/hydrate/tasks/L-1")
    for named in ("notes.md", "linked/config", str(repo / "notes.md")):
        refused = hydrate(repo, "add", "L-1", "--file", named)
        assert refused.returncode == 1, refused
        assert refused.stderr == (
            f"error: {named} is a symbolic link out of the work tree (to {private}); "
            "give that file's own path to attach it\n"
        )
    assert git(repo, "rev-parse", "refs/hydrate/tasks/L-1") == before
    inner = hydrate(repo, "add", "L-1", "--file", "inner.md", "--json")
    assert inner.returncode == 0 and json.loads(inner.stdout)["source"] == "README"
    own = hydrate(repo, "add", "L-1", "--file", str(private), "--json")
    assert own.returncode == 0 and json.loads(own.stdout)["source"] == "config"


def test_readable_output_for_people(repo: Path) -> None:
    listed = hydrate(repo, "list")
    assert listed.returncode == 0 and listed.stdout == ""
    assert "no tasks here yet: create one with git hydrate task-add" in listed.stderr
    assert "git hydrate pull" in hydrate(repo, "status").stderr
    hydrate(repo, "task-add", "R-1", "--objective", "o", "--acceptance", "a", "--test", "t.py")
    for i in range(12):
        (repo / f"blob{i}.bin").write_bytes(b"\0" * (i + 1))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "binaries")
    summary = hydrate(repo, "add-tree", "R-1")
    assert summary.returncode == 0, summary
    assert summary.stdout.splitlines()[-1] == (
        "skipped 13 files: 12 binary (78 B), 1 missing (0 B) (-v lists them)"
    )
    listed_all = hydrate(repo, "add-tree", "R-1", "-v")
    assert "  binary        blob0.bin (1 bytes)" in listed_all.stdout
    shown = hydrate(repo, "show", "R-1")
    assert "Tests to write or update:\n  t.py" in shown.stdout


def test_errors_say_what_happened_and_the_next_command(repo: Path, tmp_path: Path) -> None:
    # issue 34: read as a newcomer, each refusal names the command that moves on
    outside = hydrate(tmp_path, "list")
    assert outside.returncode == 128
    assert outside.stderr == (
        "fatal: not a git repository (or any of the parent directories): .git; "
        "run it inside a repository (git init makes one) or name one with -C\n"
    )
    assert hydrate(tmp_path, "-C", str(repo), "list").returncode == 0
    hydrate(repo, "task-add", "N-1", "--objective", "o", "--acceptance", "a")
    done = hydrate(repo, "status", "N-1", "--set", "done")
    assert done.returncode == 1
    assert done.stderr == (
        "error: task N-1 cannot move from open to done; allowed from open: in_progress, "
        "blocked, cancelled; go through in_progress first: git hydrate status N-1 --set "
        "in_progress\n"
    )
    assert hydrate(repo, "status", "N-1", "--set", "in_progress").returncode == 0
    assert hydrate(repo, "status", "N-1", "--set", "done").returncode == 0
    unknown = hydrate(repo, "context-rm", "N-1", "abcdef")
    assert unknown.stderr == (
        "error: task N-1 has no context abcdef (git hydrate show N-1 lists it)\n"
    )
    assert hydrate(repo, "unarchive", "N-9").stderr == (
        "error: task 'N-9' is not in the archive (git hydrate list --archived lists it)\n"
    )
    assert hydrate(repo, "task-rm", "N-9").stderr == (
        "error: no task 'N-9' here; to remove it from a remote: "
        "git hydrate task-rm N-9 --remote REMOTE\n"
    )
    hydrate(repo, "task-add", "N-2", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "task-add", "N-3", "--objective", "o", "--acceptance", "a")
    assert hydrate(repo, "claim", "N-2", "--as", "ann").returncode == 0
    held = hydrate(repo, "claim", "N-2", "--as", "bob")
    assert held.returncode == 1
    assert held.stderr.endswith("; take a ready one with: git hydrate claim --next\n")
    assert hydrate(repo, "claim", "--next", "--as", "bob").stdout == "claimed N-3 for bob\n"


def test_show_names_a_token_budget_only_when_the_task_has_one(repo: Path) -> None:
    # issue 34: "token budget 0" read as a budget of nothing
    hydrate(repo, "task-add", "B-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "task-add", "B-2", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "task-edit", "B-2", "--token-budget", "5000")
    without = hydrate(repo, "show", "B-1").stdout.splitlines()[1]
    assert without == "status open · kind code · priority 2 · 0 attachment(s)"
    with_one = hydrate(repo, "show", "B-2").stdout.splitlines()[1]
    assert with_one == "status open · kind code · priority 2 · token budget 5000 · 0 attachment(s)"


def test_show_lists_a_hundred_dependencies_tags_and_parts_then_counts(repo: Path) -> None:
    """A task of 100,000 dependencies made ``show`` print 889 KB: of its
    dependencies, tags and parts it lists the first 100, then how many more and
    where they all are; ``show --json`` (a contract) still lists every one."""
    from git_hydrate import Ledger

    deps = [f"NOPE-{n:03}" for n in range(150)]
    with Ledger(repo) as ledger:
        ledger.add_task("E-1", objective="o", acceptance="a", depends_on=deps,
                        tags=[f"t{n}" for n in range(101)])  # fmt: skip
        for n in range(103):
            ledger.add_task(f"C-{n:03}", objective="o", acceptance="a", parent="E-1")
    lines = hydrate(repo, "show", "E-1").stdout.splitlines()
    shown_deps = ", ".join(deps[:100])
    assert f"depends on: {shown_deps} ... and 50 more (show --json for all)" in lines
    assert (
        f"Tags: {', '.join(f't{n}' for n in range(100))} ... and 1 more (show --json for all)"
        in lines
    )
    children = lines.index("Children (0 of 103 done):")
    assert lines[children + 100].startswith("  C-099\t")
    assert lines[children + 101] == "  ... and 3 more (show --json for all)"
    whole = json.loads(hydrate(repo, "show", "E-1", "--json").stdout)
    assert whole["depends_on"] == deps and len(whole["tags"]) == 101
    assert len(whole["children"]) == 103


def test_context_rm_takes_several_hashes_a_source_glob_or_all(repo: Path) -> None:
    hydrate(repo, "task-add", "X-1", "--objective", "o", "--acceptance", "a")
    hashes = []
    for source in ("vendor/a.py", "vendor/b.py", "notes", "keep"):
        added = hydrate(
            repo, "add", "X-1", "--text", f"body of {source}", "--source-label", source, "--json"
        )
        hashes.append(json.loads(added.stdout)["hash"])
    tip = git(repo, "rev-parse", "refs/hydrate/tasks/X-1").strip()
    by_glob = hydrate(repo, "context-rm", "X-1", "--source", "vendor/*", hashes[2][:8])
    assert by_glob.returncode == 0, by_glob
    assert by_glob.stdout.splitlines()[-1] == "X-1: 3 attachments removed"
    # one commit for the three
    assert git(repo, "rev-list", "--count", f"{tip}..refs/hydrate/tasks/X-1").strip() == "1"
    nothing = hydrate(repo, "context-rm", "X-1", "--source", "vendor/*")
    assert nothing.returncode == 1 and "matches 'vendor/*'" in nothing.stderr
    everything = json.loads(hydrate(repo, "context-rm", "X-1", "--all", "--json").stdout)
    assert everything["count"] == 1 and everything["removed"][0]["source"] == "keep"
    bare = hydrate(repo, "context-rm", "X-1")
    assert bare.returncode == 2 and "HASH..., --source GLOB or --all" in bare.stderr


def test_context_rm_source_from_a_folder_says_sources_are_from_the_top(repo: Path) -> None:
    """Paths typed to add-tree are read from the current folder; a --source glob
    is matched against sources, which are paths from the top: from ``vendor/``,
    ``--source a.py`` matched nothing with no word why (explorer15)."""
    hydrate(repo, "task-add", "X-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "add", "X-1", "--text", "a", "--source-label", "vendor/a.py")
    (repo / "vendor").mkdir()
    there = hydrate(repo / "vendor", "context-rm", "X-1", "--source", "a.py")
    assert there.returncode == 1 and there.stdout == ""
    assert there.stderr == (
        "error: task X-1 has no context whose source matches 'a.py' (sources are paths"
        " from the top of the work tree: --source 'vendor/a.py'?)\n"
    )
    top = hydrate(repo, "context-rm", "X-1", "--source", "a.py")
    assert top.stderr == "error: task X-1 has no context whose source matches 'a.py'\n"
    assert hydrate(repo / "vendor", "context-rm", "X-1", "--source", "vendor/a.py").returncode == 0


def test_context_rm_source_hint_from_a_folder_is_a_path_that_matches(repo: Path) -> None:
    """review14: ``--source ./a.py`` from ``vendor/`` was told to try
    ``'vendor/./a.py'``, and ``../b.py`` ``'vendor/../b.py'``, sources that match
    nothing either; the hint is the path from the top (none above it)."""
    hydrate(repo, "task-add", "X-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "add", "X-1", "--text", "a", "--source-label", "vendor/a.py")
    (repo / "vendor").mkdir()
    said = "error: task X-1 has no context whose source matches {!r}{}\n"
    hint = " (sources are paths from the top of the work tree: --source {!r}?)"
    typed_meant = (("./a.py", "vendor/a.py"), ("../b.py", "b.py"), ("./*.py", "vendor/*.py"))
    for typed, meant in typed_meant:
        there = hydrate(repo / "vendor", "context-rm", "X-1", "--source", typed)
        assert there.returncode == 1 and there.stderr == said.format(typed, hint.format(meant))
    above = hydrate(repo / "vendor", "context-rm", "X-1", "--source", "../../c.py")
    assert above.returncode == 1 and above.stderr == said.format("../../c.py", "")


def test_show_of_a_word_that_is_no_task_points_at_the_tasks_that_mention_it(
    repo: Path,
) -> None:
    """``show parser`` offered to create a task named ``parser`` while two tasks
    were about the parser (explorer15)."""
    for task_id, objective in (("P-1", "the parser crashes"), ("P-2", "speed up the parser")):
        hydrate(repo, "task-add", task_id, "--objective", objective, "--acceptance", "a")
    word = hydrate(repo, "show", "parser")
    assert word.returncode == 1 and word.stdout == ""
    said = "error: no task 'parser'; 2 tasks mention it: git hydrate search parser\n"
    assert word.stderr == said
    assert "P-1" in hydrate(repo, "search", "parser").stdout
    for unknown in ("lexer", "FIX-9"):  # (nothing mentions it, or an id: create it)
        out = hydrate(repo, "show", unknown)
        assert (
            out.returncode == 1
            and f"create it with: git hydrate task-add {unknown} " in out.stderr
        )


def test_context_rm_reads_a_hash_in_upper_case_as_show_does(repo: Path) -> None:
    """``show --attachment 4C65A613`` found it; ``context-rm`` refused the same
    prefix ("give 4-64 lowercase hex digits"; explorer15)."""
    hydrate(repo, "task-add", "X-1", "--objective", "o", "--acceptance", "a")
    added = hydrate(repo, "add", "X-1", "--text", "a body", "--json")
    digest = json.loads(added.stdout)["hash"]
    assert hydrate(repo, "show", "X-1", "--attachment", digest[:8].upper()).returncode == 0
    removed = hydrate(repo, "context-rm", "X-1", digest[:8].upper())
    assert removed.returncode == 0, removed
    assert removed.stdout.startswith(f"removed {digest[:12]} ")
    bad = hydrate(repo, "context-rm", "X-1", "xyz!")
    assert bad.stderr == "error: invalid context hash 'xyz!': give 4 to 64 hexadecimal digits\n"


def test_shell_completion_offers_task_ids_stations_and_remotes(repo: Path, tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.wrapper import hydrate_on_path

    hydrate(repo, "task-add", "CLK-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "task-add", "CLK-22", "--objective", "o", "--acceptance", "a")
    git(repo, "remote", "add", "upstream", str(tmp_path))
    env = hydrate_on_path(tmp_path / "bin")

    def complete(*words: str) -> list[str]:
        proc = subprocess.run(
            ["git-hydrate"],
            cwd=repo,
            env={
                **env,
                "_GIT_HYDRATE_COMPLETE": "bash_complete",
                "COMP_WORDS": " ".join(["git-hydrate", *words]),
                "COMP_CWORD": str(len(words)),
            },
            capture_output=True,
            text=True,
            check=False,
        )
        return [line.split(",", 1)[1] for line in proc.stdout.splitlines() if "," in line]

    assert complete("show", "CLK") == ["CLK-1", "CLK-22"]
    assert complete("status", "CLK-1", "--set", "in") == ["in_progress"]
    assert complete("pull", "up") == ["upstream"]
    assert os.environ.get("_GIT_HYDRATE_COMPLETE") is None


def test_colour_only_on_a_terminal_and_never_with_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from git_hydrate.cli._common import colour, label

    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert colour(Terminal())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour(Terminal())
    assert label("error", "red") == "error:"  # stderr under pytest is not a terminal


def test_task_edit_with_an_empty_title_takes_the_objectives_first_line(repo: Path) -> None:
    hydrate(repo, "task-add", "E-1", "--objective", "Fix the login\nmore", "--acceptance", "a")
    hydrate(repo, "task-edit", "E-1", "--title", "Short")
    edited = hydrate(repo, "task-edit", "E-1", "--title", "", "--objective", "Rename it")
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout == "updated task E-1: Rename it\n"
    assert json.loads(hydrate(repo, "show", "E-1", "--json").stdout)["title"] == "Rename it"


def test_a_bad_task_id_is_quoted_once(repo: Path) -> None:
    """A control character is escaped inside one pair of quotes, and ``...`` says
    only that a long id was cut."""
    rules = "use 1-128 characters"
    newline = hydrate(repo, "show", "A\nB")
    assert newline.returncode == 1
    assert newline.stderr.startswith(f"error: invalid task id 'A\\nB': {rules}")
    assert len(newline.stderr.splitlines()) == 1
    long_id = hydrate(repo, "show", "x" * 70 + " y")
    assert long_id.stderr.startswith(f"error: invalid task id '{'x' * 60}'...: {rules}")


def test_dash_c_resolves_relative_paths_from_there(repo: Path, tmp_path: Path) -> None:
    """``-C DIR``: a relative ``--file`` is DIR's file, as with ``git -C`` (it was
    the current directory's, labelled as the repository's own)."""
    (repo / "notes.txt").write_text("the repository's notes\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("not the repository's\n")
    hydrate(repo, "task-add", "C-1", "--objective", "o", "--acceptance", "a")
    added = hydrate(elsewhere, "-C", str(repo), "add", "C-1", "--file", "notes.txt", "--json")
    assert added.returncode == 0, added
    assert (json.loads(added.stdout)["source"], json.loads(added.stdout)["size"]) == (
        "notes.txt",
        len("the repository's notes\n"),
    )
    gone = hydrate(elsewhere, "-C", str(tmp_path / "nope"), "list")
    assert gone.returncode == 128
    said = f"fatal: cannot change to '{tmp_path / 'nope'}': No such file or directory\n"
    assert gone.stderr == said  # (git -C's words)


def test_ctrl_c_while_the_command_line_loads_prints_no_traceback(repo: Path) -> None:
    """Ctrl-C in the first tens of milliseconds, while the command line's modules load
    (14 of 20 tries printed a traceback), ends the command as Ctrl-C during one
    does: status 130, nothing on stderr. Here the interrupt comes at that import."""
    import subprocess
    import sys

    interrupt_at_import = (
        "import sys\n"
        "class Stop:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'git_hydrate.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Stop())\n"
        "sys.argv = ['git-hydrate', 'list']\n"
        "from git_hydrate.quick import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", interrupt_at_import], cwd=repo, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_add_says_its_size_as_the_other_summaries_do(repo: Path) -> None:
    """explorer15: `add` said "(..., 1 bytes)" and "910705 bytes" beside summaries
    that write 910,705: one byte, and thousands separated."""
    made = hydrate(repo, "task-add", "S-1", "--objective", "o", "--acceptance", "a")
    assert made.returncode == 0, made
    one = hydrate(repo, "add", "S-1", "--text", "x")
    assert one.stdout.endswith(", priority 0, 1 byte)\n"), one.stdout
    many = hydrate(repo, "add", "S-1", "--text", "y" * 12345, "--source-label", "big")
    assert many.stdout.endswith(", priority 0, 12,345 bytes)\n"), many.stdout


def test_a_file_in_play_that_is_a_pattern_is_warned_of(repo: Path) -> None:
    """explorer15: `--file-in-play 'src/*.py'` was stored as a literal path, and
    add-tree later reported that file missing: it is kept (a path may hold a glob
    character), with a line saying add-tree is what takes files by pattern."""
    made = hydrate(
        repo, "task-add", "P-1", "--objective", "o", "--acceptance", "a",
        "--file-in-play", "src/*.py", "--test", "tests/test_[ab].py",
    )  # fmt: skip
    assert made.returncode == 0, made
    assert made.stderr == (
        "warning: P-1: file in play src/*.py is kept as one path, not a pattern (to attach "
        "the files it matches: git hydrate add-tree P-1 'src/*.py')\n"
        "warning: P-1: test tests/test_[ab].py is kept as one path, not a pattern (to attach "
        "the files it matches: git hydrate add-tree P-1 'tests/test_[ab].py')\n"
    )
    (repo / "we*ird.txt").write_text("a file of that name\n")
    edited = hydrate(repo, "task-edit", "P-1", "--file-in-play", "we*ird.txt")
    assert (edited.returncode, edited.stderr) == (0, "")
