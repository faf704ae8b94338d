"""What a scan reports: the rule and the line of each match, never its text."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Finding", "findings"]


class Finding(NamedTuple):
    """A secret-looking match: which rule, on which line (1-based). Never the text."""

    rule: str
    line: int

    def __str__(self) -> str:
        return f"{self.rule} on line {self.line}"


def findings(text: str, hits: list[tuple[int, str]], limit: int) -> list[Finding]:
    """The findings of ``hits`` (position, rule), at most ``limit``, in text order."""
    if not hits:
        return []
    hits.sort()
    findings: list[Finding] = []
    line, last = 1, 0
    for position, name in hits:
        line += text.count("\n", last, position)
        last = position
        findings.append(Finding(name, line))
    # A line env-secret already names needs no json-secret finding too, and a line
    # either names needs no key-material finding.
    assigned = {f.line for f in findings if f.rule == "env-secret"}
    named = assigned | {f.line for f in findings if f.rule == "json-secret"}
    return [
        f
        for f in findings
        if not (f.rule == "json-secret" and f.line in assigned)
        and not (f.rule == "key-material" and f.line in named)
    ][:limit]
