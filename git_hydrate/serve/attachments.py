"""One attachment fetched on demand: its body (or outline) as untrusted data.

What ``git hydrate show ID --attachment HASH`` prints and what the MCP tool
``get_attachment`` answers, part by part (:mod:`.pages`): a heading naming the
task, the attachment's source, size and hash, then the body between the
untrusted block's banner and footer, as a prompt of the reader's format holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..errors import ValidationError
from ..ledger import Ledger
from ..pack.formats import body_alone
from ..pack.render import UNTRUSTED_BANNER, UNTRUSTED_FOOTER, one_line

__all__ = ["MID_LINE", "attachment_text", "fetch_attachment"]

#: What a part's heading adds when the part ends mid-line (within a line, or at the
#: end of a body without a last newline): the block's last newline is not the body's.
MID_LINE: Final = " (it ends mid-line: the newline before the block's end is not in the body)"


def fetch_attachment(
    ledger: Ledger, task_id: str, prefix: str, *, outline: bool = False
) -> tuple[Mapping[str, Any], str]:
    """The attachment of ``task_id`` whose hash starts with ``prefix``, and its body
    (with ``outline``: its outline).

    Raises:
        ValidationError: a bad or ambiguous prefix, or no outline of it (the reason:
            its language, Python that does not parse, no headings, no grammar).
        NotFound: no such task or attachment.
    """
    entry, body = ledger.attachment(task_id, prefix)
    if outline:
        from ..pack.outline import outline as make_outline
        from ..pack.outline import why_no_outline

        shape = make_outline(str(entry["source"]), body)
        if not shape:  # (none, or one of nothing: a script that declares nothing)
            raise ValidationError(
                f"no outline of {one_line(str(entry['source']))[:80]}: "
                + (
                    why_no_outline(str(entry["source"]), len(body))
                    if shape is None
                    else "it declares nothing git-hydrate outlines"
                )
            )
        body = shape
    return entry, body


def attachment_text(
    task_id: str,
    entry: Mapping[str, Any],
    body: str,
    *,
    outline: bool = False,
    part: tuple[int, int] = (1, 1),
    shape: str = "seed",
) -> str:
    """The attachment as the reader sees it: a heading, then ``body`` in the block,
    as the prompt format ``shape`` holds it (:func:`.formats.body_alone`: in the
    ``markdown`` one, byte for byte in a fence). A part (of several) that does not
    end with a newline says so in its heading (:data:`MID_LINE`): the block ends
    with one all the same, which is not the body's."""
    what = "Outline of attachment" if outline else "Attachment"
    number, total = part
    of = f", part {number} of {total}" if total > 1 else ""
    if total > 1 and body and not body.endswith("\n"):
        of += f"{MID_LINE}"
    head = (
        f"# {what} {str(entry['hash'])[:12]} of {task_id}{of}\n\n"
        f"source: {one_line(str(entry['source']))}; {int(entry['size']):,} bytes; "
        f"sha256 {entry['hash']}\n"
    )
    text = body_alone(shape, str(entry["source"]), body)
    return f"{head}\n{UNTRUSTED_BANNER}\n\n{text}{UNTRUSTED_FOOTER}\n"
