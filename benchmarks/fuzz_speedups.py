"""A long differential fuzz of ``git_hydrate._speedups`` against its Python twins
(``hydrate/terms.py``), best run under AddressSanitizer and UBSan.

Random blobs (any bytes, token-dense text, NULs, invalid UTF-8, tokens of thousands
of bytes at either end, few tokens repeated) in every buffer the C functions take
(``bytes``, ``bytearray``, ``memoryview``, an ``array`` of the exact size, a view in
the middle of token bytes), random raw tokens (camel and snake parts, the
stemmer's endings), and hostile mappings (``__missing__`` that clears, drops, adds
or raises; values of any type): ``raw_counts``, ``word_counts`` and ``split_words``
answer as Python does, or raise as it does, for ``--seconds``. ``--shapes`` times
the worst-case shapes at n and 4n bytes instead (linear: about 4x).

Usage, a sanitized build in a scratch copy (the installed one is left alone)::

    python benchmarks/fuzz_speedups.py --build /tmp/asan   # prints how to run it
    cd /tmp/asan && PYTHONPATH=. PYTHONMALLOC=malloc \\
        LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \\
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1 \\
        python /path/to/benchmarks/fuzz_speedups.py --seconds 600 --seed 1

``PYTHONMALLOC=malloc`` lets AddressSanitizer see each Python allocation (pymalloc's
arenas would hide a small overrun). Without ``--build`` and the preload, it fuzzes
the installed build.
"""

from __future__ import annotations

import argparse
import array
import random
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

PIECES = [
    *(b"a", b"A", b"z", b"Z", b"0", b"9", b"_", b"ab", b"Ab", b"AB", b"abc", b"ABC", b"Abc"),
    *(b"HTTPServer", b"ies", b"ing", b"ed", b"eed", b"ss", b"us", b"is", b"s", b"y", b"get"),
    *(b"the", b"12", b"__", b" ", b"\n", b"\0", b"\xff", b"\xc3\xa9", b"\x80", b"-", b"."),
    *(b"\x7f", b"\x1f"),
]
CAMEL_ALPHABET = "aAbBsSgGdDeEiIyYnNuU_0123456789zZ"


def build(into: Path) -> None:
    """A copy of the package beside this script, its extension built with ASan and UBSan."""
    source = Path(__file__).resolve().parent.parent / "git_hydrate"
    shutil.rmtree(into / "git_hydrate", ignore_errors=True)
    shutil.copytree(source, into / "git_hydrate", ignore=shutil.ignore_patterns("*.so"))
    target = into / "git_hydrate" / ("_speedups" + sysconfig.get_config_var("EXT_SUFFIX"))
    flags = "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
    flags += " -fno-omit-frame-pointer -O1 -g -Wall -Wextra -shared -fPIC"
    include = sysconfig.get_paths()["include"]
    compile_ = ["gcc", *flags.split(), "-I", include, str(source / "_speedups.c")]
    subprocess.run([*compile_, "-o", str(target)], check=True)
    print(f"built {target}; run this script from {into} as its docstring says")


class Fuzz:
    """The random inputs and the comparisons, from one seed."""

    def __init__(self, seed: int) -> None:
        from git_hydrate import _speedups
        from git_hydrate.hydrate import terms

        self.rng, self.c, self.terms = random.Random(seed), _speedups, terms
        print(f"fuzzing {_speedups.__file__}")

    def blob(self) -> bytes:
        rng = self.rng
        kind, size = rng.randrange(6), rng.choice([0, 1, 2, 3, 5, 10, 50, 300, 3000])
        if kind == 0:
            return rng.randbytes(size)
        if kind == 1:
            return bytes(rng.choice(b"aAzZ09_ \x00\x80\xff-") for _ in range(size))
        if kind == 2:
            return b"".join(rng.choice(PIECES) for _ in range(size))
        if kind == 3:  # a long token at an end
            token = rng.choice([b"x", b"Ab", b"A", b"_", b"9"]) * rng.randrange(1, 5000)
            other = rng.randbytes(rng.randrange(4))
            return rng.choice([token + other, other + token, token])
        if kind == 4:  # a few tokens, repeated
            words = [rng.choice(PIECES[:11]) * rng.randrange(1, 4) for _ in range(5)]
            return b" ".join(rng.choice(words) for _ in range(size))
        return rng.randbytes(size).translate(self.terms._TOKEN_BYTES)

    def buffer(self, data: bytes) -> Any:
        """``data`` in one of the buffers the C functions read."""
        kind = self.rng.randrange(5)
        if kind == 3:  # exact size (from bytes an array is given room to grow)
            return array.array("B", list(data))
        if kind == 4:  # a view between token bytes
            return memoryview(b"Zz_" + data + b"_zZ")[3 : 3 + len(data)]
        return (data, bytearray(data), memoryview(data))[kind]

    def token(self) -> str:
        rng = self.rng
        size = rng.choice([0, 1, 2, 3, 4, 6, 10, 20, 60, 500])
        if rng.randrange(2):
            return "".join(rng.choice(CAMEL_ALPHABET) for _ in range(size))
        return b"".join(rng.choice(PIECES[:26]) for _ in range(size)).decode()

    def one(self) -> None:
        c, terms = self.c, self.terms
        data = self.blob()
        buffer = self.buffer(data)
        expected = list(terms._raw_counts(data).items())
        assert list(c.raw_counts(buffer).items()) == expected, data
        words = terms._word_counts(data, terms._Splits())
        assert list(c.word_counts(buffer, terms._Splits()).items()) == list(words.items()), data
        raw = self.token()
        assert c.split_words(raw, terms._STOP) == terms._words(raw), raw
        self.hostile(data)

    def hostile(self, data: bytes) -> None:
        """A mapping that changes itself or fails while it is asked, C and Python."""
        tokens = list(self.terms._raw_counts(data))[:40]
        rng = self.rng
        values = ["w", "x", 1, 2.0, None, (), "long" * 10, True]
        base = {t: tuple(rng.choices(values, k=rng.randrange(4))) for t in tokens}
        base = {t: words for t, words in base.items() if rng.random() < 0.8}
        action, fail_at = rng.randrange(4), rng.randrange(len(tokens) + 2)
        compiled, python = _mutating(base, action, fail_at), _mutating(base, action, fail_at)
        assert _outcome(self.c.word_counts, data, compiled) == _outcome(
            self.terms._word_counts, data, python
        ), data
        assert compiled == python


class _Boom(Exception):
    pass


def _mutating(base: dict[str, Any], action: int, fail_at: int) -> dict[str, Any]:
    calls = [0]

    class Mutating(dict[str, Any]):
        def __missing__(self, key: str) -> tuple[str, ...]:
            calls[0] += 1
            if action == 0:
                self.clear()
            elif action == 1 and self:
                self.pop(next(iter(self)))
            elif action == 2:
                self[key + "_"] = ("added",)
            elif calls[0] >= fail_at:
                raise _Boom(key)
            found = self[key] = (key, "missing")
            return found

    return Mutating(base)


def _outcome(count: Any, data: bytes, splits: Any) -> Any:
    try:
        return list(count(data, splits).items())
    except Exception as error:
        return type(error)


SHAPES = {
    "one token": lambda n: b"x" * n,
    "one camel word Abc": lambda n: b"Abc" * (n // 3),
    "one camel word ABc": lambda n: b"ABc" * (n // 3),
    "upper-case run, then b": lambda n: b"A" * (n - 1) + b"b",
    "A1 pairs": lambda n: b"A1" * (n // 2),
    "aB pairs": lambda n: b"aB" * (n // 2),
    "a_ pieces": lambda n: b"a_" * (n // 2),
    "digits, then a": lambda n: b"1" * (n - 1) + b"a",
    "distinct tokens": lambda n: b" ".join(b"t%x" % i for i in range(n // 8)),
    "one-byte tokens": lambda n: b"a " * (n // 2),
}


def shapes(size: int) -> None:
    """CPU of word_counts (a blob) and split_words (one token) at size and 4 x size."""
    from git_hydrate import _speedups
    from git_hydrate.hydrate import terms

    def cpu(call: Any) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            call()
            best = min(best, time.process_time() - start)
        return best

    for name, make in SHAPES.items():
        row = []
        for n in (size, 4 * size):
            data = make(n)
            counted = cpu(lambda data=data: _speedups.word_counts(data, terms._Splits()))
            raw = data.decode()
            split = 0.0 if " " in raw else cpu(lambda r=raw: _speedups.split_words(r, terms._STOP))
            row.append((counted, split))
        (c1, s1), (c4, s4) = row
        print(
            f"{name:24} word_counts {c1:.3f} -> {c4:.3f} s ({c4 / max(c1, 1e-9):.1f}x)"
            f"   split_words {s1:.3f} -> {s4:.3f} s ({s4 / max(s1, 1e-9):.1f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, help="a scratch folder for a sanitized copy")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shapes", type=int, metavar="BYTES", help="time the shapes instead")
    args = parser.parse_args()
    if args.build:
        build(args.build)
        return
    if args.shapes:
        shapes(args.shapes)
        return
    fuzz, examples = Fuzz(args.seed), 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for _ in range(100):
            fuzz.one()
        examples += 100
    print(f"seed {args.seed}, {sys.version.split()[0]}: {examples} examples, as in Python")


if __name__ == "__main__":
    main()
