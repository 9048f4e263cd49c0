"""Task folders for the listwise commands: BEIR folders and the project's position tasks.

``--task`` takes either

- a BEIR-format or MS MARCO-style folder, read by the one reader of plain retrieval folders
  (:func:`hf_posbias.tasks.beir.read_plain_folder`); or
- a project task folder (:class:`hf_posbias.tasks.taskdata.PositionTaskData`), which holds
  one split: the one its ``task.json`` names under ``extra.split`` (``test`` when absent).

A split without qrels is refused in one line, before any model loads.

Example:
    >>> import tempfile
    >>> from hf_posbias.tasks.beir import write_beir_folder
    >>> d = write_beir_folder(tempfile.mkdtemp(), {"d1": ("", "cats")}, {"q1": "cat?"},
    ...                       {"q1": {"d1": 1}})
    >>> task = load_rerank_task(d)
    >>> task.split, task.judged_queries(), task.passage("d1").text
    ('test', ['q1'], 'cats')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hf_posbias.errors import InputError
from hf_posbias.rerankers.records import Passage


@dataclass
class RerankTask:
    """Corpus, queries and qrels of one split, keyed by string ids."""

    name: str
    split: str
    corpus: dict[str, Passage]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    source: str = ""

    def judged_queries(self) -> list[str]:
        """Ids (sorted) of queries with at least one relevant document in the corpus."""
        return sorted(
            q
            for q, docs in self.qrels.items()
            if q in self.queries and any(r > 0 and d in self.corpus for d, r in docs.items())
        )

    def relevant(self, query_id: str) -> list[str]:
        """Relevant documents of a query, most relevant first (ties by document id)."""
        docs = self.qrels.get(query_id, {})
        return sorted(
            (d for d, r in docs.items() if r > 0 and d in self.corpus), key=lambda d: (-docs[d], d)
        )

    def passage(self, doc_id: str) -> Passage:
        """The corpus passage ``doc_id``."""
        return self.corpus[doc_id]


def _load_beir(folder: Path, split: str | None) -> RerankTask:
    from hf_posbias.tasks.beir import read_plain_folder

    plain = read_plain_folder(folder, split)
    corpus = {i: Passage(i, text, title) for i, (title, text) in plain.corpus.items()}
    return RerankTask(folder.name, plain.split, corpus, plain.queries, plain.qrels, str(folder))


def _load_position_task(folder: Path, split: str | None) -> RerankTask:
    from hf_posbias.tasks.taskdata import PositionTaskData

    data = PositionTaskData.load(folder)
    own = str(data.info.extra.get("split") or "test")
    if split is not None and split != own:
        raise InputError(
            f"{folder} holds the {own!r} split only, so there are no qrels for split {split!r}"
        )
    corpus = {
        str(d["id"]): Passage(str(d["id"]), str(d["text"]), str(d.get("title") or ""))
        for d in data.corpus
    }
    queries = {str(q["id"]): str(q["text"]) for q in data.queries}
    return RerankTask(data.info.name, own, corpus, queries, data.relevant_docs(), str(folder))


def load_rerank_task(folder: str | Path, split: str | None = None) -> RerankTask:
    """Read a BEIR folder or a project task folder (see the module docstring).

    ``split=None`` means ``test`` for a BEIR folder and the folder's own split otherwise.
    """
    path = Path(folder)
    if (path / "task.json").is_file():
        task = _load_position_task(path, split)
    else:  # BEIR / MS MARCO, or one line saying the folder is neither
        task = _load_beir(path, split)
    if not task.judged_queries():
        raise InputError(f"{path}: no query of split {task.split!r} has a relevant document")
    return task
