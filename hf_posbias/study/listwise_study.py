"""Listwise studies (``kind: listwise``): Q26 (DebiasFirst) as one spec run by
``posbias study run`` and ``posbias study report``.

A spec names the rerankers (checkpoints, Hub ids, ``openai:`` served models, packaged models,
and ``variant:<name>`` for a variant the spec trains), the first stages (a name, or a list fused
by reciprocal rank fusion), the datasets (task folders with qrels), the shuffles and the paired
test. The variants are Q26's ablation grid, ``<augmentation>-<loss>``: augmentation ``noaug``,
``randaug`` or ``posaug`` × loss ``rank`` (FIRST's L_Rank), ``rank-ips`` (L_Rank-IPS, Eq. 4) or
``rank-ips+lm`` (λ·L_Rank-IPS + L_LM, Eq. 6, DebiasFirst). The IPS weights' normalisation is the
spec's ``ips_normalization`` (``paper``: Eq. 4 as written).

``posbias study run`` runs, each step resumable (a finished step is skipped, an interrupted one
resumes from its finished queries): the training set (``listwise build-train``), the propensity
(``listwise propensity``, Eq. 5) when a variant uses IPS, each variant's training, then
``listwise shuffle-eval`` for every dataset × first stage × reranker and ``listwise test`` (the
1…k curve) of every reranker on the ``curves`` dataset. ``posbias study report`` writes
Table 1 (every reranker on the first first stage), Table 2 (one block per first stage),
Table 3 (the trained variants), Fig. 3 (training-data transitions before/after Pos-Aug),
Fig. 4 (every reranker's curve), Fig. 5 (per-shuffle nDCG@10 with its spread, and PermSC-style
aggregation over the first m shuffles) and Fig. 6 (the variants' curves, one panel per loss and
one per augmentation), with ``report.json`` naming every cell's per-query file.

Example:
    >>> spec = ListwiseStudySpec(name="t", datasets={"d": "folder"}, rerankers={"b": "bm25"})
    >>> [step.name for step in plan(spec, "out")]
    ['shuffle-eval d bm25 b', 'curves b']
    >>> parse_variant("posaug-rank-ips+lm")
    ('pos-aug', True, True)
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.shards import differences, other_run_error, write_text_atomic

KIND = "listwise"
STUDY_FILE = "listwise_study.json"
DONE_FILE = "step_done.json"
VARIANT_PREFIX = "variant:"
AUGMENTATION_NAMES = {"noaug": "none", "randaug": "rand-aug", "posaug": "pos-aug"}
LOSSES = ("rank", "rank+lm", "rank-ips", "rank-ips+lm")
VARIANTS = tuple(f"{a}-{loss}" for a in AUGMENTATION_NAMES for loss in LOSSES)
"""Q26's ablation grid (Table 3): NoAug / RandAug / PosAug × Rank / Rank+LM (Table 3's "without
IPS" row: rank + LM loss, no IPS) / Rank-IPS / Rank-IPS+LM."""


def parse_variant(name: str) -> tuple[str, bool, bool]:
    """(augmentation, IPS, L_LM) of a variant name of :data:`VARIANTS`, or a one-line error."""
    if name not in VARIANTS:
        raise InputError(f"unknown variant {name!r}: one of {', '.join(VARIANTS)}")
    aug, loss = name.split("-", 1)
    return AUGMENTATION_NAMES[aug], "ips" in loss, loss.endswith("+lm")


@dataclass(kw_only=True)
class ListwiseStudySpec:
    """A listwise study (see the module docstring); the keys of a ``kind: listwise`` spec."""

    name: str
    datasets: dict[str, str]
    rerankers: dict[str, str]
    kind: str = KIND
    first_stages: list[str | list[str]] = field(default_factory=lambda: ["bm25"])
    rrf_k: int = 60
    first_stage_similarity: str | None = None
    """A dense first stage's similarity when not the model's own (Contriever: dot)."""
    split: str | None = None
    splits: dict[str, str] = field(default_factory=dict)
    """A dataset's own split where it is not ``split`` (Q26: MS MARCO ``dev``)."""
    fig5: list[str] = field(default_factory=list)
    """The two rerankers Fig. 5 compares (Q26: DebiasFirst vs First); default the first two."""
    marks: dict[str, str] = field(default_factory=dict)
    """Reranker label → the mark of "differs from it" in Tables 1–3 (Q26 Table 1: ``first: †``,
    ``rankzephyr: ‡``), beside the ``*`` of shuffled vs original."""
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
    """The dataset of the 1…k curves (Fig. 4, 6); default: the first dataset."""
    variants: list[str] = field(default_factory=list)
    training: dict[str, Any] = field(default_factory=dict)
    """``base``; ``data`` (a training set, e.g. ``listwise convert``'s) or ``task`` (its
    ``train`` split through ``listwise build-train``, ``max_queries`` of them); ``k``,
    ``propensity_reranker``, ``propensity_shuffles``, ``propensity_queries`` (default
    ``max_queries``), ``smoothing``, ``groups`` (Pos-Aug n),
    ``max_steps``, ``epochs``, ``lr``, ``global_batch``, ``lambda``, ``neftune_alpha``."""
    ips_normalization: str = "paper"
    notes: str = ""

    def __post_init__(self) -> None:
        if self.kind != KIND:
            raise InputError(f"a listwise study spec has kind: {KIND}, got {self.kind!r}")
        if not self.datasets or not self.rerankers:
            raise InputError("a listwise study needs datasets and rerankers")
        for variant in self.variants:
            parse_variant(variant)
        for label, model in self.rerankers.items():
            if model.startswith(VARIANT_PREFIX):
                variant = model.removeprefix(VARIANT_PREFIX)
                if variant not in self.variants:
                    raise InputError(
                        f"reranker {label!r} is {model}, a variant the spec does not train "
                        f"(its variants: {', '.join(self.variants) or 'none'})"
                    )
        if self.variants and not self.training.get("base"):
            raise InputError("the spec trains variants: training needs a base model (base:)")
        if self.curves is not None and self.curves not in self.datasets:
            raise InputError(f"curves: {self.curves!r} is not one of the datasets")
        for label in self.marks:
            if label not in self.rerankers:
                raise InputError(f"marks: {label!r} is not one of the rerankers")
        for name in self.splits:
            if name not in self.datasets:
                raise InputError(f"splits: {name!r} is not one of the datasets")
        if self.fig5 and (len(self.fig5) != 2 or not set(self.fig5) <= set(self.rerankers)):
            raise InputError(
                f"fig5: two of the rerankers {sorted(self.rerankers)}, got {self.fig5}"
            )

    def split_of(self, dataset: str) -> str | None:
        """The split ``dataset`` is evaluated on: its ``splits:`` entry, else ``split``."""
        return self.splits.get(dataset, self.split)

    @property
    def fig5_pair(self) -> list[str]:
        """The two rerankers of Fig. 5: ``fig5``, else the first two."""
        return self.fig5 or list(self.rerankers)[:2]

    @property
    def curves_dataset(self) -> str:
        return self.curves or next(iter(self.datasets))

    def evaluated(self) -> dict[str, str]:
        """Every reranker evaluated: the spec's, then each trained variant not named there."""
        named = {m.removeprefix(VARIANT_PREFIX) for m in self.rerankers.values()}
        extra = {v: f"{VARIANT_PREFIX}{v}" for v in self.variants if v not in named}
        return {**self.rerankers, **extra}


def is_listwise_spec(path: str | Path) -> bool:
    """Whether a spec file says ``kind: listwise`` (False for the bi-encoder studies)."""
    from hf_posbias.study.spec import read_spec_text

    data = read_spec_text(path)
    return isinstance(data, dict) and data.get("kind") == KIND


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


def stage_slug(value: str | list[str]) -> str:
    text = value if isinstance(value, str) else "rrf-" + "+".join(value)
    return text.replace("/", "__").replace(":", "_")


@dataclass
class Step:
    """One resumable step of a listwise study: its name, folder and what it runs.

    ``params`` is what the step's marker records (a verb's settings as a plain mapping), so a
    rerun with other settings runs the step again.
    """

    name: str
    folder: Path
    params: dict[str, Any]
    run: Callable[[], Any] = field(repr=False)
    settings: Any = field(default=None, repr=False)
    """The settings object the step runs with (``None`` for the training set)."""

    def done(self) -> bool:
        marker = self.folder / DONE_FILE
        if not marker.is_file():
            return False
        recorded = json.loads(marker.read_text())
        return recorded == _jsonable(self.params) or _former_marker(recorded, self.settings)

    def mark_done(self) -> None:
        write_text_atomic(self.folder / DONE_FILE, json.dumps(_jsonable(self.params), indent=1))


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _former_marker(recorded: Any, settings: Any) -> bool:
    """Whether a marker of an earlier release, the step's flags (``{"argv": [...]}``), records
    ``settings``: a study folder run before the steps took settings objects still resumes.

    A flag renamed since (``--test``, the trainer's ``--window``) is read through the parser's
    own hidden alias; its deprecation warning is meant for a person typing it, not for a resume,
    so it is kept quiet here."""
    if settings is None or not isinstance(recorded, dict) or list(recorded) != ["argv"]:
        return False
    import contextlib
    import io
    import warnings

    from hf_posbias.settings import parse_settings_args

    argv = [str(a) for a in recorded["argv"]]
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore", DeprecationWarning)
            return parse_settings_args(type(settings), argv) == settings
    except InputError:
        return False


def _step(name: str, folder: Path, settings: Any, run: Callable[[], Any]) -> Step:
    from hf_posbias.settings import settings_record

    return Step(name, folder, settings_record(settings), run, settings)


def _list_values(spec: ListwiseStudySpec) -> dict[str, Any]:
    """The list and reranker settings every reranking step shares."""
    values = {"k": spec.k, "window": spec.window, "step": spec.step, "seed": spec.seed}
    values |= {"dtype": spec.dtype, "progress": False, "n_resamples": spec.n_resamples}
    values |= {"rrf_k": spec.rrf_k, "passage_tokens": spec.passage_tokens}
    values |= {"max_queries": spec.max_queries}
    if spec.first_stage_similarity:
        values["first_stage_similarity"] = spec.first_stage_similarity
    return values


def _reranker_path(spec: ListwiseStudySpec, model: str, out: Path) -> str:
    if model.startswith(VARIANT_PREFIX):
        return str(out / "train" / model.removeprefix(VARIANT_PREFIX))
    return model


def _rerank(settings: Any) -> Callable[[], Any]:
    """Run ``settings``' ``posbias listwise`` verb as the verb does: its runner is the one of
    the settings' class (imported here, so the import graph shows what a study runs)."""

    def run() -> Any:
        from hf_posbias.listwise.experiments.controlled import run_controlled_test
        from hf_posbias.listwise.experiments.propensity import run_propensity
        from hf_posbias.listwise.experiments.runs import load_task_and_reranker
        from hf_posbias.listwise.experiments.settings import (
            ListwiseTestSettings,
            PropensitySettings,
            ShuffleEvalSettings,
        )
        from hf_posbias.listwise.experiments.shuffle import run_shuffle_eval

        runner = {
            PropensitySettings: run_propensity,
            ShuffleEvalSettings: run_shuffle_eval,
            ListwiseTestSettings: run_controlled_test,
        }[type(settings)]
        task, reranker, out = load_task_and_reranker(settings)
        return runner(reranker, task, out, settings, show_progress=False)

    return run


def _training_steps(spec: ListwiseStudySpec, out: Path) -> list[Step]:
    if not spec.variants:
        return []
    from hf_posbias.listwise.experiments.settings import PropensitySettings
    from hf_posbias.listwise.training.settings import ListwiseTrainingSettings
    from hf_posbias.settings import settings_from_values

    t = spec.training
    k = int(t.get("k", spec.k))
    train_task = str(t.get("task") or next(iter(spec.datasets.values())))
    steps = []
    if t.get("data"):  # a training set already made (listwise convert: RankZephyr's windows)
        data = Path(str(t["data"]))
    else:
        data = out / "train" / "data"
        params = {
            "task": train_task,
            "k": k,
            "seed": spec.seed,
            "max_queries": t.get("max_queries"),
        }
        run = _build_train(train_task, k, spec.seed, t.get("max_queries"), data)
        steps.append(Step("build-train", data, params, run))
    propensity = out / "train" / "propensity"
    if any(parse_variant(v)[1] for v in spec.variants):
        settings = settings_from_values(
            PropensitySettings,
            reranker=str(t.get("propensity_reranker", spec.training["base"])),
            task=train_task, split="train", k=k, window=k, seed=spec.seed, progress=False,
            shuffles=t.get("propensity_shuffles", 10), dtype=spec.dtype,
            smoothing=t.get("smoothing", 0.5), out=str(propensity),
            passage_tokens=spec.passage_tokens,
            # Q26 §4.1 estimates ω on 3,000 queries, fewer than the 5K it trains on
            max_queries=t.get("propensity_queries", t.get("max_queries")),
        )  # fmt: skip
        steps.append(_step("propensity", propensity, settings, _rerank(settings)))
    for variant in spec.variants:
        augmentation, ips, lm = parse_variant(variant)
        folder = out / "train" / variant
        values: dict[str, Any] = {
            "model": str(t["base"]), "data": str(data), "out": str(folder), "window": k,
            "seed": spec.seed, "progress": False, "lam": t.get("lambda", 0.1),
            "lr": t.get("lr", 5e-6), "global_batch": t.get("global_batch", 8),
            "max_steps": t.get("max_steps"), "epochs": t.get("epochs"),
            "neftune_alpha": t.get("neftune_alpha"), "passage_tokens": spec.passage_tokens,
            "lm_loss": lm,
        }  # fmt: skip
        if augmentation != "none":
            values |= {"pos_aug": t.get("groups", 4), "augmentation": augmentation}
        if ips:
            values["propensity"] = str(propensity / "propensity.json")
            values["ips_normalization"] = spec.ips_normalization
        # Unset: the trainer's own default.
        values = {key: value for key, value in values.items() if value is not None}
        settings = settings_from_values(ListwiseTrainingSettings, **values)
        steps.append(_step(f"train {variant}", folder, settings, _train(settings)))
    return steps


def _build_train(task: str, k: int, seed: int, max_queries: Any, out: Path) -> Callable[[], Any]:
    def run() -> Any:
        from hf_posbias.listwise.experiments.settings import BuildTrainSettings
        from hf_posbias.listwise.training.trainset import build_train_set

        return build_train_set(
            BuildTrainSettings(
                task=task, split="train", k=k, seed=seed, max_queries=max_queries,
                out=str(out), progress=False,
            )
        )  # fmt: skip

    return run


def _train(settings: Any) -> Callable[[], Any]:
    def run() -> Any:
        from hf_posbias.listwise.training.train import train_listwise

        return train_listwise(settings)

    return run


def plan(spec: ListwiseStudySpec, out: str | Path) -> list[Step]:
    """Every step of the study, in the order they run (training, shuffles, curves), each with
    the settings object of the ``posbias listwise`` verb it runs."""
    from hf_posbias.listwise.experiments.settings import (
        ListwiseTestSettings,
        ShuffleEvalSettings,
    )
    from hf_posbias.settings import settings_from_values

    out = Path(out)
    steps = _training_steps(spec, out)
    rerankers = spec.evaluated()
    shared = _list_values(spec)
    for dataset, folder in spec.datasets.items():
        for stage in spec.first_stages:
            for label, model in rerankers.items():
                target = out / "shuffle" / dataset / stage_slug(stage) / label
                settings = settings_from_values(
                    ShuffleEvalSettings,
                    reranker=_reranker_path(spec, model, out), task=folder, **shared,
                    first_stage=stage, shuffles=spec.shuffles, aggregate=spec.aggregate,
                    method=spec.test, out=str(target), split=spec.split_of(dataset),
                )  # fmt: skip
                name = f"shuffle-eval {dataset} {stage_slug(stage)} {label}"
                steps.append(_step(name, target, settings, _rerank(settings)))
    curves_task = spec.datasets[spec.curves_dataset]
    for label, model in rerankers.items():
        target = out / "curves" / label
        settings = settings_from_values(
            ListwiseTestSettings,
            reranker=_reranker_path(spec, model, out), task=curves_task, **shared,
            first_stage=spec.first_stages[0], out=str(target),
            split=spec.split_of(spec.curves_dataset),
        )  # fmt: skip
        steps.append(_step(f"curves {label}", target, settings, _rerank(settings)))
    return steps


def check_datasets(spec: ListwiseStudySpec) -> None:
    """Every dataset (and the training task) reads and has judged queries: one line if not."""
    from hf_posbias.listwise.experiments.taskio import check_split_queries, load_rerank_task

    for name, folder in spec.datasets.items():
        try:
            task = load_rerank_task(folder, spec.split_of(name))
        except InputError as err:
            raise InputError(f"dataset {name!r}: {err}") from None
        check_split_queries(name, task.split, len(task.judged_queries()))


def listwise_dry_run_lines(spec: ListwiseStudySpec, out: str | Path) -> list[str]:
    """The plan, one line per step, ``done`` where a finished step would be skipped."""
    steps = plan(spec, out)
    lines = [f"listwise study {spec.name}: {len(steps)} step(s) into {out}"]
    lines.append(f"datasets ({len(spec.datasets)}):")
    lines += [f"  {n}: {f} (split {spec.split_of(n) or 'test'})" for n, f in spec.datasets.items()]
    stages = [
        s if isinstance(s, str) else f"RRF({' + '.join(s)}, k={spec.rrf_k})"
        for s in spec.first_stages
    ]
    lines.append(f"first stages: {', '.join(stages)}")
    lines.append(f"Fig. 5: {' vs '.join(spec.fig5_pair)}")
    for step in steps:
        state = "done" if step.done() else "to run"
        lines.append(f"  [{state}] {step.name} → {step.folder}")
    lines.append(f"IPS normalisation: {spec.ips_normalization} (paper = Eq. 4 as written)")
    return lines


@dataclass
class ListwiseStudyOutcome:
    """What one ``posbias study run`` of a listwise spec did."""

    ran: list[str]
    skipped: list[str]
    seconds: float


def run_listwise_study(
    spec: ListwiseStudySpec, out: str | Path, *, echo: Callable[[str], None] = print
) -> ListwiseStudyOutcome:
    """Run every step not done yet (see the module docstring); the report is
    :func:`~hf_posbias.study.listwise_report.write_listwise_report`'s."""
    out = Path(out)
    check_datasets(spec)
    study = out / STUDY_FILE
    record = {"kind": KIND, "spec": dataclasses.asdict(spec)}
    if study.is_file():
        previous = json.loads(study.read_text())["spec"]
        if previous != _jsonable(record["spec"]):
            raise other_run_error(out, differences(previous, _jsonable(record["spec"])))
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(study, json.dumps(record, indent=1))
    started = time.perf_counter()
    ran, skipped = [], []
    for step in plan(spec, out):
        if step.done():
            skipped.append(step.name)
            continue
        echo(f"{step.name} …")
        step.folder.mkdir(parents=True, exist_ok=True)
        step.run()
        step.mark_done()
        ran.append(step.name)
    return ListwiseStudyOutcome(ran, skipped, round(time.perf_counter() - started, 3))


def spec_of_folder(out: str | Path) -> ListwiseStudySpec | None:
    """The spec a listwise study folder was run with, ``None`` for any other folder."""
    path = Path(out) / STUDY_FILE
    if not path.is_file():
        return None
    return ListwiseStudySpec(**json.loads(path.read_text())["spec"])
