"""BM25's analyzer: the one tokenisation (word split, stop words, Snowball stemmer), its
constants (``k1``, ``b``, the Lucene variant) and the term ids it produces.

Example:
    >>> from hf_posbias.bm25.analyzer import ENGLISH, is_bm25
    >>> ENGLISH.tokenize(["Dogs are barking"]), is_bm25("mteb/baseline-bm25s")
    ([['dog', 'bark']], True)
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_posbias.errors import InputError, ModelLoadError

BM25_NAMES = frozenset({"bm25", "bm25s", "mteb/baseline-bm25s"})
"""Model arguments that mean BM25."""

K1 = 1.5
B = 0.75
METHOD = "lucene"
INDEX_BATCH = 2_000
"""Documents tokenised at once while an index is built: the texts held at a time."""

LANGUAGES: dict[str, tuple[str, str]] = {
    "eng": ("en", "english"),
    "deu": ("de", "german"),
    "nld": ("nl", "dutch"),
    "fra": ("fr", "french"),
    "spa": ("es", "spanish"),
    "por": ("pt", "portuguese"),
    "ita": ("it", "italian"),
    "rus": ("ru", "russian"),
    "swe": ("sv", "swedish"),
    # Bokmål, Nynorsk and the macrolanguage share one stop-word list and one stemmer.
    **dict.fromkeys(("nob", "nno", "nor"), ("no", "norwegian")),
}
"""ISO 639-3 → (``bm25s`` stop-word key, Snowball stemmer): the languages that have both, for
which mteb's BM25 is exactly this analyzer."""


def is_bm25(name: str) -> bool:
    """Whether a model argument names BM25.

    Example:
        >>> is_bm25("BM25"), is_bm25("all-MiniLM-L6-v2")
        (True, False)
    """
    return str(name).strip().lower() in BM25_NAMES


def document_text(title: str, text: str) -> str:
    """What BM25 indexes for a titled document: the retrievers' one form
    (:func:`hf_posbias.doctext.retriever_text`; mteb's BM25 joins with a newline, which gives the
    same words).

    Example:
        >>> document_text("Cat", "It purrs.")
        'Cat It purrs.'
    """
    from hf_posbias.doctext import retriever_text

    return retriever_text(title, text)


@functools.cache
def _stemmer(language: str) -> Any:
    try:
        import Stemmer
    except ModuleNotFoundError:
        raise ModelLoadError("BM25 needs the package 'PyStemmer': pip install PyStemmer") from None
    return Stemmer.Stemmer(language)


@dataclass(frozen=True)
class BM25Analyzer:
    """How BM25 turns text into terms: ``bm25s`` word split, stop words, a Snowball stemmer.

    Args:
        stopwords: a ``bm25s`` stop-word key (``"en"`` …) or ``None`` for none.
        stemmer: a PyStemmer language (``"english"`` …) or ``None`` for no stemming.

    Example:
        >>> BM25Analyzer().tokenize(["The dogs were barking"])
        [['dog', 'were', 'bark']]
        >>> BM25Analyzer(stemmer=None).tokenize(["The dogs were barking"])
        [['dogs', 'were', 'barking']]
    """

    stopwords: str | None = "en"
    stemmer: str | None = "english"

    @classmethod
    def for_language(cls, iso3: str) -> BM25Analyzer:
        """The analyzer of an ISO 639-3 language (one of :data:`LANGUAGES`).

        Example:
            >>> BM25Analyzer.for_language("deu")
            BM25Analyzer(stopwords='de', stemmer='german')
        """
        if iso3 not in LANGUAGES:
            raise InputError(
                f"BM25 has no stop words and stemmer for language {iso3!r}; "
                f"known: {', '.join(sorted(LANGUAGES))}"
            )
        stopwords, stemmer = LANGUAGES[iso3]
        return cls(stopwords, stemmer)

    def _kwargs(self) -> dict[str, Any]:
        return {
            "stopwords": self.stopwords or [],
            "stemmer": _stemmer(self.stemmer) if self.stemmer else None,
            "show_progress": False,
        }

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms, in order (repeated terms repeated)."""
        import bm25s

        if not texts:
            return []
        return bm25s.tokenize(list(texts), return_ids=False, **self._kwargs())

    def tokenize_ids(self, texts: Iterable[str], *, batch_size: int = INDEX_BATCH) -> Any:
        """``bm25s.tokenization.Tokenized`` (term ids and vocabulary), what an index is built on.

        ``texts`` is read ``batch_size`` at a time (an iterator is never held whole), each batch
        tokenised by ``bm25s.tokenize`` as one call over all texts would (a text's terms do not
        depend on the others), its terms numbered in one vocabulary and kept as 4-byte ids
        (:class:`TermIds`), not a Python list per document.

        Example:
            >>> tokenized = ENGLISH.tokenize_ids(iter(["dogs bark", "a dog runs"]), batch_size=1)
            >>> [[tokenized.vocab_words[i] for i in doc] for doc in tokenized.ids]
            [['dog', 'bark'], ['dog', 'run']]
        """
        import bm25s

        vocab: dict[str, int] = {}
        chunks: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        iterator = iter(texts)
        while batch := list(itertools.islice(iterator, batch_size)):
            local = bm25s.tokenize(batch, return_ids=True, **self._kwargs())
            # The batch's own term numbers → the corpus's (sorted: the same ids in every run).
            to_global = np.empty(len(local.vocab), dtype=np.int32)
            for term in sorted(local.vocab):
                to_global[local.vocab[term]] = vocab.setdefault(term, len(vocab))
            sizes = np.fromiter(map(len, local.ids), dtype=np.int64, count=len(local.ids))
            flat = np.fromiter(
                itertools.chain.from_iterable(local.ids), dtype=np.int32, count=int(sizes.sum())
            )
            chunks.append(to_global[flat])
            lengths.append(sizes)
        offsets = np.zeros(sum(len(x) for x in lengths) + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=offsets[1:])
        flat_ids = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
        return _Tokenized(ids=TermIds(flat_ids, offsets), vocab=vocab)


class TermIds:
    """Every document's term ids, in order, held as one int32 array and its offsets.

    What ``bm25s`` reads while it builds an index (``len`` and iteration, each document a list
    of ints, as ``bm25s.tokenize`` returns them) at 4 bytes per term, where lists of Python
    ints take about 8 more per term and a list object per document.

    Example:
        >>> ids = TermIds(np.array([0, 1, 0, 2], dtype=np.int32), np.array([0, 2, 4]))
        >>> len(ids), list(ids)
        (2, [[0, 1], [0, 2]])
    """

    def __init__(self, flat: np.ndarray, offsets: np.ndarray) -> None:
        self.flat = flat
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __iter__(self) -> Iterator[list[int]]:
        bounds = self.offsets.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            yield self.flat[start:end].tolist()

    @property
    def nbytes(self) -> int:
        """Bytes of the two arrays."""
        return int(self.flat.nbytes + self.offsets.nbytes)


@dataclass(frozen=True)
class _Tokenized:
    """``bm25s``'s tokenised-corpus shape (``ids`` and ``vocab``), over :class:`TermIds`."""

    ids: TermIds
    vocab: dict[str, int]

    @property
    def vocab_words(self) -> list[str]:
        """The terms by id."""
        words = [""] * len(self.vocab)
        for word, i in self.vocab.items():
            words[i] = word
        return words


ENGLISH = BM25Analyzer()
"""Stop words ``en``, Snowball ``english``: evaluation's, the listwise first stage's and the
listwise control's analyzer."""
