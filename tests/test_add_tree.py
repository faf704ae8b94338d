"""add-tree: a commit, the work tree or a directory as context — every omission named."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_hydrate import Ledger, NotFound, ValidationError
from git_hydrate.context_expander import render_prompt
from git_hydrate.hydrate.cache import Sha256Cache
from git_hydrate.hydrate.pathspec import Pathspec
from git_hydrate.hydrate.resources import hydrate_from_path, hydrate_paths
from git_hydrate.hydrate.rules import REASONS, classify
from git_hydrate.pack.memo import BodyMemo
from tests.conftest import as_sh_reads, commit_files, fsck, git, hydrate
from tests.wrapper import hydrate_command

TASK = "T-1"


def write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)


def commit_all(repo: Path, message: str = "files") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


#: A prompt git-hydrate printed (of a task with one attachment).
OLD_PROMPT: Final = render_prompt(
    {
        "task_id": "OLD-1",
        "title": "Old",
        "objective": "o",
        "acceptance": "a",
        "context": [{"hash": "0" * 64, "source": "n", "body": "body"}],
    }
)


def make_task(repo: Path, task_id: str = TASK) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(task_id, objective="Fix the parser", acceptance="tests pass")


def links(repo: Path, task_id: str = TASK) -> list[dict[str, Any]]:
    data = json.loads(git(repo, "cat-file", "-p", f"refs/hydrate/tasks/{task_id}:links.json"))
    result: list[dict[str, Any]] = data["links"]
    return result


def by_path(result: dict[str, Any]) -> dict[str, str]:
    return {item["path"]: item["reason"] for item in result["skipped"]}


def tip(repo: Path, task_id: str = TASK) -> str:
    return git(repo, "rev-parse", f"refs/hydrate/tasks/{task_id}").strip()


def blob_count(repo: Path) -> int:
    out = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype)")
    return out.split().count("blob")


@pytest.fixture
def every_reason(repo: Path) -> Path:
    """A repository with a file for every skip reason, plus files that are taken."""
    write(repo, "src/app.py", "print('app')\n")
    write(repo, "src/copy_of_app.py", "print('app')\n")  # duplicate
    write(repo, "docs/guide.md", "# Guide\n")
    write(repo, "node_modules/left/index.js", "module.exports = 1\n")  # skipped_dir
    write(repo, "build/out.txt", "built\n")  # skipped_dir
    write(repo, "logo.png", b"\x89PNG\r\n")  # skipped_ext
    write(repo, "package-lock.json", "{}\n")  # generated
    write(repo, "web/app.min.js", "var a=1;\n")  # generated
    write(repo, "big.txt", "x" * 5000)  # too_large with max_file_bytes=4096
    write(repo, "empty.py", "")  # empty
    write(repo, "data.bin", b"abc\0def")  # binary
    write(repo, "latin1.txt", "caf\xe9\n".encode("latin-1"))  # not_utf8
    write(
        repo,
        "model.ckpt",
        "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n",
    )  # lfs_pointer
    write(
        repo,
        "old.ckpt",
        "version https://hawser.github.com/spec/v1\noid sha256:00\nsize 1\n",
    )  # lfs_pointer (of git-lfs before 1.0)
    write(repo, "notes/renamed.txt", OLD_PROMPT)  # own_output, whatever its name
    write(repo, "zz/late.txt", "y" * 3000)  # total_budget with max_total_bytes=3000
    write(repo, "deploy.env", "API_TOKEN=" + "x9Y8z7W6v5U4t3S2" + "\n")  # secret
    write(repo, "bad\nname.txt", "odd\n")  # bad_path
    os.symlink("src/app.py", repo / "link.py")  # symlink
    commit_all(repo)
    # a submodule entry (gitlink) without a checkout
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/sub")
    git(repo, "commit", "-q", "-m", "submodule")
    make_task(repo)
    return repo


def test_every_skip_reason_is_reported(every_reason: Path) -> None:
    repo = every_reason
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, max_file_bytes=4096, max_total_bytes=3000)
    assert by_path(result) == {
        "bad\nname.txt": "bad_path",
        "big.txt": "too_large",
        "build/out.txt": "skipped_dir",
        "data.bin": "binary",
        "deploy.env": "secret",
        "empty.py": "empty",
        "latin1.txt": "not_utf8",
        "link.py": "symlink",
        "logo.png": "skipped_ext",
        "model.ckpt": "lfs_pointer",
        "node_modules/left/index.js": "skipped_dir",
        "old.ckpt": "lfs_pointer",
        "notes/renamed.txt": "own_output",
        "package-lock.json": "generated",
        "src/copy_of_app.py": "duplicate",
        "vendor/sub": "submodule",
        "web/app.min.js": "generated",
        "zz/late.txt": "total_budget",
    }
    # (as root, permissions cannot make a file unreadable; that reason is not staged
    # here, and a commit cannot hold a FIFO: special files have their own test, as
    # have a work tree's paths beyond a symlink (test_symlinks.py), and sparse (a
    # partial clone's) its own in test_partial_clone.py)
    assert {item["reason"] for item in result["skipped"]} == set(REASONS) - {
        "vendored",  # (its own test)
        "unreadable",
        "special",
        "beyond_symlink",
        "missing",
        "sparse",
    }
    duplicate = next(s for s in result["skipped"] if s["reason"] == "duplicate")
    assert duplicate == {
        "path": "src/copy_of_app.py",
        "reason": "duplicate",
        "bytes": 13,
        "same_as": "src/app.py",
    }
    assert next(s for s in result["skipped"] if s["path"] == "big.txt")["bytes"] == 5000
    assert (result["added"], result["updated"], result["unchanged"], result["removed"]) == (
        3,
        0,
        0,
        0,
    )
    assert sorted(link["source"] for link in links(repo)) == [
        "README",
        "docs/guide.md",
        "src/app.py",
    ]
    assert result["total_bytes"] == len("hello\n") + len("print('app')\n") + len("# Guide\n")
    assert result["files"] == 21  # 18 skipped + 3 taken
    fsck(repo)


def test_a_name_with_a_no_break_space_is_attached(repo: Path) -> None:
    """A Unicode space (macOS names screenshots with U+202F) is text, as in a title:
    such a file was skipped as ``bad_path``."""
    name = "notes\u202fon\u00a0cache.md"
    write(repo, name, "the cache notes\n")
    commit_all(repo)
    make_task(repo)
    out = hydrate(repo, "add-tree", TASK, "--json")
    assert out.returncode == 0, out
    assert json.loads(out.stdout)["skipped"] == []
    prompt = hydrate(repo, "prompt", TASK)
    assert f"### Context from {name}\nthe cache notes\n" in prompt.stdout


def test_undecodable_and_control_character_paths_are_reported_readably(repo: Path) -> None:
    (repo / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    write(repo, "tab\tname.txt", "tab\n")
    commit_all(repo)
    make_task(repo)
    out = hydrate(repo, "add-tree", TASK, "--json")
    assert out.returncode == 0, out
    assert json.loads(out.stdout)["skipped"] == [
        {"path": "caf\\xe9.txt", "reason": "bad_path", "bytes": 13},
        {"path": "tab\tname.txt", "reason": "bad_path", "bytes": 4},
    ]
    human = hydrate(repo, "add-tree", TASK)
    assert human.returncode == 0, human
    assert human.stdout.splitlines()[1:] == [
        "skipped 2 files:",
        "  bad_path      caf\\xe9.txt (13 bytes)",
        "  bad_path      tab\\tname.txt (4 bytes)",
    ]


def test_gitattributes_mark_generated_and_binary_files(repo: Path) -> None:
    write(repo, ".gitattributes", "gen/** linguist-generated\n*.svg binary\n")
    write(repo, "gen/api_models.py", "generated = True\n")
    write(repo, "icon.svg", "<svg/>\n")
    write(repo, "src/real.py", "real = True\n")
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        committed = ledger.add_tree(TASK)
        write(repo, ".gitattributes", "src/** linguist-generated=true\n")
        worktree = ledger.add_tree(TASK, worktree=True)
    assert by_path(committed) == {"gen/api_models.py": "generated", "icon.svg": "binary"}
    assert by_path(worktree) == {"src/real.py": "generated"}


def test_vendored_files_are_left_out_unless_the_task_names_them(repo: Path) -> None:
    # A team marks its third-party copy linguist-vendored; "=false" and "-" undo it
    # (git's rules), linguist-documentation leaves a file in, and a file in play is
    # taken though vendored (the ticket is about it).
    write(
        repo,
        ".gitattributes",
        "third_party/** linguist-vendored\n"
        "third_party/ours.py -linguist-vendored\n"
        "third_party/kept.py linguist-vendored=false\n"
        "lib/** linguist-vendored=true\n"
        "docs/** linguist-documentation\n",
    )
    for path in ("third_party/zlib.c", "third_party/ours.py", "third_party/kept.py"):
        write(repo, path, f"# {path}\n")
    write(repo, "third_party/patched.c", "int patched;\n")
    write(repo, "lib/jquery.js", "jquery()\n")
    write(repo, "docs/guide.md", "# Guide\n")
    commit_all(repo)
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, objective="o", acceptance="a", files=["third_party/patched.c"])
        result = ledger.add_tree(TASK)
    assert by_path(result) == {"third_party/zlib.c": "vendored", "lib/jquery.js": "vendored"}
    assert {link["source"] for link in links(repo)} >= {
        "third_party/ours.py",
        "third_party/kept.py",
        "third_party/patched.c",
        "docs/guide.md",
    }


def test_a_generated_file_the_task_names_is_taken(repo: Path) -> None:
    """A file left out for its generated name, its linguist-generated mark or its
    folder (node_modules, dist) is attached when the task names it, as a vendored
    copy and a file that says it is generated are; the others stay out."""
    write(repo, ".gitattributes", "models/*.py linguist-generated\n")
    named = ["api/service.pb.go", "models/user.py", "dist/app.js"]
    for path in [*named, "api/other.pb.go", "models/order.py", "dist/vendor.js"]:
        write(repo, path, f"// {path}\n")
    write(repo, "api/icon.png", "\x89PNG\r\n")
    commit_all(repo)
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, objective="o", acceptance="a", files=[*named, "api/icon.png"])
        result = ledger.add_tree(TASK)
    assert by_path(result) == {
        "api/other.pb.go": "generated",
        "models/order.py": "generated",
        "dist/vendor.js": "skipped_dir",
        "api/icon.png": "skipped_ext",
    }
    assert {link["source"] for link in links(repo)} >= set(named)


def test_a_file_marked_minus_diff_is_skipped_as_git_diffs_it(repo: Path) -> None:
    # Teams mark lockfiles and data "-diff" so git shows no text diff of them
    # (add-diff skips their "Binary files differ" as binary): add-tree says binary
    # too; "diff" set again, or a diff driver, leaves a file in.
    write(
        repo,
        ".gitattributes",
        "data/** -diff\ndata/keep.csv diff\n*.md diff=markdown\nlock.json -diff\n",
    )
    write(repo, "data/rows.csv", "a,b\n1,2\n")
    write(repo, "data/keep.csv", "c,d\n")
    write(repo, "lock.json", '{"a": 1}\n')
    write(repo, "README.md", "# R\n")
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK)
    assert by_path(result) == {"data/rows.csv": "binary", "lock.json": "binary"}


def test_links_reuse_the_committed_blobs(repo: Path) -> None:
    write(repo, "src/main.py", "def main():\n    return 42\n")
    commit_all(repo)
    make_task(repo)
    blobs_before = blob_count(repo)
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, ["src"], ranked=False)
    assert result["added"] == 1
    committed = git(repo, "rev-parse", "HEAD:src/main.py").strip()
    [link] = links(repo)
    body = b"def main():\n    return 42\n"
    digest = hashlib.sha256(body).hexdigest()
    assert link == {
        "sha256": digest,
        "oid": committed,
        "size": len(body),
        "source": "src/main.py",
        "priority": 0,
        "expires": None,
        "origin": "tree",
        "path": "src/main.py",
        "score": None,
        "reason": "",
    }
    in_task = git(repo, "rev-parse", f"refs/hydrate/tasks/{TASK}:bodies/{digest[:2]}/{digest}")
    assert in_task.strip() == committed
    # links.json and task.json (which records the selection) are the new blobs; the
    # body is not new
    assert blob_count(repo) == blobs_before + 2
    fsck(repo)


def test_pathspecs_select_and_scope_removal(repo: Path) -> None:
    write(repo, "src/a.py", "a = 1\n")
    write(repo, "src/b.txt", "b\n")
    write(repo, "src/vendor/v.py", "v = 1\n")
    write(repo, "tests/test_a.py", "def test(): pass\n")
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        first = ledger.add_tree(TASK, ["*.py", ":!src/vendor"])
        assert first["added"] == 2
        assert sorted(lk["path"] for lk in links(repo)) == ["src/a.py", "tests/test_a.py"]
        second = ledger.add_tree(TASK, ["README"])
        assert (second["added"], second["removed"]) == (1, 0)
        # narrowing to src/ must not remove links outside src/
        (repo / "src" / "a.py").unlink()
        commit_all(repo, "drop a")
        third = ledger.add_tree(TASK, ["src/"])
        assert (third["added"], third["removed"], third["removed_paths"]) == (
            2,
            1,
            ["src/a.py"],
        )
    assert sorted(lk["path"] for lk in links(repo)) == [
        "README",
        "src/b.txt",
        "src/vendor/v.py",
        "tests/test_a.py",
    ]


def test_pathspec_matcher() -> None:
    spec = Pathspec(["src", "*.md", ":!src/gen", ":(exclude)*/secret.py"])
    assert spec.matches("src/a.py") and spec.matches("docs/x/readme.md")
    assert not spec.matches("srcx/a.py")
    assert not spec.matches("src/gen/a.py")
    assert not spec.matches("src/deep/secret.py")
    assert Pathspec([":!tests"]).matches("src/a.py")
    assert not Pathspec([":!tests"]).matches("tests/a.py")
    assert Pathspec(["./src/"]).matches("src/a.py")
    assert Pathspec([]).matches("anything")
    with pytest.raises(ValidationError, match="leaves the repository"):
        Pathspec(["../x"])
    with pytest.raises(ValidationError, match="leaves the repository"):
        Pathspec(["src/../../x"])
    assert Pathspec(["src/../top.py"]).matches("top.py")
    with pytest.raises(ValidationError, match="unsupported pathspec magic"):
        Pathspec([":(icase)x"])


def test_classify() -> None:
    assert classify(b"plain\n") == "text"
    assert classify("naïve\n".encode()) == "text"
    assert classify(b"") == "empty"
    assert classify(b"\0\1") == "binary"
    assert classify(b"a" * 9000 + b"\0") == "binary"
    assert classify(b"\xff") == "not_utf8"


def test_the_total_budget_leaves_out_the_lowest_ranked_as_the_help_says(repo: Path) -> None:
    # nushell (10 MiB attached of 14): add-tree -h said the files beyond
    # --max-total-bytes were those last "in path order", while ranked runs leave out the
    # lowest ranked (toolkit/wrappers.nu kept, crates/nu-engine/src/scope.rs not)
    write(repo, "a_other.txt", "nothing to see here\n" * 6)
    write(repo, "z_parser.txt", "the parser must fix this\n" * 5)
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, ["*.txt"], max_total_bytes=130)
    assert by_path(result) == {"a_other.txt": "total_budget"}
    helped = hydrate(repo, "add-tree", "-h").stdout
    assert "the lowest ranked" in " ".join(helped.split())
    assert "in path order (total_budget)" not in " ".join(helped.split())


def test_limits_from_options_and_config(repo: Path) -> None:
    write(repo, "a_big.txt", "a" * 200)
    write(repo, "b_mid.txt", "b" * 100)
    write(repo, "c_small.txt", "c" * 50)
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, ["*.txt"], max_total_bytes=260, ranked=False)
    # path order when unranked; a later, smaller file still fits what is left
    assert by_path(result) == {"b_mid.txt": "total_budget"}
    assert result["total_bytes"] == 250
    git(repo, "config", "hydrate.maxFileBytes", "100")
    git(repo, "config", "hydrate.maxTotalBytes", "1k")
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, ["*.txt"])
    assert by_path(result) == {"a_big.txt": "too_large"}
    assert result["added"] == 1  # b_mid.txt fits the new total
    assert result["removed_paths"] == ["a_big.txt"]
    git(repo, "config", "hydrate.maxFileBytes", "lots")
    with Ledger(repo) as ledger, pytest.raises(ValidationError, match=r"hydrate\.maxFileBytes"):
        ledger.add_tree(TASK)
    bad = hydrate(repo, "add-tree", TASK, "--max-file-bytes", "0")
    assert bad.returncode == 2 and "--max-file-bytes" in bad.stderr and bad.stdout == ""


def test_rehydration_follows_changes_deletions_and_writes_nothing_when_unchanged(
    repo: Path,
) -> None:
    write(repo, "keep.py", "keep = 1\n")
    write(repo, "change.py", "version = 1\n")
    write(repo, "gone.py", "gone = 1\n")
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK)
        first_tip = tip(repo)
        old_digest = hashlib.sha256(b"version = 1\n").hexdigest()

        write(repo, "change.py", "version = 2\n")
        (repo / "gone.py").unlink()
        commit_all(repo, "change")
        result = ledger.add_tree(TASK)
        assert (result["added"], result["updated"], result["removed"]) == (0, 1, 1)
        # the new commit moved the history: the unchanged files may move in the ranking
        assert result["unchanged"] + result["reranked"] == 2
        assert result["removed_paths"] == ["gone.py"]
        # one commit for the whole run
        assert git(repo, "rev-list", "--count", f"{first_tip}..{tip(repo)}").strip() == "1"
        paths = sorted(lk["path"] for lk in links(repo))
        assert paths == ["README", "change.py", "keep.py"]  # one link per path
        tree = git(repo, "ls-tree", "-r", "--name-only", f"refs/hydrate/tasks/{TASK}")
        assert old_digest not in tree  # the old body left the task tree
        assert ledger.expand(TASK, max_bytes=100000)["prompt"].count("version = 2") == 1

        before = tip(repo)
        reflog = git(repo, "reflog", "show", f"refs/hydrate/tasks/{TASK}").count("\n")
        again = ledger.add_tree(TASK)
        assert again["changed"] is False and again["unchanged"] == 3
        assert tip(repo) == before
        assert git(repo, "reflog", "show", f"refs/hydrate/tasks/{TASK}").count("\n") == reflog
    message = git(repo, "log", "-1", "--format=%B", f"refs/hydrate/tasks/{TASK}")
    assert message.startswith(f"hydrate: add-tree {TASK} from HEAD ")
    assert "Hydrate-Action: add-tree" in message
    fsck(repo)


def test_rehydration_reads_no_blob_again(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "a.py", "a = 1\n")
    write(repo, "b.bin", b"\0\0")
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK)
    cache = repo / ".git" / "hydrate" / "sha256-cache"
    assert cache.read_bytes().startswith(Sha256Cache.HEADER)
    # header, rules, a block's check + README, a.py, b.bin
    assert cache.read_text().count("\n") == 6

    import git_hydrate.store.objects as module

    def no_reads(*args: object) -> object:
        raise AssertionError("a blob was read again")

    monkeypatch.setattr(module, "stream_objects", no_reads)
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, ["a.py", "b.bin", "README"])
    assert by_path(result) == {"b.bin": "binary"}
    monkeypatch.undo()

    # a damaged cache is rebuilt, never trusted
    cache.write_bytes(b"garbage\x00\n")
    with Ledger(repo) as ledger:
        assert ledger.add_tree(TASK)["unchanged"] == 2
    assert cache.read_bytes().startswith(Sha256Cache.HEADER)
    cache.unlink()
    with Ledger(repo) as ledger:
        assert ledger.add_tree(TASK)["unchanged"] == 2


def test_an_untracked_repository_inside_the_work_tree_is_named(repo: Path) -> None:
    """git lists an untracked nested repository as "nested/": the run dropped it
    without a word (explorer12). It is a submodule skip, as a gitlink is."""
    nested = repo / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    write(nested, "n.py", "x = 1\n")
    git(nested, "add", "n.py")
    git(nested, "commit", "-q", "-m", "n")
    make_task(repo)
    result = hydrate(repo, "add-tree", TASK, "--worktree", "--json")
    assert result.returncode == 0, result
    assert by_path(json.loads(result.stdout)).get("nested") == "submodule"
    assert all(not lk["source"].startswith("nested") for lk in links(repo))


def test_worktree_mode_sees_what_git_sees(repo: Path) -> None:
    write(repo, ".gitignore", "*.log\nsecret/\n")
    write(repo, "tracked.py", "t = 1\n")
    write(repo, "deleted.py", "d = 1\n")
    commit_all(repo)
    write(repo, "tracked.py", "t = 2  # edited, not committed\n")
    (repo / "deleted.py").unlink()
    write(repo, "untracked.py", "u = 1\n")
    write(repo, "debug.log", "ignored\n")
    write(repo, "secret/key.txt", "ignored too\n")
    make_task(repo)
    with Ledger(repo) as ledger:
        result = ledger.add_tree(TASK, worktree=True)
    assert result["skipped"] == []
    got = {lk["path"]: lk for lk in links(repo)}
    assert sorted(got) == [".gitignore", "README", "tracked.py", "untracked.py"]
    with Ledger(repo) as ledger:
        prompt = ledger.expand(TASK, max_bytes=100000)["prompt"]
    assert "t = 2  # edited, not committed" in prompt
    # unmodified tracked files are linked by their index blob
    assert got["README"]["oid"] == git(repo, "rev-parse", ":README").strip()
    assert got["untracked.py"]["oid"] == git(repo, "hash-object", "untracked.py").strip()
    fsck(repo)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_special_files_are_reported_never_opened(repo: Path, tmp_path: Path) -> None:
    """A FIFO would block a reader forever: each special file is named, not read."""
    outside = tmp_path / "plain"
    write(outside, "main.c", "int main(void) { return 0; }\n")
    os.mkfifo(outside / "pipe")
    write(repo, "readme.md", "hello\n")
    write(repo, "tracked.txt", "a file, then a FIFO\n")
    commit_all(repo)
    (repo / "tracked.txt").unlink()
    os.mkfifo(repo / "tracked.txt")
    os.mkfifo(repo / "untracked-pipe")
    make_task(repo)
    result = hydrate(repo, "add-tree", TASK, "--dir", str(outside), "--json")
    assert result.returncode == 0, result
    data = json.loads(result.stdout)
    assert (by_path(data), data["added"]) == ({"pipe": "special"}, 1)
    human = hydrate(repo, "add-tree", TASK, "--dir", str(outside), "-v")
    assert "special" in human.stdout and "pipe" in human.stdout
    # a tracked file replaced by a FIFO is named; git lists no untracked FIFO
    worktree = hydrate(repo, "add-tree", TASK, "--worktree", "--json")
    assert worktree.returncode == 0, worktree
    reasons = by_path(json.loads(worktree.stdout))
    assert reasons["tracked.txt"] == "special"
    assert "untracked-pipe" not in reasons
    assert "special" in REASONS


def test_directory_outside_any_repository(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    write(outside, "main.c", "int main(void) { return 0; }\n")
    write(outside, "lib/util.h", "#pragma once\n")
    write(outside, ".hidden/notes.txt", "hidden\n")
    write(outside, "node_modules/x.js", "x\n")
    write(outside, "pic.jpg", b"\xff\xd8")
    os.symlink("/etc/passwd", outside / "escape.txt")
    make_task(repo)
    result = hydrate(repo, "add-tree", TASK, "--dir", str(outside), "--prefix", "plain", "--json")
    assert result.returncode == 0, result
    assert result.stderr == ""
    data = json.loads(result.stdout)
    assert by_path(data) == {
        ".hidden/": "skipped_dir",
        "escape.txt": "symlink",
        "node_modules/": "skipped_dir",
        "pic.jpg": "skipped_ext",
    }
    assert data["added"] == 2
    assert sorted(lk["source"] for lk in links(repo)) == ["plain/lib/util.h", "plain/main.c"]
    human = hydrate(repo, "add-tree", TASK, "--dir", str(outside), "--prefix", "plain")
    assert human.returncode == 0, human
    assert human.stdout.splitlines()[0].startswith(
        f"{TASK}: added 0, updated 0, unchanged 2, removed 0; "
    )
    assert "  skipped_dir   node_modules/ (not entered)" in human.stdout
    assert human.stderr == ""
    fsck(repo)


def test_a_git_directory_is_no_directory_to_attach(repo: Path, tmp_path: Path) -> None:
    """`--dir .` in a bare repository (or `--dir .git`) attached git's config, hooks,
    reflogs and git-hydrate's own caches (explorer12): refused, nothing attached."""
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    hydrate(bare, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    make_task(repo)
    for where, directory in ((bare, "."), (repo, ".git"), (repo, ".git/hooks")):
        result = hydrate(where, "add-tree", TASK, "--dir", directory)
        assert result.returncode == 1 and result.stderr == (
            f"error: {directory} is a git directory (or inside one): its files are git's and "
            "git-hydrate's own, not context\n"
        ), (where, directory)
    assert links(repo) == [] and links(bare) == []


def test_a_file_in_play_another_run_attached_is_not_missing(repo: Path, tmp_path: Path) -> None:
    """A run of a directory under a prefix said the task's file in play, attached by
    the repository's run, was "missing ... not attached" (explorer12)."""
    write(repo, "src/parser.py", "def parse():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "parser")
    hydrate(repo, "task-add", TASK, "--objective", "o", "--acceptance", "a",
            "--file-in-play", "src/parser.py", "--file-in-play", "src/gone.py")  # fmt: skip
    assert hydrate(repo, "add-tree", TASK).returncode == 0
    write(tmp_path / "elsewhere", "notes.txt", "n\n")
    result = hydrate(repo, "add-tree", TASK, "--dir", str(tmp_path / "elsewhere"),
                     "--prefix", "ext", "--json")  # fmt: skip
    assert result.returncode == 0, result
    assert by_path(json.loads(result.stdout)) == {"src/gone.py": "missing"}


@pytest.mark.parametrize("prefix", ["..", "../x", "/abs", ".", "./x", "a/../b", "x:.."])
def test_a_prefix_that_reads_as_a_path_out_is_refused(
    repo: Path, tmp_path: Path, prefix: str
) -> None:
    """--prefix .. labelled files ../parser.py, listed by show as a file in play's
    path outside the repository (explorer12): refused, nothing attached."""
    write(tmp_path / "elsewhere", "notes.txt", "n\n")
    make_task(repo)
    result = hydrate(repo, "add-tree", TASK, "--dir", str(tmp_path / "elsewhere"),
                     "--prefix", prefix)  # fmt: skip
    assert result.returncode == 1 and result.stderr.startswith(
        f"error: --prefix {prefix!r} would label files as paths outside the repository's"
    )
    assert links(repo) == []


def test_a_directory_its_work_tree_ignores_whole_is_walked(repo: Path, tmp_path: Path) -> None:
    # An installed tree inside a tool's checkout: git lists nothing under it.
    tool = tmp_path / "tool"
    git(tmp_path, "init", "-q", str(tool))
    write(tool, ".gitignore", "/versions/\n")
    write(tool, "versions/lib/json/decoder.py", "def decode(s):\n    return s\n")
    write(tool, "versions/lib/__pycache__/x.pyc", b"\x00")
    make_task(repo)
    result = hydrate(repo, "add-tree", TASK, "--dir", str(tool / "versions"), "--json")
    assert result.returncode == 0, result
    data = json.loads(result.stdout)
    assert data["listing"].startswith("walk (git ignores the whole directory")
    assert [lk["source"] for lk in links(repo)] == ["lib/json/decoder.py"]
    assert by_path(data) == {"lib/__pycache__/": "skipped_dir"}
    # A tracked part of a work tree is still git's file set, ignored files left out.
    write(tool, "src/app.py", "x = 1\n")
    write(tool, "src/build.log", "noise\n")
    write(tool, ".gitignore", "/versions/\n*.log\n")
    listed = json.loads(
        hydrate(repo, "add-tree", TASK, "--dir", str(tool / "src"), "--json").stdout
    )
    assert listed["listing"] == "git ls-files"


def test_resources_of_one_name_get_labels_that_tell_them_apart(repo: Path, tmp_path: Path) -> None:
    """review10: ``one/lib`` and ``two/lib`` were both labelled ``lib/``: the second
    run replaced the first one's files (3 linked, 1 held)."""
    write(tmp_path / "one" / "lib", "alpha.py", "a\n")
    write(tmp_path / "one" / "lib", "beta.py", "b\n")
    write(tmp_path / "two" / "lib", "gamma.py", "g\n")
    make_task(repo)
    with Ledger(repo) as ledger:
        dirs = [tmp_path / "one" / "lib", tmp_path / "two" / "lib", tmp_path / "one" / "lib"]
        assert hydrate_paths(ledger.refs, TASK, dirs) == 5  # (the first again: unchanged)
    assert sorted(lk["source"] for lk in links(repo)) == [
        "one/lib/alpha.py",
        "one/lib/beta.py",
        "two/lib/gamma.py",
    ]


def test_prefixes_keep_resources_apart_and_wrappers_count(repo: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write(one, "x.py", "one\n")
    write(two, "x.py", "two\n")
    write(two, "y.py", "why\n")
    make_task(repo)
    with Ledger(repo) as ledger:
        assert hydrate_paths(ledger.refs, TASK, [one, (two, "second")]) == 3
        assert sorted(lk["source"] for lk in links(repo)) == [
            "one/x.py",
            "second/x.py",
            "second/y.py",
        ]
        (two / "y.py").unlink()
        assert hydrate_from_path(ledger.refs, TASK, two, prefix="second") == 1
        assert sorted(lk["source"] for lk in links(repo)) == ["one/x.py", "second/x.py"]
        # the ledger's own work tree counts as --worktree
        assert hydrate_from_path(ledger.refs, TASK, repo) == 1


def test_content_already_attached_by_hand_is_a_duplicate(repo: Path) -> None:
    write(repo, "notes.md", "the edge proxy sets X-Request-Id\n")
    commit_all(repo)
    make_task(repo)
    with Ledger(repo) as ledger:
        ledger.add_context(TASK, "the edge proxy sets X-Request-Id\n", "edge-notes", priority=5)
        result = ledger.add_tree(TASK)
    assert by_path(result) == {"notes.md": "duplicate"}
    assert result["skipped"][0]["same_as"] == "edge-notes"
    assert sorted(lk["source"] for lk in links(repo)) == ["README", "edge-notes"]


def test_sha256_repository(tmp_path: Path) -> None:
    repo = tmp_path / "sha256"
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(repo))
    write(repo, "a.py", "a = 1\n")
    commit_all(repo)
    write(repo, "new.py", "n = 1\n")
    make_task(repo)
    with Ledger(repo) as ledger:
        assert ledger.add_tree(TASK)["added"] == 1
        assert ledger.add_tree(TASK, worktree=True)["added"] == 1
    got = {lk["path"]: lk["oid"] for lk in links(repo)}
    assert got["a.py"] == git(repo, "rev-parse", "HEAD:a.py").strip()
    assert got["new.py"] == git(repo, "hash-object", "new.py").strip()
    assert len(got["new.py"]) == 64
    fsck(repo)


def test_gc_keeps_the_bodies(repo: Path) -> None:
    write(repo, "a.py", "a = 1\n")
    commit_all(repo)
    make_task(repo)
    write(repo, "wip.py", "not committed\n")
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK, worktree=True)
    # drop the commit that holds a.py from every branch; the task still holds it
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "rm", "-rq", "--cached", ".")
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty")
    git(repo, "branch", "-D", "main")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    fsck(repo)
    with Ledger(repo) as ledger:
        prompt = ledger.expand(TASK, max_bytes=100000)["prompt"]
    assert "a = 1" in prompt and "not committed" in prompt


def test_cli_json_human_and_errors(repo: Path) -> None:
    write(repo, "src/a.py", "a = 1\n")
    write(repo, "src/pic.png", b"\x89PNG")
    commit_all(repo)
    make_task(repo)
    out = hydrate(repo / "src", "--compact", "add-tree", TASK, "a.py", "pic.png", "--json")
    assert out.returncode == 0, out
    assert out.stderr == ""  # no progress bar when not on a terminal
    data = json.loads(out.stdout)
    assert {k: data[k] for k in ("added", "updated", "unchanged", "removed", "total_bytes")} == {
        "added": 1,
        "updated": 0,
        "unchanged": 0,
        "removed": 0,
        "total_bytes": 6,
    }
    assert data["skipped"] == [{"path": "src/pic.png", "reason": "skipped_ext", "bytes": 4}]
    head = git(repo, "rev-parse", "HEAD").strip()
    assert (data["mode"], data["from"], data["commit"]) == ("rev", f"HEAD {head}", head)
    assert data["tip"] == tip(repo) and data["changed"] is True
    human = hydrate(repo, "add-tree", TASK, "--priority", "7")
    assert human.returncode == 0, human
    lines = human.stdout.splitlines()
    assert lines[0].startswith(
        f"{TASK}: added 1, updated 0, reranked 1, unchanged 0, removed 0; 12 bytes"
    )
    assert lines[1:] == ["skipped 1 file:", "  skipped_ext   src/pic.png (4 bytes)"]
    assert {lk["priority"] for lk in links(repo)} == {7}
    write(repo, "src/big.py", "b = 2\n" * 2000)  # (sizes with separators, as elsewhere)
    commit_all(repo)
    big = hydrate(repo, "add-tree", TASK, "src/big.py").stdout.splitlines()[0]
    assert big.endswith(f"; 12,000 bytes from HEAD {git(repo, 'rev-parse', 'HEAD').strip()}")

    both = hydrate(repo, "add-tree", TASK, "--rev", "HEAD", "--worktree")
    assert both.returncode == 2 and "at most one of" in both.stderr and both.stdout == ""
    missing = hydrate(repo, "add-tree", "NOPE")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no task 'NOPE'")
    badrev = hydrate(repo, "add-tree", TASK, "--rev", "no-such-branch")
    assert badrev.returncode == 1
    assert (
        badrev.stderr
        == "error: 'no-such-branch' does not name a commit or tree in this repository\n"
    )
    assert "Traceback" not in missing.stderr + badrev.stderr


def test_library_errors(repo: Path, tmp_path: Path) -> None:
    make_task(repo)
    with Ledger(repo) as ledger:
        with pytest.raises(NotFound):
            ledger.add_tree("NOPE")
        with pytest.raises(ValidationError, match="at most one"):
            ledger.add_tree(TASK, rev="HEAD", worktree=True)
        with pytest.raises(ValidationError, match="not a directory"):
            ledger.add_tree(TASK, directory=tmp_path / "missing")
        with pytest.raises(ValidationError, match="invalid revision"):
            ledger.add_tree(TASK, rev="--all")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    with Ledger(bare) as ledger:
        ledger.add_task(TASK, objective="o", acceptance="a")
        assert ledger.add_tree(TASK)["added"] == 1
        with pytest.raises(ValidationError, match="needs a work tree"):
            ledger.add_tree(TASK, worktree=True)


# -- add-diff -----------------------------------------------------------------------


@pytest.fixture
def branch_repo(repo: Path) -> Path:
    """main with two files; a feature branch changing one, adding a binary, deleting one."""
    write(repo, "src/a.py", "a = 1\n")
    write(repo, "src/old.py", "old = 1\n")
    write(repo, "docs/x.md", "x\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "src/a.py", "a = 2\n")
    write(repo, "img.bin", b"\0\1\2")
    (repo / "src" / "old.py").unlink()
    commit_all(repo, "feature: change a, drop old")
    make_task(repo)
    return repo


def test_add_diff_default_range_one_body_per_file(branch_repo: Path) -> None:
    repo = branch_repo
    with Ledger(repo) as ledger:
        result = ledger.add_diff(TASK, log=True)
        assert result["range"] == "main...HEAD"
        assert by_path(result) == {"img.bin": "binary"}
        assert (result["added"], result["files"]) == (3, 3)
        prompt = ledger.expand(TASK, max_bytes=100000)["prompt"]
    sources = sorted(lk["source"] for lk in links(repo))
    assert sources == [
        "diff:main...HEAD:src/a.py",
        "diff:main...HEAD:src/old.py",
        "log:main...HEAD",
    ]
    assert "-a = 1\n+a = 2\n" in prompt
    assert "feature: change a, drop old" in prompt
    body = next(lk for lk in links(repo) if lk["path"] == "src/a.py")
    blob = git(repo, "cat-file", "-p", body["oid"])
    assert blob.startswith("diff --git a/src/a.py b/src/a.py\n")
    assert "old.py" not in blob  # each file's diff is its own body
    fsck(repo)


def test_add_diff_rerun_replaces_and_pathspecs_narrow(branch_repo: Path) -> None:
    repo = branch_repo
    with Ledger(repo) as ledger:
        first = ledger.add_diff(TASK, "main...feature", ["src"])
        assert first["added"] == 2
        before = tip(repo)
        assert ledger.add_diff(TASK, "main...feature", ["src"])["changed"] is False
        assert tip(repo) == before
        write(repo, "src/old.py", "old = 1\n")  # restore: no longer part of the diff
        write(repo, "src/a.py", "a = 3\n")
        commit_all(repo, "restore old")
        again = ledger.add_diff(TASK, "main...feature", ["src"])
    assert (again["updated"], again["removed"], again["removed_paths"]) == (1, 1, ["src/old.py"])
    [link] = links(repo)
    assert link["source"] == "diff:main...feature:src/a.py"
    assert "+a = 3" in git(repo, "cat-file", "-p", link["oid"])


def test_add_diff_staged_and_worktree(branch_repo: Path) -> None:
    repo = branch_repo
    write(repo, "src/a.py", "a = 'staged'\n")
    git(repo, "add", "src/a.py")
    write(repo, "docs/x.md", "unstaged\n")
    with Ledger(repo) as ledger:
        staged = ledger.add_diff(TASK, staged=True)
        worktree = ledger.add_diff(TASK, worktree=True)
        both = ledger.add_diff(TASK, staged=True, worktree=True)
        with pytest.raises(ValidationError, match="needs a revision range"):
            ledger.add_diff(TASK, staged=True, log=True)
        with pytest.raises(ValidationError, match="does not name a commit"):
            ledger.add_diff(TASK, "nope...HEAD")
    assert (staged["range"], worktree["range"], both["range"]) == (
        "staged",
        "worktree",
        "uncommitted",
    )
    # every uncommitted change of a.py is staged, and every one of x.md is in the
    # work tree: the same diffs, attached once (a file's diff is the same bytes
    # wherever it stands in git's output)
    assert [(s["path"], s["reason"], s["same_as"]) for s in both["skipped"]] == [
        ("docs/x.md", "duplicate", "diff:worktree:docs/x.md"),
        ("src/a.py", "duplicate", "diff:staged:src/a.py"),
    ]
    assert sorted(lk["source"] for lk in links(repo)) == [
        "diff:staged:src/a.py",
        "diff:worktree:docs/x.md",
    ]


def test_add_diff_staged_and_worktree_before_the_first_commit(tmp_path: Path) -> None:
    """``--staged --worktree`` with no commit yet is every change against nothing
    (``--staged`` alone already was): not git's "bad revision 'HEAD'"."""
    repo = tmp_path / "unborn"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    write(repo, "a.txt", "hello\n")
    git(repo, "add", "a.txt")
    write(repo, "a.txt", "hello\nmore\n")
    hydrate(repo, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    result = hydrate(repo, "add-diff", TASK, "--staged", "--worktree")
    assert result.returncode == 0, result
    assert [lk["source"] for lk in links(repo)] == ["diff:uncommitted:a.txt"]
    body = hydrate(repo, "show", TASK, "--attachment", links(repo)[0]["sha256"]).stdout
    assert "+hello\n+more\n" in body
    fsck(repo)


def test_add_diff_during_a_stopped_merge_names_the_unmerged_paths(tmp_path: Path) -> None:
    """With a merge stopped on a conflict, --staged and --worktree ended in "git diff
    gave 1 file diffs for 2 files; cannot split it" (explorer12): they name the
    unmerged path and the way that works, --staged --worktree, which attaches it."""
    repo = tmp_path / "merging"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit_files(repo, {"parser.py": "def parse():\n    return 1\n"}, "i")
    git(repo, "checkout", "-q", "-b", "side")
    commit_files(repo, {"parser.py": "def parse():\n    return 2\n", "b.py": "x\n"}, "b")
    git(repo, "checkout", "-q", "main")
    commit_files(repo, {"parser.py": "def parse():\n    return 3\n"}, "m")
    git(repo, "merge", "-q", "side", check=False)
    hydrate(repo, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    for option in ("--staged", "--worktree"):
        result = hydrate(repo, "add-diff", TASK, option)
        assert result.returncode == 1 and result.stderr == (
            f"error: parser.py is unmerged (a merge or rebase stopped): {option} has no diff "
            "of it to attach; give --staged --worktree to attach the changes from HEAD, "
            "conflict markers included\n"
        )
    assert links(repo) == []
    both = hydrate(repo, "add-diff", TASK, "--staged", "--worktree")
    assert both.returncode == 0, both
    body = hydrate(repo, "show", TASK, "--attachment", links(repo)[0]["sha256"]).stdout
    assert "<<<<<<<" in body


def test_add_diff_beyond_a_shallow_cut_says_so(repo: Path, tmp_path: Path) -> None:
    """In a --depth 1 clone, HEAD~1 "does not name a commit" with no word of why
    (explorer12): the error says the clone is shallow and how to deepen it."""
    commit_files(repo, {"a.py": "x = 1\n"}, "one")
    commit_files(repo, {"a.py": "x = 2\n"}, "two")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    hydrate(shallow, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    result = hydrate(shallow, "add-diff", TASK, "HEAD~1..HEAD")
    assert result.returncode == 1 and result.stderr == (
        "error: 'HEAD~1' does not name a commit in this repository; it is a shallow "
        "clone: git fetch --deepen=N brings more history\n"
    )


def test_add_diff_names_a_non_ascii_path_as_it_is(branch_repo: Path) -> None:
    """A diff's body names ``ünï.txt`` as itself, not git's ``"a/\\303\\274n..."``
    (whatever ``core.quotePath`` says): the worker reads the name, and the budget
    pays no escapes."""
    repo = branch_repo
    git(repo, "config", "core.quotePath", "true")
    write(repo, "ünï.txt", "one\n")
    git(repo, "add", "ünï.txt")
    with Ledger(repo) as ledger:
        ledger.add_diff(TASK, staged=True)
    (link,) = [lk for lk in links(repo) if lk["path"] == "ünï.txt"]
    body = git(repo, "cat-file", "-p", link["oid"])
    assert body.startswith("diff --git a/ünï.txt b/ünï.txt\n"), body
    assert "\\303" not in body


def test_add_diff_file_replaced_by_symlink_and_back(branch_repo: Path) -> None:
    """A type change is one file: git prints it as a deletion and a creation."""
    repo = branch_repo
    (repo / "src" / "a.py").unlink()
    os.symlink("../docs/x.md", repo / "src" / "a.py")
    write(repo, "docs/x.md", "y\n")
    with Ledger(repo) as ledger:
        result = ledger.add_diff(TASK, worktree=True)
        assert (result["added"], result["files"], result["skipped"]) == (2, 2, [])
        commit_all(repo, "a.py is a link now")
        first = {lk["source"]: git(repo, "cat-file", "-p", lk["oid"]) for lk in links(repo)}
        # the commit holds the same changes: the same bodies, attached once
        back = ledger.add_diff(TASK, "HEAD~1..HEAD")
        assert (back["files"], sorted(by_path(back).values())) == (2, ["duplicate"] * 2)
        # and back to a file: the reverse type change replaces the link's diff
        (repo / "src" / "a.py").unlink()
        write(repo, "src/a.py", "a = 'a file again'\n")
        undone = ledger.add_diff(TASK, worktree=True)
        # docs/x.md's change is committed now: its work-tree diff goes
        assert (undone["files"], undone["updated"], undone["removed"]) == (1, 1, 1)
    link_diff = first["diff:worktree:src/a.py"]
    assert link_diff.count("diff --git a/src/a.py b/src/a.py\n") == 2
    assert "deleted file mode 100644" in link_diff
    assert "new file mode 120000" in link_diff
    assert link_diff.endswith("+../docs/x.md\n\\ No newline at end of file\n")
    assert "diff --git a/docs/x.md" not in link_diff
    assert "+y\n" in first["diff:worktree:docs/x.md"]
    bodies = {lk["source"]: git(repo, "cat-file", "-p", lk["oid"]) for lk in links(repo)}
    file_diff = bodies["diff:worktree:src/a.py"]
    assert "deleted file mode 120000" in file_diff
    assert file_diff.index("deleted file mode 120000") < file_diff.index("new file mode 100644")
    assert "+a = 'a file again'\n" in file_diff
    fsck(repo)


def test_add_diff_cli(branch_repo: Path) -> None:
    repo = branch_repo
    out = hydrate(repo, "add-diff", TASK, "main..feature", "--", "src/a.py", "img.bin")
    assert out.returncode == 0, out
    assert out.stderr == ""
    assert out.stdout.splitlines() == [
        f"{TASK}: added 1, updated 0, unchanged 0, removed 0; 119 bytes of diff:main..feature",
        "skipped 1 file:",
        "  binary        img.bin (119 bytes)",
    ]
    data = json.loads(hydrate(repo, "add-diff", TASK, "--json", "--", "docs").stdout)
    assert data["range"] == "main...HEAD" and data["files"] == 3 and data["added"] == 0
    two = hydrate(repo, "add-diff", TASK, "a..b", "c..d")
    assert two.returncode == 2 and "at most one REV-RANGE" in two.stderr
    git(repo, "checkout", "-q", "main")
    none = hydrate(repo, "add-diff", TASK)
    assert none.returncode == 1
    assert none.stderr.startswith("error: main has no upstream, and it is itself the default")
    assert none.stderr.endswith(", or use --staged / --worktree\n")
    # (a bare clone: no work tree for --staged / --worktree, so they are not offered)
    bare = repo.parent / "bare.git"
    git(repo.parent, "clone", "-q", "--bare", str(repo), str(bare))
    hydrate(bare, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    in_bare = hydrate(bare, "add-diff", TASK)
    assert in_bare.returncode == 1 and in_bare.stderr.endswith("such as HEAD~3..HEAD\n")


def test_subdirectory_pathspecs_and_unborn_head(repo: Path, tmp_path: Path) -> None:
    write(repo, "pkg/mod.py", "m = 1\n")
    write(repo, "pkg/sub/deep.py", "d = 1\n")
    write(repo, "top.py", "t = 1\n")
    commit_all(repo)
    write(repo, "pkg/new.py", "n = 1\n")
    make_task(repo)
    out = hydrate(repo / "pkg", "add-tree", TASK, "--worktree", "sub", "new.py", "../top.py")
    assert out.returncode == 0, out
    assert sorted(lk["source"] for lk in links(repo)) == [
        "pkg/new.py",
        "pkg/sub/deep.py",
        "top.py",
    ]
    # no pathspec: the whole tree, wherever it runs
    whole = hydrate(repo / "pkg", "--compact", "add-tree", TASK, "--json")
    assert json.loads(whole.stdout)["files"] == 4

    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    make_task(empty)
    unborn = hydrate(empty, "add-tree", TASK)
    assert unborn.returncode == 1
    assert unborn.stderr == (
        "error: HEAD names no commit yet; commit first, or take the work tree with --worktree\n"
    )


def test_add_diff_and_agent_from_inside_the_git_directory_say_where_to_run(
    repo: Path, tmp_path: Path
) -> None:
    """Inside .git, ``add-diff --worktree`` said only "need a work tree" and ``agent
    install`` "this repository is bare", though it is not (explorer15): both say to
    run from the work tree, as add-tree --worktree does; a bare one keeps its words."""
    make_task(repo)
    inside = hydrate(repo / ".git", "add-diff", TASK, "--worktree")
    assert (inside.returncode, inside.stdout) == (1, "")
    assert inside.stderr == (
        "error: --staged and --worktree need a work tree; run it from the work tree, not "
        "inside the git directory\n"
    )
    agent = hydrate(repo / ".git", "agent", "install", "codex")
    assert agent.returncode == 1 and agent.stderr == (
        "error: git hydrate agent needs a work tree; run it from the work tree, not inside "
        "the git directory\n"
    )
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    make_task(bare)
    assert hydrate(bare, "add-diff", TASK, "--staged").stderr == (
        "error: --staged and --worktree need a work tree; this repository has none\n"
    )
    assert hydrate(bare, "agent", "install", "codex").stderr == (
        "error: git hydrate agent needs a work tree (this repository is bare)\n"
    )


def test_worktree_from_inside_the_git_directory_or_a_bare_one(repo: Path, tmp_path: Path) -> None:
    """Inside .git git sees no work tree: say where to run it, not that there is none."""
    make_task(repo)
    inside = hydrate(repo / ".git", "add-tree", TASK, "--worktree")
    assert (inside.returncode, inside.stdout) == (1, "")
    assert inside.stderr == (
        "error: --worktree needs a work tree; run it from the work tree, not inside the git "
        "directory\n"
    )
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    make_task(bare)
    none = hydrate(bare, "add-tree", TASK, "--worktree")
    assert none.stderr == "error: --worktree needs a work tree; this repository has none\n"


def test_progress_bar_only_on_a_terminal(repo: Path) -> None:
    from tests.conftest import run_on_a_terminal

    for i in range(250):
        write(repo, f"many/f{i:03d}.txt", f"file {i}\n")
    commit_all(repo)
    make_task(repo)
    proc, seen = run_on_a_terminal(repo, ["add-tree", TASK, "--json"], stream="stderr")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["added"] == 251
    assert b"reading files" in seen


# -- invariants of the pure parts -----------------------------------------------------

_segment = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=6).filter(
    lambda s: s not in (".", "..")
)
_paths = st.lists(_segment, min_size=1, max_size=4).map("/".join)


@given(_paths, _paths)
def test_pathspec_directory_and_exclusion_invariants(path: str, spec: str) -> None:
    assert Pathspec([path]).matches(path)
    assert Pathspec([spec]).matches(spec + "/" + path)
    assert not Pathspec([":!" + spec]).matches(spec + "/" + path)
    assert Pathspec([spec, ":!" + spec]).matches(path) is False


@given(st.text(min_size=1).filter(lambda t: "\0" not in t))
def test_any_text_without_nul_is_text(text: str) -> None:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are not text
    expected = (
        "lfs_pointer"
        if data.startswith(b"version https://git-lfs.github.com/spec/v1\n")
        else "text"
    )
    assert classify(data) == expected


@given(st.dictionaries(st.binary(min_size=20, max_size=20), st.binary(min_size=32, max_size=32)))
def test_sha256_cache_round_trip(
    tmp_path_factory: pytest.TempPathFactory, items: dict[bytes, bytes]
) -> None:
    path = str(tmp_path_factory.mktemp("cache") / "sha256-cache")
    cache = Sha256Cache(path)
    for oid, digest in items.items():
        cache.put(oid.hex(), digest.hex(), "text")
    cache.save()
    again = Sha256Cache(path)
    for oid, digest in items.items():
        assert again.get(oid.hex()) == (digest.hex(), "text")


def test_concurrent_runs_with_different_prefixes_both_land(repo: Path, tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import ROOT

    for name in ("alpha", "beta", "gamma"):
        for i in range(30):
            write(tmp_path / name, f"f{i:02d}.txt", f"{name} {i}\n")
    make_task(repo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [
                *hydrate_command(),
                "add-tree",
                TASK,
                *("--dir", str(tmp_path / name), "--prefix", name),
            ],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in ("alpha", "beta", "gamma")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out.startswith(f"{TASK}: added 30, ".encode())
        assert err == b""
    sources = [lk["source"] for lk in links(repo)]
    assert len(sources) == 90
    assert {s.split("/")[0] for s in sources} == {"alpha", "beta", "gamma"}
    assert git(repo, "rev-list", "--count", f"refs/hydrate/tasks/{TASK}").strip() == "4"
    fsck(repo)


def test_files_with_secrets_are_skipped_unless_allowed(repo: Path) -> None:
    """Issue 8: add-tree skips credential-looking files with reason ``secret``."""
    from git_hydrate import Ledger

    (repo / ".env").write_text("DEBUG=1\nSTRIPE_SECRET=" + "s3cr3tV4lue" + "9876543\n")
    (repo / "app.py").write_text("print('hello')\n")
    git(repo, "add", ".env", "app.py")
    git(repo, "commit", "-q", "-m", "config")
    with Ledger(repo) as ledger:
        ledger.add_task("SEC-1", objective="o", acceptance="a")
        result = ledger.add_tree("SEC-1")
        skipped = {s["path"]: s["reason"] for s in result["skipped"]}
        assert skipped[".env"] == "secret"
        assert {e["source"] for e in ledger.context_entries("SEC-1")} == {"README", "app.py"}
    out = hydrate(repo, "add-tree", "SEC-1", "--allow-secrets", "--json")
    assert out.returncode == 0, out
    assert json.loads(out.stdout)["added"] == 1
    assert "s3cr3tV4lue" not in out.stdout
    with Ledger(repo) as ledger:
        assert ".env" in {e["source"] for e in ledger.context_entries("SEC-1")}


def test_recorded_runs_refresh_in_one_process_and_unchanged_is_recognised(
    repo: Path, tmp_path: Path
) -> None:
    write(repo, "src/app.py", "def run():\n    return 1\n")
    write(repo, "docs/guide.md", "# Guide\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    other = tmp_path / "other"
    write(other, "api.md", "# The other service\n")
    make_task(repo)
    assert hydrate(repo, "add-tree", TASK, "src").returncode == 0
    assert hydrate(repo, "add-tree", TASK, "--dir", str(other), "--prefix", "svc").returncode == 0
    recorded = json.loads(hydrate(repo, "show", TASK, "--json").stdout)["selections"]
    assert [(s["mode"], s.get("rev"), s.get("pathspecs"), s.get("prefix")) for s in recorded] == [
        ("rev", "HEAD", ["src"], None),
        ("dir", None, None, "svc/"),
    ]
    # One process: the new commit is taken, then the prompt is printed.
    write(repo, "src/app.py", "def run():\n    return 2\n")
    git(repo, "commit", "-q", "-am", "app 2")
    first = hydrate(repo, "prompt", TASK, "--refresh")
    assert first.returncode == 0, first
    assert "return 2" in first.stdout and "The other service" in first.stdout
    assert f"refreshed {TASK} from HEAD " in first.stderr
    assert "updated 1" in first.stderr
    tip = git(repo, "rev-parse", f"refs/hydrate/tasks/{TASK}")
    # Nothing changed: the revision run is recognised without listing, nothing is written.
    again = hydrate(repo, "prompt", TASK, "--refresh")
    assert again.stdout == first.stdout
    assert "(recognised: same commit, nothing listed)" in again.stderr
    assert git(repo, "rev-parse", f"refs/hydrate/tasks/{TASK}") == tip
    # A change to the task (its ranking inputs) is not recognised.
    assert hydrate(repo, "task-edit", TASK, "--title", "Run faster").returncode == 0
    edited = hydrate(repo, "prompt", TASK, "--refresh")
    assert "recognised" not in edited.stderr.splitlines()[0]
    # A directory this machine does not have is named; the rest goes on.
    for path in other.iterdir():
        path.unlink()
    other.rmdir()
    gone = hydrate(repo, "prompt", TASK, "--refresh")
    assert gone.returncode == 0, gone
    assert f"warning: {TASK}: not refreshed: {other} is not a directory" in gone.stderr
    fsck(repo)


def test_add_tree_then_prompt_in_one_process(repo: Path) -> None:
    write(repo, "src/app.py", "def run():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    make_task(repo)
    both = hydrate(repo, "add-tree", TASK, "--prompt")
    assert both.returncode == 0, both
    assert both.stderr.startswith(f"{TASK}: added ")
    alone = hydrate(repo, "prompt", TASK, "--no-cache")
    assert both.stdout == alone.stdout and "return 1" in both.stdout
    assert hydrate(repo, "add-tree", TASK, "--prompt", "--json").returncode == 2
    small = hydrate(repo, "add-tree", TASK, "--prompt", "--max-bytes", "400")
    assert small.returncode == 0, small
    assert len(small.stdout.encode()) <= 400 and "return 1" not in small.stdout
    assert "omitted 2 (2 byte_budget)" in small.stderr
    assert hydrate(repo, "add-tree", TASK, "--max-bytes", "400").returncode == 2


def test_one_pass_reads_each_body_once_and_checks_the_budget_first(repo: Path) -> None:
    """add-tree --prompt hands the bodies it read to the prompt: with their blobs
    damaged in the object store afterwards, the prompt is still built, from memory,
    and each body is given out once. A budget the head alone overflows is refused
    before anything is attached."""
    import io

    from git_hydrate import CorruptData

    write(repo, "src/app.py", "def run():\n    return 1\n")
    write(repo, "src/lib.py", "VALUE = 'caf\u00e9'\n")
    commit_all(repo)
    make_task(repo)
    refused = hydrate(repo, "add-tree", TASK, "--prompt", "--max-bytes", "10")
    assert refused.returncode == 1 and "mandatory" in refused.stderr, refused
    assert links(repo) == []  # nothing attached, no commit made
    git(repo, "gc", "-q", "--prune=now")  # the files' blobs in one pack, damaged below
    with Ledger(repo) as ledger:
        ledger.add_tree(TASK)
        expected = ledger.prompt(TASK, cache=False)["prompt"].encode()
    (repo / ".git" / "hydrate" / "sha256-cache").unlink()  # so that T-2's run reads them
    make_task(repo, "T-2")
    memo = BodyMemo(1 << 20)
    with Ledger(repo) as ledger:
        ledger.add_tree("T-2", memo=memo)
        kept = memo.size
        assert kept == sum(link["size"] for link in links(repo, "T-2")) > 40, kept
        (pack,) = (repo / ".git" / "objects" / "pack").glob("*.pack")
        os.chmod(pack, 0o644)
        with open(pack, "r+b") as fh:  # in place: open readers see it too
            size = fh.seek(0, os.SEEK_END)
            fh.seek(12)
            fh.write(b"\0" * (size - 32))
        out = io.BytesIO()
        ledger.write_prompt("T-2", out, cache=False, memo=memo)
        assert out.getvalue() == expected.replace(TASK.encode(), b"T-2")
        assert memo.size == 0  # given out once, then forgotten
        for name in ("app.py", "lib.py"):  # nor can the work tree stand in for git
            (repo / "src" / name).unlink()
        with pytest.raises(CorruptData, match="T-2"):
            ledger.write_prompt("T-2", io.BytesIO(), cache=False)


def test_the_memo_gives_a_body_only_to_its_own_sha256() -> None:
    memo = BodyMemo()
    memo.offer("a" * 40, "1" * 64, b"kept")  # off: the limit is 0
    assert "a" * 40 not in memo
    memo = BodyMemo(6)
    memo.offer("a" * 40, "1" * 64, b"kept")
    memo.offer("a" * 40, "1" * 64, b"kept")  # (offered twice: kept once)
    assert "a" * 40 in memo and memo.size == 4
    assert memo.take("a" * 40, "9" * 64) is None  # another link's sha256: not given
    assert "a" * 40 not in memo and memo.size == 0
    memo.offer("a" * 40, "1" * 64, b"kept")
    assert memo.take("a" * 40, "1" * 64) == (b"kept", None)  # (no marks: not marking)
    assert memo.take("a" * 40, "1" * 64) is None
    memo.marking = True  # a text kept comes with its marks, found if not given
    memo.offer("a" * 40, "1" * 64, b"# k\n")
    memo.offer("b" * 40, "2" * 64, b"\n", [])
    assert memo.take("a" * 40, "1" * 64) == (b"# k\n", [0])
    assert memo.take("b" * 40, "2" * 64) == (b"\n", [])


def test_a_memo_that_cannot_hold_every_body_keeps_none() -> None:
    """Bodies are offered in reading order, not packing order: once one does not
    fit, what the memo holds is an arbitrary part of what was read, and it is
    dropped (the prompt reads those bodies again, from the work tree or git)."""
    memo = BodyMemo(10)
    memo.offer("a" * 40, "1" * 64, b"kept")
    memo.offer("b" * 40, "2" * 64, b"too big")  # over the limit: the memo ends
    assert "a" * 40 not in memo and "b" * 40 not in memo and memo.size == 0
    memo.offer("c" * 40, "3" * 64, b"fits")  # nothing more is kept
    assert "c" * 40 not in memo and memo.take("c" * 40, "3" * 64) is None


def test_a_git_lacking_check_attr_source_is_asked_once(repo: Path, tmp_path: Path) -> None:
    write(repo, "src/app.py", "x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    make_task(repo)
    features = repo / ".git" / "hydrate" / "git-features"
    traces = []
    for run in range(2):
        trace = tmp_path / f"trace{run}"
        res = hydrate(repo, "add-tree", TASK, "--no-rank", env={"GIT_TRACE": str(trace)})
        assert res.returncode == 0, res
        traces.append(trace.read_text())
    probe = subprocess.run(
        ["git", "check-attr", "--source=HEAD", "binary", "--", "x"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    if probe.returncode == 0:  # git >= 2.40: nothing to remember
        assert not features.exists()
        assert all("--source=" in t for t in traces)
        return
    assert "\tcheck-attr --source\n" in features.read_text()
    assert "--source=" in traces[0] and "--source=" not in traces[1]
    assert "check-attr -z --stdin --cached" in traces[1]


def test_refresh_never_runs_a_selection_recorded_in_another_clone(tmp_path: Path) -> None:
    """Found in review: a task pulled from a teammate carried a --dir selection, and
    prompt --refresh read that directory here and attached it for the next push."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    them, me = tmp_path / "them", tmp_path / "me"
    for path in (them, me):
        git(tmp_path, "clone", "-q", str(bare), str(path))
    private = tmp_path / "private"
    write(private, "notes.txt", "placeholder\n")
    make_task(them)
    assert hydrate(them, "add-tree", TASK, "--dir", str(private)).returncode == 0
    assert hydrate(them, "push").returncode == 0
    write(private, "secret-plan.txt", "internal host 10.1.2.3\n")
    assert hydrate(me, "pull").returncode == 0
    refreshed = hydrate(me, "prompt", TASK, "--refresh")
    assert refreshed.returncode == 0, refreshed
    assert "secret-plan" not in refreshed.stdout
    assert "recorded in another clone, so not taken here" in refreshed.stderr
    assert f"git hydrate add-tree {TASK} --dir {private}" in refreshed.stderr
    assert "secret-plan" not in json.dumps(links(me))
    # Run once here, the selection is this clone's own: refresh takes it from then on.
    assert hydrate(me, "add-tree", TASK, "--dir", str(private)).returncode == 0
    write(private, "later.txt", "later\n")
    again = hydrate(me, "prompt", TASK, "--refresh")
    assert "later.txt" in again.stdout and "another clone" not in again.stderr


def test_the_command_that_adopts_a_selection_is_quoted_for_the_shell(
    repo: Path, tmp_path: Path
) -> None:
    """Found by a tester: a selection from another clone (whose values are that
    clone's, or anyone's who can push) was printed as a command to copy with its
    values bare: ``--dir /tmp/x; touch /tmp/PWNED #`` ran ``touch`` when pasted."""
    outside = tmp_path / "p; touch PWNED #"
    write(outside, "n.txt", "hi\n")
    write(outside, "-x", "dash\n")
    make_task(repo)
    given = ["--dir", str(outside), "--prefix", "a$(id)/", "--priority", "5"]
    given += ["--max-file-bytes", "1000", "--", "-x", "*.txt"]
    assert hydrate(repo, "add-tree", TASK, *given).returncode == 0
    (repo / ".git" / "hydrate" / "own-selections").unlink()  # as if run by another clone
    refreshed = hydrate(repo, "prompt", TASK, "--refresh")
    assert refreshed.returncode == 0, refreshed
    suggested = refreshed.stderr.split("run it once yourself: ", 1)[1].splitlines()[0]
    words = as_sh_reads(suggested, tmp_path)
    assert words == ["git", "hydrate", "add-tree", TASK, *given]
    # the command, pasted, is the run that this clone then takes as its own
    assert hydrate(repo, *words[2:]).returncode == 0
    again = hydrate(repo, "prompt", TASK, "--refresh")
    assert "another clone" not in again.stderr and "refreshed" in again.stderr


def test_refresh_is_not_fooled_by_a_change_outside_the_run(repo: Path, tmp_path: Path) -> None:
    """Found in review: removing the link a file duplicated, or an attributes file
    outside the tree, changes what a run attaches; neither was in the digest."""
    write(repo, "a.txt", "same content here\n")
    write(repo, "b.txt", "other\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")
    make_task(repo)
    note = tmp_path / "note.txt"
    note.write_text("same content here\n")
    assert hydrate(repo, "context-add", TASK, "--file", str(note)).returncode == 0
    assert hydrate(repo, "add-tree", TASK).returncode == 0  # a.txt: a duplicate
    original = [lk["sha256"] for lk in links(repo) if lk["source"] == "note.txt"]
    assert hydrate(repo, "context-rm", TASK, original[0]).returncode == 0
    after_rm = hydrate(repo, "prompt", TASK, "--refresh")
    assert "recognised" not in after_rm.stderr and "added 1" in after_rm.stderr
    assert "a.txt" in [lk.get("path") for lk in links(repo)]
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("b.txt linguist-generated\n")
    generated = hydrate(repo, "prompt", TASK, "--refresh")
    assert "recognised" not in generated.stderr and "removed 1" in generated.stderr


def test_own_output_is_skipped_by_content_and_by_name(repo: Path) -> None:
    """Issue 27 item 6: a prompt written into the work tree never feeds its task, even
    copied or renamed; nor do a packet or a pre-push artefact. (The agent bridges'
    files are kept out of git's view by .git/info/exclude.)"""
    write(repo, "src/app.py", "def main():\n    return 1\n")
    commit_all(repo)
    make_task(repo)
    assert hydrate(repo, "add-tree", TASK, "src").returncode == 0
    assert hydrate(repo, "prompt", TASK, "-o", "T-1.md").returncode == 0
    prompt = (repo / "T-1.md").read_text()
    write(repo, "notes/handoff.txt", prompt)  # renamed
    write(repo, "notes/quoted.md", "Before.\n\n" + prompt + "\nAfter.\n")  # pasted inside
    packet = hydrate(repo, "expand", TASK)
    write(repo, "out/packet.json", packet.stdout)
    write(repo, "art/T-9/T-9.prompt.md", "whatever the hook wrote\n")  # by name
    write(repo, "art/T-9/T-9.packet.json", "{}\n")
    write(repo, "notes/about.md", "Our prompts end with an Output contract.\n")  # not ours
    result = hydrate(repo, "--compact", "add-tree", TASK, "--worktree", "--json")
    assert result.returncode == 0, result.stderr
    reasons = by_path(json.loads(result.stdout))
    for path in ("T-1.md", "notes/handoff.txt", "notes/quoted.md", "out/packet.json",
                 "art/T-9/T-9.prompt.md", "art/T-9/T-9.packet.json"):  # fmt: skip
        assert reasons.get(path) == "own_output", (path, reasons)
    sources = {link["source"] for link in links(repo)}
    assert "notes/about.md" in sources and "T-1.md" not in sources


def test_the_command_pauses_cyclic_collection_and_restores_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    import git_hydrate.hydrate.tree as tree

    make_task(repo)
    during: list[bool] = []
    reading = tree.read_content

    def observed(*args: Any, **kwargs: Any) -> Any:
        during.append(gc.isenabled())
        return reading(*args, **kwargs)

    monkeypatch.setattr(tree, "read_content", observed)
    assert gc.isenabled()
    assert hydrate(repo, "add-tree", TASK).returncode == 0
    assert during == [False] and gc.isenabled()
    gc.disable()  # (a caller's own choice is left as it was)
    try:
        assert hydrate(repo, "add-tree", TASK, "--rev", "HEAD", "--no-rank").returncode == 0
        assert during == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


def test_a_first_task_saves_what_reading_learned_once_its_index_is_kept(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building a word index, the sha256 cache and the tree's verdicts are written
    after ranking (in the memory the index's building freed), not before: and
    written all the same."""
    import git_hydrate.hydrate.tree as tree

    make_task(repo)
    cache = repo / ".git" / "hydrate" / "sha256-cache"
    seen: list[bool] = []
    placing = tree._place

    def observed(*args: Any, **kwargs: Any) -> Any:
        found = placing(*args, **kwargs)
        seen.append(cache.exists())
        return found

    monkeypatch.setattr(tree, "_place", observed)
    assert hydrate(repo, "add-tree", TASK).returncode == 0
    assert seen == [False]  # (ranked: the index built while reading, kept, then saved)
    blobs = git(repo, "ls-tree", "-r", "HEAD").split()[2::4]
    lines = [line for line in cache.read_text().splitlines() if not line.startswith("#")]
    assert {line.split()[0] for line in lines} == set(blobs)
    verdicts = repo / ".git" / "hydrate" / "tree-verdicts"
    assert [p.name for p in verdicts.iterdir()] == [git(repo, "rev-parse", "HEAD^{tree}").strip()]
    cache.unlink()
    assert hydrate(repo, "add-tree", TASK, "--no-rank").returncode == 0
    assert seen[-1] is True  # (no index built: saved at the end of reading, as before)


def test_add_diff_says_a_path_typed_as_its_range_goes_after_dashdash(repo: Path) -> None:
    """``git diff FILE`` reads a path; ``add-diff ID FILE`` said only that FILE "does
    not name a commit", and with --worktree "not both" (explorer15): both say it is a
    path and give the command with it after ``--`` (from a subdirectory too)."""
    commit_files(repo, {"src/a.py": "x = 1\n"}, "one")
    make_task(repo)
    write(repo, "src/a.py", "x = 2\n")
    typed = hydrate(repo, "add-diff", TASK, "src/a.py")
    assert typed.returncode == 1 and typed.stderr == (
        "error: 'src/a.py' does not name a commit in this repository; it is a path, and "
        f"paths go after --: git hydrate add-diff {TASK} -- src/a.py\n"
    )
    below = hydrate(repo / "src", "add-diff", TASK, "--worktree", "a.py")
    assert below.returncode == 2 and below.stderr.startswith(
        f"error: 'a.py' is a path; paths go after --: git hydrate add-diff {TASK} --worktree "
        "-- a.py ("
    )
    assert hydrate(repo, "add-diff", TASK, "nope").stderr == (
        "error: 'nope' does not name a commit in this repository\n"
    )
    assert links(repo) == []
    assert hydrate(repo / "src", "add-diff", TASK, "--worktree", "--", "a.py").returncode == 0


def test_a_path_typed_inside_the_git_directory_is_refused(repo: Path) -> None:
    """explorer15: inside .git, ``add-tree T .`` attached all of HEAD (git sees no
    work tree there, so "." was read from the top); git refuses such a path. Both
    add-tree and add-diff say where to run; a path from the top (``:/``) is taken."""
    make_task(repo)
    said = (
        "error: pathspec '.' is read from the work tree: run it from the work tree, not "
        "inside the git directory\n"
    )
    tree = hydrate(repo / ".git", "add-tree", TASK, ".")
    assert (tree.returncode, tree.stdout, tree.stderr) == (1, "", said)
    diff = hydrate(repo / ".git", "add-diff", TASK, "HEAD", "--", ".")
    assert (diff.returncode, diff.stderr) == (1, said)
    top = hydrate(repo / ".git", "add-tree", TASK, ":/")
    assert top.returncode == 0, top


def test_quiet_says_only_what_the_task_lacks(repo: Path) -> None:
    """-q (add-tree, add-diff), for scripts: no counts and no summary of what the
    skip rules left out; a file the task names that is not attached is still said,
    and -q with -v is refused."""
    write(repo, "src/parser.py", "def parse():\n    return 1\n")
    write(repo, "package-lock.json", "{}\n")
    commit_all(repo)
    hydrate(repo, "task-add", TASK, "--objective", "o", "--acceptance", "a",
            "--file-in-play", "src/parser.py", "--file-in-play", "src/gone.py")  # fmt: skip
    loud = hydrate(repo, "add-tree", TASK)
    assert loud.stdout.startswith(f"{TASK}: added ") and "generated" in loud.stdout
    again = hydrate(repo, "add-tree", TASK, "-q")
    assert again.returncode == 0 and again.stderr == "", again
    assert again.stdout.splitlines() == [
        "  missing       src/gone.py (0 bytes; file in play, not attached)"
    ]
    write(repo, "src/parser.py", "def parse():\n    return 2\n")
    commit_all(repo, "two")
    diff = hydrate(repo, "add-diff", TASK, "HEAD~1", "--quiet")
    assert (diff.stdout, diff.stderr, diff.returncode) == ("", "", 0)
    assert hydrate(repo, "add-diff", TASK, "HEAD~1").stdout.startswith(f"{TASK}: added 0")
    both = hydrate(repo, "add-tree", TASK, "-q", "-v")
    assert both.returncode == 2 and both.stderr.startswith("error: give -q or -v, not both")


def test_quiet_with_prompt_says_the_summary_only_when_it_is_a_warning(repo: Path) -> None:
    """add-tree --prompt -q said the prompt's summary line ("prompt: ID: kept ...")
    on every run, where prompt -q says it only when it is a warning."""
    write(repo, "src/parser.py", "def parse():\n    return 1\n" * 40)
    commit_all(repo)
    hydrate(repo, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    quiet = hydrate(repo, "add-tree", TASK, "--prompt", "-q")
    assert quiet.returncode == 0 and quiet.stdout, quiet
    assert quiet.stderr == hydrate(repo, "prompt", TASK, "-q").stderr == ""
    loud = hydrate(repo, "add-tree", TASK, "--prompt")
    assert loud.stderr.splitlines()[-1].startswith(f"prompt: {TASK}: kept "), loud
    tight = hydrate(repo, "add-tree", TASK, "--prompt", "--max-bytes", "600", "-q")
    assert tight.stderr.startswith(f"warning: {TASK}: kept "), tight
    assert tight.stderr == hydrate(repo, "prompt", TASK, "--max-bytes", "600", "-q").stderr
