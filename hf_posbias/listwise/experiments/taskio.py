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

from dataclasses import fields
from pathlib import Path

from hf_posbias.errors import InputError
from hf_posbias.rerankers.records import Passage
from hf_posbias.tasks.beir import RetrievalData


class RerankTask(RetrievalData[Passage]):
    """A retrieval set (:class:`~hf_posbias.tasks.beir.RetrievalData`) whose documents are the
    rerankers' passages."""

    def passage(self, doc_id: str) -> Passage:
        """The corpus passage ``doc_id``."""
        return self.corpus[doc_id]

    @classmethod
    def from_retrieval_data(cls, data: RetrievalData[tuple[str, str]]) -> RerankTask:
        """The same set, each ``(title, text)`` document as a :class:`Passage`."""
        values = {f.name: getattr(data, f.name) for f in fields(data)}
        values["corpus"] = {i: Passage(i, text, title) for i, (title, text) in data.corpus.items()}
        return cls(**values)


def _read_folder(path: Path, split: str | None) -> RetrievalData[tuple[str, str]]:
    if not (path / "task.json").is_file():  # BEIR / MS MARCO, or one line saying it is neither
        from hf_posbias.tasks.beir import read_plain_folder

        return read_plain_folder(path, split)
    from hf_posbias.tasks.taskdata import PositionTaskData

    data = PositionTaskData.load(path).retrieval_data(source=str(path))
    if split is not None and split != data.split:
        raise InputError(
            f"{path} holds the {data.split!r} split only, so there are no qrels for split {split!r}"
        )
    return data


def load_rerank_task(folder: str | Path, split: str | None = None) -> RerankTask:
    """Read a BEIR folder or a project task folder (see the module docstring).

    ``split=None`` means ``test`` for a BEIR folder and the folder's own split otherwise.
    """
    path = Path(folder)
    task = RerankTask.from_retrieval_data(_read_folder(path, split))
    if not task.judged_queries():
        raise InputError(f"{path}: no query of split {task.split!r} has a relevant document")
    return task
