"""Hostile task text for the web page's tests: each would run script (setting
``window.__pwned``) or load something from elsewhere if a page ever treated it as
markup, a URL or a template."""

from __future__ import annotations

from typing import Final

__all__ = ["PAYLOADS"]

PAYLOADS: Final = (
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=window.__pwned=1>",
    "<svg onload=window.__pwned=1>",
    "<iframe src=javascript:window.__pwned=1>",
    '"><script>window.__pwned=1</script>',
    "'><img src=x onerror=window.__pwned=1>",
    "<body onload=window.__pwned=1>",
    "<a href=javascript:window.__pwned=1>click</a>",
    "<details open ontoggle=window.__pwned=1>",
    "<math><mtext><table><mglyph><style><img src=x onerror=window.__pwned=1>",
    "<style>@import 'http://198.51.100.1/x.css';</style>",
    "<link rel=stylesheet href=http://198.51.100.1/x.css>",
    "<meta http-equiv=refresh content='0;url=javascript:window.__pwned=1'>",
    "<object data=javascript:window.__pwned=1>",
    "<embed src=javascript:window.__pwned=1>",
    "<form action=javascript:window.__pwned=1><button>go</button></form>",
    "<input autofocus onfocus=window.__pwned=1>",
    "<video><source onerror=window.__pwned=1>",
    "<audio src=x onerror=window.__pwned=1>",
    "<marquee onstart=window.__pwned=1>",
    '<div style="background:url(javascript:window.__pwned=1)">',
    "javascript:window.__pwned=1",
    "<scr<script>ipt>window.__pwned=1</scr</script>ipt>",
    "<!--<img src=x onerror=window.__pwned=1>-->",
    "<![CDATA[<script>window.__pwned=1</script>]]>",
    "<textarea></textarea><script>window.__pwned=1</script>",
    "</title><script>window.__pwned=1</script>",
    "</script><script>window.__pwned=1</script>",
    "${window.__pwned=1}",
    "{{constructor.constructor('window.__pwned=1')()}}",
    "<template><script>window.__pwned=1</script></template>",
    "<base href=http://198.51.100.1/>",
    "&lt;script&gt;window.__pwned=1&lt;/script&gt;",
    "<svg><a xlink:href=javascript:window.__pwned=1><text>x</text></a></svg>",
    "<img src=http://198.51.100.1/track.png>",
    "<x onpointerenter=window.__pwned=1 style=display:block;width:9999px;height:9999px>",
)
