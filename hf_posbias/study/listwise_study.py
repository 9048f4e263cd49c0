"""Listwise studies (``kind: listwise``): Q26 (DebiasFirst) as one spec run by
``posbias study run`` and ``posbias study report``.

A spec names the rerankers (checkpoints, Hub ids, ``openai:`` served models, packaged models,
``listt5:<model>`` for ListT5, and ``variant:<name>`` for a variant the spec trains; a mapping
``{model, mode, identifiers, dtype}`` scores one reranker its own way), the first stages (a
name, or a list fused by reciprocal rank fusion), the datasets (task folders with qrels), the
shuffles, the paired test, and what each of Q26's tables and figures holds (``tables``,
``fig4``, ``fig5``, ``fig6``: each with its rerankers, first stages and marks). The variants
are Q26's ablation grid, ``<augmentation>-<loss>``: augmentation ``noaug``, ``randaug`` or
``posaug`` × loss ``rank`` (FIRST's L_Rank), ``rank+lm`` (λ·L_Rank + L_LM, Eq. 3: no IPS),
``rank-ips`` (L_Rank-IPS, Eq. 4) or ``rank-ips+lm`` (λ·L_Rank-IPS + L_LM, Eq. 6,
DebiasFirst). A training setting the spec leaves out is the verb's own default
(``posbias listwise train --help``).

``posbias study run`` runs, each step resumable (a finished step is skipped, an interrupted one
resumes from its finished queries): the training set (``listwise convert`` of published
RankZephyr/FIRST data, or ``listwise build-train``), the propensity (``listwise propensity``,
Eq. 5) when a variant uses IPS, each variant's training, the first stage of every dataset on
its own (its lists, which every reranker of that dataset and first stage then reorders, and
their nDCG@10: Table 2's first-stage rows), ``listwise shuffle-eval`` for every dataset × first
stage × reranker a table or Fig. 5 holds, and ``listwise test`` (the 1…k curve) of every
reranker of Figs. 4 and 6 on the ``curves`` dataset. ``posbias study report``
(:mod:`hf_posbias.study.listwise_report`) writes the tables and figures with ``report.json``.

The spec's keys are :class:`~hf_posbias.study.listwise_spec.ListwiseStudySpec`'s.

Example:
    >>> spec = ListwiseStudySpec(name="t", datasets={"d": "folder"}, rerankers={"b": "bm25"})
    >>> [step.name for step in plan(spec, "out")]
    ['first-stage d bm25', 'shuffle-eval d bm25 b', 'curves b']
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.shards import differences, other_run_error, write_text_atomic
from hf_posbias.study.listwise_spec import (
    KIND,
    TRAINER_FIELDS,
    TRAINER_KEYS,
    VARIANT_PREFIX,
    ListwiseStudySpec,
    parse_variant,
    stage_slug,
)

if TYPE_CHECKING:
    from hf_posbias.study.run import DryRunLines

STUDY_FILE = "listwise_study.json"
DONE_FILE = "step_done.json"


def is_listwise_spec(path: str | Path) -> bool:
    """Whether a spec file says ``kind: listwise`` (False for the bi-encoder studies)."""
    from hf_posbias.study.spec import read_spec_text

    data = read_spec_text(path)
    return isinstance(data, dict) and data.get("kind") == KIND


# ---------------------------------------------------------------------- folders


def first_stage_folder(out: Path, dataset: str, stage: str | list[str]) -> Path:
    """The folder of a dataset's first stage on its own (its lists and their nDCG@10)."""
    return out / "first-stage" / dataset / stage_slug(stage)


def shuffle_folder(out: Path, dataset: str, stage: str | list[str], label: str) -> Path:
    """The ``shuffle-eval`` folder of a reranker on a dataset and first stage (the tables')."""
    return out / "shuffle" / dataset / stage_slug(stage) / label


def fig5_folder(spec: ListwiseStudySpec, out: Path, dataset: str, label: str) -> Path:
    """The ``shuffle-eval`` folder Fig. 5 reads: a table's own where it holds Fig. 5's
    shuffles, else one of Fig. 5's (``fig5_shuffles`` shuffled inputs per query)."""
    stage = spec.first_stages[0]
    if spec.fig5_m == spec.shuffles and _in_a_table(spec, dataset, stage, label):
        return shuffle_folder(out, dataset, stage, label)
    return out / "fig5" / dataset / stage_slug(stage) / label


def _in_a_table(spec: ListwiseStudySpec, dataset: str, stage: Any, label: str) -> bool:
    slug = stage_slug(stage)
    return any(
        label in t.rerankers and slug in {stage_slug(s) for s in t.first_stages}
        for t in spec.declared_tables().values()
    )


# ---------------------------------------------------------------------- steps


@dataclass
class Step:
    """One resumable step of a listwise study: its name, folder and what it runs.

    ``params`` is what the step's marker records (a verb's settings as a plain mapping), so a
    rerun with other settings runs the step again. ``lists_from`` is the first-stage step's
    folder whose ``first_stage.json`` this step's reranker reorders: it is copied in before the
    step runs, and the verb's own cache key decides whether it serves (the same dataset, first
    stage, k and queries) or is recomputed.
    """

    name: str
    folder: Path
    params: dict[str, Any]
    run: Callable[[], Any] = field(repr=False)
    settings: Any = field(default=None, repr=False)
    """The settings object the step runs with (``None`` for the training set)."""
    lists_from: Path | None = None

    def done(self) -> bool:
        marker = self.folder / DONE_FILE
        if not marker.is_file():
            return False
        recorded = json.loads(marker.read_text())
        return recorded == _jsonable(self.params)

    def mark_done(self) -> None:
        write_text_atomic(self.folder / DONE_FILE, json.dumps(_jsonable(self.params), indent=1))

    def seed_lists(self) -> None:
        """Copy the first-stage step's lists in, unless the folder has lists of its own."""
        import shutil

        from hf_posbias.listwise.experiments.lists import FIRST_STAGE_FILE

        if self.lists_from is None or (self.folder / FIRST_STAGE_FILE).is_file():
            return
        if (self.lists_from / FIRST_STAGE_FILE).is_file():
            shutil.copyfile(self.lists_from / FIRST_STAGE_FILE, self.folder / FIRST_STAGE_FILE)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _step(
    name: str, folder: Path, settings: Any, run: Callable[[], Any], lists_from: Path | None = None
) -> Step:
    from hf_posbias.settings import settings_record

    return Step(name, folder, settings_record(settings), run, settings, lists_from)


def _list_values(spec: ListwiseStudySpec) -> dict[str, Any]:
    """The list settings every listing step shares (first stage, k, queries)."""
    values = {"k": spec.k, "seed": spec.seed, "progress": False, "rrf_k": spec.rrf_k}
    values |= {"max_queries": spec.max_queries}
    if spec.first_stage_similarity:
        values["first_stage_similarity"] = spec.first_stage_similarity
    return values


def _rerank_values(spec: ListwiseStudySpec) -> dict[str, Any]:
    """The list and reranker settings every reranking step shares."""
    values = {"window": spec.window, "step": spec.step, "dtype": spec.dtype}
    values |= {"n_resamples": spec.n_resamples, "passage_tokens": spec.passage_tokens}
    return _list_values(spec) | values


def _reranker_path(model: str, out: Path) -> str:
    if model.startswith(VARIANT_PREFIX):
        return str(out / "train" / model.removeprefix(VARIANT_PREFIX))
    return model


def _rerank(settings: Any) -> Callable[[], Any]:
    """Run ``settings``' ``posbias listwise`` verb as the verb does: its runner is the one of
    the settings' class (imported here, so the import graph shows what a study runs)."""

    def run() -> Any:
        from hf_posbias.listwise.experiments.controlled import run_controlled_test
        from hf_posbias.listwise.experiments.experiment_settings import (
            ListwiseTestSettings,
            PropensitySettings,
            ShuffleEvalSettings,
        )
        from hf_posbias.listwise.experiments.propensity import run_propensity
        from hf_posbias.listwise.experiments.runs import load_task_and_reranker
        from hf_posbias.listwise.experiments.shuffle import run_shuffle_eval

        runner = {
            PropensitySettings: run_propensity,
            ShuffleEvalSettings: run_shuffle_eval,
            ListwiseTestSettings: run_controlled_test,
        }[type(settings)]
        task, reranker, out = load_task_and_reranker(settings)
        return runner(reranker, task, out, settings, show_progress=False)

    return run


def _first_stage_eval(settings: Any) -> Callable[[], Any]:
    def run() -> Any:
        from hf_posbias.listwise.experiments.firststage_eval import run_first_stage_eval

        return run_first_stage_eval(settings)

    return run


def _unset_removed(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the unset ones: a setting the spec leaves out is the verb's own."""
    return {key: value for key, value in values.items() if value is not None}


def training_task(spec: ListwiseStudySpec) -> str:
    """The task folder whose train split the propensity (and build-train) reads."""
    return str(spec.training.get("task") or next(iter(spec.datasets.values())))


def _training_steps(spec: ListwiseStudySpec, out: Path) -> list[Step]:
    if not spec.variants:
        return []
    from hf_posbias.listwise.experiments.experiment_settings import (
        ConvertSettings,
        PropensitySettings,
    )
    from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings
    from hf_posbias.settings import settings_from_values

    t = spec.training
    k = int(t.get("k", spec.k))
    train_task = training_task(spec)
    steps = []
    if t.get("data"):  # a training set already made
        data = Path(str(t["data"]))
    elif t.get("convert"):  # RankZephyr / FIRST data as published
        data = out / "train" / "data"
        convert = ConvertSettings(data=str(t["convert"]), out=str(data))
        steps.append(_step("convert", data, convert, _convert(convert)))
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
            **_unset_removed({
                "reranker": str(t.get("propensity_reranker", spec.training["base"])),
                "task": train_task, "split": "train", "k": k, "window": k, "seed": spec.seed,
                "progress": False, "shuffles": t.get("propensity_shuffles"),
                "dtype": spec.dtype, "smoothing": t.get("smoothing"), "out": str(propensity),
                "passage_tokens": spec.passage_tokens,
                "first_stage": t.get("propensity_first_stage"),
                # Q26 §5 estimates ω on 3,000 queries, fewer than the 5K it trains on
                "max_queries": t.get("propensity_queries", t.get("max_queries")),
            }),
        )  # fmt: skip
        steps.append(_step("propensity", propensity, settings, _rerank(settings)))
    for variant in spec.variants:
        augmentation, ips, lm = parse_variant(variant)
        folder = out / "train" / variant
        values: dict[str, Any] = {
            "model": str(t["base"]), "data": str(data), "out": str(folder), "window": k,
            "seed": spec.seed, "progress": False, "passage_tokens": spec.passage_tokens,
            "lm_loss": lm,
            **{TRAINER_FIELDS.get(key, key): t.get(key) for key in TRAINER_KEYS},
            # a number or auto, a string field as its flag is
            "mini_batch_size": None if t.get("mini_batch_size") is None
            else str(t["mini_batch_size"]),
        }  # fmt: skip
        if augmentation != "none":
            if t.get("groups") is None:
                raise InputError(
                    f"variant {variant} augments its windows: training needs groups (Pos-Aug's n)"
                )
            values |= {"pos_aug": t["groups"], "augmentation": augmentation}
        if ips:
            values["propensity"] = str(propensity / "propensity.json")
            values["ips_normalization"] = spec.ips_normalization
        settings = settings_from_values(ListwiseTrainingSettings, **_unset_removed(values))
        steps.append(_step(f"train {variant}", folder, settings, _train(settings)))
    return steps


def _build_train(task: str, k: int, seed: int, max_queries: Any, out: Path) -> Callable[[], Any]:
    def run() -> Any:
        from hf_posbias.listwise.experiments.experiment_settings import BuildTrainSettings
        from hf_posbias.listwise.training.trainset import build_train_set

        return build_train_set(
            BuildTrainSettings(
                task=task, split="train", k=k, seed=seed, max_queries=max_queries,
                out=str(out), progress=False,
            )
        )  # fmt: skip

    return run


def _convert(settings: Any) -> Callable[[], Any]:
    def run() -> Any:
        from hf_posbias.listwise.training.trainset import convert_train_set

        return convert_train_set(settings)

    return run


def _train(settings: Any) -> Callable[[], Any]:
    def run() -> Any:
        from hf_posbias.listwise.training.train import train_listwise

        return train_listwise(settings)

    return run


def reranked(spec: ListwiseStudySpec) -> list[tuple[str, Any, str, Path, int]]:
    """Every ``shuffle-eval`` the study runs: ``(dataset, first stage, reranker, folder,
    shuffles)``, the tables' then Fig. 5's own, each once."""
    out = Path("")  # folders relative to the study folder; plan() prefixes them
    runs: dict[Path, tuple[str, Any, str, Path, int]] = {}
    for dataset in spec.datasets:
        for stage in spec.first_stages:
            for label in spec.evaluated():
                if _in_a_table(spec, dataset, stage, label):
                    folder = shuffle_folder(out, dataset, stage, label)
                    runs[folder] = (dataset, stage, label, folder, spec.shuffles)
    for dataset in spec.fig5_sets:
        for label in spec.fig5_pair:
            folder = fig5_folder(spec, out, dataset, label)
            runs.setdefault(folder, (dataset, spec.first_stages[0], label, folder, spec.fig5_m))
    return list(runs.values())


def plan(spec: ListwiseStudySpec, out: str | Path) -> list[Step]:
    """Every step of the study, in the order they run (training, first stages, shuffles,
    curves), each with the settings object of the ``posbias listwise`` verb it runs."""
    from hf_posbias.listwise.experiments.experiment_settings import (
        FirstStageEvalSettings,
        ListwiseTestSettings,
        ShuffleEvalSettings,
    )
    from hf_posbias.settings import settings_from_values

    out = Path(out)
    steps = _training_steps(spec, out)
    runs = reranked(spec)
    stages: dict[tuple[str, str], Any] = {}
    for dataset, stage, *_ in runs:
        stages.setdefault((dataset, stage_slug(stage)), stage)
    for table in spec.declared_tables().values():
        if table.first_stage_rows:
            for dataset in spec.datasets:
                for stage in table.first_stages:
                    stages.setdefault((dataset, stage_slug(stage)), stage)
    if spec.curve_rerankers():
        stages.setdefault((spec.curves_dataset, stage_slug(spec.first_stages[0])),
                          spec.first_stages[0])  # fmt: skip
    listing = _list_values(spec)
    for dataset, folder in spec.datasets.items():
        for stage in spec.first_stages:
            if (dataset, stage_slug(stage)) not in stages:
                continue
            target = first_stage_folder(out, dataset, stage)
            settings = settings_from_values(
                FirstStageEvalSettings, task=folder, split=spec.split_of(dataset),
                first_stage=stage, out=str(target), **listing,
            )  # fmt: skip
            name = f"first-stage {dataset} {stage_slug(stage)}"
            steps.append(_step(name, target, settings, _first_stage_eval(settings)))
    shared = _rerank_values(spec)
    for dataset, stage, label, relative, shuffles in runs:
        target = out / relative
        settings = settings_from_values(
            ShuffleEvalSettings,
            reranker=_reranker_path(spec.model_of(label), out), task=spec.datasets[dataset],
            **(shared | spec.options_of(label)), first_stage=stage, shuffles=shuffles,
            aggregate=spec.aggregate, method=spec.test, out=str(target),
            split=spec.split_of(dataset),
        )  # fmt: skip
        kind = "shuffle-eval" if relative.parts[0] == "shuffle" else "fig5 shuffle-eval"
        name = f"{kind} {dataset} {stage_slug(stage)} {label}"
        lists = first_stage_folder(out, dataset, stage)
        steps.append(_step(name, target, settings, _rerank(settings), lists))
    curves_task = spec.datasets[spec.curves_dataset]
    for label in spec.curve_rerankers():
        target = out / "curves" / label
        settings = settings_from_values(
            ListwiseTestSettings,
            reranker=_reranker_path(spec.model_of(label), out), task=curves_task,
            **(shared | spec.options_of(label)), first_stage=spec.first_stages[0], out=str(target),
            split=spec.split_of(spec.curves_dataset),
        )  # fmt: skip
        lists = first_stage_folder(out, spec.curves_dataset, spec.first_stages[0])
        steps.append(_step(f"curves {label}", target, settings, _rerank(settings), lists))
    return steps


def check_datasets(spec: ListwiseStudySpec) -> None:
    """Every dataset reads and has judged queries: one line if not."""
    from hf_posbias.listwise.experiments.taskio import check_split_queries, load_rerank_task

    for name, folder in spec.datasets.items():
        try:
            task = load_rerank_task(folder, spec.split_of(name))
        except InputError as err:
            raise InputError(f"dataset {name!r}: {err}") from None
        check_split_queries([name, Path(folder).name], task.split, len(task.judged_queries()))


def stage_name(stage: str | list[str], rrf_k: int) -> str:
    """A first stage as the dry run and the report name it.

    Example:
        >>> stage_name("bm25", 60), stage_name(["bm25", "splade++"], 60)
        ('bm25', 'RRF(bm25 + splade++, k=60)')
    """
    return stage if isinstance(stage, str) else f"RRF({' + '.join(stage)}, k={rrf_k})"


def _labels(labels: Sequence[str]) -> str:
    return ", ".join(labels) or "none"


def protocol_lines(spec: ListwiseStudySpec) -> list[str]:
    """What the study runs, as Q26 prints it and where the spec chose: datasets and splits, first
    stages, rerankers, sample sizes, each table's rows and marks, the figures, the training and
    its defaults (the dry run's head)."""
    from hf_posbias.listwise.experiments.firststage import FIRST_STAGE_ALIASES
    from hf_posbias.listwise.training.finetune_settings import DEFAULT_IPS_NORMALIZATION

    lines = [f"notes: {spec.notes}"] if spec.notes else []
    lines.append(f"datasets ({len(spec.datasets)}):")
    lines += [f"  {n}: {f} (split {spec.split_of(n) or 'test'})" for n, f in spec.datasets.items()]
    stages = [stage_name(s, spec.rrf_k) for s in spec.first_stages]
    aliases = {a: t for a, t in FIRST_STAGE_ALIASES.items() if any(a in s for s in stages)}
    named = "".join(f"; {a} is {t}" for a, t in aliases.items())
    lines.append(f"first stages: {', '.join(stages)}{named}")
    lines.append("rerankers:")
    for label in spec.evaluated():
        model, options = spec.model_of(label), spec.options_of(label)
        how = "".join(f", {key} {value}" for key, value in options.items())
        if model.startswith(VARIANT_PREFIX):
            model = f"trained variant {model.removeprefix(VARIANT_PREFIX)}"
        lines.append(f"  {label}: {model}{how}")
    queries = "every judged query" if spec.max_queries is None else f"{spec.max_queries} queries"
    lines.append(
        f"lists: the first stage's top {spec.k} of {queries} (seed {spec.seed}); sliding window "
        f"{spec.window}, step {spec.step}; {spec.shuffles} shuffled inputs per query; paired "
        f"{spec.test}, p < {spec.alpha}"
    )
    for name, table in spec.declared_tables().items():
        on = ", ".join(stage_name(s, spec.rrf_k) for s in table.first_stages)
        rows = "the first stages' own nDCG@10, then " if table.first_stage_rows else ""
        marks = _labels([f"{m} vs {label}" for label, m in table.marks.items()])
        lines.append(f"Table {name[-1]}: {rows}{_labels(table.rerankers)} on {on}; marks: {marks}")
    lines.append(
        f"Fig. 4: 1…{spec.k} curves of {_labels(spec.fig4_rerankers())} on {spec.curves_dataset}"
    )
    lines.append(
        f"Fig. 5: {' vs '.join(spec.fig5_pair)} on {', '.join(spec.fig5_sets)}, "
        f"{spec.fig5_m} shuffled inputs per query"
    )
    for letter, group in spec.fig6_panels().items():
        lines.append(f"Fig. 6{letter}: {_labels(group)}")
    if spec.variants:
        t = spec.training
        source = (
            f"data {t['data']}" if t.get("data") else f"convert {t['convert']}"
            if t.get("convert") else
            f"build-train of {training_task(spec)} (train split, "
            f"{t.get('max_queries') or 'every judged'} queries)"
        )  # fmt: skip
        lines.append(f"training: base {t['base']}; {source}")
        steps = _training_steps(spec, Path("<out>"))
        if any(parse_variant(v)[1] for v in spec.variants):
            lines.append(f"propensity (Eq. 5): {_step_line(steps, 'propensity')}")
        lines.append(f"trainer: {_step_line(steps, 'train ')}")
        how = spec.ips_normalization or DEFAULT_IPS_NORMALIZATION
        lines.append(f"IPS normalisation: {how} (paper = Eq. 4 as printed)")
    return lines


def _step_line(steps: Sequence[Step], prefix: str) -> str:
    """The settings of the first step named ``prefix…`` that a spec can set, as ``key value``."""
    step = next(s for s in steps if s.name.startswith(prefix))
    keys = {
        "propensity": ("reranker", "first_stage", "task", "split", "max_queries", "k", "shuffles",
                       "smoothing"),
        "train ": ("lam", "lr", "epochs", "max_steps", "global_batch", "mini_batch_size",
                   "precision", "neftune_alpha", "warmup_ratio", "pos_aug"),
    }[prefix]  # fmt: skip
    values = {key: step.params.get(key) for key in keys}
    return ", ".join(f"{key} {value}" for key, value in values.items() if value is not None)


def listwise_input_problems(spec: ListwiseStudySpec) -> list[str]:
    """Every input of a listwise study this machine cannot give its run: the dataset folders,
    the training task and set (``convert``: a file, or a Hub dataset cached or, online, on the
    Hub), every reranker that is not a variant the study trains, the training base and the
    propensity's reranker (each as ``posbias listwise`` resolves a reranker name: no weights
    loaded)."""
    from hf_posbias.modeling.hub_probe import missing_from_hub
    from hf_posbias.rerankers.loading import resolve_reranker_kind
    from hf_posbias.study.preflight import input_problem

    problems = []
    for name, folder in spec.datasets.items():
        if not Path(folder).expanduser().exists():
            problems.append(f"datasets: {name}: folder {folder} does not exist")
    training = spec.training if spec.variants else {}
    for key in ("task", "data"):
        folder = training.get(key)
        if folder and not Path(str(folder)).expanduser().exists():
            problems.append(f"training.{key}: folder {folder} does not exist")
    convert = str(training.get("convert") or "")
    if convert and not Path(convert).expanduser().exists():
        missing = missing_from_hub("training.convert", convert, "dataset")
        problems += [missing] if missing else []
    models = {f"rerankers: {label}": model for label, model in spec.evaluated().items()}
    if spec.variants:
        models["training.base"] = str(training["base"])
    if any(parse_variant(v)[1] for v in spec.variants):
        reranker = training.get("propensity_reranker", training.get("base"))
        models["training.propensity_reranker"] = str(reranker)
    for what, model in models.items():
        if not model.startswith(VARIANT_PREFIX):
            problems += input_problem(what, lambda m=model: resolve_reranker_kind(m))
    return problems


def listwise_dry_run_lines(spec: ListwiseStudySpec, out: str | Path) -> DryRunLines:
    """The plan: what the study runs (:func:`protocol_lines`), then one line per step,
    ``done`` where a finished step would be skipped, then a ``missing:`` line per input the run
    could not start without (:func:`listwise_input_problems`, also in the lines' ``problems``).
    """
    from hf_posbias.study.run import DryRunLines

    steps = plan(spec, out)
    lines = [f"listwise study {spec.name}: {len(steps)} step(s) into {out}"]
    lines += protocol_lines(spec)
    for step in steps:
        state = "done" if step.done() else "to run"
        lines.append(f"  [{state}] {step.name} → {step.folder}")
    problems = listwise_input_problems(spec)
    lines += [f"missing: {problem}" for problem in problems]
    return DryRunLines(lines, None, problems)


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
    from hf_posbias.study.preflight import StudyInputError

    out = Path(out)
    problems = listwise_input_problems(spec)
    if problems:
        raise StudyInputError(problems)
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
        step.seed_lists()
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
