"""Hydrating tasks from the repository: add-tree, add-diff, and their rules.

* :mod:`.sources` — where files come from (a commit, the work tree, a directory);
* :mod:`.pathspec` — which of them a run takes;
* :mod:`.rules` — one set of skip rules for files and diffs, with reasons;
* :mod:`.cache` — each blob's sha256 and class, read once ever;
* :mod:`.links` — picks become links in one commit;
* :mod:`.rank`, :mod:`.history`, :mod:`.placement` — the right files first;
* :mod:`.tree`, :mod:`.diff`, :mod:`.rerank`, :mod:`.resources` — the operations.
"""

from __future__ import annotations

from .diff import add_diff, default_base
from .pathspec import Pathspec, relative_to_top
from .rerank import RankResult, rerank
from .resources import hydrate_from_path, hydrate_paths
from .rules import REASONS, SKIPPED_DIRS
from .tree import add_tree, refresh

__all__ = [
    "REASONS",
    "SKIPPED_DIRS",
    "Pathspec",
    "RankResult",
    "add_diff",
    "add_tree",
    "default_base",
    "hydrate_from_path",
    "hydrate_paths",
    "refresh",
    "relative_to_top",
    "rerank",
]
