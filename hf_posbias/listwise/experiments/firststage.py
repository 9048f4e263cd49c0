"""First stage for the listwise commands: the top-k document ids of a query.

- :class:`BM25FirstStage` — the package's one BM25 (:class:`hf_posbias.bm25.BM25Index`: English
  stop words and Snowball stemmer, title and text indexed as ``posbias evaluate --model bm25``
  indexes them), the corpus indexed once; every document is scored, so any k up to the corpus
  size is available.
- :class:`DenseFirstStage` — any embedding model the one resolver loads (cosine similarity;
  registry prompts and ``openai:`` endpoints included), the corpus encoded once.

Both break score ties as evaluation's runs do (document id descending, trec_eval's rule:
:func:`hf_posbias.tasks.position_scoring.ranked`), so the list never depends on
corpus order
and a BM25 list is the head of ``posbias evaluate --model bm25``'s run for the same query.

Example:
    >>> from hf_posbias.rerankers.records import Passage
    >>> corpus = {d: Passage(d, t) for d, t in
    ...           [("d1", "cats purr softly"), ("d2", "dogs bark loudly"), ("d3", "dogs run")]}
    >>> BM25FirstStage(corpus).top_k("why do dogs bark", 2)
    ['d2', 'd3']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from hf_posbias.errors import InputError
from hf_posbias.rerankers.records import Passage
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    from hf_posbias.modeling import ModelSettings


class FirstStage(Protocol):
    """Anything that lists the top-k documents of a query."""

    name: str
    size: int
    encoding: dict[str, Any] | None
    """What the ranking depends on besides the name and the corpus (``None``: nothing)."""

    def top_k(self, query: str, k: int) -> list[str]: ...


def _ranked(scores: Any, doc_ids: Sequence[str], k: int) -> list[str]:
    from hf_posbias.tasks.position_scoring import ranked

    return [doc for doc, _ in ranked(dict(zip(doc_ids, map(float, scores))))[:k]]


class BM25FirstStage:
    """BM25 (:class:`hf_posbias.bm25.BM25Index`) over a corpus ``{doc_id: Passage}``."""

    name = "bm25"
    encoding = None

    def __init__(self, corpus: Mapping[str, Passage]) -> None:
        if not corpus:
            raise InputError("the first stage needs a non-empty corpus")
        self._corpus = corpus
        self.doc_ids = sorted(corpus)
        self.size = len(self.doc_ids)

    @cached_property
    def _index(self) -> Any:
        """The corpus index, built on the first query (a cached list needs none)."""
        from hf_posbias.bm25 import BM25Index, document_text

        return BM25Index(
            [document_text(self._corpus[d].title, self._corpus[d].text) for d in self.doc_ids]
        )

    def top_k(self, query: str, k: int) -> list[str]:
        """The ``k`` best documents (ties by document id, descending)."""
        return _ranked(self._index.scores(query), self.doc_ids, k)


class DenseFirstStage:
    """Any embedding model the resolver loads (:func:`hf_posbias.embedding.load_embedder`: a
    sentence-transformers folder or Hub id, a packaged model, an mteb registry name with its
    prompts, ``openai:<model>``): cosine similarity of query and passage embeddings, each side
    with the model's own query/document prompt. The corpus is encoded on the first query: the
    model's ``encoding`` settings (:meth:`hf_posbias.embedding.TextEmbedder.describe`) are known
    before, so a cache of its lists is checked without encoding anything."""

    def __init__(
        self,
        model: str,
        corpus: Mapping[str, Passage],
        *,
        batch_size: int = 64,
        settings: ModelSettings | None = None,
    ) -> None:
        from hf_posbias.embedding import load_embedder

        self.name = model
        self.doc_ids = sorted(corpus)
        self.size = len(self.doc_ids)
        self._corpus = corpus
        self._model = load_embedder(model, settings=settings, batch_size=batch_size)
        self.encoding: dict[str, Any] | None = self._model.describe()

    @cached_property
    def _embeddings(self) -> Any:
        """The corpus embeddings, encoded once on the first query."""
        return self._model.embed([self._corpus[d].content() for d in self.doc_ids], "document")

    def top_k(self, query: str, k: int) -> list[str]:
        """The ``k`` most similar documents (ties by document id, descending)."""
        q = self._model.embed([query], "query")[0]
        return _ranked(self._embeddings @ q, self.doc_ids, k)


def load_first_stage(
    name: str, corpus: Mapping[str, Passage], settings: ModelSettings | None = None
) -> FirstStage:
    """``bm25`` or any embedding model argument (:class:`DenseFirstStage`); ``settings`` carry
    an endpoint's URL and key or the remote-code opt-in."""
    from hf_posbias.bm25 import is_bm25

    if is_bm25(name):
        return BM25FirstStage(corpus)
    return DenseFirstStage(name, corpus, settings=settings)


def check_k(k: int, corpus_size: int) -> None:
    """Refuse a k larger than the first stage can list (it ranks the whole corpus).

    ``k`` >= 1 is checked by :class:`~hf_posbias.listwise.settings.ListSource`.

    Example:
        >>> try:
        ...     check_k(30, 20)
        ... except InputError as err:
        ...     print(err)
        --k 30 is larger than the first-stage list: the corpus has 20 document(s)
    """
    if k > corpus_size:
        raise InputError(
            f"{flag_name('k')} {k} is larger than the first-stage list: the corpus has "
            f"{corpus_size} document(s)"
        )
