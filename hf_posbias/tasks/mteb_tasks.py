"""MTEB 2.x retrieval tasks over position task folders, with per-position scores built in.

Every task reads a position task folder (see :mod:`hf_posbias.tasks.taskdata`) and
evaluates ALL its queries in one ``hf_subset`` (``default``; one per language for a multilingual
task), so mteb encodes each corpus text once and indexes BM25 once by itself. The position view
comes from mteb's own hook, :meth:`PositionRetrievalTask.task_specific_scores`: it scores every
query (:mod:`hf_posbias.tasks.position_scoring`, under the task's ``scoring``
protocol) and
adds to the subset's scores

- ``position``: per-bucket nDCG@10 and the other metrics, query counts, mean, PSI, worst drop,
  best/worst bucket, empty buckets (and PosIR's length strata);
- ``psi``, ``position_mean`` and ``worst_drop`` as plain numbers (``None`` when undefined),

so ``mteb.evaluate(model, SciFactEvidence(path))`` alone yields PSI, and mteb's result files
(and ``ResultCache.submit_results``) carry it. The per-query rows and the run of the last
evaluation stay on the task (:attr:`PositionRetrievalTask.last_evaluation`) for the per-query
table, the TREC run file and the bootstrap of :mod:`hf_posbias.evaluation.runs.runner`.

The named tasks are ordinary classes (``from hf_posbias.tasks import SciFactEvidence``), one per
:class:`~hf_posbias.tasks.benchmark_registry.TaskCard`; their folder is found at an explicit
``path``,
at ``$POSBIAS_TASKS_DIR/<name>``, or on the Hub (a dataset repo
``$POSBIAS_HUB_NAMESPACE/<name>`` holding the same files). :func:`get_task` accepts a folder or a
registered name.

Example:
    >>> import tempfile
    >>> from hf_posbias.tasks.builders.jsonl import build_from_records
    >>> from hf_posbias.tasks.mteb_tasks import get_task
    >>> data = build_from_records(
    ...     [{"query": "alpha", "document": "alpha beta", "evidence_start": 0}], name="Toy")
    >>> task = get_task(str(data.save(tempfile.mkdtemp())))
    >>> task.metadata.hf_subsets
    ['default']
    >>> task.load_data()
    >>> task.buckets, task.empty_buckets   # empty buckets are reported, not hidden
    (['begin', 'middle', 'end'], ['middle', 'end'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata

from hf_posbias.errors import BackendError, InputError, first_line
from hf_posbias.tasks.benchmark_registry import (
    DEFAULT_LANGUAGES,
    DEFAULT_TOP_K,
    SPLIT,
    TASKS_DIR_ENV,
    TaskCard,
    card_names,
    cards,
    find_card,
    mteb_license,
    named_task_folder,
    named_task_repo,
    require_card,
    resolve_task_reference,
    task_metadata,
)
from hf_posbias.tasks.position_scoring import (
    SCORING_SCHEMES,
    PositionScores,
    QueryPosition,
    QueryResult,
    query_positions,
    rule_from_extra,
    scheme_buckets,
    score_positions,
    summarize_rows,
)
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo, corpus_table, read_task_info

K_VALUES = (1, 3, 5, 10, 20, 100)
"""Cut-offs mteb reports; none above the default top-100 retrieval."""
_TASK_CLASSES: dict[str, type[PositionRetrievalTask]] = {}
"""Task name → the class whose ``card`` names it (filled as the classes are defined)."""


def folder_revision(folder: str | Path) -> str:
    """A content fingerprint of a task folder (mteb's ``dataset.revision``).

    Different data must never share a revision, or mteb's result cache would mix them up.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "task.json").write_text("{}")
        >>> len(folder_revision(d))
        16
    """
    from hf_posbias.hashing import folder_digest

    names = ("task.json", "corpus.parquet", "queries.parquet", "qrels.parquet")
    return folder_digest(folder, names=names)[:16]


def task_languages(info: TaskInfo, card: TaskCard | None = None) -> list[str]:
    """The languages (``hf_subset``\\ s) of a built folder: ``extra['eval_langs']``, else the
    builder's ``extra['language']`` when it is a language code, else the card's.

    Example:
        >>> task_languages(TaskInfo("T", "t", ["a"], extra={"language": "deu-Latn"}))
        ['deu-Latn']
    """
    extra = info.extra or {}
    if extra.get("eval_langs"):
        return [str(x) for x in extra["eval_langs"]]
    language = extra.get("language")
    if isinstance(language, str) and "-" in language:
        return [language]
    return list(card.languages if card else DEFAULT_LANGUAGES)


def build_metadata(
    info: TaskInfo,
    *,
    card: TaskCard | None = None,
    dataset_path: str,
    revision: str,
) -> TaskMetadata:
    """mteb ``TaskMetadata`` of a built folder: ``task.json`` wins, the card fills what it lacks.

    Example:
        >>> md = build_metadata(TaskInfo("T", "toy", ["a", "b"]), dataset_path="x", revision="r")
        >>> md.hf_subsets, md.main_score
        (['default'], 'ndcg_at_10')
    """
    if not info.buckets and not (card and card.buckets):
        raise InputError(f"task {info.name!r}: task.json lists no buckets")
    # A folder built before the cards spelled licences for mteb ("CC BY-NC 2.0") falls back to
    # its card's spelling instead of becoming "not specified".
    license_ = mteb_license(info.license)
    if license_ == "not specified" and card is not None:
        license_ = card.license
    return task_metadata(
        name=info.name or (card.name if card else "PositionTask"),
        description=info.description or (card.description if card else "position task"),
        dataset_path=dataset_path,
        revision=revision,
        languages=task_languages(info, card),
        license=license_,
        reference=info.reference or (card.reference if card else None),
        citation=info.citation or (card.citation if card else ""),
        main_score=info.main_score or "ndcg_at_10",
        card=card,
    )


def _hub_download(repo_id: str, revision: str | None) -> Path:
    """Fetch a task folder from a Hub dataset repo (the same four files at its root)."""
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(
            repo_id=repo_id,
            repo_type="dataset",
            revision=revision,
            allow_patterns=["task.json", "*.parquet", "README.md"],
        )
    except Exception as err:  # network, auth, missing repo: all "cannot fetch this task"
        raise BackendError(
            f"cannot download task repo {repo_id!r} from the Hub: {first_line(err)[:200]} "
            f"(set {TASKS_DIR_ENV} to a folder of built tasks, or pass a task folder)"
        ) from None
    return Path(local)


_CARDS_BY_CLASS: dict[str, TaskCard] = {card.class_name: card for card in cards().values()}


@dataclass
class SubsetEvaluation:
    """What the last evaluation of one subset produced, kept for the runner's exports."""

    hf_subset: str
    scores: PositionScores
    rows: list[QueryResult]
    run: dict[str, dict[str, float]]


@dataclass
class _LoadedState:
    data: PositionTaskData
    positions: dict[str, QueryPosition]
    bucket_counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class PositionRetrievalTask(AbsTaskRetrieval):
    """An ``AbsTaskRetrieval`` over a position task folder with per-position scores.

    Args:
        path: the task folder; for named tasks optional (``$POSBIAS_TASKS_DIR`` or the Hub).
        hub_revision: revision of the Hub dataset repo when the task is downloaded.
        scoring: ``default``, ``zeng2025`` or ``posir`` (see
            :mod:`~hf_posbias.tasks.position_scoring`).
        top_k: documents retrieved per query (default 100, as Z25).

    Example:
        >>> # mteb.evaluate(model, PositionRetrievalTask("tasks/scifact")).task_results[0]
        >>> #     .scores["test"][0]["psi"]
    """

    card: ClassVar[TaskCard | None] = None
    k_values = K_VALUES

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass that names a ``card``, or a class of this module named as a card's
        ``class_name``, is that task's class: its metadata comes from the card, and
        :func:`task_class` hands it out for the card's name."""
        super().__init_subclass__(**kwargs)
        card = cls.__dict__.get("card")
        if card is None and cls.__module__ == __name__:
            card = _CARDS_BY_CLASS.get(cls.__name__)
        if card is not None:
            cls.card = card
            cls.metadata = card.task_metadata()
            _TASK_CLASSES[card.name] = cls

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        hub_revision: str | None = None,
        scoring: str = "default",
        top_k: int = DEFAULT_TOP_K,
        **kwargs: Any,
    ) -> None:
        if scoring not in SCORING_SCHEMES:
            raise InputError(
                f"unknown scoring {scoring!r}: use one of {', '.join(SCORING_SCHEMES)}"
            )
        if top_k < 10:
            raise InputError(f"top_k must be >= 10 to compute nDCG@10, got {top_k}")
        self.scoring = scoring
        self._path = Path(path).expanduser() if path is not None else None
        if self._path is None and self.card is not None:
            self._path = named_task_folder(self.card.name)
        self._hub_revision = hub_revision
        self._state: _LoadedState | None = None
        self.empty_buckets: list[str] = []
        self.last_evaluation: dict[str, SubsetEvaluation] = {}
        if self._path is not None:
            self.metadata = self._folder_metadata(self._path, str(self._path))
        elif self.card is None:
            raise InputError("a position task needs a folder (PositionRetrievalTask(path=…))")
        super().__init__(**kwargs)
        self._top_k = top_k

    # -- locating the folder ----------------------------------------------------------------
    def _folder_metadata(self, folder: Path, dataset_path: str) -> TaskMetadata:
        info = read_task_info(folder)
        card = self.card or find_card(info.name)
        return build_metadata(
            info,
            card=card,
            dataset_path=dataset_path,
            revision=self._hub_revision or folder_revision(folder),
        )

    def hub_repo_id(self) -> str:
        """The Hub dataset repo this named task downloads from when no folder is given."""
        return named_task_repo(self.card.name if self.card is not None else self.metadata.name)

    def resolve_folder(self) -> Path:
        """The task folder: explicit path, ``$POSBIAS_TASKS_DIR/<name>``, else the Hub."""
        if self._path is not None:
            return self._path
        folder = _hub_download(self.hub_repo_id(), self._hub_revision)
        self._path = folder
        self.metadata = self._folder_metadata(folder, self.hub_repo_id())
        self.hf_subsets = list(self.metadata.hf_subsets)
        return folder

    # -- mteb hooks -------------------------------------------------------------------------
    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        """Read and validate the folder: every query in one subset over the corpus."""
        if self.data_loaded:
            return
        from datasets import Dataset
        from datasets.table import InMemoryTable

        folder = self.resolve_folder()
        data = PositionTaskData.load(folder)
        notes = [
            f"{data.info.name}: {n} queries: {reason} (kept; relative positions clipped)"
            for reason, n in data.span_problems().items()
        ] + [
            f"{n} {reason} (dropped)"
            for reason, n in (data.info.extra.get("dropped") or {}).items()
        ]
        # mteb's corpus wraps the task's own arrow table: the corpus is held once. The folder's
        # content digest is its fingerprint: without one, datasets pickles the whole table to
        # hash it, a transient copy of the corpus that the process's peak memory keeps.
        corpus = Dataset(
            InMemoryTable(corpus_table(data.corpus)),
            fingerprint=f"posbias-corpus-{folder_revision(folder)}",
        )
        judged = data.relevant_docs()
        qids = [str(q["id"]) for q in data.queries]
        split = {
            "corpus": corpus,
            "queries": Dataset.from_dict(
                {"id": qids, "text": [str(q["text"]) for q in data.queries]}
            ),
            "relevant_docs": {qid: dict(judged[qid]) for qid in qids},
            "top_ranked": None,
        }
        # One subset per language; a folder holds one language, so every subset shares it.
        self.dataset = {subset: {SPLIT: split} for subset in self.metadata.hf_subsets}
        counts = data.bucket_counts()
        self.empty_buckets = [b for b, n in counts.items() if n == 0]
        self._state = _LoadedState(
            data=data,
            positions=query_positions(data),
            bucket_counts=counts,
            warnings=notes,
        )
        self.data_loaded = True

    def unload_data(self) -> None:
        """Free the loaded data but keep the folder's metadata.

        mteb's own ``unload_data`` (called by ``mteb.evaluate`` when it loaded the data itself)
        drops instance-level metadata to fall back to the published dataset's; a position
        task's metadata *is* its folder's (name, buckets, fingerprint), so it stays.
        """
        if self.data_loaded:
            self.dataset = None  # type: ignore[assignment]
            self.data_loaded = False
            self._state = None

    def task_specific_scores(
        self,
        scores: dict[str, dict[str, float]],
        qrels: dict[str, dict[str, int]],
        results: dict[str, dict[str, float]],
        hf_split: str,
        hf_subset: str,
    ) -> dict[str, Any]:
        """mteb's hook: per-position scores, mean, PSI and worst drop of this subset.

        ``scores`` (mteb's per-query pytrec_eval numbers) is not used: every per-query number
        comes from :mod:`~hf_posbias.tasks.position_scoring`, so the per-query
        table and
        the summary share one scorer whatever the protocol.
        """
        state = self._loaded()
        positions = {q: state.positions[q] for q in qrels if q in state.positions}
        data = state.data
        rows, notes = score_positions(
            positions,
            results,
            qrels,
            buckets=data.info.buckets,
            scheme=self.scoring,
            rule=rule_from_extra(data.info.extra),
            anchor=str((data.info.extra or {}).get("position_anchor", "start")),
        )
        summary = summarize_rows(
            rows,
            scheme_buckets(self.scoring, data.info.buckets),
            scoring=self.scoring,
            notes=state.warnings + notes,
        )
        # A copy, unsorted: write_trec_run orders each query's documents itself.
        run = {qid: dict(docs) for qid, docs in results.items()}
        self.last_evaluation[hf_subset] = SubsetEvaluation(hf_subset, summary, rows, run)
        return {
            "position": summary.to_dict(),
            "psi": summary.psi,
            "position_mean": summary.mean,
            "worst_drop": summary.worst_drop,
            "harmonic_mean": summary.harmonic_mean,
            "position_slope": summary.trend.get("slope"),
        }

    def _create_task_hf_config(self, existing_eval: Any = None) -> Any:
        """mteb's hook for the task's ``eval.yaml`` (``HFEvalMeta``): mteb's own task ids, then
        the ids a position board ranks — per-bucket nDCG@10, their mean, 1 − PSI
        (:mod:`~hf_posbias.tasks.hub_benchmark`) — over the folder's buckets."""
        from hf_posbias.tasks.hub_benchmark import with_position_ids

        buckets = read_task_info(self.folder).buckets
        config = super()._create_task_hf_config(None)
        return with_position_ids(
            config, self.metadata.name, self.metadata.hf_subsets, buckets, existing_eval
        )

    @property
    def hub_origin(self) -> tuple[str, str] | None:
        """``(repo id, commit)`` of the Hub dataset repo the task folder was downloaded from (a
        snapshot in huggingface_hub's cache: a named task fetched from the Hub, or a folder
        ``hf download`` wrote), ``None`` for a folder built here. Results pushed to the Hub name
        this benchmark and revision."""
        from hf_posbias.tasks.hub_benchmark import snapshot_origin

        return None if self._path is None else snapshot_origin(self._path)

    # -- accessors used by the runner / reversal / reports ---------------------------------
    def _loaded(self) -> _LoadedState:
        if self._state is None:
            self.load_data()
        assert self._state is not None
        return self._state

    @property
    def task_data(self) -> PositionTaskData:
        """The loaded :class:`PositionTaskData` (loads on first access)."""
        return self._loaded().data

    @property
    def folder(self) -> Path:
        """The resolved task folder."""
        return self.resolve_folder()

    @property
    def buckets(self) -> list[str]:
        """The buckets this task reports under its scoring, in order (empty ones included)."""
        info_buckets = self.task_data.info.buckets
        return scheme_buckets(self.scoring, info_buckets)

    @property
    def bucket_counts(self) -> dict[str, int]:
        """Queries per bucket of the folder (0 for empty buckets)."""
        return dict(self._loaded().bucket_counts)

    @property
    def load_warnings(self) -> list[str]:
        """Counted problems found while loading (e.g. spans outside their document)."""
        return list(self._loaded().warnings)


# ------------------------------------------------------------------------------ named tasks
# One class per built-in TaskCard, named as its card's class_name: the class statement is all
# there is to write (PositionRetrievalTask.__init_subclass__ attaches the card and its metadata);
# these are the built-in tasks' public names
# (``from hf_posbias.tasks.mteb_tasks import SciFactEvidence``).
# Any other card (a new builder module, a benchmark plugin) gets a class made by task_class.


class SQuADPosQ(PositionRetrievalTask):
    """SQuAD-PosQ (Z25): questions bucketed by the first answer's character start."""


class SQuADPosQTiny(PositionRetrievalTask):
    """SQuAD-PosQ-tiny: 10,000 sampled SQuAD-PosQ queries, corpus unchanged."""


class FineWebPosQ(PositionRetrievalTask):
    """FineWeb-PosQ (Z25): questions over long FineWeb-edu passages, begin/middle/end."""


class FineWebPosQTiny(PositionRetrievalTask):
    """FineWeb-PosQ-tiny: 1,000 FineWeb-PosQ queries per position."""


class PosIR(PositionRetrievalTask):
    """PosIR (Z26): 20 relative positions of the evidence-span centre."""


class SciFactEvidence(PositionRetrievalTask):
    """SciFact claims bucketed by where their first rationale sentence sits in the abstract."""


class ClimateFEVEREvidence(PositionRetrievalTask):
    """Climate-FEVER claims bucketed by where their evidence sentence sits in the article."""


class FEVEREvidence(PositionRetrievalTask):
    """FEVER claims bucketed by where their first evidence sentence sits in the page."""


class HotpotQAEvidence(PositionRetrievalTask):
    """HotpotQA questions bucketed by where their first supporting sentence sits."""


def task_class(card: TaskCard) -> type[PositionRetrievalTask]:
    """The mteb task class of a registered card: the class that names it, else one made for it
    (once) — so a benchmark's tasks need no class of their own.

    Example:
        >>> task_class(cards()["SciFact-Evidence"]).__name__
        'SciFactEvidence'
    """
    cls = _TASK_CLASSES.get(card.name)
    if cls is None:
        namespace = {"__doc__": card.description, "__module__": __name__, "card": card}
        cls = type(card.class_name, (PositionRetrievalTask,), namespace)
    return cls


NAMED_TASKS: dict[str, type[PositionRetrievalTask]] = {
    name: task_class(card) for name, card in cards().items()
}
"""Task name → class, for the tasks registered when this module was imported."""


def task_names() -> list[str]:
    """Names of the registered position tasks."""
    return card_names()


def named_task_class(name: str) -> type[PositionRetrievalTask]:
    """The class of a registered task name (case-insensitive)."""
    return task_class(require_card(name))


def get_task(
    name_or_path: str | Path,
    *,
    path: str | Path | None = None,
    scoring: str = "default",
    top_k: int = DEFAULT_TOP_K,
) -> PositionRetrievalTask:
    """A position task from a folder path or a registered name.

    Args:
        name_or_path: an existing task folder, or one of :func:`task_names` (case-insensitive).
        path: for a named task, the built folder to read (else ``$POSBIAS_TASKS_DIR`` / Hub).
        scoring: ``default``, ``zeng2025`` or ``posir``.
        top_k: documents retrieved per query.

    Raises:
        InputError: an unknown name (the message lists the known ones) or a broken folder.
    """
    folder, card = resolve_task_reference(name_or_path)
    if folder is not None:
        cls = task_class(card) if card is not None else PositionRetrievalTask
        return cls(folder, scoring=scoring, top_k=top_k)
    assert card is not None
    return task_class(card)(path, scoring=scoring, top_k=top_k)
