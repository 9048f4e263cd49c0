"""Counted progress of one ``mteb.evaluate`` run: texts encoded / total and queries scored / total.

mteb's loops live inside mteb, so :class:`EvaluationProgress` counts from the outside, through
the package's one progress convention (:func:`hf_posbias.progress.progress`: a bar on a
terminal, plain lines each 10 % or 30 s in a log, nothing with ``--no-progress``):

- **texts encoded**: every batch the bi-encoder's ``SentenceTransformer`` embeds (a forward hook
  for the duration of the run), against the task's documents + queries; an encoder without a
  ``SentenceTransformer`` (an mteb registry wrapper) counts whole ``encode`` calls instead
  (:class:`~hf_posbias.evaluation.runs.mteb_models.CountingEncoder` reports them);
- **queries scored**: queries whose similarity to the whole corpus is computed (mteb scores all
  queries against one corpus chunk at a time, so they count as done when the last chunk is).

BM25 and reranking pipelines have no encoder to count: their run keeps the ``still running``
heartbeat (:class:`hf_posbias.progress.Heartbeat`).

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> with EvaluationProgress("demo", documents=4, queries=2, file=out) as p:
    ...     p.encoded(2); p.encoded(4)
    ...     p.scored(queries=2, documents=4)
    >>> for line in out.getvalue().splitlines():
    ...     print(line.split(" [")[0])
    demo: texts encoded: 2/6 (33%)
    demo: texts encoded: 6/6 (100%)
    demo: queries scored: 2/2 (100%)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hf_posbias.progress import ProgressReporter


def task_size(task: Any) -> tuple[int, int]:
    """(documents, queries) a loaded mteb retrieval task will encode, over its evaluated
    subsets and splits.

    Example:
        >>> from types import SimpleNamespace
        >>> split = {"corpus": [1, 2, 3], "queries": [1]}
        >>> task = SimpleNamespace(dataset={"default": {"test": split}},
        ...                        metadata=SimpleNamespace(eval_splits=["test"]))
        >>> task_size(task)
        (3, 1)
    """
    documents = queries = 0
    for subset in (getattr(task, "dataset", None) or {}).values():
        for split in task.metadata.eval_splits:
            data = subset.get(split) if isinstance(subset, dict) else None
            if not data:
                continue
            documents += len(data.get("corpus") or ())
            queries += len(data.get("queries") or ())
    return documents, queries


@dataclass(eq=False)
class EvaluationProgress(ProgressReporter):
    """Two counters, ``<desc>: texts encoded: n/total`` and ``<desc>: queries scored: n/total``.

    Args:
        desc: the run's label (model and task).
        documents: corpus texts the run encodes.
        queries: queries it encodes and scores.
        disable, file, interval: :class:`~hf_posbias.progress.ProgressReporter`'s options.
    """

    desc: str = field()  # required
    documents: int = field(kw_only=True)
    queries: int = field(kw_only=True)

    def __post_init__(self) -> None:
        self.texts: Any = None
        self.scoring: Any = None
        self._documents_scored = 0

    def __enter__(self) -> EvaluationProgress:
        self.texts = self.counter(
            total=self.documents + self.queries or None,
            desc=f"{self.desc}: texts encoded",
            unit="text",
        )
        return self

    def encoded(self, n: int) -> None:
        """``n`` more texts embedded (a batch, or a whole ``encode`` call)."""
        if self.texts is not None and n > 0:
            self.texts.update(n)

    def scored(self, *, queries: int, documents: int) -> None:
        """``queries`` query embeddings scored against ``documents`` more corpus texts."""
        self._documents_scored += documents
        if self._documents_scored >= self.documents and self.scoring is None:
            if self.texts is not None:
                self.texts.close()
            self.scoring = self.counter(
                total=self.queries or None, desc=f"{self.desc}: queries scored", unit="query"
            )
            self.scoring.update(min(queries, self.queries) if self.queries else queries)

    def __exit__(self, *exc: object) -> None:
        for bar in (self.texts, self.scoring):
            if bar is not None:
                bar.close()

    def hook(self, module: Any) -> Any:
        """Count each batch a ``SentenceTransformer`` embeds; the handle's ``remove()`` undoes
        it."""

        def count(_module: Any, _inputs: Any, output: Any) -> None:
            embedding = output.get("sentence_embedding") if isinstance(output, Mapping) else None
            if embedding is not None and hasattr(embedding, "shape"):
                self.encoded(int(embedding.shape[0]))

        return module.register_forward_hook(count)
