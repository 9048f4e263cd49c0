"""MTEB 2.x retrieval tasks with one ``hf_subset`` per evidence-position bucket.

Every task reads a position task folder (see :mod:`hf_posbias.evaluation.taskdata`): a corpus,
queries labelled with the position bucket of their evidence, qrels and ``task.json``. Each bucket
becomes an MTEB ``hf_subset`` whose corpus is the SAME ``datasets.Dataset`` object, so a cached
encoder (:class:`hf_posbias.evaluation.cache.CachedEncoder`) embeds the corpus once per model
instead of once per bucket. PSI cannot be computed inside a subset;
:mod:`hf_posbias.evaluation.runner` reads the per-subset ``ndcg_at_10`` and aggregates afterwards.

Two ways to get a task:

- :meth:`PositionRetrievalTask.from_folder` for any built folder (metadata from ``task.json``);
- the named tasks (``SQuAD-PosQ``, ``SQuAD-PosQ-tiny``, ``FineWeb-PosQ``, ``FineWeb-PosQ-tiny``,
  ``PosIR``, ``SciFact-Evidence``, ``ClimateFEVER-Evidence``) whose folder is found, in order, at
  an explicit ``path``, at ``$POSBIAS_TASKS_DIR/<name>``, or on the Hub (a dataset repo
  ``$POSBIAS_HUB_NAMESPACE/<name>`` holding the same files, fetched with
  ``huggingface_hub.snapshot_download``).

:func:`get_task` accepts either a folder path or a registered name.

Example:
    >>> import tempfile
    >>> from hf_posbias.evaluation.taskdata import PositionTaskData, TaskInfo
    >>> from hf_posbias.evaluation.tasks import get_task
    >>> folder = PositionTaskData(
    ...     info=TaskInfo(name="Toy", description="toy", buckets=["begin", "end"]),
    ...     corpus=[{"id": "d1", "title": "", "text": "alpha beta"}],
    ...     queries=[{"id": "q1", "text": "alpha", "bucket": "begin", "evidence_start": 0,
    ...               "evidence_end": 5, "doc_length": 10}],
    ...     qrels=[{"query_id": "q1", "doc_id": "d1", "score": 1}],
    ... ).save(tempfile.mkdtemp())
    >>> task = get_task(str(folder))
    >>> task.metadata.hf_subsets
    ['begin', 'end']
    >>> task.load_data()
    >>> task.hf_subsets, task.empty_buckets   # empty buckets are dropped from the run, not hidden
    (['begin'], ['end'])
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hf_posbias.errors import BackendError, InputError, first_line
from hf_posbias.evaluation.taskdata import PositionTaskData, TaskInfo

if TYPE_CHECKING:
    from mteb.abstasks.task_metadata import TaskMetadata

TASKS_DIR_ENV = "POSBIAS_TASKS_DIR"
"""Environment variable: a folder holding built task folders named after the tasks."""
HUB_NAMESPACE_ENV = "POSBIAS_HUB_NAMESPACE"
"""Environment variable: the Hub namespace whose ``<namespace>/<task name>`` repos hold tasks."""
DEFAULT_HUB_NAMESPACE = "hf-posbias"
DEFAULT_LANGUAGES = ["eng-Latn"]
SPLIT = "test"

# mteb only accepts licences from its closed list (or a URL); anything else is mapped here.
_LICENSE_URLS = {
    "cc-by-nc-2.0": "https://creativecommons.org/licenses/by-nc/2.0/",
    "cc-by-sa-2.5": "https://creativecommons.org/licenses/by-sa/2.5/",
    "odc-by-1.0": "odc-by",
}


@dataclass(frozen=True)
class TaskCard:
    """Static facts about a named task that ``task.json`` does not carry (or may not)."""

    name: str
    description: str
    reference: str
    citation: str
    license: str
    buckets: tuple[str, ...]
    domains: tuple[str, ...] = ("Encyclopaedic", "Written")
    date: tuple[str, str] = ("2016-01-01", "2018-06-30")
    annotations_creators: str = "derived"
    sample_creation: str = "found"
    task_subtypes: tuple[str, ...] = ("Question answering",)
    adapted_from: tuple[str, ...] = ()


_Z25_BIB = """@inproceedings{zeng2025positionbias,
  title = {An Empirical Study of Position Bias in Modern Information Retrieval},
  author = {Zeng, Ziyang and Zhang, Dun and Li, Jiacheng and Zou, Panxiang and Yang, Yuqing},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2025},
  year = {2025},
  note = {arXiv:2505.13950, earlier title "Benchmarking the Myopic Trap"},
}"""
_Z26_BIB = """@article{zeng2026posir,
  title = {PosIR: Position-Aware Heterogeneous Information Retrieval Benchmark},
  author = {Zeng, Ziyang and others},
  journal = {arXiv preprint arXiv:2601.08363},
  year = {2026},
}"""
_SCIFACT_BIB = """@inproceedings{wadden2020scifact,
  title = {Fact or Fiction: Verifying Scientific Claims},
  author = {Wadden, David and Lin, Shanchuan and Lo, Kyle and Wang, Lucy Lu and
            van Zuylen, Madeleine and Cohan, Arman and Hajishirzi, Hannaneh},
  booktitle = {Proceedings of EMNLP 2020},
  pages = {7534--7550},
  year = {2020},
}"""
_CLIMATE_BIB = """@article{diggelmann2020climatefever,
  title = {CLIMATE-FEVER: A Dataset for Verification of Real-World Climate Claims},
  author = {Diggelmann, Thomas and Boyd-Graber, Jordan and Bulian, Jannis and
            Ciaramita, Massimiliano and Leippold, Markus},
  journal = {arXiv preprint arXiv:2012.00614},
  year = {2020},
}"""

SQUAD_BUCKETS = ("0-100", "100-200", "200-300", "300-400", "400-500", "500-3120")
THIRDS = ("begin", "middle", "end")

_SQUAD = TaskCard(
    name="SQuAD-PosQ",
    description=(
        "SQuAD v2 answerable questions retrieved from all unique SQuAD contexts; queries are "
        "bucketed by the character offset of the first answer (position-sensitivity benchmark)."
    ),
    reference="https://arxiv.org/abs/2505.13950",
    citation=_Z25_BIB,
    license="cc-by-sa-4.0",
    buckets=SQUAD_BUCKETS,
    adapted_from=("SQuAD v2",),
)
_FINEWEB = TaskCard(
    name="FineWeb-PosQ",
    description=(
        "Questions over long FineWeb-edu passages (500-1,024 words) labelled by where their "
        "evidence sits in the passage: begin, middle or end."
    ),
    reference="https://arxiv.org/abs/2505.13950",
    citation=_Z25_BIB,
    license="odc-by",
    buckets=THIRDS,
    domains=("Web", "Written"),
    date=("2024-01-01", "2025-05-01"),
    sample_creation="LM-generated and verified",
    adapted_from=("FineWeb-edu",),
)
_POSIR = TaskCard(
    name="PosIR",
    description=(
        "PosIR position-aware retrieval benchmark: queries carry the character span of their "
        "evidence; buckets are relative evidence positions in the document."
    ),
    reference="https://arxiv.org/abs/2601.08363",
    citation=_Z26_BIB,
    license="not specified",
    buckets=THIRDS,
    domains=("Non-fiction", "News", "Legal", "Financial", "Written"),
    date=("2020-01-01", "2026-01-01"),
    sample_creation="LM-generated and verified",
)
_SCIFACT = TaskCard(
    name="SciFact-Evidence",
    description=(
        "SciFact claims retrieved from the abstract corpus; queries are bucketed by the "
        "relative position of their rationale sentences in the cited abstract."
    ),
    reference="https://aclanthology.org/2020.emnlp-main.609/",
    citation=_SCIFACT_BIB,
    license="cc-by-nc-2.0",
    buckets=THIRDS,
    domains=("Academic", "Medical", "Written"),
    date=("2020-01-01", "2020-05-01"),
    annotations_creators="expert-annotated",
    task_subtypes=("Claim verification",),
    adapted_from=("SciFact",),
)
_CLIMATE = TaskCard(
    name="ClimateFEVER-Evidence",
    description=(
        "Climate-FEVER claims retrieved from the Wikipedia articles of their evidence "
        "sentences; queries are bucketed by the relative position of the evidence sentence."
    ),
    reference="https://arxiv.org/abs/2012.00614",
    citation=_CLIMATE_BIB,
    license="not specified",
    buckets=THIRDS,
    domains=("Encyclopaedic", "Written"),
    date=("2020-01-01", "2020-12-01"),
    annotations_creators="human-annotated",
    task_subtypes=("Claim verification",),
    adapted_from=("ClimateFEVER",),
)


def _tiny(card: TaskCard, what: str) -> TaskCard:
    from dataclasses import replace

    return replace(card, name=f"{card.name}-tiny", description=f"{card.description} {what}")


CARDS: dict[str, TaskCard] = {
    c.name: c
    for c in (
        _SQUAD,
        _tiny(_SQUAD, "Tiny variant: 10,000 queries sampled with seed 42, corpus unchanged."),
        _FINEWEB,
        _tiny(_FINEWEB, "Tiny variant: 1,000 queries per position."),
        _POSIR,
        _SCIFACT,
        _CLIMATE,
    )
}


CLASS_NAMES: dict[str, str] = {
    "SQuAD-PosQ": "SQuADPosQ",
    "SQuAD-PosQ-tiny": "SQuADPosQTiny",
    "FineWeb-PosQ": "FineWebPosQ",
    "FineWeb-PosQ-tiny": "FineWebPosQTiny",
    "PosIR": "PosIR",
    "SciFact-Evidence": "SciFactEvidence",
    "ClimateFEVER-Evidence": "ClimateFEVEREvidence",
}
"""Python class name of each registered task (``from hf_posbias.tasks import SQuADPosQ``)."""


def _mteb_license(value: str) -> str:
    from typing import get_args

    from mteb.types._metadata import Licenses

    text = (value or "").strip()
    lowered = text.lower().replace(" ", "-")
    if lowered in get_args(Licenses):
        return lowered
    if lowered in _LICENSE_URLS:
        return _LICENSE_URLS[lowered]
    if re.match(r"https?://", text):
        return text
    return "not specified"


def _valid_url(value: str) -> str | None:
    return value if re.match(r"https?://\S+$", value or "") else None


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


def read_task_info(folder: str | Path) -> TaskInfo:
    """Read ``task.json`` only (cheap): used to build metadata before the data is loaded."""
    path = Path(folder)
    meta_path = path / "task.json"
    if not path.is_dir():
        raise InputError(f"task folder {path} does not exist")
    if not meta_path.exists():
        raise InputError(f"{path} is not a position task folder (no task.json)")
    for name in ("corpus.parquet", "queries.parquet", "qrels.parquet"):
        if not (path / name).exists():
            raise InputError(f"{path}: missing {name}")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as err:
        raise InputError(f"{meta_path}: not valid JSON ({err.msg}, line {err.lineno})") from None
    meta.pop("bucket_counts", None)
    try:
        return TaskInfo(**meta)
    except TypeError as err:
        raise InputError(f"{meta_path}: unexpected task.json fields ({err})") from None


def build_metadata(
    info: TaskInfo,
    *,
    card: TaskCard | None = None,
    dataset_path: str,
    revision: str,
) -> TaskMetadata:
    """Complete mteb ``TaskMetadata`` for a position task: one ``hf_subset`` per bucket.

    ``task.json`` wins for name, description, buckets and licence; the card fills what it lacks.
    """
    from mteb.abstasks.task_metadata import TaskMetadata

    extra = info.extra or {}
    languages = list(extra.get("eval_langs") or DEFAULT_LANGUAGES)
    buckets = list(info.buckets) or list(card.buckets if card else [])
    if not buckets:
        raise InputError(f"task {info.name!r}: task.json lists no buckets")
    reference = _valid_url(info.reference) or (card.reference if card else None)
    citation = info.citation or (card.citation if card else "")
    license_ = info.license if info.license != "not specified" or not card else card.license
    return TaskMetadata(
        name=info.name or (card.name if card else "PositionTask"),
        description=info.description or (card.description if card else "position task"),
        dataset={"path": dataset_path, "revision": revision},
        reference=reference,
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=[SPLIT],
        eval_langs={bucket: languages for bucket in buckets},
        main_score=info.main_score or "ndcg_at_10",
        date=tuple(extra.get("date") or (card.date if card else ("2016-01-01", "2026-01-01"))),
        domains=list(extra.get("domains") or (card.domains if card else ["Written"])),
        task_subtypes=list(card.task_subtypes if card else ["Question answering"]),
        license=_mteb_license(license_),
        annotations_creators=card.annotations_creators if card else "derived",
        dialect=[],
        sample_creation=card.sample_creation if card else "found",
        bibtex_citation=citation,
        adapted_from=list(card.adapted_from) if card and card.adapted_from else None,
        contributed_by="hf-posbias",
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
            f"cannot download task repo {repo_id!r} from the Hub: {first_line(err, 200)} "
            f"(set {TASKS_DIR_ENV} to a folder of built tasks, or pass a task folder)"
        ) from None
    return Path(local)


def _default_metadata(card: TaskCard) -> TaskMetadata:
    info = TaskInfo(
        name=card.name,
        description=card.description,
        buckets=list(card.buckets),
        license=card.license,
        reference=card.reference,
        citation=card.citation,
    )
    return build_metadata(
        info,
        card=card,
        dataset_path=f"{DEFAULT_HUB_NAMESPACE}/{card.name}",
        revision="main",
    )


@dataclass
class _LoadedState:
    data: PositionTaskData
    folder: Path
    bucket_counts: dict[str, int] = field(default_factory=dict)


def _import_abstask() -> type:
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    return AbsTaskRetrieval


def _make_base() -> type:
    base = _import_abstask()

    class PositionRetrievalTask(base):  # type: ignore[misc, valid-type]
        """An ``AbsTaskRetrieval`` over a position task folder; one ``hf_subset`` per bucket.

        Args:
            path: the task folder; for named tasks optional (``$POSBIAS_TASKS_DIR`` or the Hub).
            hub_revision: revision of the Hub dataset repo when the task is downloaded.
        """

        card: ClassVar[TaskCard | None] = None
        default_path: ClassVar[str | None] = None

        def __init__(
            self, path: str | Path | None = None, hub_revision: str | None = None, **kwargs: Any
        ) -> None:
            self._path = Path(path) if path is not None else None
            if self._path is None and self.default_path is not None:
                self._path = Path(self.default_path)
            if self._path is None and self.card is not None:
                local = self._local_named_folder()
                if local is not None:
                    self._path = local
            self._hub_revision = hub_revision
            self._state: _LoadedState | None = None
            self.empty_buckets: list[str] = []
            if self._path is not None:
                # Metadata reflects the real folder (its buckets, name, fingerprint).
                self.metadata = build_metadata(
                    read_task_info(self._path),
                    card=self.card,
                    dataset_path=str(self._path),
                    revision=folder_revision(self._path),
                )
            super().__init__(**kwargs)

        # -- locating the folder -------------------------------------------------------------
        def _local_named_folder(self) -> Path | None:
            root = os.environ.get(TASKS_DIR_ENV)
            if root and self.card is not None:
                candidate = Path(root).expanduser() / self.card.name
                if (candidate / "task.json").exists():
                    return candidate
            return None

        def hub_repo_id(self) -> str:
            """The Hub dataset repo this named task downloads from when no folder is given."""
            namespace = os.environ.get(HUB_NAMESPACE_ENV, DEFAULT_HUB_NAMESPACE)
            name = self.card.name if self.card is not None else self.metadata.name
            return f"{namespace}/{name}"

        def resolve_folder(self) -> Path:
            """The task folder: explicit path, ``$POSBIAS_TASKS_DIR/<name>``, else the Hub."""
            if self._path is not None:
                return self._path
            if self.card is None:
                raise InputError("a position task needs a folder (PositionRetrievalTask(path=…))")
            folder = _hub_download(self.hub_repo_id(), self._hub_revision)
            self._path = folder
            self.metadata = build_metadata(
                read_task_info(folder),
                card=self.card,
                dataset_path=self.hub_repo_id(),
                revision=self._hub_revision or folder_revision(folder),
            )
            self.hf_subsets = list(self.metadata.hf_subsets)
            return folder

        # -- mteb hooks ----------------------------------------------------------------------
        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            """Read and validate the folder; one subset per non-empty bucket, corpus shared."""
            if self.data_loaded:
                return
            from datasets import Dataset

            folder = self.resolve_folder()
            data = PositionTaskData.load(folder)
            corpus = Dataset.from_dict(
                {
                    "id": [str(d["id"]) for d in data.corpus],
                    "title": [str(d.get("title") or "") for d in data.corpus],
                    "text": [str(d["text"]) for d in data.corpus],
                }
            )
            judged = data.relevant_docs()
            self.dataset = {}
            counts = data.bucket_counts()
            for bucket, queries in data.queries_by_bucket().items():
                if not queries:
                    continue
                qids = [str(q["id"]) for q in queries]
                self.dataset[bucket] = {
                    SPLIT: {
                        # The SAME Dataset object for every bucket: the encoder cache keys on
                        # text, so the corpus is embedded once per model.
                        "corpus": corpus,
                        "queries": Dataset.from_dict(
                            {"id": qids, "text": [str(q["text"]) for q in queries]}
                        ),
                        "relevant_docs": {qid: dict(judged[qid]) for qid in qids},
                        "top_ranked": None,
                    }
                }
            self.empty_buckets = [b for b, n in counts.items() if n == 0]
            # Only non-empty buckets are run; empty ones are reported by the runner.
            self.hf_subsets = [b for b in data.info.buckets if counts[b] > 0]
            self._state = _LoadedState(data=data, folder=folder, bucket_counts=counts)
            self.data_loaded = True

        # -- accessors used by the runner / reversal / reports --------------------------------
        @property
        def task_data(self) -> PositionTaskData:
            """The loaded :class:`PositionTaskData` (loads on first access)."""
            if self._state is None:
                self.load_data()
            assert self._state is not None
            return self._state.data

        @property
        def folder(self) -> Path:
            """The resolved task folder."""
            return self.resolve_folder()

        @property
        def buckets(self) -> list[str]:
            """All buckets in order, empty ones included."""
            return list(self.metadata.hf_subsets)

        @property
        def bucket_counts(self) -> dict[str, int]:
            """Queries per bucket (0 for empty buckets)."""
            return dict(self.task_data.bucket_counts())

        @classmethod
        def from_folder(cls, path: str | Path) -> PositionRetrievalTask:
            """A task for any built folder; the metadata comes from its ``task.json``.

            A dedicated subclass is created so that class-level ``metadata`` (which some mteb
            code reads from the type) matches the folder too.
            """
            folder = Path(path).expanduser()
            info = read_task_info(folder)
            metadata = build_metadata(
                info,
                card=CARDS.get(info.name),
                dataset_path=str(folder),
                revision=folder_revision(folder),
            )
            safe = re.sub(r"\W", "_", metadata.name)
            subclass = type(
                f"PositionTask_{safe}",
                (cls,),
                {
                    "metadata": metadata,
                    "card": CARDS.get(info.name),
                    "default_path": str(folder),
                    "__module__": __name__,
                },
            )
            return subclass()

    return PositionRetrievalTask


_BASE: type | None = None
_NAMED: dict[str, type] = {}


def position_task_class() -> type:
    """The :class:`PositionRetrievalTask` base class (built on first use; imports mteb)."""
    global _BASE
    if _BASE is None:
        _BASE = _make_base()
    return _BASE


def named_task_class(name: str) -> type:
    """The task class registered under ``name`` (see :data:`CARDS`)."""
    if name not in CARDS:
        raise InputError(f"unknown task {name!r}; known tasks: {', '.join(CARDS)}")
    if name not in _NAMED:
        card = CARDS[name]
        _NAMED[name] = type(
            CLASS_NAMES[name],
            (position_task_class(),),
            {"metadata": _default_metadata(card), "card": card, "__module__": __name__},
        )
    return _NAMED[name]


def task_names() -> list[str]:
    """Names of the registered position tasks."""
    return list(CARDS)


def _lookup_name(name: str) -> str | None:
    if name in CARDS:
        return name
    folded = {k.lower(): k for k in CARDS}
    return folded.get(name.lower())


def get_task(name_or_path: str | Path, *, path: str | Path | None = None) -> Any:
    """A position task from a folder path or a registered name.

    Args:
        name_or_path: an existing task folder, or one of :func:`task_names` (case-insensitive).
        path: for a named task, the built folder to read (else ``$POSBIAS_TASKS_DIR`` / Hub).

    Raises:
        InputError: an unknown name (the message lists the known ones) or a broken folder.
    """
    text = str(name_or_path)
    candidate = Path(text).expanduser()
    if candidate.exists():
        return position_task_class().from_folder(candidate)
    name = _lookup_name(text)
    if name is None:
        if text.startswith((".", "/", "~")) or os.sep in text:
            raise InputError(
                f"task folder {text} does not exist (or give a task name: {', '.join(CARDS)})"
            )
        raise InputError(f"unknown task {text!r}; known tasks: {', '.join(CARDS)}")
    return named_task_class(name)(path=path)


def __getattr__(attr: str) -> Any:
    # `from hf_posbias.evaluation.tasks import PositionRetrievalTask, SQuADPosQ` without importing
    # mteb at module import time.
    if attr == "PositionRetrievalTask":
        return position_task_class()
    for name, class_name in CLASS_NAMES.items():
        if attr == class_name:
            return named_task_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
