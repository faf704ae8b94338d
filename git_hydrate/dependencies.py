"""Dependencies between tasks: the queue summary, cycles, and what a task waits for.

A task may depend on others (``depends_on``), and may be a part of a parent
task (``parent``): the parent waits for each of its children as if it
depended on them, so parent edges count for readiness and cycles alike. A dependency on a task this
clone does not have is allowed (a pull may bring it); it is reported, never
dropped. A change that would close a cycle is refused with the cycle named;
cycles that still arise (two clones each adding one half, then a merge) are
found here for ``doctor`` and keep the tasks on them out of the ready queue.

The queue summary of a task is a pure function of its tip, so it is kept in a
disposable cache keyed by tip, like ``list``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from .archive import read_archive
from .errors import CorruptData, ValidationError
from .listing import ListEntry, SummaryCache, task_summary
from .model import INITIAL_STATION
from .results import DependencyDict
from .taskrefs import TaskRefs, TaskState
from .taskrefs.refs import alike
from .textpolicy import message_text

__all__ = [
    "CANCELLED_STATION",
    "DONE_STATION",
    "NOT_HERE",
    "QueueEntry",
    "blocking_graph",
    "check_no_cycle",
    "check_no_cycles",
    "children_of",
    "cycles",
    "dependency_stations",
    "edge_graph",
    "find_cycle",
    "named_waits",
    "not_here",
    "open_children",
    "queue_order",
    "queue_summaries",
    "shown_cycle",
    "station_of",
    "waiting_for",
    "why_none_ready",
]

#: The station a dependency must reach before the tasks depending on it are ready.
DONE_STATION: Final = "done"
#: A child at this station no longer holds its parent back.
CANCELLED_STATION: Final = "cancelled"


class QueueEntry(ListEntry):
    """A task's queue summary as the queue cache keeps it (:func:`queue_summaries`)."""

    created_at: str
    depends_on: list[str]
    claimed_at: str
    taken_from: str
    last_checkpoint_at: str


def _queue_summary(state: TaskState) -> dict[str, Any]:
    task = state.task
    return {
        **task_summary(state),
        "created_at": task.created_at,
        "depends_on": list(task.depends_on),
        "claimed_at": task.claimed_at,
        "taken_from": task.taken_from,
        # The latest moment, not the last entry: merged checkpoints interleave.
        "last_checkpoint_at": max((c.at for c in task.checkpoints), default=""),
    }


def queue_summaries(
    refs: TaskRefs, tips: Mapping[str, bytes] | None = None
) -> dict[str, dict[str, Any]]:
    """``{task_id: summary}`` of every live task (damaged ones as ``{task_id, error}``);
    ``tips``: every live task's tip, when the caller has just read them."""
    return SummaryCache(refs.repo, "queue-cache", QueueEntry).summaries(refs, _queue_summary, tips)


def station_of(refs: TaskRefs, live: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Every known task's station: live ones from ``live``, archived ones from the index."""
    try:
        archived = read_archive(refs.repo).index.tasks
    except CorruptData:
        archived = {}  # doctor names a damaged archive; its tasks count as unknown here
    stations = {task_id: entry.status for task_id, entry in archived.items()}
    for task_id, item in live.items():
        if "error" not in item:
            stations[task_id] = item["status"]
    return stations


def children_of(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each live parent's live children, sorted."""
    children: dict[str, list[str]] = {}
    for task_id, item in sorted(summaries.items()):
        parent = item.get("parent") if "error" not in item else None
        if parent and parent in summaries:
            children.setdefault(parent, []).append(task_id)
    return children


def open_children(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each live parent's children that hold it back (a cancelled child is no part
    of the work left), sorted."""
    return {
        parent: [c for c in ids if summaries[c].get("status") != CANCELLED_STATION]
        for parent, ids in children_of(summaries).items()
    }


def blocking_graph(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each live task and what it waits for: its dependencies, then its open children."""
    return _graph(summaries, open_children(summaries))


def edge_graph(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each live task and every edge out of it: its dependencies, then all its
    children, cancelled ones too. A change is checked against this graph, not the
    blocking one: a cancelled child can be reopened (a status change, checked
    for nothing), and its edge then blocks again."""
    return _graph(summaries, children_of(summaries))


def _graph(
    summaries: Mapping[str, Mapping[str, Any]], children: Mapping[str, list[str]]
) -> dict[str, list[str]]:
    return {
        task_id: [*item["depends_on"], *children.get(task_id, ())]
        for task_id, item in summaries.items()
        if "error" not in item
    }


#: What a dependency this clone does not have is said to be, in place of a station.
NOT_HERE: Final = "not here"


def waiting_for(depends_on: Iterable[str], stations: Mapping[str, str]) -> list[str]:
    """The dependencies not yet done, each as ``ID (station)`` or ``ID (not here)``."""
    return [
        f"{dep} ({stations.get(dep, NOT_HERE)})"
        for dep in depends_on
        if stations.get(dep) != DONE_STATION
    ]


def not_here(refs: TaskRefs, task_ids: Iterable[str]) -> list[tuple[str, str]]:
    """The ids among ``task_ids`` that are no task here, live or archived, each with
    the live task it may be a slip for (``""``: none alike): ``[(id, suggestion)]``.
    Such a dependency is kept (a pull may bring the task); the caller says so."""
    absent = [task_id for task_id in dict.fromkeys(task_ids) if refs.tip(task_id) is None]
    if not absent:
        return []
    try:
        archived = read_archive(refs.repo).index.tasks
    except CorruptData:
        archived = {}  # (doctor names a damaged archive)
    absent = [task_id for task_id in absent if task_id not in archived]
    known = refs.task_names() if absent else []
    return [(task_id, alike(task_id, known)) for task_id in absent]


def dependency_stations(
    depends_on: Iterable[str], stations: Mapping[str, str]
) -> list[DependencyDict]:
    """Each of ``depends_on`` with its station among ``stations`` (:func:`station_of`;
    ``None``: not here) and whether it is still waited for, as ``status`` shows them."""
    return [
        {
            "task_id": dep,
            "station": stations.get(dep),
            "waiting": stations.get(dep) != DONE_STATION,
        }
        for dep in depends_on
    ]


def queue_order(item: Mapping[str, Any]) -> tuple[int, str, str]:
    """The order of the ready queue: task priority (1 first), then age, then id."""
    return (item["priority"], item["created_at"] or "~", item["task_id"])


def why_none_ready(
    refs: TaskRefs, match: Callable[[dict[str, Any]], bool] | None = None, limit: int = 3
) -> str:
    """Why no task is ready, for ``claim --next`` and ``ready`` (issue 34): the
    first ``limit`` waiting open tasks in queue order (among those ``match``
    keeps) and what each waits for, as ``: T-3 waits for T-1, held by Alice
    since …``; ``""`` when none waits.
    """
    summaries = queue_summaries(refs)
    stations = station_of(refs, summaries)
    blocking = blocking_graph(summaries)
    looped = cycles(blocking)
    unheld = [
        item
        for item in summaries.values()
        if "error" not in item and item["status"] == INITIAL_STATION and not item["assignee"]
    ]
    waiting = sorted((item for item in unheld if match is None or match(item)), key=queue_order)
    if not waiting:
        if unheld:  # (open ones, none of the kind or tag asked)
            return ": no open task has the kind or tag asked (git hydrate list shows them)"
        return ": no task is open (git hydrate list shows where each stands)"
    reasons = []
    for item in waiting:
        task_id = item["task_id"]
        blockers = [b for b in (_blocker(d, summaries, stations) for d in blocking[task_id]) if b]
        if task_id in looped:
            reasons.append(f"{task_id} is on a dependency cycle ({shown_cycle(looped[task_id])})")
        elif blockers:
            reasons.append(f"{task_id} waits for {named_waits(task_id, blockers, ' and ')}")
        # else: ready after all (a claim through a remote lost it to a race)
    if not reasons:
        return ""
    more = f"; {len(reasons) - limit} more wait" if len(reasons) > limit else ""
    return ": " + "; ".join(reasons[:limit]) + more


#: What a refusal names of the tasks one waits for (the rest are counted).
_NAMED_WAITS: Final = 10


def named_waits(
    task_id: str,
    waits: Sequence[Any],
    joint: str = ", ",
    name: Callable[[Any], str] = str,
) -> str:
    """``waits`` (what ``task_id`` waits for, each said by ``name``) joined by ``joint``,
    the first :data:`_NAMED_WAITS` of them and how many more: a parent of 10,000 open
    parts named them all, a line of 159 KB."""
    named = joint.join(map(name, waits[:_NAMED_WAITS]))
    if len(waits) > _NAMED_WAITS:
        more = len(waits) - _NAMED_WAITS
        named += f" and {more} more (git hydrate show {task_id} --json names them)"
    return named


#: How many tasks a long cycle is named by at each end.
_CYCLE_ENDS: Final = 5


def shown_cycle(cycle: Sequence[str]) -> str:
    """``cycle`` (``[a, b, …, a]``) as ``a -> b -> a``; one of more than twelve tasks
    by its first five and last five, with how many come between: a cycle of 5,000
    tasks was a line of 54 KB, which doctor said once for each of them (270 MB)."""
    if len(cycle) <= 2 * _CYCLE_ENDS + 2:
        return " -> ".join(cycle)
    between = f"({len(cycle) - 2 * _CYCLE_ENDS} more)"
    return " -> ".join([*cycle[:_CYCLE_ENDS], between, *cycle[-_CYCLE_ENDS:]])


def _blocker(
    dep: str, summaries: Mapping[str, Mapping[str, Any]], stations: Mapping[str, str]
) -> str:
    """``T-1, held by Alice since …`` or ``T-1 (open)``; ``""`` for a done one."""
    station = stations.get(dep)
    if station == DONE_STATION:
        return ""
    item = summaries.get(dep, {})
    if item.get("assignee"):
        since = f" since {message_text(item['claimed_at'])}" if item.get("claimed_at") else ""
        return f"{dep}, held by {message_text(item['assignee'])}{since}"
    return f"{dep} ({station or NOT_HERE})"


def find_cycle(graph: Mapping[str, Sequence[str]], start: str) -> list[str] | None:
    """A path ``[start, …, start]`` through ``graph`` (task to its dependencies), if any."""
    path: list[str] = [start]
    on_path = {start}
    done: set[str] = set()
    stack: list[Iterator[str]] = [iter(graph.get(start, ()))]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            finished = path.pop()
            on_path.discard(finished)
            done.add(finished)
            continue
        if step == start:
            return [*path, start]
        if step in on_path or step in done:
            continue  # a cycle not through start, or a dead end already walked
        path.append(step)
        on_path.add(step)
        stack.append(iter(graph.get(step, ())))
    return None


def cycles(graph: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Every task on a dependency cycle, with one cycle through it.

    Iterative Tarjan: the strongly connected components of more than one task
    (or a task that names itself) are the cycles.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, deps = work[-1]
            dep = next(deps, None)
            if dep is not None:
                if dep not in graph:
                    continue  # unknown: cannot be on a cycle
                if dep not in index:
                    index[dep] = low[dep] = len(index)
                    stack.append(dep)
                    on_stack.add(dep)
                    work.append((dep, iter(graph.get(dep, ()))))
                elif dep in on_stack:
                    low[node] = min(low[node], index[dep])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    components.append(component)
    found: dict[str, list[str]] = {}
    for component in components:
        members = set(component)
        sub = {t: [d for d in graph.get(t, ()) if d in members] for t in component}
        for task_id in component:
            cycle = find_cycle(sub, task_id)
            if cycle is not None:
                found[task_id] = cycle
    return found


def check_no_cycle(
    refs: TaskRefs,
    task_id: str,
    depends_on: Sequence[str] | None = None,
    parent: str | None = None,
) -> None:
    """Refuse ``depends_on`` or ``parent`` for ``task_id`` (``None``: as they are)
    if the change closes a cycle of dependencies and parent edges.

    Raises:
        ValidationError: naming the cycle, ``A -> B -> A``.
    """
    if not depends_on and not parent:
        return
    summaries = {t: dict(item) for t, item in queue_summaries(refs).items()}
    mine = summaries.setdefault(task_id, {"depends_on": [], "parent": ""})
    if "error" in mine:
        return  # a damaged task: doctor names it; nothing to check against
    if depends_on is not None:
        mine["depends_on"] = list(depends_on)
    if parent is not None:
        mine["parent"] = parent
    cycle = find_cycle(edge_graph(summaries), task_id)
    if cycle is not None:
        what = "dependency cycle" if parent is None else "cycle of parents and dependencies"
        raise ValidationError(f"{what}: {shown_cycle(cycle)}")


def check_no_cycles(refs: TaskRefs, new: Mapping[str, Any]) -> None:
    """Refuse tasks about to be created together (``{id: Task}``) if their
    dependencies and parents close a cycle, among themselves or with the live ones.

    Raises:
        ValidationError: naming one cycle.
    """
    if not any(task.depends_on or task.parent for task in new.values()):
        return
    summaries: dict[str, Any] = dict(queue_summaries(refs))
    for task_id, task in new.items():
        summaries[task_id] = {"depends_on": list(task.depends_on), "parent": task.parent}
    looped = cycles(edge_graph(summaries))
    for task_id in new:
        if task_id in looped:
            raise ValidationError(
                f"cycle of parents and dependencies: {shown_cycle(looped[task_id])}"
            )
