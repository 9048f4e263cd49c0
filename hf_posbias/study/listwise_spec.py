"""The spec of a listwise study (``kind: listwise``, Q26): its keys, checked before anything
runs (:class:`ListwiseStudySpec`), Q26's tables as a spec declares them (:class:`TableSpec`) and
the ablation variants (:data:`VARIANTS`). What a study runs from it is
:mod:`hf_posbias.study.listwise_study`.

Example:
    >>> spec = ListwiseStudySpec(name="t", datasets={"d": "f"}, rerankers={"b": "bm25"},
    ...                          tables={"table1": {"marks": {"b": "†"}}})
    >>> spec.table("table1").baselines, spec.table("table2").first_stage_rows
    ({'†': 'b'}, True)
    >>> parse_variant("posaug-rank-ips+lm")
    ('pos-aug', True, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.experiment_settings import DEFAULT_FIRST_STAGE

KIND = "listwise"
VARIANT_PREFIX = "variant:"
AUGMENTATION_NAMES = {"noaug": "none", "randaug": "rand-aug", "posaug": "pos-aug"}
LOSSES = ("rank", "rank+lm", "rank-ips", "rank-ips+lm")
VARIANTS = tuple(f"{a}-{loss}" for a in AUGMENTATION_NAMES for loss in LOSSES)
"""Q26's ablation grid (§7, Table 3, Fig. 6): NoAug / RandAug / PosAug × Rank / Rank+LM (Eq. 3:
FIRST's joint loss, no IPS) / Rank-IPS / Rank-IPS+LM (Eq. 6)."""

TABLES = ("table1", "table2", "table3")
"""Q26's tables a spec can declare (``tables:``)."""

RERANKER_KEYS = ("model", "mode", "identifiers", "dtype")
"""The keys of a reranker given as a mapping: its model and how it is scored (the listwise
verbs' ``--mode``, ``--identifiers`` and ``--dtype``), where it differs from the spec's other
rerankers."""

TRAINING_KEYS: dict[str, str] = {
    "base": "the causal LM every variant fine-tunes",
    "data": "a training set already made (a listwise build-train or convert folder, .parquet)",
    "convert": "RankZephyr / FIRST training data as published (a Hub dataset id or a file), made "
    "a training set by a listwise convert step",
    "task": "task folder whose train split the propensity (and build-train, without data or "
    "convert) reads; default: the first dataset",
    "k": "passages per training window and per propensity list (default: the spec's k)",
    "max_queries": "build-train's queries (default: every judged one)",
    "groups": "Pos-Aug's n (RandAug: its copies per window)",
    "propensity_reranker": "the reranker whose transitions estimate ω (default: base)",
    "propensity_first_stage": "first stage of the propensity lists (default: the listwise "
    "verbs' own)",
    "propensity_shuffles": "n of Eq. 5 (default: the propensity verb's)",
    "propensity_queries": "queries of the propensity (default: max_queries)",
    "smoothing": "α added to every transition count (default: the propensity verb's, 0: Eq. 5)",
    "lambda": "λ of Eqs. 3 and 6",
    "lr": "learning rate",
    "epochs": "epochs",
    "max_steps": "optimisation steps (instead of epochs)",
    "global_batch": "training windows per optimisation step",
    "mini_batch_size": "windows per forward pass (the rest of a step is gradient accumulation)",
    "precision": "training precision (auto, bf16, fp16, fp32)",
    "neftune_alpha": "NEFTune noise α",
    "warmup_ratio": "linear warm-up share of steps",
}
"""The keys of a spec's ``training:`` (an unknown key is a one-line error)."""

TRAINER_FIELDS = {"lambda": "lam"}
"""``training:`` keys spelled otherwise as fields of the trainer's settings."""

TRAINER_KEYS = ("lambda", "lr", "epochs", "max_steps", "global_batch", "mini_batch_size",
                "precision", "neftune_alpha", "warmup_ratio")  # fmt: skip
"""``training:`` keys handed to every variant's trainer as they are."""


def parse_variant(name: str) -> tuple[str, bool, bool]:
    """(augmentation, IPS, L_LM) of a variant name of :data:`VARIANTS`, or a one-line error."""
    if name not in VARIANTS:
        raise InputError(f"unknown variant {name!r}: one of {', '.join(VARIANTS)}")
    aug, loss = name.split("-", 1)
    return AUGMENTATION_NAMES[aug], "ips" in loss, loss.endswith("+lm")


def stage_slug(value: str | list[str]) -> str:
    """A first stage's folder name (``rrf-a+b`` for a fusion).

    Example:
        >>> stage_slug("facebook/contriever-msmarco"), stage_slug(["bm25", "splade++"])
        ('facebook__contriever-msmarco', 'rrf-bm25+splade++')
    """
    text = value if isinstance(value, str) else "rrf-" + "+".join(value)
    return text.replace("/", "__").replace(":", "_")


@dataclass(kw_only=True)
class TableSpec:
    """One of Q26's tables as the report builds it: a block per first stage of the rerankers'
    original / shuffled nDCG@10 per dataset, a number marked where it differs from that of a
    reranker named in ``marks`` (reranker → mark) on the same queries and first stage, and, with
    ``first_stage_rows``, the first stages' own nDCG@10 above the blocks (Table 2)."""

    rerankers: list[str]
    first_stages: list[str | list[str]]
    marks: dict[str, str] = field(default_factory=dict)
    first_stage_rows: bool = False

    @property
    def baselines(self) -> dict[str, str]:
        """Mark → reranker label (what the table builder tests each row against)."""
        return {mark: label for label, mark in self.marks.items()}


@dataclass(kw_only=True)
class ListwiseStudySpec:
    """A listwise study (see the module docstring); the keys of a ``kind: listwise`` spec."""

    name: str
    datasets: dict[str, str]
    rerankers: dict[str, Any]
    """Label → a model argument, or a mapping with ``model`` and :data:`RERANKER_KEYS`."""
    kind: str = KIND
    first_stages: list[str | list[str]] = field(default_factory=lambda: [DEFAULT_FIRST_STAGE])
    rrf_k: int = 60
    first_stage_similarity: str | None = None
    """A dense first stage's similarity when not the model's own (Contriever: dot)."""
    split: str | None = None
    splits: dict[str, str] = field(default_factory=dict)
    """A dataset's own split where it is not ``split`` (Q26: MS MARCO ``dev``)."""
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    """:data:`TABLES` → the keys of a :class:`TableSpec`; a key or a table left out is
    :meth:`table`'s default."""
    fig4: list[str] = field(default_factory=list)
    """The rerankers of Fig. 4's 1…k curves (default: the spec's rerankers)."""
    fig5: list[str] = field(default_factory=list)
    """The two rerankers Fig. 5 compares (Q26: DebiasFirst vs First); default the first two."""
    fig5_datasets: list[str] = field(default_factory=list)
    """The datasets of Fig. 5 (Q26: DL19 and DL20); default the ``curves`` dataset."""
    fig5_shuffles: int | None = None
    """Shuffled inputs per query of Fig. 5 (Q26: 20); default ``shuffles``."""
    fig6: dict[str, list[str]] = field(default_factory=dict)
    """Fig. 6's panels, letter → rerankers; default: the variants grouped by loss, then by
    augmentation."""
    k: int = 20
    window: int = 20
    step: int = 10
    shuffles: int = 5
    aggregate: int = 0
    max_queries: int | None = None
    seed: int = 0
    passage_tokens: int | None = None
    dtype: str = "auto"
    test: str = "t-test"
    alpha: float = 0.01
    n_resamples: int = 1000
    curves: str | None = None
    """The dataset of the 1…k curves (Figs. 4, 6); default: the first dataset."""
    variants: list[str] = field(default_factory=list)
    training: dict[str, Any] = field(default_factory=dict)
    """The keys of :data:`TRAINING_KEYS`."""
    ips_normalization: str | None = None
    """The trained variants' IPS scaling; unset: the trainer's default (Eq. 4 as printed)."""
    notes: str = ""

    def __post_init__(self) -> None:
        if self.kind != KIND:
            raise InputError(f"a listwise study spec has kind: {KIND}, got {self.kind!r}")
        if not self.datasets or not self.rerankers:
            raise InputError("a listwise study needs datasets and rerankers")
        for variant in self.variants:
            parse_variant(variant)
        for label in self.rerankers:
            model = self.model_of(label)
            if model.startswith(VARIANT_PREFIX):
                variant = model.removeprefix(VARIANT_PREFIX)
                if variant not in self.variants:
                    raise InputError(
                        f"reranker {label!r} is {model}, a variant the spec does not train "
                        f"(its variants: {', '.join(self.variants) or 'none'})"
                    )
        unknown = sorted(set(self.training) - set(TRAINING_KEYS))
        if unknown:
            raise InputError(
                f"training: unknown key(s) {', '.join(unknown)} (known: {', '.join(TRAINING_KEYS)})"
            )
        if self.variants and not self.training.get("base"):
            raise InputError("the spec trains variants: training needs a base model (base:)")
        if self.training.get("data") and self.training.get("convert"):
            raise InputError("training: give data (a training set) or convert, not both")
        if self.curves is not None and self.curves not in self.datasets:
            raise InputError(f"curves: {self.curves!r} is not one of the datasets")
        for name in [*self.splits, *self.fig5_datasets]:
            if name not in self.datasets:
                raise InputError(f"{name!r} (splits, fig5_datasets) is not one of the datasets")
        evaluated = self.evaluated()
        if self.fig5 and (len(self.fig5) != 2 or not set(self.fig5) <= set(evaluated)):
            raise InputError(f"fig5: two of the rerankers {sorted(evaluated)}, got {self.fig5}")
        for where, labels in [("fig4", self.fig4), *(
            (f"fig6 {letter}", group) for letter, group in self.fig6.items()
        )]:  # fmt: skip
            self._check_labels(where, labels)
        for name in self.tables:
            if name not in TABLES:
                raise InputError(f"tables: unknown table {name!r} (one of {', '.join(TABLES)})")
            self.table(name)

    # ------------------------------------------------------------------ rerankers

    def model_of(self, label: str) -> str:
        """The model argument of a reranker label (a trained variant: ``variant:<name>``)."""
        value = self.evaluated_values()[label]
        return str(value["model"] if isinstance(value, dict) else value)

    def options_of(self, label: str) -> dict[str, Any]:
        """The reranker options a mapping gives ``label`` (``mode``, ``identifiers``)."""
        value = self.evaluated_values()[label]
        if not isinstance(value, dict):
            return {}
        unknown = sorted(set(value) - set(RERANKER_KEYS))
        if unknown or "model" not in value:
            raise InputError(
                f"reranker {label!r}: a mapping holds model and any of "
                f"{', '.join(RERANKER_KEYS[1:])} (got {', '.join(sorted(value))})"
            )
        return {key: v for key, v in value.items() if key != "model"}

    def evaluated_values(self) -> dict[str, Any]:
        """Every reranker's spec value: the spec's, then each trained variant not named there."""
        named = {
            str(v["model"] if isinstance(v, dict) else v).removeprefix(VARIANT_PREFIX)
            for v in self.rerankers.values()
        }
        extra = {v: f"{VARIANT_PREFIX}{v}" for v in self.variants if v not in named}
        return {**self.rerankers, **extra}

    def evaluated(self) -> dict[str, str]:
        """Every reranker label → its model argument (:meth:`evaluated_values`)."""
        return {label: self.model_of(label) for label in self.evaluated_values()}

    def variant_labels(self) -> list[str]:
        """The labels of the trained variants, in :meth:`evaluated` order."""
        return [lb for lb, m in self.evaluated().items() if m.startswith(VARIANT_PREFIX)]

    def _check_labels(self, where: str, labels: Sequence[str]) -> None:
        unknown = [label for label in labels if label not in self.evaluated()]
        if unknown:
            raise InputError(
                f"{where}: {', '.join(map(repr, unknown))} not among the rerankers "
                f"({', '.join(self.evaluated())})"
            )

    # ------------------------------------------------------------------ tables, figures

    def table(self, name: str) -> TableSpec:
        """The table ``name`` (:data:`TABLES`): the spec's keys, each left-out key its default —
        Table 1: the spec's rerankers on the first first stage; Table 2: every reranker on
        every first stage, with the first-stage rows; Table 3: the trained variants on the first
        first stage; no marks."""
        defaults = {
            "table1": {"rerankers": list(self.rerankers), "first_stages": self.first_stages[:1]},
            "table2": {
                "rerankers": list(self.evaluated()),
                "first_stages": list(self.first_stages),
                "first_stage_rows": True,
            },
            "table3": {"rerankers": self.variant_labels(), "first_stages": self.first_stages[:1]},
        }[name]
        declared = self.tables.get(name) or {}
        keys = {f.name for f in dataclasses.fields(TableSpec)}
        if set(declared) - keys:
            raise InputError(
                f"tables: {name}: unknown key(s) {', '.join(sorted(set(declared) - keys))} "
                f"(known: {', '.join(sorted(keys))})"
            )
        table = TableSpec(**{**defaults, **declared})
        self._check_labels(f"tables: {name}", table.rerankers)
        slugs = {stage_slug(s) for s in self.first_stages}
        stray = [s for s in table.first_stages if stage_slug(s) not in slugs]
        if stray:
            raise InputError(f"tables: {name}: first stage(s) {stray} not among first_stages")
        for label, mark in table.marks.items():
            if label not in table.rerankers:
                raise InputError(f"tables: {name}: marks: {label!r} is not one of its rerankers")
            if not str(mark).strip():
                raise InputError(f"tables: {name}: marks: {label!r} has an empty mark")
        return table

    def declared_tables(self) -> dict[str, TableSpec]:
        """Every table with a reranker or first-stage rows to show."""
        tables = {name: self.table(name) for name in TABLES}
        return {n: t for n, t in tables.items() if t.rerankers or t.first_stage_rows}

    def split_of(self, dataset: str) -> str | None:
        """The split ``dataset`` is evaluated on: its ``splits:`` entry, else ``split``."""
        return self.splits.get(dataset, self.split)

    @property
    def fig5_pair(self) -> list[str]:
        """The two rerankers of Fig. 5: ``fig5``, else the first two."""
        return self.fig5 or list(self.rerankers)[:2]

    @property
    def fig5_sets(self) -> list[str]:
        """The datasets of Fig. 5: ``fig5_datasets``, else the curves dataset."""
        return self.fig5_datasets or [self.curves_dataset]

    @property
    def fig5_m(self) -> int:
        """Shuffles per query of Fig. 5."""
        return self.fig5_shuffles or self.shuffles

    @property
    def curves_dataset(self) -> str:
        return self.curves or next(iter(self.datasets))

    def fig4_rerankers(self) -> list[str]:
        return self.fig4 or list(self.rerankers)

    def fig6_panels(self) -> dict[str, list[str]]:
        """Fig. 6's panels: ``fig6``, else the variants sharing a loss (the augmentation
        ablation), then those sharing an augmentation (the loss ablation), groups of two or
        more (else every variant in one panel), lettered a, b, …"""
        if self.fig6:
            return dict(self.fig6)
        variants = self.variant_labels()
        by_loss: dict[str, list[str]] = {}
        by_aug: dict[str, list[str]] = {}
        for label in variants:
            aug, loss = self.model_of(label).removeprefix(VARIANT_PREFIX).split("-", 1)
            by_loss.setdefault(loss, []).append(label)
            by_aug.setdefault(aug, []).append(label)
        groups = [g for g in [*by_loss.values(), *by_aug.values()] if len(g) > 1]
        groups = groups or ([variants] if variants else [])
        return dict(zip("abcdefghijklmnopqrstuvwxyz", groups))

    def curve_rerankers(self) -> list[str]:
        """Every reranker with a 1…k curve (Figs. 4 and 6), in :meth:`evaluated` order."""
        wanted = {*self.fig4_rerankers(), *(lb for g in self.fig6_panels().values() for lb in g)}
        return [label for label in self.evaluated() if label in wanted]


def load_listwise_spec(path: str | Path) -> ListwiseStudySpec:
    """The :class:`ListwiseStudySpec` of a spec file; unknown keys are one line."""
    from hf_posbias.study.spec import read_spec_text

    data = read_spec_text(path)
    known = {f.name for f in dataclasses.fields(ListwiseStudySpec)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {sorted(known)})")
    try:
        return ListwiseStudySpec(**data)
    except TypeError as err:
        raise InputError(f"{path}: {err}") from None
