"""add-tree's progress bar, and sizes said as people read them."""

from __future__ import annotations

import sys
from typing import Any

import click

__all__ = ["PROGRESS_MIN_FILES", "Progress", "human_bytes"]

#: Below this many files to read, a progress bar would only flicker.
PROGRESS_MIN_FILES = 200


class Progress:
    """A click progress bar on stderr, only on a terminal and only for long runs."""

    def __init__(self, enabled: bool = True) -> None:
        self.bar: Any = None
        self.done = 0
        self.enabled = enabled and sys.stderr.isatty()

    def __call__(self, files_done: int, files_total: int, bytes_done: int) -> None:
        if not self.enabled or files_total < PROGRESS_MIN_FILES:
            return
        if self.bar is None:
            self.bar = click.progressbar(
                length=files_total,
                label="reading files",
                file=sys.stderr,
                show_pos=True,
                item_show_func=lambda n: f"{human_bytes(n)} read" if n is not None else None,
            )
            self.bar.__enter__()
        self.bar.update(files_done - self.done, bytes_done)
        self.done = files_done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def human_bytes(count: int) -> str:
    """``512 B``, ``12.3 KiB``, ``4.0 MiB``: a size people read at a glance."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"  # pragma: no cover - the loop always returns
