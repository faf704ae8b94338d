"""A light English stemmer, shared by ranking's words and task search. Pure.

Plurals and ``-ing``/``-ed`` forms meet their word (``completions`` and
``completion``, ``timestamps`` and ``timestamp``); nothing more, so that a word
is never taken for another it only begins like.
"""

from __future__ import annotations

__all__ = ["stem"]


def stem(word: str) -> str:
    """``word`` (lower case) without its plural, ``-ing`` or ``-ed`` ending."""
    last = word[-1]  # (each rule is of one last letter: most words meet none)
    if last == "g":
        if len(word) > 5 and word.endswith("ing"):
            return word[:-3]
    elif last == "d":
        if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
            return word[:-2]
    elif last == "s":
        if len(word) > 4 and word.endswith("ies"):
            return word[:-3] + "y"
        if len(word) > 3 and not word.endswith(("ss", "us", "is")):
            return word[:-1]
    return word
