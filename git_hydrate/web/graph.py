"""The dependency graph of the open tasks, laid out in layers for the page to draw.

An edge runs from a dependency to the task that waits for it, for every
dependency not yet done, and from each open part (a child task) to its parent.
Each connected group of tasks is laid out on its own, left to right: a task's
column is the longest chain of open tasks before it (tasks on a cycle, which
``doctor`` reports, are placed after the rest and marked), and the order within
a column follows the neighbours' order (two barycentre sweeps), which keeps
crossings few. Groups are placed the largest first, side by side in rows about
a screen wide. Open tasks with no open dependency and no open dependent are
counted, not drawn.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "CLOSED",
    "GAP_X",
    "GAP_Y",
    "NODE_H",
    "NODE_W",
    "ROW_WIDTH",
    "dependency_graph",
    "layers",
]

#: Stations of tasks that block nothing any more.
CLOSED: Final = ("done", "cancelled")
NODE_W: Final = 200
NODE_H: Final = 44
GAP_X: Final = 70
GAP_Y: Final = 14
_GROUP_GAP: Final = 40
#: How wide a row of small groups may grow before the next group starts a new row.
ROW_WIDTH: Final = 1300


def layers(
    nodes: Sequence[str], deps: Mapping[str, Sequence[str]]
) -> tuple[dict[str, int], set[str]]:
    """Each node's column (the longest chain of ``deps`` before it) and the nodes
    on a cycle. ``deps`` maps a node to the nodes it depends on."""
    members = set(nodes)
    waiting = {n: sum(1 for d in deps.get(n, ()) if d in members) for n in nodes}
    dependents: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        for dep in deps.get(node, ()):
            dependents[dep].append(node)
    column = dict.fromkeys(nodes, 0)
    ready = [n for n in nodes if waiting[n] == 0]
    placed: set[str] = set()
    while ready:
        node = ready.pop()
        placed.add(node)
        for nxt in dependents.get(node, ()):
            column[nxt] = max(column[nxt], column[node] + 1)
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    cyclic = {n for n in nodes if n not in placed}
    if cyclic:
        after = max((column[n] for n in placed), default=-1) + 1
        for node in sorted(cyclic):
            column[node] = after
    return column, cyclic


def _groups(nodes: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    parent = {n: n for n in nodes}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in edges:
        parent[root(a)] = root(b)
    groups: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        groups[root(node)].append(node)
    return sorted(groups.values(), key=lambda g: (-len(g), min(g)))


def _order(
    group: list[str], column: Mapping[str, int], edges: list[tuple[str, str]]
) -> list[list[str]]:
    width = max(column[n] for n in group) + 1
    cols: list[list[str]] = [[] for _ in range(width)]
    for node in sorted(group):
        cols[column[node]].append(node)
    neighbours: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        neighbours[a].append(b)
        neighbours[b].append(a)
    for sweep in (range(1, width), range(width - 2, -1, -1)):
        for index in sweep:
            ref = cols[index - 1] if sweep.step == 1 else cols[index + 1]
            where = {n: i for i, n in enumerate(ref)}

            def centre(node: str, where: dict[str, int] = where) -> float:
                seen = [where[m] for m in neighbours[node] if m in where]
                return sum(seen) / len(seen) if seen else float("inf")

            cols[index].sort(key=lambda n: (centre(n), n))
    return cols


def dependency_graph(cards: Sequence[Mapping[str, Any]], limit: int) -> dict[str, Any]:
    """The drawing of what blocks what among the open tasks of ``cards``: nodes
    with their places, edges, the drawing's size, and what was left out."""
    by_id = {c["task_id"]: c for c in cards if not c.get("archived")}
    open_ids = {t for t, c in by_id.items() if c["status"] not in CLOSED and not c.get("error")}
    edges, parts, elsewhere = _blocking_edges(by_id, open_ids)
    involved = sorted({n for edge in edges for n in edge})
    lone = len(open_ids) - len(set(involved) & open_ids)
    drawn, cut = _first_groups(_groups(involved, edges), limit, edges)
    shown = {n for g in drawn for n in g}
    edges = [(a, b) for a, b in edges if a in shown and b in shown]
    deps: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        deps[b].append(a)
    nodes: list[dict[str, Any]] = []
    shelf = _Shelf()
    for group in drawn:
        column, cyclic = layers(group, deps)
        cols = _order(group, column, edges)
        left, top = shelf.place(
            len(cols) * (NODE_W + GAP_X) - GAP_X, max(len(c) for c in cols) * (NODE_H + GAP_Y)
        )
        for x, col in enumerate(cols):
            for y, node in enumerate(col):
                place = (left + x * (NODE_W + GAP_X), top + y * (NODE_H + GAP_Y))
                item = by_id.get(node) or {"status": elsewhere.get(node) or "not-here"}
                nodes.append(_node(node, item, place, node in cyclic))
    return {
        "nodes": nodes,
        "edges": [
            {"from": a, "to": b, "kind": "part" if (a, b) in parts else "depends"}
            for a, b in edges
        ],
        "width": shelf.width,
        "height": shelf.height,
        "open": len(open_ids),
        "lone": lone,
        "left_out": len(involved) - len(shown),
        "cut": cut,
        "node_w": NODE_W,
        "node_h": NODE_H,
    }


def _blocking_edges(
    by_id: Mapping[str, Mapping[str, Any]], open_ids: set[str]
) -> tuple[list[tuple[str, str]], set[tuple[str, str]], dict[str, str | None]]:
    """``(edges, parts, elsewhere)``: (blocker, blocked) among the open tasks, a
    dependency still waiting outside them (archived, or not in this clone) and a
    child blocking its parent; which of the edges are a child's; and the station
    of each blocker from outside."""
    edges: list[tuple[str, str]] = []
    parts: set[tuple[str, str]] = set()
    elsewhere: dict[str, str | None] = {}
    for task_id in sorted(open_ids):
        for dep in by_id[task_id]["depends"]:
            outside = dep["task_id"] not in by_id  # archived, or not in this clone
            if dep["task_id"] in open_ids or (outside and dep["waiting"]):
                edges.append((dep["task_id"], task_id))
                if outside:
                    elsewhere[dep["task_id"]] = dep["station"]
        for child in by_id[task_id].get("children", ()):
            if child["task_id"] in open_ids and (child["task_id"], task_id) not in edges:
                edges.append((child["task_id"], task_id))
                parts.add((child["task_id"], task_id))
    return edges, parts, elsewhere


def _first_groups(
    groups: list[list[str]], limit: int, edges: Sequence[tuple[str, str]]
) -> tuple[list[list[str]], bool]:
    """The leading ``groups`` that hold at most ``limit`` nodes together; when the
    largest alone holds more, its front: the ``limit`` tasks of the earliest
    columns (those the others wait for), so a long chain is drawn where work
    can start rather than not at all (and ``True``: that group was cut)."""
    drawn: list[list[str]] = []
    count = 0
    for group in groups:
        if count + len(group) > limit:
            break
        drawn.append(group)
        count += len(group)
    if drawn or not groups or limit <= 0:
        return drawn, False
    members = set(groups[0])
    deps: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        if a in members and b in members:
            deps[b].append(a)
    column, _cyclic = layers(groups[0], deps)
    front = sorted(groups[0], key=lambda n: (column[n], n))[:limit]
    chosen = set(front)
    return _groups(front, [(a, b) for a, b in edges if a in chosen and b in chosen]), True


class _Shelf:
    """Groups placed left to right in rows no wider than :data:`ROW_WIDTH` (a group
    wider than that has a row of its own), rows top to bottom."""

    def __init__(self) -> None:
        self.x = self.y = self.row_height = 0
        self.width = self.height = 0

    def place(self, width: int, height: int) -> tuple[int, int]:
        if self.x and self.x + width > ROW_WIDTH:
            self.y += self.row_height + _GROUP_GAP
            self.x = self.row_height = 0
        left, top = self.x, self.y
        self.x += width + _GROUP_GAP + GAP_X
        self.row_height = max(self.row_height, height - GAP_Y)
        self.width = max(self.width, left + width)
        self.height = max(self.height, top + height - GAP_Y)
        return left, top


def _node(
    task_id: str, item: Mapping[str, Any], place: tuple[int, int], cyclic: bool
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "title": item.get("title", ""),
        "status": item["status"],
        "priority": item.get("priority"),
        "holder": item.get("holder", ""),
        "x": place[0],
        "y": place[1],
        "cycle": cyclic,
    }
