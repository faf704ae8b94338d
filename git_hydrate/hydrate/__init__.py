"""Hydrating tasks from the repository: add-tree, add-diff, and their rules.

* :mod:`.sources` — where files come from (a commit, the work tree, a directory);
* :mod:`.listings` — the listings of trees already read, kept by tree id (a near tree:
  the kept one and git's diff of the two);
* :mod:`.pathspec` — which of them a run takes;
* :mod:`.rules` — one set of skip rules for files and diffs, with reasons (:mod:`.attributes`
  and :mod:`.pathmarks`: a tree's attribute marks and the paths its rules skip, kept by
  tree id; :mod:`.generated`: code that says in its first lines a tool wrote it);
* :mod:`.cache` — each blob's sha256 and class, read once ever;
* :mod:`.reading` — add-tree's reading stage: each candidate's blob id, sha256 and class;
* :mod:`.selections` — the add-tree runs a task records, and recognising one again;
* :mod:`.links` — picks become links in one commit;
* :mod:`.rank`, :mod:`.history`, :mod:`.placement` — the right files first
  (:mod:`.testpaths`: which paths are tests, and of what);
  :mod:`.ranked` — a ranking's levels and scores, held as columns; :mod:`.chores` and
  :mod:`.evidence` — which commits say which files go together, and how much;
  :mod:`.pairing` — which file tests which, by their names;
* :mod:`.terms`, :mod:`.retrieval` — the words of a task and of a file, and the files a
  task's text describes (:mod:`.columns`: those a word index serves, scored a column per
  word; :mod:`.mentions`: the paths, modules and names it writes; :mod:`.areas`: the
  area its title starts with); :mod:`.facts` — each blob's words, kept once per repository;
  :mod:`.index` — a tree's word index, kept by tree id (a new task reads no blob's facts);
  :mod:`.indexing` — building it while a tree's blobs are read;
* :mod:`.suggestions` — ``rank --suggest``: the files to accept into ``--file-in-play``;
* :mod:`.tree`, :mod:`.diff`, :mod:`.rerank`, :mod:`.resources` — the operations;
  :mod:`.refreshing`, every add-tree run of a task taken again (``prompt --refresh``).
"""

from __future__ import annotations

from .diff import add_diff, default_base
from .pathspec import Pathspec, relative_to_top
from .refreshing import refresh
from .rerank import RankResult, rerank
from .resources import hydrate_from_path, hydrate_paths
from .rules import REASONS, SKIPPED_DIRS
from .suggestions import Suggested, Suggestion, suggest
from .tree import add_tree

__all__ = [
    "REASONS",
    "SKIPPED_DIRS",
    "Pathspec",
    "RankResult",
    "Suggested",
    "Suggestion",
    "add_diff",
    "add_tree",
    "default_base",
    "hydrate_from_path",
    "hydrate_paths",
    "refresh",
    "relative_to_top",
    "rerank",
    "suggest",
]
