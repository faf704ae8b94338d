"""The shape of the package: imports flow one way, privates stay home, the surface is pinned.

The layers, lowest first (a module may import only from its own layer or
below, and the whole graph must be free of cycles):

    errors, ids (the task-id rules, importing nothing heavy)
    settings, model
    codec, validate, secrets, merge, context_expander, results, tokens, outline
    store (the only git boundary)
    archive, treeshape
    taskrefs (the task-ref core)
    tasks, context, listing, history, packing, hydrate
    lifecycle, sync, doctor, current
    ledger (the facade)
    hooks, serve, agents
    cli, console (what the command line says and writes without click), quick (the
    entry point: the prompt cache's fast path, then cli)
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "git_hydrate"

LAYERS: list[set[str]] = [
    {"errors", "fingerprint", "ids"},
    {"settings", "model"},
    {
        "codec",
        "budgeting",
        "validate",
        "secrets",
        "merge",
        "rendering",
        "context_expander",
        "results",
        "tokens",
        "outline",
    },
    {"store"},
    {"archive", "treeshape", "prompt_cache", "refresh_memo"},
    {"taskrefs"},
    {"tasks", "context", "listing", "history", "packing", "hydrate", "dependencies"},
    {"lifecycle", "sync", "doctor", "claims", "current"},
    {"ledger"},
    {"hooks", "serve", "agents"},
    {"cli", "console", "quick", "__main__"},
]

#: Imports inside functions are allowed only to put off the cost of a heavy
#: module until it is needed (never to break a cycle).
LAZY_ALLOWED = {
    "secrets",
    "dulwich",
    "fractions",
    "ledger",
    # the ledger's packing and hydration, only for the commands that use them
    "packing",
    "hydrate",
    "rerank",  # (git_hydrate.hydrate's function of that name, from its module)
    "codec",
    "hooks",
    "doctor",
    "sync",
    # coordination (claims through remotes) and the current task, only when used
    "claims",
    "current",
    # the optional extras' wrappers and their caches, only when a budget asks for them
    "tokens",
    "outline",
    "cache",
    # the full command line, when the entry point's fast path does not answer, and
    # the prompt cache, only for a command the fast path may answer
    "cli",
    "prompt_cache",
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


def _imports(module: str, path: Path, known: set[str]) -> list[tuple[str, ast.AST, bool]]:
    """``(imported module, node, at module level)`` of every import inside the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
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
    top = module.split(".")[1] if module.count(".") else "__init__"
    for index, layer in enumerate(LAYERS):
        if top in layer:
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in this test")


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
        tree = ast.parse(path.read_text(encoding="utf-8"))
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
                "CommitInfo",
                "Identity",
                "Prefetch",
                "PushResult",
                "RefRace",
                "RefUpdate",
                "Refs",
                "Repository",
                "current_umask",
                "git_in_directory",
                "parse_commit_tree",
                "private_file",
                "read_private",
                "shared_file_mode",
                "shared_repository_mode",
            ],
        ),
        (
            "git_hydrate.taskrefs",
            [
                "FAN_OUT_LINKS",
                "MAX_ATTEMPTS",
                "STALE_LOCK_SECONDS",
                "TASK_REF_PREFIX",
                "BodyMemo",
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


def test_only_the_store_runs_git_or_imports_dulwich() -> None:
    for module, path in _modules().items():
        if module.startswith("git_hydrate.store"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "import dulwich" not in text and "from dulwich" not in text, module
        assert ('subprocess.run(["git"' not in text and '"git", "' not in text) or (
            module == "git_hydrate.cli.demo"
        ), f"{module} builds a git command line"
