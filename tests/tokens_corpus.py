"""A deterministic corpus of awkward texts for cross-checking token counters.

Every sample is built here (no downloads); a few stdlib source files are read
from disk when present.
"""

from __future__ import annotations

import json
import os
import random
import sysconfig

_PY_SAMPLE = '''\
from __future__ import annotations

import os, sys  # comment with 'quotes' and "double quotes"

CONSTANT_VALUE: int = 0x_FF_FF  # hex literal
PI = 3.141_592_653


@dataclass(frozen=True)
class Point(Base, metaclass=Meta):
    """A point.

    It's got coordinates; they're floats, we'll see, I'd say, you've been told.
    """

    x: float = 0.0
    y: float = 0.0

    async def distance(self, other: "Point", /, *, scale: float = 1.0) -> float:
        return ((self.x - other.x) ** 2 + (self.y - other.y) ** 2) ** 0.5 * scale


def main(argv: list[str] | None = None) -> int:
\tif argv is None:\r
\t\targv = sys.argv[1:]\r
    print(f"{len(argv)=} {argv!r:>20}")
    return 0
'''

_PROSE = (
    "It's a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife. DON'T SHOUT; I'LL WHISPER. We've 12345678 "
    "reasons, 3.14159 ways and 1,000,000 excuses -- don't we?\n\n"
    "Ünïcödé façade naïve résumé coöperate ﬁne ligatures and the ſ long s: 'ſ.\n"
)

_MULTILINGUAL = (
    "中文文本：今天天气很好，我们去公园散步吧。日本語のテキスト：こんにちは、世界！カタカナ。\n"
    "한국어 텍스트: 안녕하세요, 세계! 반갑습니다.\n"
    "العربية: مرحبا بالعالم، كيف حالك اليوم؟ ١٢٣٤٥٦٧٨٩٠\n"
    "עברית: שלום עולם\n"
    "Русский: Съешь же ещё этих мягких французских булок, да выпей чаю. ЁЛКИ-ПАЛКИ!\n"
    "Ελληνικά: Γειά σου Κόσμε. हिन्दी: नमस्ते दुनिया। ไทย: สวัสดีชาวโลก\n"
    "Tiếng Việt: Xin chào thế giới. Türkçe: İstanbul'da ıslak ığdır.\n"
    "Combining: e\u0301 a\u0308 n\u0303 Z\u0335\u0321\u0327a\u0336l\u0338g\u0337o\u0334\n"
)

_EMOJI = (
    "Emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️‍🔥 🧠 keycap 1️⃣ #️⃣ "
    "math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚 ancient 𓀀𓀁 CJK-ext 𠀀𠀁 \U0010fffd\n"
)

_SPECIALS = "text <|endoftext|> more <|fim_prefix|><|endofprompt|> end\n"


def _json_sample() -> str:
    rng = random.Random(1234)
    data = {
        "users": [
            {
                "id": i,
                "name": f"user_{i}",
                "email": f"user{i}@example.com",
                "score": round(rng.random() * 1000, 3),
                "tags": ["alpha", "beta", "γάμμα", "デルタ"][: 1 + i % 4],
                "active": bool(i % 2),
                "meta": None,
            }
            for i in range(40)
        ],
        "unicode": "snowman \u2603 and escaped \\u2603",
    }
    return (
        json.dumps(data, indent=2, ensure_ascii=False)
        + "\n"
        + json.dumps(data, separators=(",", ":"))
    )


def _random_unicode(seed: int, n: int) -> str:
    rng = random.Random(seed)
    ranges = [
        (0x20, 0x7E),
        (0xA0, 0x2FF),
        (0x370, 0x3FF),
        (0x400, 0x4FF),
        (0x590, 0x6FF),
        (0x900, 0x97F),
        (0xE00, 0xE7F),
        (0x3040, 0x30FF),
        (0x4E00, 0x4FFF),
        (0xAC00, 0xAD00),
        (0x1F300, 0x1F64F),
        (0x2000, 0x206F),
        (0x0, 0x1F),
    ]
    out = []
    for _ in range(n):
        lo, hi = rng.choice(ranges)
        cp = rng.randint(lo, hi)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        out.append(chr(cp))
    return "".join(out)


def _stdlib_files(limit: int) -> list[tuple[str, str]]:
    root = sysconfig.get_paths()["stdlib"]
    names = ["json/decoder.py", "textwrap.py", "string.py", "difflib.py", "ast.py"]
    out = []
    for name in names[:limit]:
        path = os.path.join(root, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                out.append((f"stdlib:{name}", f.read()))
    return out


def corpus() -> list[tuple[str, str]]:
    """(name, text) pairs; deterministic."""
    samples: list[tuple[str, str]] = [
        ("empty", ""),
        ("single-space", " "),
        ("single-newline", "\n"),
        ("python", _PY_SAMPLE),
        ("prose", _PROSE),
        ("json", _json_sample()),
        ("multilingual", _MULTILINGUAL),
        ("emoji", _EMOJI),
        ("special-token-strings", _SPECIALS),
        ("spaces-run-1000", "x" + " " * 1000 + "y"),
        ("trailing-spaces", "line" + " " * 37),
        ("tabs-and-spaces", "\t \t  \t\t    \n" * 50),
        ("newline-runs", "a\n\n\n\n\n\nb\r\n\r\n\r\nc\r\r\r" + "\n" * 500),
        ("mixed-ws-runs", ("  \n \t\n\u00a0\u3000\u2003 \n" * 100)),
        ("long-line-code", "x = [" + ", ".join(str(i) for i in range(5000)) + "]\n"),
        ("long-line-minified", "function(a,b){return a+b};" * 2000),
        ("long-word", "a" * 5000),
        ("long-digits", "1234567890" * 300),
        (
            "base64ish",
            "".join(
                random.Random(7).choice(
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                )
                for _ in range(20000)
            ),
        ),
        ("hex-dump", " ".join(f"{i:02x}" for i in range(256)) * 20),
        (
            "contractions",
            "I'm you're he's we've they'll she'd it'S WE'RE ’s ’ll 's 'S 'll 'LL" * 5,
        ),
        (
            "punct-soup",
            "!!!???...,,,;;;:::---___===+++***&&&%%%$$$###@@@~~~```^^^|||\\\\\\///" * 10,
        ),
        ("control-chars", "".join(chr(i) for i in range(32)) + "\x7f\x85\u200b\u200d\ufeff"),
        ("random-unicode-1", _random_unicode(1, 3000)),
        ("random-unicode-2", _random_unicode(2, 3000)),
    ]
    samples += _stdlib_files(5)
    return samples
