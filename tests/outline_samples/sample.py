"""Sample module for outlines.

More text.
"""
from __future__ import annotations

import os
from typing import (
    Any,
    Callable,
)

MAX_SIZE = 1024
_PRIVATE_LIMIT: int = 10
lower_name = 5
TABLE = {
    "a": 1,
}


@dataclass(frozen=True)
class Point(Base, metaclass=Meta):
    """A point."""

    x: float = 0.0

    def norm(self) -> float:
        """Euclidean norm.

        Longer.
        """
        return 0.0

    @staticmethod
    async def fetch(
        url: str,
        *,
        timeout: float = 1.0,  # seconds
    ) -> bytes:
        return b""

    class Inner:
        def f(self): return 1


def top(sep=':', d={"a": (1, 2)}) -> dict[str, int]:  # trailing comment
    def nested():
        pass
    return {}

if os.name == "nt":
    def plat():
        """Windows."""
else:
    def plat():
        '''
        Posix.
        '''
