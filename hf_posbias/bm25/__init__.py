"""The one BM25 of the package: tokenisation, stemming, the index and the pair scorer.

Its modules: :mod:`~hf_posbias.bm25.analyzer` (the tokenisation and constants),
:mod:`~hf_posbias.bm25.index` (the corpus index), :mod:`~hf_posbias.bm25.pair` (the pair
scorer); each name is imported from its module.

"bm25" means one ranker everywhere: ``posbias evaluate --model bm25``, the listwise first stage
and the listwise pointwise control all tokenise with
:class:`~hf_posbias.bm25.analyzer.BM25Analyzer` (``bm25s`` word split, lower-cased, the
language's stop words, the language's Snowball stemmer from PyStemmer — what mteb's
``mteb/baseline-bm25s`` does for a language with a stop-word list) and score with Okapi BM25,
Lucene variant, ``k1 = 1.5``, ``b = 0.75``.

- :class:`~hf_posbias.bm25.index.BM25Index` — a ``bm25s`` index over a corpus: every
  document's score for a query (``scores``) and mteb's top-k retrieval (``retrieve``).
- :class:`~hf_posbias.bm25.pair.BM25PairScorer` — collection statistics fitted once, then any
  ``(query, passage)`` pair scored directly in ``O(|q| + |d|)``, in float64: for scorers that
  read passages that are not in one index (verification's segments, a reranker's window). Same
  formula as the index (a test checks them against each other).

Verification's panel member keeps ``stemmer=None`` (no stemming): its scores are written into
the published pool and its manifest, and ``posbias data build`` must stay byte-identical for the
data already built (see ``docs/architecture.md``).

Example:
    >>> from hf_posbias.bm25.index import BM25Index
    >>> index = BM25Index(["cats purr softly", "dogs bark loudly", "a dog runs"])
    >>> [round(float(s), 3) for s in index.scores("why do dogs bark")]
    [0.0, 0.549, 0.212]
"""
