"""The vector index: usearch HNSW over the vectors stored in SQLite.

SQLite is the truth (``vectors`` rows, float16 blobs); the index is a cache of it that
makes nearest-neighbour search take a fraction of a millisecond.  Its keys are
``vectors.id``.  At start the saved file is opened and checked against SQLite: the
same count and the same highest key mean it is current; a file that only lacks the
newest rows (the daemon stopped before its last save) is caught up; anything else —
missing, unreadable, another model, keys that disagree — is rebuilt from the stored
vectors, without re-embedding.

Parameters (ARCHITECTURE.md, measured here): cosine metric, float16 storage (half
the memory of f32 at the same recall@10 of 0.99 for 384-d MiniLM vectors),
connectivity 16, expansion 64 when searching; an index of up to ``EXACT_BELOW`` vectors is
searched exactly.

The index file is written to a temporary name and renamed over the old one, so a
crash mid-save leaves the previous file intact.  Not thread-safe by itself: the owner
(``memd.services.indexer``) serializes writers; searches may run alongside them (usearch
supports concurrent reads and additions).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable
from typing import Final, NamedTuple

import numpy as np
import onnxruntime  # noqa: F401  (before usearch: the other import order segfaults)
from usearch.index import Index

__all__ = ["Neighbor", "VectorIndex", "index_path"]

CONNECTIVITY: Final = 16
EXPANSION_ADD: Final = 128
EXPANSION_SEARCH: Final = 64
SCRATCH_KEYS: Final = np.uint64(2**63)
"""Keys from here up are never ``vectors.id`` (SQLite rowids stay below 2**63)."""
FILLER_EXPANSION: Final = 8
"""Search breadth when placing filler (``scrub``): 6x cheaper than ``EXPANSION_ADD``, with
the same recall after.  Measured on 20k bench-corpus vectors: removing 1% leaves recall@10
at 0.996; removing 30% takes it from 0.995 to 0.986 with filler of either breadth (the freed
nodes' neighbours lose useful links), until additions reuse the slots."""
EXACT_BELOW: Final = 5_000
"""Vectors up to which a search compares every one (usearch's ``exact``): for 80 neighbours,
0.37 ms at 2,000 vectors and 0.90 at 10,000 against ~0.3 for the graph (a throwaway timing,
2026-11-28), and the same answer every time, whatever graph a rebuild made (a rebuilt HNSW graph
can reach a closer window of an event than the one it replaced)."""


class Neighbor(NamedTuple):
    key: int
    similarity: float
    """Cosine similarity in [-1, 1]."""


def index_path(directory: str, version: str) -> str:
    """One file per embedding version, so switching models never reads a foreign index."""
    slug = hashlib.sha256(version.encode()).hexdigest()[:16]
    return os.path.join(directory, f"vectors-{slug}.usearch")


class VectorIndex:
    """An in-memory usearch index with its file; see the module docstring."""

    def __init__(self, path: str, dim: int) -> None:
        self.path = path
        self.dim = dim
        self._index = self._new()
        self.dirty = False

    def _new(self) -> Index:
        return Index(
            ndim=self.dim,
            metric="cos",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    def __len__(self) -> int:
        return len(self._index)

    def max_key(self) -> int:
        return int(np.max(np.asarray(self._index.keys))) if len(self._index) else 0

    def load(self) -> bool:
        """Read the saved file; False (and an empty index) if it is missing or unreadable."""
        self._index = self._new()
        if not os.path.exists(self.path):
            return False
        try:
            # The file holds the graph, not the search parameters: they are given again here.
            restored = Index.restore(
                self.path, view=False, expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH
            )
        except (ValueError, RuntimeError, OSError):
            return False
        if restored is None or restored.ndim != self.dim:
            return False
        self._index = restored
        return True

    def matches(self, count: int, max_key: int) -> bool:
        """Whether the index holds exactly the stored vectors: ``count`` rows up to key ``max_key``."""
        return len(self._index) == count and self.max_key() == max_key

    def add(self, keys: Iterable[int], vectors: np.ndarray, *, threads: int = 1) -> None:
        """Add vectors under their keys; ``threads=0`` uses every core (a rebuild)."""
        keys = np.fromiter(keys, dtype=np.uint64)
        if len(keys):
            vectors = np.asarray(vectors, dtype=np.float32).reshape(len(keys), self.dim)
            self._index.add(keys, vectors, threads=threads)
            self.dirty = True

    def remove(self, keys: Iterable[int]) -> None:
        """Take ``keys`` out of the search.  Their vectors stay in the freed slots (usearch
        only marks a slot free) until additions reuse them, or ``scrub``."""
        keys = np.fromiter(keys, dtype=np.uint64)
        if len(keys) and np.sum(self._index.remove(keys)):
            self.dirty = True

    def scrub(self) -> None:
        """Overwrite every free slot: a forgotten memory's embedding must not outlive it, in
        memory or in the saved file.  Every slot, not only the last ones freed, since
        additions reuse them in an order of their own; random filler vectors under scratch
        keys, removed in turn.  (A re-embedding needs none of this: its new vectors take the
        freed slots at once, and the old ones embedded what is still stored.)"""
        freed = self._index.stats.nodes - len(self._index)
        if freed:
            self.dirty = True
            scratch = SCRATCH_KEYS + np.arange(freed, dtype=np.uint64)
            filler = np.random.default_rng().standard_normal((freed, self.dim), dtype=np.float32)
            _set_expansion_add(self._index, FILLER_EXPANSION)
            try:
                self._index.add(scratch, filler, threads=0)
            finally:
                _set_expansion_add(self._index, EXPANSION_ADD)
            self._index.remove(scratch)

    def clear(self) -> None:
        self._index = self._new()
        self.dirty = True

    def search(self, vector: np.ndarray, count: int) -> list[Neighbor]:
        """The ``count`` nearest stored vectors, most similar first."""
        if not len(self._index) or count <= 0:
            return []
        exact = len(self._index) <= EXACT_BELOW
        found = self._index.search(np.asarray(vector, dtype=np.float32), count, threads=1, exact=exact)
        return [
            Neighbor(int(key), round(1.0 - float(distance), 4))
            for key, distance in zip(found.keys, found.distances, strict=True)
            if key < SCRATCH_KEYS  # filler, if a ``scrub`` runs alongside
        ]

    def save(self) -> None:
        """Write the index atomically (temporary file, fsync, rename)."""
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        temporary = f"{self.path}.tmp"
        self._index.save(temporary)
        with open(temporary, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(temporary, self.path)
        self.dirty = False

    def discard_others(self) -> None:
        """Delete index files of other embedding versions (and leftover temporaries)."""
        directory = os.path.dirname(self.path)
        with contextlib.suppress(FileNotFoundError):
            for name in os.listdir(directory):
                path = os.path.join(directory, name)
                if name.startswith("vectors-") and path != self.path:
                    with contextlib.suppress(OSError):
                        os.unlink(path)


def _set_expansion_add(index: Index, breadth: int) -> None:
    """Change how widely additions search for neighbours.  usearch's ``Index`` has a setter
    for it, defined apart from its getter, which mypy reads as a read-only property."""
    index.expansion_add = breadth  # type: ignore[misc]  # the setter exists (usearch/index.py)
