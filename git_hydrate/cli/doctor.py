"""doctor: check every task; clear lock files left by dead writers."""

from __future__ import annotations

from typing import Any

import click

from ._common import Duration, echo_json, json_option, open_ledger, shown

__all__ = ["doctor"]


@click.command("doctor", short_help="Check every task's format, JSON and bodies, task by task.")
@click.option(
    "--clear-stale-locks",
    is_flag=True,
    help=(
        "Remove lock files under refs/hydrate/ and refs/hydrate-remotes/ (and "
        "packed-refs.lock, git-hydrate's own hydrate-*.lock, and the .keep a big "
        "import puts beside its pack until its refs land) left by a "
        "git-hydrate process that has ended, or older than --older-than and held "
        "by no process; say why each other one is kept."
    ),
)
@click.option(
    "--clear-stale-temp",
    is_flag=True,
    help="Remove the caches' temporary files whose writer is gone (killed mid-write).",
)
@click.option(
    "--repair",
    is_flag=True,
    help=(
        "First mend each task a pull would refuse where a write can: a key twice in "
        "task.json or a links file is written once (the value every command reads), a "
        "date that is none takes the time of the task's first commit (created_at) or "
        "last one (claimed_at, a checkpoint's); one commit per task mended."
    ),
)
@click.option(
    "--older-than",
    type=Duration(zero=True),
    default=60,
    show_default=True,
    metavar="AGE",
    help="How old a lock file must be to count as left behind (seconds, or 90s, 30m, 12h).",
)
@json_option
@click.pass_context
def doctor(
    ctx: click.Context,
    clear_stale_locks: bool,
    clear_stale_temp: bool,
    repair: bool,
    older_than: float,
    as_json: bool,
) -> int:
    """Check every task (format, JSON, bodies against their sha256) and report per task.

    The archive's tasks are checked too, each against its entry in the archive's
    index (reported as problems of refs/hydrate/archive).

    Also reports refs under refs/hydrate/tasks/ that are not task ids (which
    every other command ignores), and a remote's fetch refspec that writes
    into refs/hydrate/ (a `git clone --mirror` clone's +refs/*:refs/*), which
    lets a plain `git fetch` overwrite unpushed tasks. Exits 1 when a problem
    was found. Lists the caches' temporary files under <git common
    dir>/hydrate/: a stale one (its writer gone for a minute, or untouched
    for an hour) only wastes space; --clear-stale-temp removes those.
    Says which optional parts are installed (features in --json: the
    compiled tokeniser, the [fast], [tokens], [outline] and [mcp] extras) and
    notes a tokeniser running in Python (the install found no C compiler:
    the same answers, slower), which is no problem.

    \b
    Examples:
      git hydrate doctor
      git hydrate doctor --clear-stale-locks --older-than 300
      git hydrate doctor --clear-stale-temp
      git hydrate doctor --repair
    """
    from ..doctor import clear_stale_locks as clear
    from ..doctor import clear_stale_temporaries, kept_because

    with open_ledger(ctx) as ledger:
        removed = clear(ledger.repo.common_dir, older_than) if clear_stale_locks else []
        cleared = clear_stale_temporaries(ledger.repo.common_dir) if clear_stale_temp else []
        repaired = ledger.repair() if repair else []
        report = ledger.doctor()
    report["removed_locks"] = removed
    if clear_stale_locks:
        for lock in report["locks"]:
            lock["kept_because"] = kept_because(lock, older_than)
    report["removed_temporaries"] = cleared
    report["repaired"] = repaired
    if as_json:
        echo_json(ctx, report)
    else:
        _echo_report(report)
    return 0 if report["ok"] else 1


def _echo_report(report: dict[str, Any]) -> None:
    """The doctor's ``report`` as lines: what was removed, then each task, ref, lock,
    temporary file and setting, then a count."""
    for lock in report["removed_locks"]:
        click.echo(f"removed stale lock {shown(lock['path'])} ({lock['age_seconds']} s old)")
    for temp in report["removed_temporaries"]:
        click.echo(f"removed stale temporary file {shown(temp['path'])} ({temp['size']} bytes)")
    for task in report["repaired"]:
        if task["ok"]:
            click.echo(f"repaired {shown(task['task_id'])}: {shown(task['was'])}")
        else:
            click.echo(f"not repaired {shown(task['task_id'])}: {shown(task['problem'])}")
    for task in report["tasks"]:
        if task["ok"]:
            click.echo(f"ok      {shown(task['task_id'])}")
        for problem in task["problems"]:
            click.echo(f"problem {shown(task['task_id'])}: {shown(problem)}")
        for note in task["notes"]:
            click.echo(f"note    {shown(task['task_id'])}: {shown(note)}")
    for ref in report["refs"]:
        if ref["ok"]:
            click.echo(f"ok      {shown(ref['ref'])}")
        for problem in ref["problems"]:
            click.echo(f"problem {shown(ref['ref'])}: {shown(problem)}")
    for lock in report["locks"]:
        click.echo(f"lock    {shown(lock['path'])} ({lock['age_seconds']} s old, {_state(lock)})")
        if lock.get("kept_because"):
            click.echo(f"kept    {shown(lock['path'])}: {lock['kept_because']}")
    for temp in report["temporaries"]:
        state = "stale: --clear-stale-temp removes it" if temp["stale"] else "being written"
        click.echo(
            f"temp    {shown(temp['path'])} ({temp['size']} bytes, "
            f"{temp['age_seconds']} s old, {state})"
        )
    for entry in report["config"]:
        click.echo(f"problem {entry['key']}: {entry['problem']}")
    if not report["features"]["compiled_tokeniser"]:  # (no problem: slower, same answers)
        from ..features import NO_COMPILED_TOKENISER

        click.echo(f"note    {NO_COMPILED_TOKENISER}")
    bad = sum(not t["ok"] for t in report["tasks"])
    summary = f"{len(report['tasks'])} task(s) checked, {bad} with problems"
    refs = sum(not r["ok"] for r in report["refs"])
    if refs:  # (a ref that names no task, or a shared ref in a bad state)
        summary += f"; {refs} other ref(s) with problems"
    if report["config"]:
        summary += f"; {len(report['config'])} setting(s) with problems"
    click.echo(summary)


def _state(lock: dict[str, Any]) -> str:
    """Who holds the lock, as far as can be told."""
    if lock.get("maker") == "running":
        return f"held by git-hydrate process {lock['pid']}, which runs"
    if lock.get("maker") == "gone":
        return f"left by git-hydrate process {lock['pid']}, which has ended"
    return "held by a running process" if lock["held"] else "not held"
