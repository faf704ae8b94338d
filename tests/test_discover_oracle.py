"""Opening a repository without a process gives git's own answers (issue 30).

``git_hydrate.store.discover`` finds the git directory, the common directory and
the work tree, and reads the configuration, in-process where that is certainly
what git would say, and hands everything back to git otherwise. The oracle is
the real git binary: ``git rev-parse --path-format=absolute --git-dir
--git-common-dir --is-bare-repository --show-object-format --is-inside-work-tree
--show-toplevel`` and ``git config -z --list``, run from the same directory
under the same environment, on repositories of every shape. Where the module
answers, the answer must be git's; where these tests say a shape is plain, it
must answer (else the processes are not saved).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from git_hydrate.store import discover as discover_module
from git_hydrate.store.discover import discover
from tests.conftest import git

Answer = tuple[str, str, str | None, bool, bool, bytes]


def git_answer(cwd: Path, env: dict[str, str] | None = None) -> Answer | None:
    """What git says from ``cwd`` (``None``: not a repository, or git refuses it)."""
    environ = dict(os.environ if env is None else env)
    proc = subprocess.run(
        [
            "git",
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
            "--is-bare-repository",
            "--show-object-format",
            "--is-inside-work-tree",
            "--show-toplevel",
        ],
        cwd=cwd,
        env=environ,
        capture_output=True,
        check=False,
    )
    lines = proc.stdout.decode().splitlines()
    if len(lines) < 5:
        return None
    work_tree = lines[5] if lines[4] == "true" and len(lines) > 5 else None
    prefix = ["git", "--git-dir", lines[0]]
    if work_tree is not None:
        prefix += ["--work-tree", work_tree]
    config = subprocess.run(
        [*prefix, "config", "-z", "--list"], env=environ, capture_output=True, check=True
    )
    return lines[0], lines[1], work_tree, lines[2] == "true", lines[3] == "sha256", config.stdout


def ours(cwd: Path, env: dict[str, str] | None = None) -> Answer | None:
    found = discover(str(cwd), os.environ if env is None else env)
    if found is None:
        return None
    return (
        found.git_dir,
        found.common_dir,
        found.work_tree,
        found.is_bare,
        found.sha256,
        found.config,
    )


def agrees(cwd: Path, env: dict[str, str] | None = None, *, answers: bool = True) -> None:
    """The module answers as git does from ``cwd`` (``answers``: and does answer;
    else it must hand the question to git)."""
    mine = ours(cwd, env)
    if answers:
        assert mine is not None, f"{cwd}: handed to git"
        assert mine == git_answer(cwd, env)
    else:
        assert mine is None, f"{cwd}: answered {mine}, git says {git_answer(cwd, env)}"


def plain(tmp_path: Path, name: str = "repo", *init: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "init", "-q", "-b", "main", *init, str(path))
    if "--bare" not in init:
        (path / "a" / "b").mkdir(parents=True)
        (path / "a" / "b" / "f").write_text("x\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "one")
    return path


# -- the shapes ----------------------------------------------------------------------------


def test_a_work_tree_its_subdirectories_and_its_git_directory(tmp_path: Path) -> None:
    repo = plain(tmp_path)
    for cwd in (repo, repo / "a", repo / "a" / "b"):
        agrees(cwd)
    # inside the git directory: no work tree, not bare (core.bare = false)
    for cwd in (repo / ".git", repo / ".git" / "refs" / "heads", repo / ".git" / "objects"):
        agrees(cwd)


def test_a_bare_repository_and_its_subdirectories(tmp_path: Path) -> None:
    bare = plain(tmp_path, "bare.git", "--bare")
    for cwd in (bare, bare / "refs", bare / "refs" / "heads"):
        agrees(cwd)
    # a bare repository inside a work tree is found first, as git finds it
    repo = plain(tmp_path)
    inner = plain(repo / "a", "inner.git", "--bare")
    agrees(inner)
    agrees(repo / "a")


def test_a_linked_work_tree(tmp_path: Path) -> None:
    repo = plain(tmp_path)
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    linked = tmp_path / "linked"
    for cwd in (linked, linked / "a", linked / "a" / "b"):
        agrees(cwd)
    # its own git directory (git's bare-like answer there), and the main one still
    agrees(repo / ".git" / "worktrees" / "linked")
    agrees(repo / "a")


def test_a_linked_work_tree_of_a_bare_repository(tmp_path: Path) -> None:
    source = plain(tmp_path, "source")
    git(tmp_path, "clone", "-q", "--bare", str(source), str(tmp_path / "b.git"))
    git(tmp_path / "b.git", "worktree", "add", "-q", str(tmp_path / "wt"), "main")
    agrees(tmp_path / "wt")  # core.bare = true in the common config: not this work tree's
    agrees(tmp_path / "wt" / "a")


def test_a_git_file_relative_and_absolute(tmp_path: Path) -> None:
    """A submodule's shape (``gitdir: ../.git/modules/x``) and a separate git directory."""
    repo = plain(tmp_path)
    modules = repo / ".git" / "modules"
    modules.mkdir()
    git(tmp_path, "init", "-q", "--separate-git-dir", str(modules / "sub"), str(repo / "sub"))
    assert (repo / "sub" / ".git").read_text().startswith("gitdir: /")
    agrees(repo / "sub")
    # the relative form git writes for a submodule
    (repo / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    (repo / "sub" / "deep").mkdir()
    agrees(repo / "sub")
    agrees(repo / "sub" / "deep")
    # trailing CRLF, as git strips it
    (repo / "sub" / ".git").write_bytes(b"gitdir: ../.git/modules/sub\r\n")
    agrees(repo / "sub")


def test_a_submodule_with_core_worktree_goes_to_git(tmp_path: Path) -> None:
    """``git submodule`` sets ``core.worktree`` in the module's git directory: git's."""
    repo = plain(tmp_path)
    modules = repo / ".git" / "modules"
    modules.mkdir()
    git(tmp_path, "init", "-q", "--separate-git-dir", str(modules / "sub"), str(repo / "sub"))
    (repo / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    git(repo / "sub", "config", "core.worktree", "../../../sub")
    agrees(repo / "sub", answers=False)
    assert git_answer(repo / "sub") is not None


def test_symbolic_links_on_the_way(tmp_path: Path) -> None:
    repo = plain(tmp_path)
    (tmp_path / "to-repo").symlink_to(repo)
    (tmp_path / "to-b").symlink_to(repo / "a" / "b")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "up").symlink_to(repo / "a" / "b")
    for cwd in (
        tmp_path / "to-repo",
        tmp_path / "to-repo" / "a",
        tmp_path / "to-b",
        tmp_path / "elsewhere" / "up",
        tmp_path / "to-b" / "..",  # the link's parent, as the kernel reads ".."
    ):
        agrees(cwd)


def test_a_symbolic_link_named_dot_git_goes_to_git(tmp_path: Path) -> None:
    repo = plain(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").symlink_to(repo / ".git")
    agrees(other, answers=False)


def test_sha256(tmp_path: Path) -> None:
    repo = plain(tmp_path, "repo", "--object-format=sha256")
    agrees(repo)
    agrees(repo / "a")


# -- where git stops looking ---------------------------------------------------------------


def ceiling_env(*entries: str) -> dict[str, str]:
    return {**os.environ, "GIT_CEILING_DIRECTORIES": ":".join(entries)}


def test_ceiling_directories(tmp_path: Path) -> None:
    repo = plain(tmp_path)
    deep = repo / "a" / "b"
    (tmp_path / "link").symlink_to(repo / "a")
    for entries in (
        (str(tmp_path),),  # above the repository: found
        (str(repo),),  # the work tree itself: never looked at from below it
        (str(repo / "a"),),
        (str(repo / "a" / "b"),),  # the start itself is looked at
        (str(tmp_path / "link"),),  # a ceiling through a link, resolved
        ("", str(tmp_path / "link")),  # after an empty entry: as written
        ("", str(repo) + "/"),
        ("relative/path", str(repo)),
        ("/",),
        (str(tmp_path / "missing"), str(repo / "a")),
    ):
        env = ceiling_env(*entries)
        for cwd in (deep, repo / "a", repo):
            mine, theirs = ours(cwd, env), git_answer(cwd, env)
            assert mine is None or mine == theirs, (entries, cwd)
            if theirs is None:
                assert mine is None
    # the plain case answers
    agrees(deep, ceiling_env(str(tmp_path)))


def test_outside_any_repository_goes_to_git(tmp_path: Path) -> None:
    (tmp_path / "nothing" / "here").mkdir(parents=True)
    env = ceiling_env(str(tmp_path))
    assert ours(tmp_path / "nothing" / "here", env) is None
    assert git_answer(tmp_path / "nothing" / "here", env) is None


def test_a_directory_that_looks_half_like_a_repository_goes_to_git(tmp_path: Path) -> None:
    repo = plain(tmp_path)
    half = repo / "a" / "half"
    (half / "refs").mkdir(parents=True)
    (half / "HEAD").write_text("ref: refs/heads/main\n")  # no objects/: not one to git
    agrees(half, answers=False)
    broken = repo / "broken"
    (broken / ".git").mkdir(parents=True)  # an empty .git: git looks further up
    agrees(broken, answers=False)
    assert git_answer(broken) == git_answer(repo)


# -- what the environment and the configuration decide -------------------------------------


@pytest.mark.parametrize(
    "variable",
    [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_TEST_ASSUME_DIFFERENT_OWNER",
    ],
)
def test_variables_that_point_git_elsewhere_go_to_git(tmp_path: Path, variable: str) -> None:
    repo = plain(tmp_path)
    values = {
        "GIT_DIR": str(repo / ".git"),
        "GIT_WORK_TREE": str(repo),
        "GIT_COMMON_DIR": str(repo / ".git"),
        "GIT_OBJECT_DIRECTORY": str(repo / ".git" / "objects"),
        "GIT_CONFIG_PARAMETERS": "'hydrate.maxbytes=100'",
        "GIT_CONFIG_COUNT": "0",
        "GIT_CONFIG": str(repo / ".git" / "config"),
    }
    env = {**os.environ, variable: values.get(variable, "1")}
    assert ours(repo, env) is None


def test_the_configuration_files_git_reads(tmp_path: Path) -> None:
    """System, XDG, ~/.gitconfig and the repository's, in git's order, from the
    variables that name them."""
    repo = plain(tmp_path)
    git(repo, "config", "hydrate.maxBytes", "4k")
    home = tmp_path / "home"
    (home / "xdg" / "git").mkdir(parents=True)
    (home / "xdg" / "git" / "config").write_text("[hydrate]\n\tmaxBytes = 1k\n[x]y\n")
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("[from]\n\tdefaultxdg = yes\n")
    (home / ".gitconfig").write_text("[user]\n\tname = Home\n\temail = h@example.com\n")
    system = tmp_path / "system"
    system.write_text('[core]\n\tbare\n[sys "Sub.Section"]\n\tKey = "v  w" ; c\n')
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_CONFIG", "XDG"))}
    base["HOME"] = str(home)
    for env in (
        {**base},  # ~/.config/git/config, then ~/.gitconfig
        {**base, "XDG_CONFIG_HOME": str(home / "xdg")},
        {**base, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig")},
        {**base, "GIT_CONFIG_SYSTEM": str(system), "GIT_CONFIG_GLOBAL": str(tmp_path / "none")},
        {**base, "GIT_CONFIG_SYSTEM": str(system), "GIT_CONFIG_NOSYSTEM": "true"},
        {**base, "GIT_CONFIG_SYSTEM": str(system), "GIT_CONFIG_NOSYSTEM": "0"},
    ):
        agrees(repo, env)
        agrees(repo / "a", env)


def test_a_system_file_this_module_cannot_name_goes_to_git(tmp_path: Path) -> None:
    """Without ``GIT_CONFIG_SYSTEM``, the system file is ``/etc/gitconfig`` only for
    a git installed under ``/usr``; another git (on ``PATH`` first) is asked."""
    repo = plain(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(discover_module.git_program(os.environ) or "/usr/bin/git")
    env = {k: v for k, v in os.environ.items() if k != "GIT_CONFIG_NOSYSTEM"}
    if discover_module.git_program(env) == "/usr/bin/git":
        agrees(repo, env)
    (bin_dir / "git").unlink()
    (bin_dir / "git").write_text('#!/bin/sh\nexec /usr/bin/git "$@"\n')
    (bin_dir / "git").chmod(0o755)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    assert ours(repo, env) is None


def test_no_git_on_the_path_goes_to_git(tmp_path: Path) -> None:
    """git itself then says it is missing (``NotARepository``), as before."""
    repo = plain(tmp_path)
    assert ours(repo, {**os.environ, "PATH": str(tmp_path / "nowhere")}) is None


@pytest.mark.parametrize(
    ("settings", "answers"),
    [
        ([("core.repositoryformatversion", "1")], True),
        ([("core.repositoryformatversion", "1"), ("extensions.preciousObjects", "true")], True),
        ([("core.repositoryformatversion", "1"), ("extensions.partialClone", "origin")], True),
        ([("extensions.noop", "x")], True),
        ([("core.repositoryformatversion", "1"), ("extensions.worktreeConfig", "true")], False),
        ([("core.repositoryformatversion", "1"), ("extensions.refStorage", "files")], False),
        ([("core.repositoryformatversion", "1"), ("extensions.objectFormat", "SHA1")], False),
        ([("core.repositoryformatversion", "0"), ("extensions.objectFormat", "sha256")], False),
        ([("core.repositoryformatversion", "0"), ("extensions.objectFormat", "sha1")], False),
        ([("core.repositoryformatversion", "1"), ("extensions.preciousObjects", "maybe")], False),
        ([("extensions.preciousObjects", "maybe")], False),
        ([("extensions.preciousObjects", "off")], True),
        ([("core.repositoryformatversion", "2")], False),
        ([("core.worktree", "..")], False),
        ([("core.bare", "true")], False),  # a work tree git then does not use
        ([("core.bare", "maybe")], False),
        ([("safe.bareRepository", "all")], False),
        ([("include.path", "other")], False),
        ([("includeIf.gitdir:/.path", "other")], False),
    ],
)
def test_formats_extensions_and_settings_git_decides(
    tmp_path: Path, settings: list[tuple[str, str]], answers: bool
) -> None:
    repo = plain(tmp_path)
    for key, value in settings:
        git(repo, "config", key, value)
    agrees(repo, answers=answers)


def test_an_extension_without_a_value_goes_to_git(tmp_path: Path) -> None:
    """``[extensions] partialclone`` with no value: git 2.39 crashes on it, so its
    answer is not compared; the repository is git's either way."""
    repo = plain(tmp_path)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[extensions]\n\tpartialclone\n")
    assert ours(repo) is None


def test_a_large_git_file_goes_to_git(tmp_path: Path) -> None:
    """git refuses a ``.git`` file over 1 MiB; one over 64 KiB is left to git."""
    target = plain(tmp_path, "target") / ".git"
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_bytes(f"gitdir: {target}\n".encode())
    assert ours(work) is not None  # the plain shape is answered here
    (work / ".git").write_bytes(f"gitdir: {target}".encode() + b"\n" * 70000)
    assert ours(work) is None


def test_core_bare_in_the_user_configuration(tmp_path: Path) -> None:
    """git reads ``core.bare`` from every file for ``--is-bare-repository``."""
    repo = plain(tmp_path)
    gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
    saved = gitconfig.read_text()
    try:
        gitconfig.write_text(saved + "[core]\n\tbare = true\n")
        agrees(repo)
        agrees(repo / ".git")
        bare = plain(tmp_path, "b.git", "--bare")
        git(bare, "config", "--unset", "core.bare")
        agrees(bare)
        gitconfig.write_text(saved + "[core]\n\tbare = false\n")
        agrees(bare)
    finally:
        gitconfig.write_text(saved)


def test_another_owner_goes_to_git(tmp_path: Path) -> None:
    """Ownership is ``safe.directory``'s to judge: a repository this user does not
    own is git's (as root: ``chown`` it; otherwise ``sudo`` in the environment)."""
    repo = plain(tmp_path)
    if os.geteuid() == 0:
        os.chown(repo / ".git", 12345, 12345)
        assert ours(repo) is None
        os.chown(repo / ".git", 0, 0)
        assert ours(repo, {**os.environ, "SUDO_UID": "12345"}) is None
    agrees(repo)


def test_another_owners_repository_is_refused_with_gits_way_out(tmp_path: Path) -> None:
    """git refuses a repository another user owns in four lines, the command that
    trusts it on the last; the one line git-hydrate says keeps that command
    (``GIT_TEST_ASSUME_DIFFERENT_OWNER``: git's own stand-in for a chown)."""
    from tests.conftest import hydrate

    repo = plain(tmp_path)
    result = hydrate(repo, "list", env={"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"})
    assert result.returncode == 128
    assert result.stderr == (
        f"fatal: detected dubious ownership in repository at '{repo}'; if you trust it: "
        f"git config --global --add safe.directory {repo}\n"
    )


# -- the configuration parser against git's ------------------------------------------------

CONFIG_TEXTS = [
    b"[core]\n\tbare = false\n",
    b"[Core]\n\tBare = False\n\tFileMode=true\n",
    b'[remote "Origin"]\n\turl = /x\n\tfetch = +refs/heads/*:refs/remotes/Origin/*\n',
    b'[a "sub \\"quoted\\" \\\\ back"]\n\tk = v\n',
    b"[a.B.c]\n\tk = v\n",  # the old form: folded whole
    b"[a]\n\tk\n\tk2 =\n\tk3 = \n",  # no value, empty values
    b'[a]\n\tk = "  spaced  " tail  \n',
    b"[a]\n\tk = one\ttwo   three\n",  # blanks inside: one space each
    b'[a]\n\tk = v ; comment\n\tl = v # comment\n\tm = "v ; not # comment"\n',
    b"[a]\n\tk = line\\\n continued\n",
    b'[a]\n\tk = esc \\n \\t \\b \\\\ \\"\n',
    b"[a]\r\n\tk = crlf\r\n",
    b"[a]\n\tk = lone\rcr\n",
    b"\xef\xbb\xbf[a]\n\tk = bom\n",
    b"[a]\n\tk = caf\xc3\xa9 \xff\n",
    b"[a] k = same line\n[b]k=v",
    b"# comment\n; comment\n\n  [a]  \n  k=v\n",
    b'[a]\n\tk = "" x\n',
    b"[a]\n\tk = x\x0by\x0cz \x0b\n",  # \v and \f are not blanks to git
    b"[a-b]\n\tk-1 = v\n",
    b"[a]\n\tk = v\n[a]\n\tk = w\n",
    # refused by git (or by this parser, which then hands them to git)
    b"[a\n\tk = v\n",
    b'[a]\n\tk = "open\n',
    b"[a]\n\tk = bad \\q escape\n",
    b"k = before any section\n",
    b"[]\n\tk = v\n",
    b"[a]\n\t1k = v\n",
    b"[a]\n\tk v\n",
    b"[a]\n\tk # c\n",
    b'[a "sub"x]\n\tk = v\n',
    b'[a "sub\n"]\n',
    b"\xef\xbb[a]\n",
    b"[a]\n\tk = nul\x00byte\n",
]


def git_config_file(path: Path) -> bytes | None:
    proc = subprocess.run(
        ["git", "config", "-z", "--list", "--file", str(path)], capture_output=True, check=False
    )
    return proc.stdout if proc.returncode == 0 else None


def printed(data: bytes) -> bytes | None:
    from git_hydrate.store.configfile import parse_config

    records = parse_config(data)
    if records is None:
        return None
    return b"".join(k + (b"\n" + v if v is not None else b"") + b"\0" for k, v in records)


@pytest.mark.parametrize("text", CONFIG_TEXTS, ids=range(len(CONFIG_TEXTS)))
def test_config_text_as_git_reads_it(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "config"
    path.write_bytes(text)
    mine, theirs = printed(text), git_config_file(path)
    if mine is not None:
        assert mine == theirs
    # every text above that git reads, this parser reads too, but for the two it
    # leaves to git by design: a NUL byte, a key before any section
    if theirs is not None and b"\0" not in text and not text.startswith(b"k ="):
        assert mine is not None, theirs


def _config_texts() -> Callable[..., object]:
    from hypothesis import strategies as st

    name = st.text("abcXYZ019-", min_size=0, max_size=4)
    piece = st.sampled_from(
        [" ", "\t", "\r", "\n", "\r\n", "#", ";", "=", '"', "\\", "[", "]", ".", "\\n", "é"]
    )
    value = st.lists(st.one_of(piece, name), max_size=8).map("".join)
    line = st.one_of(
        st.builds(lambda s: f"[{s}]", name),
        st.builds(lambda s, u: f'[{s} "{u}"]', name, value),
        st.builds(lambda k, v: f"\t{k} = {v}", name, value),
        st.builds(lambda k: f"{k}", name),
        value,
    )
    return st.lists(line, max_size=8).map(lambda lines: "\n".join(lines).encode())


def test_config_text_property(tmp_path: Path) -> None:
    from hypothesis import given, settings

    from tests.conftest import examples

    path = tmp_path / "config"

    @settings(max_examples=examples(200))
    @given(_config_texts())
    def check(text: bytes) -> None:
        path.write_bytes(text)
        mine = printed(text)
        if mine is not None:
            assert mine == git_config_file(path)

    check()


# -- the repository as the store opens it --------------------------------------------------


def opened(path: Path) -> tuple[object, ...]:
    from git_hydrate.store import Repository

    with Repository(path) as repo:
        return (
            repo.git_dir,
            repo.common_dir,
            repo.work_tree,
            repo.is_bare,
            repo.hash_name,
            repo.settings.raw("hydrate.maxbytes"),
            repo.settings.all("remote.Origin.url"),
            repo.identity()[:1],
        )


def test_the_store_opens_a_repository_without_a_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening, the settings and the identity: no git process where the module
    answers, and the same values as when git is asked."""
    from git_hydrate.store import base

    repo = plain(tmp_path)
    git(repo, "config", "hydrate.maxBytes", "4k")
    git(repo, "config", "remote.Origin.url", "/a")
    git(repo, "config", "--add", "remote.Origin.url", "/b")
    started: list[list[str]] = []
    real = base.run_git

    def counted(args: list[str], **kwargs: object) -> object:
        started.append(args)
        return real(args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(base, "run_git", counted)
    for path in (repo, repo / "a" / "b", repo / ".git"):
        in_process = opened(path)
        assert started == []
        # the same variable git would honour anyway, set to its default: git is asked
        monkeypatch.setenv("GIT_DISCOVERY_ACROSS_FILESYSTEM", "0")
        assert opened(path) == in_process
        assert [args[0] for args in started] == ["rev-parse", "--git-dir"]
        monkeypatch.delenv("GIT_DISCOVERY_ACROSS_FILESYSTEM")
        started.clear()


def test_git_paths_the_store_names_without_a_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git_path`` of the names git-hydrate asks about, in a main and a linked work
    tree (its own ``hydrate/``, the shared ``info/exclude``), as ``git rev-parse
    --git-path`` says, without a process; other names are still git's answer."""
    from git_hydrate.store import Repository, base

    started: list[list[str]] = []
    real = base.run_git

    def counted(args: list[str], **kwargs: object) -> object:
        started.append(args)
        return real(args, **kwargs)  # type: ignore[arg-type]

    repo = plain(tmp_path)
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    (repo / ".git" / "hydrate").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (repo / ".git" / "hydrate" / "agents").symlink_to(tmp_path / "elsewhere")
    names = ["hydrate/current-task", "hydrate/agents/claude.json", "info/exclude", "index"]
    names += ["hooks/pre-push", "logs/HEAD", "hydrate/../config"]
    for where in (repo, repo / "a", tmp_path / "linked"):
        with Repository(where) as opened:
            assert opened.found_in_process
            for name in names:
                said = git(where, "rev-parse", "--path-format=absolute", "--git-path", name)
                started.clear()
                monkeypatch.setattr(base, "run_git", counted)
                assert opened.git_path(name) == said.rstrip("\n"), (where, name)
                monkeypatch.setattr(base, "run_git", real)
                in_process = name.startswith("hydrate/") and ".." not in name
                assert (started == []) == (in_process or name == "info/exclude"), name


def _build(root: Path, steps: list[tuple[str, int, int]]) -> list[Path]:
    """Directories made by ``steps`` (what, under which, pointing at which) in ``root``:
    plain directories, repositories, bare ones, ``.git`` files and symbolic links,
    nested anyhow. Returns every directory a walk could start from."""
    dirs, git_dirs = [root], []
    for number, (what, under, at) in enumerate(steps):
        path = dirs[under % len(dirs)] / f"n{number}"
        if what == "dir":
            path.mkdir()
        elif what == "repo":
            git(root, "init", "-q", str(path))
            git_dirs.append(path / ".git")
            dirs += [path / ".git", path / ".git" / "refs"]
        elif what == "bare":
            git(root, "init", "-q", "--bare", str(path))
            git_dirs.append(path)
            dirs.append(path / "refs" / "heads")
        elif what == "gitfile" and git_dirs:
            path.mkdir()
            target = git_dirs[at % len(git_dirs)]
            (path / ".git").write_text(f"gitdir: {os.path.relpath(target, path)}\n")
        elif what == "link":
            path.symlink_to(dirs[at % len(dirs)])
        else:
            continue
        dirs.append(path)
    return dirs


def test_discovery_property(tmp_path: Path) -> None:
    """Random nestings of directories, repositories, bare repositories, ``.git`` files
    and links, from random directories under random ceilings: git's answer or none
    (in a trial of 600 examples the module answered 882 of the 914 starts git found a
    repository from, and each answer was git's)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tests.conftest import examples

    kinds = st.sampled_from(["dir", "repo", "bare", "gitfile", "link"])
    step = st.tuples(kinds, st.integers(0, 50), st.integers(0, 50))
    rounds = iter(range(1_000_000))

    @settings(max_examples=examples(60))
    @given(st.lists(step, min_size=1, max_size=6), st.lists(st.integers(0, 50), max_size=4))
    def check(steps: list[tuple[str, int, int]], picks: list[int]) -> None:
        root = tmp_path / f"round{next(rounds)}"
        root.mkdir()
        dirs = _build(root, steps)
        for pick in picks or [0]:
            start = dirs[pick % len(dirs)]
            for env in (None, ceiling_env(str(dirs[(pick // 2) % len(dirs)]))):
                mine, theirs = ours(start, env), git_answer(start, env)
                assert mine is None or mine == theirs, (steps, start, env and "ceiling")
                assert theirs is not None or mine is None

    check()


@pytest.mark.parametrize(
    "names",
    [
        [],
        ["origin"],
        ["zeta", "alpha", "Mid", "a.b", "with space", "d"],
        ["/slash", "origin"],  # git warns and leaves it out: git's answer
        ["x"],
    ],
)
def test_remotes_as_git_remote_lists_them(
    tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``remotes()`` from the settings read in-process: ``git remote``'s words,
    whatever key names the remote; a legacy ``remotes/`` file lists nothing."""
    from git_hydrate.store import Repository, base

    repo = plain(tmp_path)
    for number, name in enumerate(names):
        key = ("url", "fetch", "pushurl")[number % 3]
        value = f"+refs/heads/*:refs/remotes/{name}/*" if key == "fetch" else f"/r{number}"
        git(repo, "config", f"remote.{name}.{key}", value.replace(" ", "-"))
    git(repo, "config", "remote.pushDefault", "origin")
    (repo / ".git" / "remotes").mkdir()
    (repo / ".git" / "remotes" / "legacy").write_text("URL: /legacy\n")
    started: list[list[str]] = []
    real = base.run_git

    def counted(args: list[str], **kwargs: object) -> object:
        started.append(args)
        return real(args, **kwargs)  # type: ignore[arg-type]

    with Repository(repo) as opened:
        monkeypatch.setattr(base, "run_git", counted)
        listed = opened.remotes()
    assert listed == git(repo, "remote").split()
    assert (started == []) == (not any(name.startswith("/") for name in names))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("fetch", "/not/a/refspec"),
        ("fetch", "+refs/heads/*:refs/remotes/o/*"),
        ("fetch", "^refs/hydrate/*"),
        ("fetch", "refs/heads/a..b:refs/x"),
        ("fetch", "refs/heads/x.lock:refs/remotes/o/x"),
        ("fetch", "refs/heads/x.:refs/remotes/o/x"),
        ("fetch", "+refs/heads/a/*:refs/remotes/o/a/*"),
        ("fetch", "+refs/heads/*:refs/remotes/o/main"),
        ("fetch", "refs/heads/main:refs/remotes/o/main"),
        ("prune", "maybe"),
        ("skipDefaultUpdate", "true"),
        ("url", None),
    ],
)
def test_remotes_a_configuration_git_may_refuse_is_gits(
    tmp_path: Path, key: str, value: str | None
) -> None:
    """A remote's key git reads otherwise than as a name, or a value it may refuse:
    git is asked (its list, or its refusal, as before)."""
    from git_hydrate.store import Repository

    repo = plain(tmp_path)
    git(repo, "config", "remote.origin.url", "/o")
    config = repo / ".git" / "config"
    line = f"\t{key}\n" if value is None else f"\t{key} = {value}\n"
    config.write_text(config.read_text() + '[remote "origin"]\n' + line)
    proc = subprocess.run(["git", "remote"], cwd=repo, capture_output=True, check=False)
    with Repository(repo) as opened:
        assert opened.remotes() == proc.stdout.decode().split()


def _short_head(where: Path) -> str | None:
    proc = subprocess.run(
        ["git", "symbolic-ref", "-q", "--short", "HEAD"], cwd=where, capture_output=True
    )
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def test_the_branch_head_names_as_git_symbolic_ref_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``symbolic_ref("HEAD")`` is ``git symbolic-ref -q --short HEAD``'s answer: read
    from the file without a process on a branch (born or not, in a main or linked
    work tree, named with slashes) and when detached; git's where its ``--short``
    could print more or the file is not the plain form (a tag or a ref named like
    the branch, packed or loose; a branch that is itself a symbolic ref; ``HEAD`` a
    symbolic link, or written without the space)."""
    from git_hydrate.store import Repository, base

    started: list[list[str]] = []
    real = base.run_git

    def counted(args: list[str], **kwargs: object) -> object:
        started.append(args)
        return real(args, **kwargs)  # type: ignore[arg-type]

    def check(where: Path, in_process: bool) -> None:
        with Repository(where) as opened:
            started.clear()
            monkeypatch.setattr(base, "run_git", counted)
            try:
                assert opened.symbolic_ref("HEAD") == _short_head(where), where
            finally:
                monkeypatch.setattr(base, "run_git", real)
            assert (started == []) == in_process, (where, started)

    repo = plain(tmp_path)
    check(repo, True)
    check(repo / "a" / "b", True)
    unborn = plain(tmp_path, "unborn")
    git(unborn, "symbolic-ref", "HEAD", "refs/heads/trunk")
    check(unborn, True)
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "feature/x")
    check(tmp_path / "linked", True)
    git(tmp_path / "linked", "checkout", "-q", "--detach")
    check(tmp_path / "linked", True)
    git(repo, "checkout", "-q", "--detach")
    check(repo, True)
    for branch, make in [
        ("dup", ["tag", "dup"]),  # a loose tag of the branch's name
        ("hooks", None),  # .git/hooks
        ("v", ["tag", "v"]),  # packed below
        ("thing", ["update-ref", "refs/thing", "HEAD"]),
    ]:
        git(repo, "checkout", "-q", "-B", branch)
        if make:
            git(repo, *make)
        if branch == "v":
            git(repo, "pack-refs", "--all")
        check(repo, False)
    git(repo, "checkout", "-q", "-B", "main")
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/alias")
    check(repo, False)  # git follows the branch to main
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    head = repo / ".git" / "HEAD"
    head.write_text("ref:refs/heads/main\n")
    check(repo, False)
    head.unlink()
    head.symlink_to("refs/heads/main")
    check(repo, False)
    head.unlink()
    head.write_text("ref: refs/heads/a..b\n")  # (not a branch name: git says none)
    check(repo, False)
    for branch, other in [
        ("refs/main", "refs/main"),  # git's --short: heads/refs/main (packed below)
        ("main-worktree/HEAD", None),  # a name of another work tree's refs
    ]:
        git(repo, "update-ref", f"refs/heads/{branch}", "refs/heads/main")
        if other:
            git(repo, "update-ref", other, "refs/heads/main")
            git(repo, "pack-refs", "--all")
        git(repo, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
        check(repo, False)
    (repo / ".git" / "refs" / "heads" / "broken").write_bytes(b"")  # (a crash's leftover)
    git(repo, "symbolic-ref", "HEAD", "refs/heads/broken")
    check(repo, False)
