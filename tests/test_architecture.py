"""The shape of the package: imports flow one way, privates stay home, the surface is pinned.

The layers are written once, in the package's docstring (``git_hydrate/__init__.py``),
where a reader looks first; these tests read them from there. A module may import
only from its own layer or below, and the whole graph must be free of cycles. A
package is in the layer of its name (``hydrate``), unless one of its modules is
named on its own (``pack.render``).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "git_hydrate"


def _declared_layers() -> list[set[str]]:
    """The layer table of the package's docstring: ``N  name name...`` lines, a
    line without a number continuing the layer above."""
    import git_hydrate

    doc = git_hydrate.__doc__ or ""
    table = doc[doc.index("The layers, lowest first") :]
    layers: list[set[str]] = []
    for line in table.splitlines()[1:]:
        numbered = re.fullmatch(r"    (\d+)\s+(.*)", line)
        if numbered:
            assert int(numbered.group(1)) == len(layers), line
            layers.append(set(numbered.group(2).split()))
        elif layers and re.fullmatch(r"       \S.*", line):
            layers[-1].update(line.split())
    assert layers, "the package docstring has no layer table"
    return layers


LAYERS: list[set[str]] = _declared_layers()


#: Imports inside functions are allowed only to put off the cost of a heavy
#: module until it is needed (never to break a cycle).
LAZY_ALLOWED = {
    "secrets",
    "dulwich",
    "fractions",
    "ledger",
    # the ledger's packing and hydration, only for the commands that use them
    "stored",
    "hydrate",
    "rerank",  # (git_hydrate.hydrate's function of that name, from its module)
    "codec",
    "hooks",
    # import and export, only for those commands
    "interop",
    "doctor",
    "repair",
    "sync",
    "merging",  # (sync.merging: the checks a pull makes, for archive alone)
    # coordination (claims through remotes) and the current task, only when used
    "claims",
    "current",
    # task search and its index, only for that command
    "search",
    # the optional extras' wrappers and their caches, only when a budget asks for them
    "tokens",
    "outline",
    # the full command line, when the entry point's fast path does not answer, and
    # the prompt cache, only for a command the fast path may answer
    "cli",
    "prompt_cache",
    # pull, push and sync without click, only for those commands
    "quicksync",
    # the work tree's files read below its top, only by what reads them
    "confined",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The absolute module names an ``ImportFrom`` node reaches inside the package."""
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    if not base.startswith("git_hydrate"):
        return []
    targets = [base]
    for alias in node.names:  # ``from . import codec`` names a module
        targets.append(f"{base}.{alias.name}")
    return targets


#: Each module's syntax tree, parsed once for every test here (~0.7 CPU-seconds a
#: parse of the package; the tests only read the trees).
_TREES: dict[Path, ast.Module] = {}


def _parsed(path: Path) -> ast.Module:
    tree = _TREES.get(path)
    if tree is None:
        tree = _TREES[path] = ast.parse(path.read_text(encoding="utf-8"))
    return tree


def _imports(module: str, path: Path, known: set[str]) -> list[tuple[str, ast.AST, bool]]:
    """``(imported module, node, at module level)`` of every import inside the package."""
    tree = _parsed(path)
    is_package = path.name == "__init__.py"
    top_level = {id(node) for node in tree.body}
    for node in tree.body:
        if isinstance(node, ast.If):  # if TYPE_CHECKING: imports for annotations only
            top_level.update(id(n) for n in node.body)
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            names = [n for n in _resolve(module, is_package, node) if n in known]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name in known]
        for name in names:
            found.append((name, node, id(node) in top_level))
    return found


def _layer(module: str) -> int:
    parts = module.split(".")[1:] or ["__init__"]
    for name in (".".join(parts[:2]), parts[0]):  # pack.render, else pack
        for index, layer in enumerate(LAYERS):
            if name in layer:
                return index
    raise AssertionError(
        f"{module} is in no layer: add it to the table in git_hydrate/__init__.py"
    )


def test_imports_flow_down_the_layers_and_form_a_dag() -> None:
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        if module == "git_hydrate":
            continue  # the public API resolves its names lazily
        edges = graph.setdefault(module, set())
        for target, node, _top in _imports(module, path, known):
            if target == "git_hydrate" or target == module:
                continue
            edges.add(target)
            line = getattr(node, "lineno", 0)
            assert _layer(target) <= _layer(module), (
                f"{module}:{line} imports {target}, a higher layer"
            )
    # No cycles, counting each package as the modules inside it.
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*trail, node, nxt]))
            if state.get(nxt) is None:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_function_level_imports_only_put_off_heavy_modules() -> None:
    modules = _modules()
    known = set(modules) | {"dulwich"}
    for module, path in modules.items():
        if module.startswith("git_hydrate.cli") or module == "git_hydrate":
            continue  # the command line imports each command's library lazily, by design
        for target, node, top in _imports(module, path, known):
            if top:
                continue
            leaf = target.rsplit(".", 1)[-1]
            assert leaf in LAZY_ALLOWED, (
                f"{module}:{getattr(node, 'lineno', 0)} imports {target} inside a function"
            )


def test_no_private_name_crosses_a_module_boundary() -> None:
    modules = _modules()
    for module, path in modules.items():
        tree = _parsed(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level or "git_hydrate" in (node.module or "")
            ):
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    assert not private, f"{module}:{node.lineno} imports private {alias.name}"


def test_every_module_declares_its_public_names() -> None:
    for module in _modules():
        if module.endswith("__main__"):
            continue
        loaded = importlib.import_module(module)
        names = getattr(loaded, "__all__", None)
        assert names is not None, f"{module} has no __all__"
        for name in names:
            assert hasattr(loaded, name) or module == "git_hydrate", f"{module}.{name} missing"


def test_the_public_api_is_pinned() -> None:
    import git_hydrate

    assert git_hydrate.__all__ == [
        "Busy",
        "Conflict",
        "CorruptData",
        "GitFailed",
        "HydrateError",
        "Ledger",
        "NoIdentity",
        "NotARepository",
        "NotFound",
        "NotWritable",
        "SecretDetected",
        "TooSmall",
        "UnsupportedRepository",
        "ValidationError",
        "__version__",
    ]
    for name in git_hydrate.__all__:
        assert getattr(git_hydrate, name) is not None


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        (
            "git_hydrate.store",
            [
                "MODE_BLOB",
                "MODE_TREE",
                "BeyondSymlink",
                "CommitInfo",
                "ConfinedTree",
                "FetchRace",
                "Identity",
                "Prefetch",
                "PushResult",
                "RefRace",
                "RefUpdate",
                "Refs",
                "Repository",
                "current_umask",
                "git_in_directory",
                "open_regular",
                "open_regular_fd",
                "parse_commit_tree",
                "private_file",
                "read_private",
                "shared_file_mode",
                "shared_repository_mode",
                "write_derived",
            ],
        ),
        (
            "git_hydrate.taskrefs",
            [
                "FAN_OUT_LINKS",
                "MAX_ATTEMPTS",
                "STALE_LOCK_SECONDS",
                "TASK_REF_PREFIX",
                "Change",
                "TaskRefs",
                "TaskState",
                "Unchanged",
                "attempts",
                "body_path",
                "commit_message",
                "default_title",
                "iso_utc",
                "link_shard",
                "link_tree_changes",
                "names_a_task",
                "ref_name",
                "task_message",
                "unknown_link_fields",
                "unknown_task_fields",
            ],
        ),
        ("git_hydrate.ledger", ["Ledger"]),
    ],
)
def test_core_surfaces_are_pinned(module: str, expected: list[str]) -> None:
    assert importlib.import_module(module).__all__ == expected


#: Modules outside the store that start a program: the demo makes its throwaway
#: repository with git, the manual shows the man page with ``man``.
_STARTS_PROGRAMS = {"git_hydrate.cli.demo", "git_hydrate.cli.manual"}


def test_only_the_store_runs_git_or_imports_dulwich() -> None:
    """A git command line, or any process started, outside the store is refused:
    a command line spelt with a variable (``repo.git_invocation()`` handed to
    ``subprocess.Popen``) is caught by the import of subprocess, not by the
    spelling of ``"git"``."""
    for module, path in _modules().items():
        if module.startswith("git_hydrate.store"):
            continue
        text = path.read_text(encoding="utf-8")
        tree = _parsed(path)
        assert "import dulwich" not in text and "from dulwich" not in text, module
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and not node.level
        }
        if module in _STARTS_PROGRAMS:
            continue
        assert "subprocess" not in imported, f"{module} starts a process"
        assert "git_invocation" not in text, f"{module} starts git by hand"
        assert '"git", "' not in text, f"{module} builds a git command line"


def test_files_that_must_not_be_waited_on_are_opened_one_way() -> None:
    """A reader that must refuse a FIFO in a file's place (opening one blocks until
    a writer comes) opens it through ``store.perms.open_regular`` or
    ``open_regular_fd``, not with flags of its own (two readers spelt them
    ``getattr(os, "O_NONBLOCK", 0)``, the others ``os.O_NONBLOCK``)."""
    for module, path in _modules().items():
        if module != "git_hydrate.store.perms":
            assert "O_NONBLOCK" not in path.read_text(encoding="utf-8"), module


#: Modules outside ``pack/`` that the packer imports but whose code cannot change a
#: prompt's bytes: errors, ids, result types, settings (a budget enters the prompt
#: cache's key resolved), the git boundary and the task-ref core (which decodes
#: through ``codec`` and ``model``), argument checks.
_NOT_DECIDING = {"errors", "ids", "results", "settings", "store", "taskrefs", "validate"}


def test_the_prompt_cache_key_covers_every_module_that_decides_a_prompt() -> None:
    from git_hydrate.pack.fingerprint import PACKER_INPUTS, packer_modules

    outside: set[str] = set()
    modules = _modules()
    for module, path in modules.items():
        if not module.startswith("git_hydrate.pack."):
            continue
        for target, _node, _top in _imports(module, path, set(modules)):
            name = target.split(".")[1] if "." in target else "__init__"
            if name not in ("pack", "__init__"):
                outside.add(name)
    assert outside - _NOT_DECIDING == {name.removesuffix(".py") for name in PACKER_INPUTS}
    listed = packer_modules()
    for path in sorted((PACKAGE / "pack").glob("*.py")):
        assert f"pack/{path.name}" in listed


def test_the_refresh_memo_key_names_modules_that_exist() -> None:
    """A module moved or renamed drops out of the refresh memo's key silently
    (its fingerprint becomes "missing"): every name must be a file."""
    from git_hydrate.pack.refresh_memo import DECIDING_MODULES, deciding_modules

    missing = [name for name in DECIDING_MODULES if not (PACKAGE / name).is_file()]
    assert missing == []
    named = deciding_modules()
    for package in ("hydrate", "secrets"):
        for path in sorted((PACKAGE / package).glob("*.py")):
            assert f"{package}/{path.name}" in named


#: The size goals (issue 30): a module holds one concern in at most this many lines,
MAX_MODULE_LINES = 600
#: and a function (its ``def`` line to its last, docstring included) at most this many.
MAX_FUNCTION_LINES = 60


def _function_sizes(tree: ast.AST, prefix: str = "") -> dict[str, int]:
    """``{qualified name: lines}`` of every function in ``tree``, nested ones too."""
    sizes: dict[str, int] = {}
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                sizes[name] = (node.end_lineno or node.lineno) - node.lineno + 1
            sizes |= _function_sizes(node, name + ".")
        else:
            sizes |= _function_sizes(node, prefix)
    return sizes


def _over(found: dict[str, int], limit: int) -> list[str]:
    """What breaks the goal (there are no known exceptions: split before growing past it)."""
    return [
        f"{name}: {size} lines (at most {limit}; split it)"
        for name, size in sorted(found.items())
        if size > limit
    ]


def test_modules_and_functions_keep_to_the_size_goals() -> None:
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        modules[name] = text.count("\n")
        for function, size in _function_sizes(_parsed(path)).items():
            functions[f"{name}:{function}"] = size
    wrong = _over(modules, MAX_MODULE_LINES) + _over(functions, MAX_FUNCTION_LINES)
    assert wrong == []


def test_help_imports_neither_the_store_nor_the_task_refs(tmp_path: Path) -> None:
    """``git hydrate -h`` reads no task: a module that one command line module
    imports at its top (``listing`` for ``list --tree`` once did) is paid by every
    command's start-up and by ``-h``: the store and the task refs cost ``-h`` a fifth
    of its CPU (benchmarks/RESULTS.md, issue 30)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from git_hydrate.cli import run\n"
        "run(['-h'])\n"
        "loaded = [m for m in sys.modules if m.startswith(('git_hydrate.store',"
        " 'git_hydrate.taskrefs', 'git_hydrate.listing', 'git_hydrate.search', 'dulwich'))]\n"
        "sys.stderr.write(repr(sorted(loaded)) + '\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.stderr.splitlines()[-1] == "[]", proc.stderr
