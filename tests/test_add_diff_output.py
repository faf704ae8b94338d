"""add-diff reads git's output right: each body is the diff of the path it is
filed under, whatever changes meanwhile, whatever the user's diff settings, and
whatever the path's spelling."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from git_hydrate import Ledger
from git_hydrate.store.commands import Commands
from tests.conftest import commit_files, fsck, git, hydrate

TASK = "T-1"


def make_task(repo: Path) -> None:
    out = hydrate(repo, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    assert out.returncode == 0, out


def bodies(repo: Path, task: str = TASK) -> dict[str, str]:
    """Each link's source and the text of its body."""
    data = json.loads(git(repo, "cat-file", "-p", f"refs/hydrate/tasks/{task}:links.json"))
    links: list[dict[str, Any]] = data["links"]
    return {lk["source"]: git(repo, "cat-file", "-p", lk["oid"]) for lk in links}


def test_each_body_is_the_diff_of_its_path_when_files_change_meanwhile(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file list and the patch came from two git runs, paired by position: a
    file starting or stopping to differ between them filed one file's diff under
    another's name (review10: diff:worktree:b.py held c.py's diff). Whatever
    changes after git's one run, each body is the diff of its own path."""
    commit_files(repo, {f"{n}.py": f"{n} original\n" for n in "abcd"}, "base")
    make_task(repo)
    (repo / "a.py").write_text("a original\na changed\n")
    (repo / "b.py").write_text("b original\nb changed\n")
    (repo / "d.py").write_text("d original\nd changed\n")
    real = Commands.diff

    def diff_then_edit(self: Commands, args: Sequence[str], **options: Any) -> bytes:
        out: bytes = real(self, args, **options)
        # b.py stops differing, c.py starts: a second run would see c, not b
        (repo / "b.py").write_text("b original\n")
        (repo / "c.py").write_text("c original\nc changed\n")
        return out

    monkeypatch.setattr(Commands, "diff", diff_then_edit)
    with Ledger(repo) as ledger:
        result = ledger.add_diff(TASK, worktree=True)
    assert (result["added"], result["files"]) == (3, 3)
    found = bodies(repo)
    assert sorted(found) == [f"diff:worktree:{n}.py" for n in "abd"]
    for source, body in found.items():
        path = source.split(":", 2)[2]
        assert f"diff --git a/{path} b/{path}\n" in body, (source, body)
        assert body.count("diff --git") == 1
    fsck(repo)


def test_paths_read_from_the_headers_of_odd_names(repo: Path) -> None:
    """Each path is read from its part's own header: spaces (and `` b/`` in a
    name), a tab, a newline, a quote, a byte that is not UTF-8, renames to and from
    quoted names, a mode change, an empty new file and a binary file."""
    names = ["a b.py", "tab\there.py", "new\nline.py", 'q"t.py', "sp b/x b/y.py"]
    commit_files(repo, {n: f"{n!r} one\n" * 9 for n in names} | {"r.py": "r\n"}, "base")
    raw = bytes(repo) + b"/u\xff.py"
    with open(raw, "wb") as f:
        f.write(b"one\n")
    (repo / "bin").write_bytes(b"\0\1")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "odd")
    for n in names[1:]:
        (repo / n).write_text(f"{n!r} one\n" * 9 + "two\n")
    with open(raw, "ab") as f:
        f.write(b"two\n")
    (repo / "bin").write_bytes(b"\0\2")
    (repo / "r.py").chmod(0o755)
    git(repo, "mv", "a b.py", 'a"b.py')  # to a quoted name
    git(repo, "mv", 'q"t.py', "q t.py")  # from one
    (repo / "empty").write_text("")
    git(repo, "add", "-A")
    make_task(repo)
    with Ledger(repo) as ledger:
        result = ledger.add_diff(TASK, staged=True)
    # (names with control characters are refused by add-tree's rules, by name)
    assert sorted((s["path"], s["reason"]) for s in result["skipped"]) == [
        ("bin", "binary"),
        ("new\nline.py", "bad_path"),
        ("tab\there.py", "bad_path"),
        ("u\\xff.py", "bad_path"),  # (shown escaped)
    ]
    found = bodies(repo)
    expected = ['a"b.py', "q t.py", "sp b/x b/y.py", "r.py", "empty"]
    assert sorted(found) == sorted(f"diff:staged:{n}" for n in expected)
    assert 'rename to "a\\"b.py"' in found['diff:staged:a"b.py']
    assert 'diff --git "a/q\\"t.py" b/q t.py' in found["diff:staged:q t.py"]
    assert "new mode 100755" in found["diff:staged:r.py"]
    assert "+two" in found["diff:staged:sp b/x b/y.py"]
    assert result["files"] == 9


#: User settings that change how ``git diff`` prints a patch: none changes a body.
DIFF_SETTINGS = [
    ("diff.submodule", "log"),
    ("diff.submodule", "diff"),
    ("diff.noprefix", "true"),
    ("diff.mnemonicPrefix", "true"),
    ("diff.relative", "true"),
    ("color.diff", "always"),
    ("color.ui", "always"),
    ("diff.external", "echo"),
    ("diff.renames", "false"),
    ("diff.srcPrefix", "x/"),
    ("diff.dstPrefix", "y/"),
]


def test_user_diff_settings_change_no_body(repo: Path, tmp_path: Path) -> None:
    """``diff.submodule=log`` refused the range (a ``Submodule mod ...`` line outside
    any file's part), ``=diff`` put an unrelated line into a.py's body and the inner
    diff into mod's (review10); each setting that changes git diff's format is
    pinned off: every body is the one without it (run from a subdirectory, for
    ``diff.relative``)."""
    inner = tmp_path / "inner"
    git(tmp_path, "init", "-q", "-b", "main", str(inner))
    commit_files(inner, {"f.txt": "one\n"}, "one")
    commit_files(repo, {"src/a.py": "a\n", "src/z.py": "z\n", "old.py": "o\n" * 9}, "base")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "mod")
    git(repo, "commit", "-qm", "mod")
    commit_files(repo / "mod", {"f.txt": "one\ntwo\n"}, "two")
    git(repo, "mv", "old.py", "src/new.py")
    commit_files(repo, {"src/a.py": "a\nb\n", "src/z.py": "z\ny\n"}, "change")
    made = []
    for n, (key, value) in enumerate([("", ""), *DIFF_SETTINGS]):
        if key:
            git(repo, "config", key, value)
        task = f"C-{n}"
        out = hydrate(repo, "task-add", task, "--objective", "o", "--acceptance", "a")
        assert out.returncode == 0, out
        out = hydrate(repo / "src", "add-diff", task, "HEAD~1..HEAD")
        assert out.returncode == 0, (key, value, out)
        if key:
            git(repo, "config", "--unset-all", key)
        made.append(bodies(repo, task))
    expected = ["mod", "src/a.py", "src/new.py", "src/z.py"]
    assert sorted(made[0]) == [f"diff:HEAD~1..HEAD:{p}" for p in expected]
    assert made[0]["diff:HEAD~1..HEAD:mod"].endswith(
        "+Subproject commit " + git(repo, "rev-parse", "HEAD:mod").strip() + "\n"
    )
    assert "Submodule" not in made[0]["diff:HEAD~1..HEAD:src/a.py"]
    assert "rename to src/new.py" in made[0]["diff:HEAD~1..HEAD:src/new.py"]
    for (key, value), found in zip(DIFF_SETTINGS, made[1:], strict=True):
        assert found == made[0], f"{key}={value}"


def test_an_absolute_pathspec_is_the_path_it_names(repo: Path, tmp_path: Path) -> None:
    """git reads ``$PWD/src/a.py`` as the work tree's ``src/a.py``; add-diff took it
    as ``tmp/.../src/a.py`` and said "nothing changed", add-tree "did not match"
    (review10). It names the file (or directory) now, from any directory; one
    outside the work tree is refused in one line."""
    commit_files(repo, {"src/a.py": "x = 1\n", "src/b.py": "y = 1\n"}, "base")
    (repo / "src" / "a.py").write_text("x = 2\n")
    (repo / "src" / "b.py").write_text("y = 2\n")
    make_task(repo)
    top = os.path.realpath(repo)
    out = hydrate(repo / "src", "add-diff", TASK, "--worktree", "--", f"{top}/src/a.py")
    assert out.returncode == 0, out
    assert sorted(bodies(repo)) == ["diff:worktree:src/a.py"]
    out = hydrate(repo, "add-diff", TASK, "--worktree", "--", f":!{top}/src/a.py", top)
    assert out.returncode == 0, out
    assert sorted(bodies(repo)) == ["diff:worktree:src/a.py", "diff:worktree:src/b.py"]
    out = hydrate(repo, "add-tree", TASK, f"{top}/src")
    assert out.returncode == 0, out
    assert {"src/a.py", "src/b.py"} <= {lk.split(":")[-1] for lk in bodies(repo)}
    for command in ("add-diff", "add-tree"):
        out = hydrate(repo, command, TASK, *(["--"] if command == "add-diff" else []), "/etc")
        assert out.returncode == 1 and out.stderr == (
            f"error: pathspec '/etc' is outside the work tree ({top}): "
            "a pathspec names the repository's files\n"
        ), out
    # with --dir, pathspecs are relative to that directory; in a bare repository
    # there is no work tree to read one in
    out = hydrate(repo, "add-tree", TASK, "--dir", f"{top}/src", f"{top}/src/a.py")
    assert out.returncode == 1 and out.stderr.endswith(
        "is absolute: give it relative to the repository's top (with --dir, to that directory)\n"
    )
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    make_task(bare)
    out = hydrate(bare, "add-diff", TASK, "HEAD~1..HEAD", "--", "/src")
    assert (out.returncode, out.stderr) == (
        1,
        "error: pathspec '/src' is absolute and this repository has no work tree: "
        "give it relative to the repository's top\n",
    )


def test_add_diff_refuses_a_pathspec_that_matches_no_file(repo: Path) -> None:
    """``add-diff -- src/typo.py`` said "nothing changed", exit 0 (review10): a
    pathspec that names no file is refused as add-tree refuses it; one naming a
    file that did not change, or one changed in the range only, is fine."""
    commit_files(repo, {"src/a.py": "x = 1\n", "docs/d.md": "d\n"}, "base")
    commit_files(repo, {"src/a.py": "x = 2\n", "gone.py": "g\n"}, "two")
    git(repo, "rm", "-q", "gone.py")
    git(repo, "commit", "-qm", "three")
    (repo / "new.py").write_text("n\n")
    make_task(repo)
    cases = {
        ("--worktree", "--", "src/typo.py"): "pathspec 'src/typo.py' did not match any files",
        ("HEAD~2..HEAD", "--", "src", "nope/"): "pathspec 'nope/' did not match any files",
        ("--worktree", "--", "new.py"): (
            "pathspec 'new.py' matched only untracked files, which have no diff "
            "(git add -N makes a new file part of --worktree)"
        ),
    }
    for args, message in cases.items():
        out = hydrate(repo, "add-diff", TASK, *args)
        assert (out.returncode, out.stderr) == (1, f"error: {message}\n"), args
    for args in [
        ("--worktree", "--", "docs"),  # unchanged, there
        ("HEAD~1..HEAD", "--", "gone.py"),  # deleted in the range
        ("HEAD~2..HEAD~1", "--", "gone.py", "src/*.py"),
        ("--staged", "--", "src"),
    ]:
        out = hydrate(repo, "add-diff", TASK, *args)
        assert out.returncode == 0, (args, out)
    assert sorted(bodies(repo)) == [
        "diff:HEAD~1..HEAD:gone.py",
        "diff:HEAD~2..HEAD~1:gone.py",
        "diff:HEAD~2..HEAD~1:src/a.py",
    ]


def test_the_log_body_holds_no_signature_lines(repo: Path, tmp_path: Path) -> None:
    """review10 (suspicion, confirmed): with log.showSignature set, git log prints
    its verdict on each commit's signature ("No signature", "Good ... signature")
    into the output add-diff --log stores as the commits' messages."""
    import shutil
    import subprocess

    if shutil.which("ssh-keygen") is None:
        pytest.skip("no ssh-keygen to sign a commit with")
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    commit_files(repo, {"a.py": "a = 1\n"}, "first")
    for name, value in (("gpg.format", "ssh"), ("user.signingkey", f"{key}.pub")):
        git(repo, "config", name, value)
    (repo / "a.py").write_text("a = 2\n")
    git(repo, "commit", "-q", "-S", "-am", "signed change")
    git(repo, "config", "log.showSignature", "true")
    make_task(repo)
    with Ledger(repo) as ledger:
        ledger.add_diff(TASK, "HEAD~1..HEAD", log=True)
    (log,) = [body for source, body in bodies(repo).items() if source.startswith("log:")]
    assert "signed change" in log and "signature" not in log.lower()


def test_an_absolute_path_spelt_through_a_linked_folder_is_inside(
    repo: Path, tmp_path: Path
) -> None:
    """review11: "$PWD/f.txt" where a folder above the work tree is a symbolic link
    (the shell's $PWD keeps the link) was refused as outside the work tree by
    add-tree, add-diff and --file-in-play, though git reads it."""
    import subprocess
    import sys

    commit_files(repo, {"sub/f.txt": "one\n"}, "first")
    (repo / "sub" / "f.txt").write_text("two\n")
    link = tmp_path / "link"
    link.symlink_to(repo.parent)
    here = link / repo.name / "sub"
    typed = f"{here}/f.txt"
    env = {**os.environ, "PWD": str(here)}
    make_task(repo)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "git_hydrate", *args],
            cwd=here, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    for args in (
        ("add-diff", TASK, "--worktree", "--", typed),
        ("add-tree", TASK, "--", typed),
        ("task-edit", TASK, "--file-in-play", typed),
    ):
        out = run(*args)
        assert out.returncode == 0 and "outside the work tree" not in out.stderr, (args, out)
    with Ledger(repo) as ledger:
        assert [f["path"] for f in ledger.get_task(TASK)["files"]] == ["sub/f.txt"]
    assert "diff:worktree:sub/f.txt" in bodies(repo)


def test_worktree_names_the_new_files_it_has_no_diff_of(repo: Path) -> None:
    """A worker's new test file has no diff until git knows it, so ``--staged
    --worktree`` ("every uncommitted change") left it out without a word (pipx:
    ``changelog.d/1987.bugfix.md`` beside two changed files). The result lists such
    files (within the PATHSPECs, ignored ones not), and the command says how to take
    them in."""
    commit_files(repo, {"app.py": "a\n", ".gitignore": "*.log\n"}, "base")
    make_task(repo)
    (repo / "app.py").write_text("a\nb\n")
    (repo / "test_app.py").write_text("def test_b(): pass\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "new.md").write_text("new\n")
    (repo / "run.log").write_text("ignored\n")
    with Ledger(repo) as ledger:
        result = ledger.add_diff(TASK, staged=True, worktree=True)
        only_py = ledger.add_diff(TASK, None, ["*.py"], staged=True, worktree=True)
    assert result["untracked"] == ["docs/new.md", "test_app.py"]
    assert only_py["untracked"] == ["test_app.py"]
    out = hydrate(repo, "add-diff", TASK, "--worktree")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[-1] == (
        "note: 2 untracked files have no diff, not attached: docs/new.md, test_app.py"
        " (git add -N PATH makes a new file part of --worktree)"
    )
    assert "untracked" not in out.stdout


@pytest.mark.parametrize("staged", [False, True])
def test_a_new_file_too_large_to_take_is_not_read(
    repo: Path, tmp_path: Path, staged: bool
) -> None:
    """An intent-to-add file over --max-file-bytes has a diff larger still: git was
    asked for its whole patch text (84 s and GBs of memory for a file of 2 GB) to
    skip it as ``too_large``. Its size says so first: git does not read it (its
    clean filter, which would note each read, never runs), it is reported with its
    own size, and the other files' diffs are attached as before."""
    reads = tmp_path / "reads.log"
    commit_files(repo, {"app.py": "a\n", ".gitattributes": "*.csv filter=spy\n"}, "base")
    git(repo, "config", "filter.spy.clean", f"echo read %f >> '{reads}'; cat")
    make_task(repo)
    (repo / "app.py").write_text("a\nb\n")
    (repo / "data").mkdir()
    (repo / "data" / "big.csv").write_text("x,y\n" * 2000)  # 8,000 bytes
    (repo / "data" / "small.csv").write_text("x,y\n")
    git(repo, "add", "-N", "data")
    with Ledger(repo) as ledger:
        result = ledger.add_diff(TASK, staged=staged, worktree=True, max_file_bytes=4096)
    assert [s for s in result["skipped"] if s["path"] == "data/big.csv"] == [
        {"path": "data/big.csv", "reason": "too_large", "bytes": 8000}
    ]
    assert "data/small.csv" in reads.read_text()
    assert "data/big.csv" not in reads.read_text()
    label = "uncommitted" if staged else "worktree"
    assert set(bodies(repo)) == {f"diff:{label}:app.py", f"diff:{label}:data/small.csv"}
    assert result["files"] == 3


def test_generated_and_vendored_diffs_are_left_out_as_add_tree_leaves_them(
    repo: Path,
) -> None:
    """add-diff attached a lockfile's diff (52 KB for 300 packages), a file marked
    linguist-generated and a vendored copy's: add-tree's rules leave those files
    out, and their diffs cost as much. They are skipped with add-tree's reasons
    (a file the task names is taken, vendored or generated), for uncommitted
    changes and a range."""
    attributes = "gen*.py linguist-generated\nvendor/** linguist-vendored\n"
    names = (
        *("package-lock.json", "gen.py", "vendor/lib.js", "vendor/patched.js", "app.py"),
        *("gen_named.py", "yarn.lock"),
    )
    commit_files(repo, {".gitattributes": attributes, **{n: "v1\n" for n in names}}, "base")
    with Ledger(repo) as ledger:
        files = ["vendor/patched.js", "gen_named.py", "yarn.lock"]
        ledger.add_task(TASK, objective="o", acceptance="a", files=files)
    expected = {
        "package-lock.json": "generated",
        "gen.py": "generated",
        "vendor/lib.js": "vendored",
    }
    results = []
    for version, options in (("v2", {"rev_range": "HEAD~1..HEAD"}), ("v3", {"worktree": True})):
        for name in names:
            (repo / name).write_text(f"v1\n{version}\n")
        if version == "v2":
            git(repo, "commit", "-qam", "v2")
        with Ledger(repo) as ledger:
            results.append(ledger.add_diff(TASK, **options))
    for result in results:
        assert {s["path"]: s["reason"] for s in result["skipped"]} == expected
        assert result["files"] == 7
    assert set(bodies(repo)) == {
        f"diff:{label}:{path}"
        for label in ("worktree", "HEAD~1..HEAD")
        for path in ("app.py", "vendor/patched.js", "gen_named.py", "yarn.lock")
    }


def test_a_diff_under_a_skipped_directory_is_left_out(repo: Path) -> None:
    """A committed bundle under dist/ (or a vendored node_modules) changes with every
    build: add-tree skips those folders (skipped_dir), add-diff attached their diffs."""
    names = ("dist/app.js", "node_modules/left/index.js", "src/app.js")
    commit_files(repo, dict.fromkeys(names, "v1\n"), "base")
    make_task(repo)
    for name in names:
        (repo / name).write_text("v1\nv2\n")
    with Ledger(repo) as ledger:
        result = ledger.add_diff(TASK, worktree=True)
    assert {s["path"]: s["reason"] for s in result["skipped"]} == {
        "dist/app.js": "skipped_dir",
        "node_modules/left/index.js": "skipped_dir",
    }
    assert set(bodies(repo)) == {"diff:worktree:src/app.js"}
