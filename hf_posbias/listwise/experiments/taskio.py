"""Task folders for the listwise commands: BEIR folders and the project's position tasks.

``--task`` takes either

- a BEIR-format or MS MARCO-style folder, read by the one reader of plain retrieval folders
  (:func:`hf_posbias.tasks.beir.read_plain_folder`); or
- a project task folder (:class:`hf_posbias.tasks.taskdata.PositionTaskData`), which holds
  one split: the one its ``task.json`` names under ``extra.split`` (``test`` when absent).

Either way the corpus is held once, as the reader's arrow table, looked up by id
(:class:`~hf_posbias.rows.arrow.RowsById`): a passage is made when it is read.

A split without qrels is refused in one line, before any model loads, and so is a split that
holds the wrong queries for the set's name where the count tells (:func:`check_split_queries`:
a set named for MS MARCO holding TREC DL's 43 or 54 queries, as BEIR's MS MARCO ``test`` split
does).

Example:
    >>> import tempfile
    >>> from hf_posbias.tasks.beir import write_beir_folder
    >>> d = write_beir_folder(tempfile.mkdtemp(), {"d1": ("", "cats")}, {"q1": "cat?"},
    ...                       {"q1": {"d1": 1}})
    >>> task = load_rerank_task(d)
    >>> task.split, task.judged_queries(), task.passage("d1").text
    ('test', ['q1'], 'cats')
    >>> task.passages(["d1"]), len(task.corpus)
    ([Passage(doc_id='d1', text='cats', title='')], 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rerankers.records import Passage
from hf_posbias.rows.arrow import take_values
from hf_posbias.tasks.beir import RetrievalData, corpus_by_id

MIN_DEV_QUERIES = 1000
"""A set named for MS MARCO with fewer judged queries than this holds TREC DL's (DL19: 43,
DL20: 54), not MS MARCO dev's 6,980: BEIR's MS MARCO ``qrels/test.tsv`` is DL19."""

TREC_DL_NAMES = ("dl19", "dl2019", "dl20", "dl2020", "trecdl")
"""What in a set's name (lower case, letters and digits only) says it is TREC DL."""


def _passage(row: Mapping[str, Any]) -> Passage:
    return Passage(row["id"], row["text"], row["title"])


class RerankTask(RetrievalData[Passage]):
    """A retrieval set (:class:`~hf_posbias.tasks.beir.RetrievalData`) whose documents are the
    rerankers' passages."""

    def passage(self, doc_id: str) -> Passage:
        """The corpus passage ``doc_id``."""
        return self.corpus[doc_id]

    def passages(self, doc_ids: Iterable[str]) -> list[Passage]:
        """The corpus passages of ``doc_ids``, in order, read together (one arrow ``take``)."""
        return list(take_values(self.corpus, doc_ids))

    @classmethod
    def from_retrieval_data(cls, data: RetrievalData[tuple[str, str]]) -> RerankTask:
        """The same set, each ``(title, text)`` document as a :class:`Passage`: the corpus
        table looked up by id (:func:`~hf_posbias.tasks.beir.corpus_by_id`; a reader's own
        table is shared, not copied), a passage made when it is read."""
        values = {f.name: getattr(data, f.name) for f in fields(data)}
        values["corpus"] = corpus_by_id(data.corpus).with_convert(_passage)
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


def check_split_queries(names: str | Sequence[str], split: str, n_queries: int) -> None:
    """Refuse, in one line, a set whose split holds other queries than its name says, where the
    count tells: a set named for MS MARCO (and not for TREC DL) must hold MS MARCO dev's
    queries, not TREC DL's few (BEIR's MS MARCO ``qrels/test.tsv``, the split a BEIR folder
    reads by default, is DL19's 43). The one rule of the study and the bare ``listwise`` verbs:
    ``names`` are what names the set, the study's dataset name and its folder's name, or the
    task folder's name for a verb; a name saying TREC DL (:data:`TREC_DL_NAMES`) reads DL's
    queries on purpose.

    Example:
        >>> check_split_queries("msmarco", "dev", 6980)
        >>> check_split_queries(["dl19", "msmarco"], "test", 43)  # a set named for DL19
        >>> check_split_queries("msmarco", "test", 43)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        hf_posbias.errors.InputError: dataset 'msmarco': split test has 43 judged queries, ...
        >>> check_split_queries(["msmarco-dev", "msmarco"], "dev", 43)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        hf_posbias.errors.InputError: dataset 'msmarco-dev' (folder msmarco): split dev has 43 ...
    """
    names = [names] if isinstance(names, str) else list(names)
    keys = ["".join(c for c in name.lower() if c.isalnum()) for name in names]  # MS-MARCO → msmarco
    says_dl = any(marker in key for key in keys for marker in TREC_DL_NAMES)
    says_msmarco = any("msmarco" in key for key in keys)
    if says_msmarco and not says_dl and n_queries < MIN_DEV_QUERIES:
        where = f"dataset {names[0]!r}"
        if len(names) > 1 and names[1] != names[0]:
            where += f" (folder {names[1]})"
        raise InputError(
            f"{where}: split {split} has {n_queries} judged queries, not MS MARCO dev's 6,980 "
            "(43 and 54 are TREC DL19's and DL20's; BEIR's msmarco qrels/test.tsv is DL19): use "
            "split dev for MS MARCO dev, or name the set for TREC DL (a study dataset dl19, a "
            "folder trec-dl-2019) to read DL's queries"
        )
