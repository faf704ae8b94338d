"""The board: ``git hydrate web``, a local, read-only page of tasks, prompts and omissions.

One concern per module, all on the :class:`~git_hydrate.Ledger`'s public API:

* :mod:`.query` — reading and checking a request's query (pages, filters, budgets);
* :mod:`.board` — the columns by station, their cards, filters and pages;
* :mod:`.taskpage` — one task: fields, checkpoints, attachments in packing order
  with what a budget keeps, outlines and drops, the prompt, the work commits;
* :mod:`.graph` — the dependency graph of the open tasks, laid out in layers;
* :mod:`.watch` — whether a ref under ``refs/hydrate/`` moved, cheaply enough to poll;
* :mod:`.server` — the HTTP server (standard library only): routes, the
  Content-Security-Policy and headers, GET and HEAD only.

The page itself is plain HTML, CSS and JavaScript in ``static/``, shipped with
the package: nothing is fetched from elsewhere, and no task text ever reaches the
page except as JSON that the scripts put into the page as text.
"""

from __future__ import annotations

__all__: list[str] = []
