"""Detecting credentials in context bodies before they are stored (and later pushed).

Context travels to shared remotes and into prompts, so a body that looks like
it carries a credential is refused by default. Findings name the rule and the
line, never the matched text. Each rule runs only where it could match: with
the optional ``hyperscan`` package (``pip install 'git-hydrate[fast]'``), one
pass over the text finds every line that holds a rule's anchor and the rules
run on those lines, and most texts have none (600-1,600 MB/s of real code
here, a call costing little more than the pass); without it, each rule runs
over the whole text when one of its trigger literals occurs (30-45 MB/s). Both
find the same; see ``benchmarks/bench_secrets.py``.

The package, by concern: :mod:`.rules` (what a credential looks like),
:mod:`.findings` (what a scan reports), :mod:`.plain` (every rule over the
whole text: the reference), :mod:`.anchors` and :mod:`.prefilter` (the
optional one-pass prefilter); :func:`scan` chooses between the two paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .findings import Finding
from .plain import scan_plain
from .prefilter import keep_database, scan_prefiltered, shared_prefilter
from .rules import RULES

__all__ = ["PREFILTER_AFTER", "RULES", "Finding", "keep_compiled", "scan"]


def scan(text: str, *, limit: int = 20) -> list[Finding]:
    """Secret-looking matches in ``text`` (at most ``limit``), in text order.

    With the optional ``hyperscan`` package installed, once this process has
    scanned a megabyte, one pass over the text finds every place a rule could
    match and the rules run only there (:func:`scan_prefiltered`); otherwise
    each rule runs over the whole text (:func:`scan_plain`). The findings are
    the same.
    """
    global _scanned
    if _scanned < _prefilter_after:
        # Building the prefilter costs about as much as scanning this much text
        # without it: a process that scans less never pays for it.
        _scanned += len(text)
        if _scanned < _prefilter_after:
            return scan_plain(text, limit)
    prefilter = shared_prefilter()
    if prefilter is not None:
        found = scan_prefiltered(prefilter, text, limit)
        if found is not None:
            return found
    return scan_plain(text, limit)


#: Characters scanned in this process before the prefilter is built (Hyperscan
#: compiles the rules' anchors in about 40 ms; the plain path compiles every rule
#: in 6 ms, then scans 1 MB in 25-35 ms).
PREFILTER_AFTER: Final = 1_000_000
_prefilter_after = PREFILTER_AFTER
_scanned = 0


def keep_compiled(load: Callable[[str], bytes | None], save: Callable[[str, bytes], None]) -> None:
    """Keep the prefilter's compiled database between processes through ``load``
    and ``save`` (see :data:`.prefilter.Store`); from then on the prefilter is used
    from the first text, as loading it costs nothing. Call before the first scan."""
    global _prefilter_after
    keep_database(load, save)
    _prefilter_after = 0
