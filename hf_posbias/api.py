"""The face of the library: one call per job, re-exported lazily as ``hf_posbias.<name>``.

Each function is a thin, typed door onto the module that owns the job (named in its docstring),
or that module's own call where it already has the right shape (``evaluate``, ``compare``);
nothing is computed here. Heavy libraries load inside the calls, so ``import hf_posbias`` stays
instant. In the shape of ``mteb.get_tasks`` / ``mteb.evaluate(model, tasks)``:

Example:
    >>> import hf_posbias as pb
    >>> from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo
    >>> docs = [{"id": f"d{i}", "title": "", "text": f"{w} is the word of document {i}."}
    ...         for i, w in enumerate(["apple", "river", "violin"])]
    >>> queries = [{"id": f"q{i}", "text": w, "bucket": b, "evidence_start": 0,
    ...             "evidence_end": len(w), "doc_length": 30}
    ...            for i, (w, b) in enumerate(zip(["apple", "river", "violin"], pb.POSITIONS))]
    >>> qrels = [{"query_id": f"q{i}", "doc_id": f"d{i}", "score": 1} for i in range(3)]
    >>> info = TaskInfo(name="Toy", description="three words", buckets=list(pb.POSITIONS))
    >>> folder = PositionTaskData(info, docs, queries, qrels).save("toy-task")
    >>> [summary] = pb.evaluate("bm25", folder, out="runs/bm25", bootstrap=None,
    ...                         progress=False)
    >>> summary.ndcg_at_10, summary.psi
    ({'begin': 1.0, 'middle': 1.0, 'end': 1.0}, 0.0)
    >>> pb.psi({"begin": 0.6, "middle": 0.3, "end": 0.6})
    0.5
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The defaults are the owners' (light modules: numpy at most), so the face cannot drift from them.
from hf_posbias.analysis.evidence_cases import DEFAULT_SLOTS

# Already in the shape of mteb.evaluate and of a paired test of two run folders: the owners'
# own calls (`posbias evaluate` with its output folder claimed, `posbias compare`), re-exported
# as they are.
from hf_posbias.evaluation.compare import compare_runs as compare
from hf_posbias.evaluation.runs.results_cache import evaluate
from hf_posbias.tasks.benchmark_registry import DEFAULT_TOP_K

__all__ = [
    "compare",
    "evaluate",
    "evidence_moving",
    "get_task",
    "list_benchmarks",
    "load_model",
    "load_training_set",
    "psi",
    "run_study",
    "train",
]

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from hf_posbias.analysis.evidence_cases import EvidenceCase
    from hf_posbias.analysis.evidence_moving import EvidenceMovingSummary
    from hf_posbias.modeling.loaders import LoadedModel
    from hf_posbias.modeling.resolve import ModelSettings
    from hf_posbias.study.run import StudyOutcome
    from hf_posbias.study.spec import StudySpec
    from hf_posbias.tasks.benchmark_registry import BenchmarkListing
    from hf_posbias.tasks.mteb_tasks import PositionRetrievalTask
    from hf_posbias.training.train import TrainingRows, TrainResult


def get_task(
    name_or_folder: str | Path, *, scoring: str = "default", top_k: int = DEFAULT_TOP_K
) -> PositionRetrievalTask:
    """An mteb task from a task folder or a registered name (``squad-posq``, …; see
    :func:`list_benchmarks`); :func:`hf_posbias.tasks.mteb_tasks.get_task`."""
    from hf_posbias.tasks.mteb_tasks import get_task as owner

    return owner(name_or_folder, scoring=scoring, top_k=top_k)


def list_benchmarks() -> BenchmarkListing:
    """Every registered benchmark (what ``posbias benchmark build <name>`` builds): a list of
    rows (name, tasks, source, description) shown as the table ``posbias list benchmarks``
    prints; :func:`hf_posbias.tasks.benchmark_registry.benchmark_listing`.

    Example:
        >>> import hf_posbias as pb
        >>> "scifact" in [row.benchmark for row in pb.list_benchmarks()]
        True
    """
    from hf_posbias.tasks.benchmark_registry import benchmark_listing

    return benchmark_listing()


def load_model(
    name: str | Path, *, device: str | None = None, settings: ModelSettings | None = None
) -> LoadedModel:
    """A model by any name ``--model`` takes (``bm25``, a folder, a packaged model, an mteb
    registry name, a Hub id, ``openai:<model>``), loaded once where every model argument loads
    (:func:`hf_posbias.modeling.loaders.load_model`; ``settings``: remote code, an endpoint's
    URL and key). Its ``.model`` is what loaded (a ``SentenceTransformer`` …); pass it to
    :func:`evaluate` as often as you like, with or without ``remedy=`` or ``reranker=``."""
    from hf_posbias.modeling.loaders import load_model as owner

    return owner(name, device=device, settings=settings)


def load_training_set(data: str | Path, config: str = "uniform") -> TrainingRows:
    """The rows of one training configuration (``begin``, ``middle``, ``end``, ``uniform``,
    ``b:m:e``, ``ips``) of a released training-set repo or folder;
    :func:`hf_posbias.training.train.load_training_rows`."""
    from hf_posbias.training.train import load_training_rows

    return load_training_rows(str(data), config)


def train(
    model: str, *, config: str, data: str | Path, out: str | Path, **settings: Any
) -> TrainResult:
    """Train one bi-encoder on one position configuration in this process (``posbias train``;
    ``accelerate launch -m hf_posbias.training.train`` for several GPUs). ``settings`` are
    the other fields of :class:`hf_posbias.training.training_settings.TrainingSettings`
    (``max_steps``, ``lr``, …), checked when they are made."""
    from hf_posbias.training.train import train_model
    from hf_posbias.training.training_settings import TrainingSettings

    cfg = TrainingSettings(model=model, config=config, data=str(data), out=str(out), **settings)
    return train_model(cfg)


def run_study(spec: str | Path | StudySpec, *, out: str | Path, **options: Any) -> StudyOutcome:
    """Train, evaluate and report a study from its spec file (``posbias study run``);
    resumable. ``options``: :func:`hf_posbias.study.run.run_study`'s keywords."""
    from hf_posbias.study.run import run_study as owner
    from hf_posbias.study.spec import load_spec

    loaded = load_spec(spec) if isinstance(spec, str | Path) else spec
    return owner(loaded, out=out, **options)


def psi(scores: Sequence[float] | Mapping[str, float]) -> float:
    """Position Sensitivity Index of per-position scores: 1 − harmonic / arithmetic mean
    (:func:`hf_posbias.statistics.psi.psi`)."""
    from hf_posbias.statistics.psi import psi as owner

    return owner(scores)


def evidence_moving(
    model: str | SentenceTransformer,
    cases: Sequence[EvidenceCase],
    *,
    n: int = DEFAULT_SLOTS,
    device: str | None = None,
    progress: bool = True,
) -> EvidenceMovingSummary:
    """Move each case's evidence sentence through ``n`` slots of its document and average the
    query–document cosine curve (``posbias analyze evidence-moving``; the Space's first tab);
    :func:`hf_posbias.analysis.evidence_moving.run_evidence_moving`."""
    from hf_posbias.analysis.evidence_moving import run_evidence_moving

    if isinstance(model, str):
        from hf_posbias.modeling.loaders import load_sentence_transformer

        label, model = model, load_sentence_transformer(model, device=device)
    else:
        label = "model"
    return run_evidence_moving(model, cases, n=n, label=label, progress=progress)
