"""The plain path: every rule over the whole text, when its triggers occur.

It needs no optional package, and it is the reference: the prefilter
(:mod:`.prefilter`) must find what it finds.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .findings import Finding, findings
from .rules import FOLDED, FOLDED_TRIGGERS, RULES, folded_rules, rule_pattern

__all__ = ["scan_lines", "scan_plain"]


def scan_lines(
    text: str,
    rules: Callable[[], list[tuple[str, re.Pattern[str], bool]]],
    triggers: tuple[str, ...],
) -> list[tuple[int, str]]:
    """Run line-bounded patterns (``rules()``, compiled when a line first needs
    them) only on the lines where a trigger occurs (the text lower-cased and each
    trigger looked for once, for all of them)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        # a character whose lower case is longer: positions no longer line up
        return [(m.start(), name) for name, pattern, _a in rules() for m in pattern.finditer(text)]
    hits: list[tuple[int, str]] = []
    seen: set[int] = set()
    for trigger in triggers:
        found = lowered.find(trigger)
        while found != -1:
            end = text.find("\n", found)
            end = len(text) if end == -1 else end
            # The key holding the trigger is followed by "=" or ":": a line with
            # neither after the trigger cannot match (most lines that merely
            # mention a token), and costs no regex.
            if text.find("=", found, end) == -1 and text.find(":", found, end) == -1:
                found = lowered.find(trigger, end)
                continue
            start = text.rfind("\n", 0, found) + 1
            if start not in seen:
                seen.add(start)
                for name, pattern, anchored in rules():
                    find = pattern.match if anchored else pattern.search
                    match = find(text, start, end)
                    if match is not None:
                        hits.append((match.start(), name))
            found = lowered.find(trigger, end)
    return hits


def scan_plain(text: str, limit: int) -> list[Finding]:
    """Every rule over the whole text (its triggers first): the reference."""
    hits = scan_lines(text, folded_rules, FOLDED_TRIGGERS)
    for index, (name, _source, triggers) in enumerate(RULES):
        if name in FOLDED:
            continue
        if not any(trigger in text for trigger in triggers):
            continue
        # (compiled only when its triggers occur: most texts need few rules)
        for match in rule_pattern(index).finditer(text):
            hits.append((match.start(), name))
            if len(hits) >= limit * 4:
                break
    return findings(text, hits, limit)
