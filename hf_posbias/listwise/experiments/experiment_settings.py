"""The settings of the listwise experiments: one dataclass per ``posbias listwise`` verb.

The lists every experiment reranks (:class:`ListSource`, :class:`ListSettings`: task, k, first
stage, window), the resampling of their statistics (:class:`ResamplingSettings`,
:class:`PairedTestSettings`), each experiment's configuration (:class:`ControlledTestConfig`,
:class:`ShuffleEvalConfig`, :class:`ListwiseRemediesConfig`, :class:`PropensityConfig`) and each
verb's settings (the configuration plus the reranker and the output folder: ``test``,
``remedies``, ``shuffle-eval``, ``propensity``, ``build-train``, ``table``, ``curves``,
``convert``, ``rerank``, ``compare``). The DebiasFirst fine-tune's settings are
:mod:`hf_posbias.listwise.training.finetune_settings`.

Example:
    >>> parse_positions("1,5,10", k=10), parse_positions(None, k=3)
    ([1, 5, 10], [1, 2, 3])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hf_posbias.errors import InputError
from hf_posbias.rerankers.options import RerankerOptions
from hf_posbias.setting_values import at_least
from hf_posbias.settings import (
    ProgressSettings,
    Settings,
    check_choices,
    setting,
    setting_label,
    shared_setting,
)
from hf_posbias.statistics import PAIRED_TESTS


def parse_positions(spec: str | Sequence[int] | None, k: int) -> list[int]:
    """``"1,5,20"`` → ``[1, 5, 20]`` (sorted, unique, each in 1..k); ``None`` → ``1..k``.

    Example:
        >>> parse_positions("5,1,5", 20), parse_positions(None, 3)
        ([1, 5], [1, 2, 3])
    """
    if spec is None or spec == "":
        return list(range(1, k + 1))
    values = _integers(spec, setting_label("positions"))
    bad = [p for p in values if not 1 <= p <= k]
    if bad or not values:
        raise InputError(
            f"{setting_label('positions')} must lie in 1..{k} (k), got {bad or spec!r}"
        )
    return sorted(set(values))


@dataclass(kw_only=True)
class ResamplingSettings(Settings):
    """Resamples and confidence of the intervals (checked before any reranking: they come last)."""

    n_resamples: int = shared_setting("n_resamples", default=1000)
    confidence: float = setting("interval confidence", default=0.95, cli=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        from hf_posbias.statistics.uncertainty import check_resampling

        check_resampling(self.n_resamples, self.confidence)


@dataclass(kw_only=True)
class PairedTestSettings(ResamplingSettings):
    """A paired test between two variants or runs of the same queries."""

    # --method, as `posbias compare`.
    method: str = shared_setting(
        "method",
        default="randomization",
        choices=PAIRED_TESTS,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choices(self, "method")


DEFAULT_FIRST_STAGE = "bm25"
"""The first stage of a listwise verb (and of a study spec) that names none. BM25 on purpose: it
runs offline with nothing to download and lists any corpus deterministically, and it is Q26's
own first stage where Q26 builds lists for training (§5: the propensity's top 20 per MS MARCO
training query). Q26 evaluates on Contriever (Tables 1 and 3, Fig. 4), which
``studies/q26.yaml`` names (``facebook/contriever-msmarco``, a Hub download)."""


@dataclass(kw_only=True)
class ListSource(Settings):
    """Which queries are listed and how deep (the first stage)."""

    k: int = shared_setting("k", default=20)
    max_queries: int | None = setting(
        "a seeded sample of this many judged queries (default: all)",
        default=None,
        range=at_least(1),
    )
    seed: int = shared_setting("seed")
    first_stage: str | list[str] = shared_setting("first_stage", default=DEFAULT_FIRST_STAGE)
    rrf_k: int = setting(
        "k of the reciprocal rank fusion of several first stages", default=60, range=at_least(1)
    )
    first_stage_similarity: str | None = setting(
        "similarity of a dense first stage (default: the model's own similarity_fn_name)",
        default=None,
        choices=("cosine", "dot", "euclidean", "manhattan"),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from hf_posbias.listwise.experiments.firststage import first_stage_names

        names = first_stage_names(self.first_stage)
        self.first_stage = names[0] if len(names) == 1 else names

    def first_stage_options(self) -> dict[str, Any]:
        """What else changes the first-stage lists, only where it applies (``rrf_k`` when several
        stages are fused, ``similarity`` when overridden): the keyword arguments of
        :func:`~hf_posbias.listwise.experiments.lists.first_stage_lists`, pinned in manifests.

        Example:
            >>> ListSource(first_stage=["bm25", "all-MiniLM-L6-v2"]).first_stage_options()
            {'rrf_k': 60}
            >>> ListSource().first_stage_options()
            {}
        """
        options: dict[str, Any] = {}
        if not isinstance(self.first_stage, str):
            options["rrf_k"] = self.rrf_k
        if self.first_stage_similarity:
            options["similarity"] = self.first_stage_similarity
        return options


LIST_PARAMS: tuple[str, ...] = ("k", "max_queries", "seed", "first_stage", "window", "step")
"""The list settings an experiment pins in its manifest (a rerun with others is refused)."""


@dataclass(kw_only=True)
class ListSettings(ListSource, RerankerOptions):
    """How an experiment's candidate lists are made and reranked."""


@dataclass(kw_only=True)
class ControlledTestConfig(ListSettings, ResamplingSettings):
    """Settings of one controlled test (``posbias listwise test``)."""

    positions: str | list[int] | None = shared_setting("positions", default=None)
    calibrate: bool = shared_setting(
        "calibrate",
        default=False,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.positions = parse_positions(self.positions, self.k)  # None: every slot 1..k
        if self.calibrate and self.k > self.window:
            raise InputError(
                f"{setting_label('calibrate')} reads each list's one window: "
                f"{setting_label('k')} {self.k} is larger than "
                f"{setting_label('window')} {self.window}"
            )


@dataclass(kw_only=True)
class ShuffleEvalConfig(ListSettings, PairedTestSettings):
    """Settings of ``posbias listwise shuffle-eval``."""

    shuffles: int = shared_setting("shuffles", default=5)
    aggregate: int = setting(
        "also aggregate this many shuffles by Borda and Kemeny (0: off)",
        default=0,
        range=at_least(0),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.aggregate == 1:
            raise InputError(
                f"{setting_label('aggregate')} needs at least 2 shuffles (0: off), got "
                f"{self.aggregate}"
            )


def _integers(spec: str | Sequence[int], flag: str) -> list[int]:
    """``"1,5"`` or ``[1, 5]`` → ``[1, 5]``; anything else is a one-line error naming ``flag``."""
    try:
        if isinstance(spec, str):
            return [int(x) for x in spec.split(",") if x.strip()]
        return [int(x) for x in spec]
    except ValueError:
        raise InputError(f"{flag} takes comma-separated integers, got {spec!r}") from None


def parse_counts(spec: str | Sequence[int], flag: str) -> list[int]:
    """``"1,2,5"`` → ``[1, 2, 5]`` (sorted, unique, each ≥ 1).

    Example:
        >>> parse_counts("5,1,2,5", "--shuffles")
        [1, 2, 5]
    """
    values = _integers(spec, flag)
    if not values or min(values) < 1:
        raise InputError(f"{flag} takes integers >= 1, got {spec!r}")
    return sorted(set(values))


@dataclass(kw_only=True)
class ListwiseRemediesConfig(ControlledTestConfig, PairedTestSettings):
    """Settings of ``posbias listwise reranker-remedies``: the remedies on the controlled 1…k
    harness."""

    shuffles: str | list[int] = shared_setting(
        "shuffles",
        default="1,2,5,10,20",
        range=None,  # a list of counts, each >= 1: parse_counts checks them
    )
    calibrate: bool = shared_setting("calibrate", default=True)
    checkpoints: str | None = setting(
        "comma-separated DebiasFirst checkpoint folders (posbias listwise train), each tested "
        "on the same queries and positions as a remedy row",
        default=None,
    )
    plot: bool = shared_setting("plot", default=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.shuffles = parse_counts(self.shuffles, setting_label("shuffles"))

    @property
    def checkpoint_paths(self) -> list[str]:
        """The ``--checkpoints`` folders, in the order given."""
        return [p.strip() for p in (self.checkpoints or "").split(",") if p.strip()]


@dataclass(kw_only=True)
class PropensityConfig(ListSettings):
    """Settings of a propensity estimate (``posbias listwise propensity``)."""

    shuffles: int = shared_setting("shuffles", default=10)
    smoothing: float = shared_setting("smoothing", default=0.0)


@dataclass(kw_only=True)
class TaskRunSettings(ProgressSettings):
    """A listwise verb that reads a task and writes a resumable run folder."""

    task: str = setting(
        "BEIR folder (corpus.jsonl, queries.jsonl, qrels/) or a project task folder"
    )
    split: str | None = shared_setting(
        "split", default=None, unset="test; a project task folder: its own"
    )
    out: str = shared_setting("out")


@dataclass(kw_only=True)
class RerankerName(Settings):
    """Which reranker a verb loads (:func:`hf_posbias.rerankers.loading.load_reranker`)."""

    reranker: str = shared_setting("reranker")


@dataclass(kw_only=True)
class RerankRunSettings(RerankerName, TaskRunSettings):
    """A task run with a reranker."""


@dataclass(kw_only=True)
class ListwiseTestSettings(ControlledTestConfig, RerankRunSettings):
    """``posbias listwise test``: one object from argv to the experiment."""


@dataclass(kw_only=True)
class ListwiseRemediesSettings(ListwiseRemediesConfig, RerankRunSettings):
    """``posbias listwise reranker-remedies``."""


@dataclass(kw_only=True)
class ShuffleEvalSettings(ShuffleEvalConfig, RerankRunSettings):
    """``posbias listwise shuffle-eval``."""


@dataclass(kw_only=True)
class PropensitySettings(PropensityConfig, RerankRunSettings):
    """``posbias listwise propensity``."""


@dataclass(kw_only=True)
class BuildTrainSettings(ListSource, TaskRunSettings):
    """``posbias listwise build-train``."""

    # Only the default differs from a test run's: training lists come from the train split.
    split: str | None = shared_setting("split", default="train")
    teacher: str = setting(
        "order after the relevant documents: first-stage or a cross-encoder name (stand-in "
        "for GPT-4 labels)",
        default="first-stage",
    )


@dataclass(kw_only=True)
class FirstStageEvalSettings(ListSource, TaskRunSettings):
    """The first stage on its own (Q26 Table 2's first-stage rows): its top-k lists and their
    nDCG@10, a step of a listwise study."""


@dataclass(kw_only=True)
class ShuffleTableSettings(PairedTestSettings):
    """``posbias listwise table``: Q26 Table 1 (2, 3) from shuffle-eval folders."""

    runs: list[str] = setting("posbias listwise shuffle-eval folders (one per row and dataset)")
    out: str = shared_setting("out")
    labels: list[str] | None = setting(
        "row label of each run (default: reranker (first stage))", default=None
    )
    method: str = shared_setting(
        "method",
        default="t-test",
        choices=PAIRED_TESTS,
    )
    alpha: float = shared_setting("alpha", default=0.01)
    seed: int = shared_setting("seed")


@dataclass(kw_only=True)
class CurvesSettings(Settings):
    """``posbias listwise curves``: several test runs' 1…k curves in one plot (Fig. 4, 6)."""

    runs: list[str] = setting("posbias listwise test folders")
    out: str = shared_setting("out")
    labels: list[str] | None = setting("legend label of each run (default: reranker)", default=None)


@dataclass(kw_only=True)
class ConvertSettings(Settings):
    """``posbias listwise convert``: RankZephyr / FIRST training data → a training set."""

    data: str = setting("a .jsonl/.json file or a Hub dataset id")
    hf_split: str = setting("split of a Hub dataset", default="train")
    identifiers: Literal["letters", "numbers"] | None = shared_setting(
        "identifiers", default=None, unset="detected per record"
    )
    max_rows: int | None = setting(
        "convert only the first N records", default=None, range=at_least(1)
    )
    out: str = shared_setting("out")


@dataclass(kw_only=True)
class RerankSettings(RerankerName, RerankerOptions):
    """``posbias listwise rerank``: rank_llm requests → rank_llm results."""

    requests: str = setting("rank_llm requests (.json or .jsonl)")
    k: int | None = setting("rerank the top k (default: all)", default=None, range=at_least(1))
    out: str = setting("results file (.json or .jsonl)")


@dataclass(kw_only=True)
class ListwiseCompareSettings(PairedTestSettings):
    """``posbias listwise compare-tests``: a paired test between two test runs."""

    run_a: str = setting("posbias listwise test folder A (e.g. the base model)", positional=True)
    run_b: str = setting("posbias listwise test folder B (e.g. the fine-tune)", positional=True)
    label_a: str = setting("name of run A in the table", default="A")
    label_b: str = setting("name of run B in the table", default="B")
    seed: int = shared_setting("seed")
    common_queries: bool = setting(
        "compare the queries both runs scored (counted), both curves recomputed on them",
        default=False,
    )
    out: str | None = shared_setting("out", default=None)
