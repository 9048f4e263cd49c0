"""The settings of ``posbias evaluate`` and ``posbias analyze audit``: one dataclass per verb.

:class:`EvaluationOptions` holds what both verbs share (tasks, output, batch, top-k, device,
scoring protocol, bootstrap, seed, progress); :class:`EvaluateSettings` and
:class:`ModelAuditSettings` add their own. Every check runs once, in ``__post_init__``. Light on
import: the scoring schemes and the task registry are read only when a parser is built.

Example:
    >>> from hf_posbias.settings import parse_settings_args
    >>> s = parse_settings_args(EvaluateSettings, ["--model", "bm25", "--task", "t", "--out", "o"])
    >>> (s.model, s.task, s.top_k, s.progress)
    ('bm25', ('t',), 100, True)
    >>> EvaluateSettings(model="m", task=("t",), out="o", top_k=0)
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: top_k must be >= 10 to compute nDCG@10, got 0
    >>> EvaluateSettings(model="m", task=("t",), out="o", bootstrap=0)
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: bootstrap must be >= 1, got 0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hf_posbias.devices import check_device
from hf_posbias.errors import InputError
from hf_posbias.evaluation.runs.remedies import BIENCODER_REMEDIES, RemedySettings, remedy_names
from hf_posbias.modeling.resolve import ModelSettings
from hf_posbias.rerankers.options import RerankerOptions
from hf_posbias.setting_values import at_least
from hf_posbias.settings import (
    ProgressSettings,
    Settings,
    check_choice,
    check_choices,
    check_ranges,
    setting,
    setting_label,
    shared_setting,
)
from hf_posbias.statistics import PAIRED_TESTS


def scoring_schemes() -> tuple[str, ...]:
    """The per-position protocols ``--scoring`` takes (read when a parser is built)."""
    from hf_posbias.tasks.position_scoring import SCORING_SCHEMES

    return tuple(SCORING_SCHEMES)


def scoring_setting() -> Any:
    """The one declaration of ``--scoring``, for every verb that takes it (``evaluate``,
    ``analyze audit``/``remedies``, ``study run``): the same choices, the same default.

    Example:
        >>> from dataclasses import dataclass
        >>> from hf_posbias.settings import settings_parser
        >>> @dataclass
        ... class K:
        ...     scoring: str = scoring_setting()
        >>> settings_parser(K).parse_args([]).scoring, scoring_schemes()
        ('default', ('default', 'zeng2025', 'posir'))
    """
    return shared_setting("scoring", default="default", choices=scoring_schemes)


CORPUS_CHUNK_SIZE = 50_000
"""Documents a bi-encoder encodes and scores at once (mteb's own default); the embeddings held
at a time are this many rows: 50,000 × 384 float32 ≈ 77 MB for all-MiniLM-L6-v2."""


def _task_help() -> str:
    return "task folder(s) from `posbias benchmark` or registered task name(s)"


@dataclass(kw_only=True)
class EvaluationOptions(RemedySettings, ProgressSettings, ModelSettings):
    """The options ``evaluate`` and ``audit`` share (with how models load:
    :class:`~hf_posbias.modeling.resolve.ModelSettings`, and an inference-time remedy:
    :class:`~hf_posbias.evaluation.runs.remedies.RemedySettings`)."""

    task: tuple[str, ...] = setting(_task_help(), metavar="TASK")
    out: str = shared_setting("out")
    batch_size: int = shared_setting("batch_size", default=32)
    top_k: int = setting(
        "documents retrieved per query",
        default=100,
        range=at_least(10, why="to compute nDCG@10"),
    )
    device: str | None = shared_setting("device", default=None)
    scoring: str = scoring_setting()
    bootstrap: int | None = shared_setting("bootstrap", default=1000, unset="no intervals")
    seed: int = shared_setting("seed")
    exclude_truncated: bool = shared_setting(
        "exclude_truncated",
        default=False,
    )
    corpus_chunk_size: int = setting(
        "documents a bi-encoder encodes and scores at once (their embeddings are all it holds "
        "of the corpus; the ranking is the same at any size)",
        default=CORPUS_CHUNK_SIZE,
        range=at_least(1),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.task = tuple(self.task)
        check_choice("scoring", self.scoring, scoring_schemes())
        check_device(self.device)

    def evaluate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of
        :func:`~hf_posbias.evaluation.runs.runner.evaluate_model` these settings stand for
        (model and tasks apart): ``evaluate_model(s.model, s.task, **s.evaluate_kwargs())``.

        Example:
            >>> s = ModelAuditSettings(model="bm25", task=("t",), out="o", top_k=20)
            >>> kwargs = s.evaluate_kwargs()
            >>> kwargs["out"], kwargs["top_k"], kwargs["remedy"] is s
            ('o', 20, True)
        """
        return {
            "out": self.out,
            "scoring": self.scoring,
            "top_k": self.top_k,
            "batch_size": self.batch_size,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "progress": self.progress,
            "device": self.device,
            "model_options": self,
            "remedy": self,
            "exclude_truncated": self.exclude_truncated,
            "corpus_chunk_size": self.corpus_chunk_size,
        }


def check_run_options(*, batch_size: int, top_k: int, scoring: str, bootstrap: int | None) -> None:
    """The checks of a library call's run options (:func:`~hf_posbias.evaluation.runs.runner.
    evaluate_model`'s keywords) against what :class:`EvaluationOptions` declares.

    Example:
        >>> check_run_options(batch_size=32, top_k=5, scoring="default", bootstrap=None)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: top_k must be >= 10 to compute nDCG@10, got 5
    """
    b = bootstrap
    if b is not None and (isinstance(b, bool) or not isinstance(b, int)):
        raise InputError(f"{setting_label('bootstrap')} must be a whole number, got {b!r}")
    values = {"batch_size": batch_size, "top_k": top_k, "bootstrap": bootstrap}
    check_ranges(EvaluationOptions, values)
    check_choice("scoring", scoring, scoring_schemes())


@dataclass(kw_only=True)
class EvaluateSettings(EvaluationOptions, RerankerOptions):
    """``posbias evaluate``: one model, or a first stage and a reranker, on position tasks.

    A listwise ``--reranker`` is loaded and slid with the listwise verbs' own options
    (:class:`~hf_posbias.rerankers.options.RerankerOptions`: ``--window``, ``--step``,
    ``--mode``, ``--dtype``, ``--identifiers``); the settings both groups name once mean the
    same here: ``--device``, ``--batch-size`` (texts per encoding batch, windows per forward
    pass), ``--passage-tokens`` (how many tokens of a passage a model reads: a ``--remedy``'s
    passages, the cut of each passage in a listwise window) and ``--base-url`` (an
    ``openai:<model>`` embedder or listwise reranker).

    Example:
        >>> from hf_posbias.settings import parse_settings_args
        >>> s = parse_settings_args(EvaluateSettings, ["--model", "bm25", "--task", "t", "--out",
        ...     "o", "--reranker", "smollm2-135m", "--rerank-k", "20", "--window", "10"])
        >>> (s.reranker, s.rerank_k, s.window, s.step, s.dtype)
        ('smollm2-135m', 20, 10, None, 'auto')
    """

    model: str = setting(
        "bm25; openai:<model> (with --base-url); a local folder (SentenceTransformer, "
        "SparseEncoder or MultiVectorEncoder); a packaged model (all-MiniLM-L6-v2); a name in "
        "mteb's model registry (loaded with its prompts); or a Hub id (--trust-remote-code to run "
        "its code); with --first-stage, the reranker that reorders it"
    )
    reranker: str | None = shared_setting(
        "reranker",
        default=None,
    )
    first_stage: str | None = shared_setting(
        "first_stage",
        default=None,
    )
    rerank_k: int = setting("candidates per query for the reranker", default=100, range=at_least(1))
    plot: bool = shared_setting("plot", default=False)
    batch_size: int = shared_setting("batch_size", default=32)
    passage_tokens: int = shared_setting("passage_tokens", default=128)
    push_results: str | None = setting(
        "after the run, send its scores on tasks read from their Hub benchmark repo to this "
        "model repo's .eval_results (a pull request unless you own the repo; OUT/hub-results "
        "keeps what was sent)",
        default=None,
        metavar="MODEL_REPO",
    )
    hub_token: str | None = shared_setting("hub_token", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reranker and self.first_stage:
            raise InputError(
                f"{setting_label('reranker')} and {setting_label('first_stage')} exclude each other"
            )
        if self.push_results:
            from hf_posbias.hub import check_repo_id

            check_repo_id(self.push_results)
            if self.scoring != "default":
                raise InputError(
                    f"{setting_label('push_results')}: the Hub board's task ids are scored under "
                    f"{setting_label('scoring')} default, not {self.scoring}"
                )

    def evaluate_kwargs(self) -> dict[str, Any]:
        """:meth:`EvaluationOptions.evaluate_kwargs` and the reranking pipeline's.

        Example:
            >>> s = EvaluateSettings(model="bm25", task=("t",), out="o", reranker="bm25")
            >>> kwargs = s.evaluate_kwargs()
            >>> kwargs["reranker"], kwargs["rerank_k"], kwargs["reranker_options"] is s
            ('bm25', 100, True)
        """
        return dict(
            super().evaluate_kwargs(),
            reranker=self.reranker,
            first_stage=self.first_stage,
            rerank_k=self.rerank_k,
            reranker_options=self,
        )


@dataclass(kw_only=True)
class ModelAuditSettings(EvaluationOptions):
    """``posbias analyze audit``: every position measurement of one model (what
    :func:`hf_posbias.analysis.audit.audit_model` takes)."""

    model: str = setting("a model as for `posbias evaluate --model`", positional=True)
    reversal: bool = setting("run the mirror-reversal diagnostic", default=True)


@dataclass(kw_only=True)
class CompareSettings(Settings):
    """``posbias compare RUN_A RUN_B``: a paired test of two evaluation runs."""

    run_a: str = setting("run folder A (the reference, e.g. the base model)", positional=True)
    run_b: str = setting("run folder B", positional=True)
    # The flags of every paired test (``listwise compare-tests`` too): --method, --n-resamples.
    method: str = shared_setting("method", default="bootstrap", choices=PAIRED_TESTS)
    resamples: int = shared_setting("n_resamples", default=1000, flag="--n-resamples")
    seed: int = shared_setting("seed")
    out: str | None = shared_setting("out", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choices(self, "method")


@dataclass(kw_only=True)
class TaskSampleSettings(Settings):
    """``posbias benchmark subsample``: a seeded per-bucket query sample of a task folder.

    Example:
        >>> TaskSampleSettings(task="t", out="o", per_bucket=0)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: per_bucket must be >= 1, got 0
    """

    task: str = setting("position task folder to sample")
    out: str = shared_setting("out")
    per_bucket: int = setting(
        "queries drawn from every bucket (all of a smaller bucket)", range=at_least(1)
    )
    seed: int = shared_setting("seed")
    name: str | None = shared_setting("name", default=None)


@dataclass(kw_only=True)
class PlotEvidenceSettings(Settings):
    """``posbias benchmark plot-evidence``: where the evidence of task folders sits."""

    task: tuple[str, ...] = setting("task folder(s) (one or more, repeatable)", metavar="TASK")
    out: str = setting("PNG file to write")
    bins: int = setting("histogram bins", default=20, range=at_least(1))
    scale: Literal["relative", "characters"] = setting(
        "relative: evidence start ÷ document length, with the begin/middle/end boundaries "
        "(YHP26 Fig. 9); characters: the evidence's character start (Zeng et al. Fig. 2)",
        default="relative",
    )

    def __post_init__(self) -> None:
        self.task = tuple(self.task)
        super().__post_init__()


@dataclass(kw_only=True)
class RemediesSettings(EvaluationOptions):
    """``posbias analyze remedies``: the plain model and each remedy on the same queries, with
    costs.

    ``remedy`` (inherited) is not a flag here: every name in ``remedies`` is run, after
    ``none``.

    Example:
        >>> from hf_posbias.settings import parse_settings_args
        >>> s = parse_settings_args(
        ...     RemediesSettings, ["--model", "m", "--task", "t", "--out", "o", "--segments", "2"]
        ... )
        >>> s.remedies[:2], s.segments
        (('maxp', 'firstp'), 2)
    """

    model: str = setting("a local model folder, a packaged model or a Hub id (a bi-encoder)")
    remedies: tuple[str, ...] = shared_setting(
        "remedies",
        default=BIENCODER_REMEDIES,
        choices=remedy_names,
    )
    remedy: str = setting("(not used: see --remedies)", default="none", cli=False)

    @property
    def uses_passages(self) -> bool:
        """Every remedy of ``--remedies`` runs: the passage settings are always checked."""
        return True

    plot: bool = shared_setting("plot", default=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.remedies = tuple(self.remedies)
        check_choices(self, "remedies")
