"""BM25 over `Memory.search_text`, held in process as numpy postings.

Kùzu's full-text index costs ~0.7 µs per posting per query (43 ms p50 at 100k memories), about
1 ms per inserted row, gives wrong postings to multi-row inserts and must not be queried beside a
write. This index scores the same analysed tokens with numpy in ~2 ms at 100k, is read once per
process (like the vector matrix) and kept in step with this process's writes.

Terms are Porter-stemmed and stopwords dropped, as Kùzu's index did. Postings live in segments
(one per batch of added texts, tokenised by pyarrow) that are merged when they pile up; an
updated or deleted memory's old row is marked dead, skipped, and dropped at the next full merge.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import snowballstemmer

from graphmem.indexes.row_ids import RowIds
from graphmem.indexes.stopwords import KEYWORD_STOPWORDS as STOPWORDS
from graphmem.text import MARK

K1 = 1.2
B = 0.75
MAX_SEGMENTS = 8
# PyStemmer (a dependency) makes this the C build of the same algorithm; without it the package
# imports all its ~30 languages in Python: ~30 ms of a cold `graphmem recall`
_STEMMER = snowballstemmer.stemmer("porter")

I64 = npt.NDArray[np.int64]


@lru_cache(maxsize=100_000)
def stem(token: str) -> str:
    if token.startswith(MARK):  # a spelt number or code: the stemmer must leave it whole
        return token
    return str(_STEMMER.stemWord(token))


def query_terms(analysed: str) -> list[str]:
    """Distinct stemmed terms of an analysed query (graphmem.text.query_text), stopwords out."""
    return list(dict.fromkeys(stem(t) for t in analysed.split() if t not in STOPWORDS))


@dataclass
class _Segment:
    """Postings sorted by term id: term `terms[i]` owns rows[starts[i]:starts[i + 1]]."""

    terms: I64
    starts: I64
    rows: I64
    tfs: npt.NDArray[np.float32]

    @classmethod
    def from_triples(cls, terms: I64, rows: I64, tfs: npt.NDArray[np.float32]) -> _Segment:
        order = np.lexsort((rows, terms))
        terms, rows, tfs = terms[order], rows[order], tfs[order]
        firsts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]]) if len(terms) else terms
        starts = np.append(firsts, len(terms)).astype(np.int64)
        return cls(terms[firsts], starts, rows, tfs)

    def triples(self) -> tuple[I64, I64, npt.NDArray[np.float32]]:
        return np.repeat(self.terms, np.diff(self.starts)), self.rows, self.tfs

    def posting(self, term: int) -> tuple[I64, npt.NDArray[np.float32]] | None:
        i = int(np.searchsorted(self.terms, term))
        if i == len(self.terms) or self.terms[i] != term:
            return None
        lo, hi = self.starts[i], self.starts[i + 1]
        return self.rows[lo:hi], self.tfs[lo:hi]

    def __len__(self) -> int:
        return len(self.rows)


class KeywordIndex:
    def __init__(self) -> None:
        self.ids = RowIds()  # a replaced text keeps its dead row; the id's latest row is live
        self._vocab: dict[str, int] = {}  # stemmed term -> term id
        # a loaded index keeps its vocabulary sorted instead, until its first add (a dict of
        # 200k terms takes 60 ms to build, a noticeable part of a cold start)
        self._sorted_terms: Sequence[str] = ()
        self._sorted_ids = np.zeros(0, np.int64)
        self._lengths = np.zeros(0, np.float32)
        self._alive = np.zeros(0, bool)
        self._total_length = 0.0
        self._segments: list[_Segment] = []

    def __len__(self) -> int:
        return int(np.count_nonzero(self._alive))

    def add(
        self, ids: Sequence[str], texts: Sequence[str | None] | pa.Array | pa.ChunkedArray
    ) -> None:
        """Index texts as one new segment; an id already indexed is replaced."""
        self.remove(ids)
        if self._sorted_terms:
            self._vocab = dict(zip(self._sorted_terms, self._sorted_ids.tolist(), strict=True))
            self._sorted_terms = ()
        first = len(self.ids)
        if isinstance(texts, pa.ChunkedArray):
            texts = texts.combine_chunks()
        elif not isinstance(texts, pa.Array):
            texts = pa.array(texts, pa.string())
        tokens = pc.utf8_split_whitespace(texts)
        per_doc = pc.fill_null(pc.list_value_length(tokens), 0).to_numpy().astype(np.int64)
        encoded = pc.dictionary_encode(pc.list_flatten(tokens))
        raw = encoded.indices.to_numpy().astype(np.int64)
        to_term = np.fromiter(
            (
                -1 if t in STOPWORDS else self._vocab.setdefault(stem(t), len(self._vocab))
                for t in encoded.dictionary.to_pylist()
            ),
            np.int64,
            len(encoded.dictionary),
        )
        terms = to_term[raw] if len(raw) else raw
        docs = np.repeat(np.arange(first, first + len(per_doc), dtype=np.int64), per_doc)
        kept = terms >= 0
        terms, docs = terms[kept], docs[kept]
        lengths = np.bincount(docs - first, minlength=len(per_doc)).astype(np.float32)
        span = first + len(per_doc)
        # a (term, doc) key per token: equal keys count the term's frequency in the doc
        keys, tfs = np.unique(terms * span + docs, return_counts=True)
        self._segments.append(
            _Segment.from_triples(keys // span, keys % span, tfs.astype(np.float32))
        )
        self.ids.extend(ids)
        self._lengths = np.concatenate([self._lengths, lengths])
        self._alive = np.concatenate([self._alive, np.ones(len(per_doc), bool)])
        self._total_length += float(lengths.sum())
        if len(self._segments) > MAX_SEGMENTS:
            self._merge()

    def remove(self, ids: Iterable[str]) -> None:
        rows = np.unique(self.ids.rows(list(ids)))
        rows = rows[rows >= 0]
        rows = rows[self._alive[rows]]
        self._alive[rows] = False
        self._total_length -= float(self._lengths[rows].sum())

    def search(self, analysed: str, *, top: int) -> list[tuple[str, float]]:
        """The `top` live memories by BM25 (Kùzu's k1 and b), best first."""
        live_docs = len(self)
        if not live_docs:
            return []
        scores = np.zeros(len(self.ids), np.float32)
        avg = self._total_length / live_docs or 1.0
        for term in query_terms(analysed):
            term_id = self._term_id(term)
            if term_id is None:
                continue
            found = [p for p in (s.posting(term_id) for s in self._segments) if p is not None]
            if not found:
                continue
            rows = np.concatenate([p[0] for p in found])
            tfs = np.concatenate([p[1] for p in found])
            live = self._alive[rows]
            df = int(np.count_nonzero(live))
            if not df:
                continue
            idf = math.log(1 + (live_docs - df + 0.5) / (df + 0.5))
            norm = K1 * (1 - B + B * self._lengths[rows] / avg)
            scores[rows] += np.where(live, idf * tfs * (K1 + 1) / (tfs + norm), 0)
        hits = np.flatnonzero(scores)
        if len(hits) > top:
            hits = hits[np.argpartition(-scores[hits], top - 1)[:top]]
        hits = hits[np.argsort(-scores[hits], kind="stable")]
        return [(self.ids[r], float(scores[r])) for r in hits.tolist()]

    def _term_id(self, term: str) -> int | None:
        if not self._sorted_terms:
            return self._vocab.get(term)
        at = bisect.bisect_left(self._sorted_terms, term)
        found = at < len(self._sorted_terms) and self._sorted_terms[at] == term
        return int(self._sorted_ids[at]) if found else None

    def _merge(self, *, full: bool = False) -> None:
        """Fold the small segments into one; everything, dead rows dropped, once they weigh a
        quarter of the largest (so a stream of single inserts stays cheap at 100k rows)."""
        big = max(self._segments, key=len)
        small = [s for s in self._segments if s is not big]
        light = sum(map(len, small)) * 4 < len(big) and len(self) * 4 > len(self.ids) * 3
        if light and not full:
            self._segments = [big, _concat(small)]
            return
        merged = _concat(self._segments)
        terms, rows, tfs = merged.triples()
        live = self._alive[rows]
        keep = np.flatnonzero(self._alive)
        renumber = np.full(len(self.ids), -1, np.int64)
        renumber[keep] = np.arange(len(keep))
        self._segments = [_Segment.from_triples(terms[live], renumber[rows[live]], tfs[live])]
        self.ids = self.ids.subset(self._alive)
        self._lengths = self._lengths[keep]
        self._alive = np.ones(len(keep), bool)


def _concat(segments: Sequence[_Segment]) -> _Segment:
    parts = [s.triples() for s in segments]
    return _Segment.from_triples(*(np.concatenate([p[i] for p in parts]) for i in range(3)))


def save_index(index: KeywordIndex, folder: Path) -> None:
    """Write the index (merged into one segment, dead rows dropped) as plain files."""
    if index._segments:
        index._merge(full=True)
    empty = np.zeros(0, np.int64)
    segment = (
        index._segments[0]
        if index._segments
        else _Segment.from_triples(empty, empty, np.zeros(0, np.float32))
    )
    arrays: dict[str, npt.NDArray[Any]] = {
        "lengths": index._lengths,
        "terms": segment.terms,
        "starts": segment.starts,
        "rows": segment.rows,
        "tfs": segment.tfs,
    }
    for name, array in arrays.items():
        np.save(folder / f"keywords.{name}.npy", array)
    index.ids.save(folder, "keywords")
    if isinstance(index._sorted_terms, SortedVocab):
        blob, term_ids = index._sorted_terms.blob, index._sorted_ids
    else:
        terms = sorted(index._vocab)
        term_ids = np.fromiter((index._vocab[t] for t in terms), np.int64, len(terms))
        blob = "\n".join(terms).encode("utf-8")
    np.save(folder / "keywords.vocab.npy", term_ids)
    (folder / "keywords.vocab").write_bytes(blob)


def load_index(folder: Path) -> KeywordIndex:
    """The index `save_index` wrote; raises OSError or ValueError when the files are unusable."""
    index = KeywordIndex()

    def load(name: str) -> Any:  # mapped, not read: a new process answers sooner
        return np.load(folder / f"keywords.{name}.npy", mmap_mode="r").view(np.ndarray)

    index._lengths = load("lengths")
    segment = _Segment(load("terms"), load("starts"), load("rows"), load("tfs"))
    ids = RowIds.load(folder, "keywords")
    vocab = SortedVocab((folder / "keywords.vocab").read_bytes())
    if len(ids) != len(index._lengths) or len(segment.starts) != len(segment.terms) + 1:
        raise ValueError("keyword index files disagree")
    index.ids = ids
    index._sorted_terms = vocab
    index._sorted_ids = np.load(folder / "keywords.vocab.npy")
    if len(index._sorted_ids) != len(vocab):
        raise ValueError("keyword vocabulary files disagree")
    index._alive = np.ones(len(ids), bool)
    index._total_length = float(index._lengths.sum())
    index._segments = [segment] if len(segment) else []
    return index


class SortedVocab(Sequence[str]):
    """The saved vocabulary, one term per line, read as one block of bytes: a query looks up a
    few terms by bisection, and splitting 200k terms into strings cost ~10-20 ms of every cold
    start. Terms never hold a newline: tokens are split on whitespace."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob
        # term i is blob[starts[i] : starts[i + 1] - 1]: each ends one byte before the next
        newlines = np.flatnonzero(np.frombuffer(blob, np.uint8) == ord("\n"))
        self._starts = (
            np.concatenate([[0], newlines + 1, [len(blob) + 1]]) if blob else np.zeros(1, np.int64)
        )

    def __len__(self) -> int:
        return len(self._starts) - 1

    @overload
    def __getitem__(self, at: int) -> str: ...
    @overload
    def __getitem__(self, at: slice) -> list[str]: ...
    def __getitem__(self, at: int | slice) -> str | list[str]:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        if not -len(self) <= at < len(self):
            raise IndexError(at)
        at %= len(self)
        return self.blob[self._starts[at] : self._starts[at + 1] - 1].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self.blob.decode("utf-8").split("\n") if self.blob else [])
