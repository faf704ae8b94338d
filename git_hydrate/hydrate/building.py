"""The word index of the tree an add-tree run reads, built while it reads.

Reading gives :class:`Building` each blob's facts as it learns them; they go
to the index being built (in this process, :class:`.indexing.IndexBuilder`;
or in a child forked before the listing, :class:`.indexer.Sent`) and, when
new, to the blob-facts cache. :meth:`Building.served` completes the index
with the files reading did not learn, saves the facts and keeps the index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import msgspec

from ..store import Repository
from .facts import FactsCache
from .index import Served
from .indexer import Indexer, Sent
from .indexing import IndexBuilder, Split
from .terms import BlobFacts, blob_facts, forget_splits

__all__ = ["Building"]

_encoder: Final = msgspec.msgpack.Encoder()


class Building:
    """The word index of the tree an add-tree run reads, built while its blobs are
    read: reading gives each blob's facts (:meth:`learn`: to the builder and, when
    new, encoded to the facts cache); :meth:`served` completes it (the files not
    read: their facts from the cache, else read through git), saves the facts
    and keeps the index."""

    def __init__(
        self, repo: Repository, tree: str, paths: Iterable[str], indexer: Indexer | None = None
    ) -> None:
        self.repo, self.tree = repo, tree
        ordered = sorted(paths)
        sent = indexer.take(ordered) if indexer is not None else None
        self.builder: IndexBuilder | Sent
        if sent is not None:
            self.builder = sent  # (built by the indexer's process)
        else:
            self.builder = IndexBuilder(ordered)
            self.builder.index_paths()  # (now: its objects not stacked on the contents')
        self.cache = FactsCache.of(repo)

    def while_kept(self, work: Callable[[], None]) -> None:
        """Have ``work`` done while another process keeps the index, if one does
        (:mod:`.indexer`): this process waits for it meanwhile."""
        if not isinstance(self.builder, IndexBuilder):
            self.builder.meanwhile = work

    def known(self, oid: str) -> BlobFacts | None:
        """The facts the cache holds of blob ``oid``."""
        return self.cache.peek(oid)

    def learn(
        self,
        oid: str,
        paths: Iterable[str],
        facts: BlobFacts,
        *,
        new: bool,
        raw: bytes | None = None,
        splits: Sequence[Split] | None = None,
    ) -> None:
        """Index the files ``paths`` of blob ``oid`` by ``facts`` (``new``: just
        computed, to keep in the cache; ``raw``: ``facts`` encoded already;
        ``splits``: the words of each of its symbols, split already)."""
        if new:
            raw = _encoder.encode(facts) if raw is None else raw  # (for both: once)
            self.cache.put_encoded(oid, facts, raw)
        builder = self.builder
        positions = [at for at in map(builder.position, paths) if at is not None]
        if positions:
            builder.feed(positions, oid, facts, splits, raw)

    def served(self, oids: Mapping[str, str]) -> Served | None:
        """The index of ``oids`` (path -> blob id: the files read), kept, and which
        of them it serves; ``None`` if they are not the files it was begun for (the
        facts learned are saved either way). Called once: the builder and the
        facts learned are dropped."""
        builder = self.builder
        if len(oids) != len(builder.paths) or not all(map(builder.contains, oids)):
            if isinstance(builder, Sent):
                builder.indexer.close()  # (it would hold the index unused meanwhile)
            self.cache.save()
            return None
        if isinstance(builder, Sent) and builder.indexer.pid is None:
            self.cache.save()  # (gone: nothing would be kept; ranked from the saved facts)
            return None
        missing: dict[str, list[str]] = {}
        builder.settle()
        for path, oid in oids.items():
            if not builder.has(path):
                known = self.cache.peek(oid)
                if known is None:
                    missing.setdefault(oid, []).append(path)
                else:
                    builder.add(path, oid, known)
        for oid, data in self.repo.stream_blobs(list(missing)) if missing else ():
            self.learn(oid, missing[oid], blob_facts(data), new=True)
        self.cache.save()
        # (what ranking allocates next reuses their memory)
        self.cache, self.builder = FactsCache.of(self.repo), IndexBuilder(())
        index = builder.keep(self.repo, self.tree)
        del builder
        forget_splits()
        if index is None:
            return None  # (not kept: ranked from the facts, saved above)
        return Served(index, *index.serving(oids, oids))
