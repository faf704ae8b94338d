"""Outlines of hostile one-line sources: the work grows with the body, not with
the number of declarations times the length of the line they share."""

from __future__ import annotations

import pytest

from git_hydrate.pack import outline as ol
from git_hydrate.pack import outline_ts

pytestmark = pytest.mark.skipif(
    outline_ts.parser_for("javascript") is None, reason="needs git-hydrate[outline]"
)

#: Declarations each led by a comment, all on one line (minified code): each
#: one's doc comment was looked for by decoding the whole line again.
_ONE_LINE = {
    "a call with a function last": "/**/f(function(){});",
    "an assigned function": "/**/a.b=function(){};",
    "a function declaration": "/**/function a(){}",
    "a constant": "/**/const a=1;",
    "a word-less prefix, then calls": None,
}


def _decoded(monkeypatch: pytest.MonkeyPatch, body: str) -> int:
    """The characters the outliner decodes from the source's lines."""
    seen = [0]
    decode = outline_ts._decode

    def counted(line: bytes) -> str:
        seen[0] += len(line)
        return decode(line)

    monkeypatch.setattr(outline_ts, "_decode", counted)
    ol.outline("a.js", body)
    return seen[0]


def _body(name: str, count: int) -> str:
    unit = _ONE_LINE[name]
    if unit is None:  # (the first word of the line far from each declaration)
        return "[]+[];" * count + "/**/f(function(){});" * count
    return unit * count


@pytest.mark.parametrize("name", sorted(_ONE_LINE))
def test_comments_on_one_long_line_are_read_in_linear_time(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    small = _decoded(monkeypatch, _body(name, 2_000))
    large = _decoded(monkeypatch, _body(name, 4_000))
    # twice the declarations on a line twice as long: about twice the work (it was
    # four times, and 7 s for one 1 MB line)
    assert large <= 2.5 * max(small, 1)
    assert large <= 4 * len(_body(name, 4_000))
