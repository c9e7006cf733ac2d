"""A small Okapi BM25 (k1=1.5, b=0.75) over an inverted index, with no dependency beyond numpy.

The index is split in two so that copy-on-write states can share it: :class:`BM25Index` holds the postings
of one immutable block of documents; the collection statistics (document count, mean length, document
frequencies) are passed in at scoring time, computed over whatever documents of several blocks are active
in a state (see :func:`collection_stats` and :meth:`BM25Index.document_frequency`).

IDF is the non-negative Lucene form ``ln(1 + (N - df + 0.5) / (df + 0.5))``. Each distinct query term counts
once. The tokenizer lowercases, drops a possessive "'s", splits on anything that is not a letter or digit
("Pip's vet" -> pip, vet) and drops Lucene's default English stop words (33 function words such as "the",
"is", "of"): without that, in the small collections the fuzzer builds, a function word that happens to
occur in one memory gets a high IDF and unrelated questions match it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

K1 = 1.5
B = 0.75
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_POSSESSIVE = re.compile(r"['\u2019]s\b")
#: Lucene's ENGLISH_STOP_WORDS_SET
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split())


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(_POSSESSIVE.sub("", text.lower())) if t not in STOP_WORDS]


def idf(n_docs: int, df: np.ndarray | float) -> np.ndarray | float:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


@dataclass
class Postings:
    docs: np.ndarray  # int32 row indices into the block
    tf: np.ndarray  # float64 term frequencies


class BM25Index:
    """Postings and document lengths of one block of documents (rows 0..n-1, in the given order)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.n = len(texts)
        lengths = np.zeros(self.n, dtype=np.float64)
        acc: dict[str, tuple[list[int], list[int]]] = {}
        for row, text in enumerate(texts):
            counts = Counter(tokenize(text))
            lengths[row] = sum(counts.values())
            for term, c in counts.items():
                entry = acc.get(term)
                if entry is None:
                    entry = acc[term] = ([], [])
                entry[0].append(row)
                entry[1].append(c)
        self.lengths = lengths
        self.postings: dict[str, Postings] = {
            t: Postings(np.asarray(d, dtype=np.int32), np.asarray(c, dtype=np.float64)) for t, (d, c) in acc.items()}

    def document_frequency(self, term: str, active: np.ndarray | None) -> int:
        """Number of active documents of this block containing ``term`` (``active`` None: all)."""
        p = self.postings.get(term)
        if p is None:
            return 0
        return int(p.docs.size if active is None else np.count_nonzero(active[p.docs]))

    def scores(self, terms: Iterable[str], n_docs: int, avgdl: float, df: dict[str, int]) -> np.ndarray:
        """BM25 score of every row of the block for the distinct ``terms``, under collection-wide stats."""
        out = np.zeros(self.n, dtype=np.float64)
        if n_docs <= 0 or avgdl <= 0:
            return out
        for term in terms:
            p = self.postings.get(term)
            d = df.get(term, 0)
            if p is None or d <= 0:
                continue
            w = float(idf(n_docs, d))
            norm = K1 * (1.0 - B + B * self.lengths[p.docs] / avgdl)
            out[p.docs] += w * p.tf * (K1 + 1.0) / (p.tf + norm)
        return out


def query_terms(query: str) -> list[str]:
    """Distinct query terms in first-seen order (the order fixes the float summation order)."""
    return list(dict.fromkeys(tokenize(query)))


def collection_stats(blocks: Sequence[tuple[BM25Index, np.ndarray | None]]) -> tuple[int, float]:
    """(active document count, mean active document length) over several blocks with active masks."""
    n = 0
    total = 0.0
    for index, active in blocks:
        if active is None:
            n += index.n
            total += float(index.lengths.sum())
        else:
            n += int(np.count_nonzero(active))
            total += float(index.lengths[active].sum())
    return n, (total / n if n else 0.0)


def score_texts(texts: Sequence[str], query: str) -> np.ndarray:
    """Convenience: BM25 scores of ``query`` against ``texts`` taken as the whole collection."""
    index = BM25Index(texts)
    terms = query_terms(query)
    n, avgdl = collection_stats([(index, None)])
    df = {t: index.document_frequency(t, None) for t in terms}
    return index.scores(terms, n, avgdl, df)
