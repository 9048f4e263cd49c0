"""Where a study keeps what: its models, their folders, its tasks and the evaluation markers.

Shared by :mod:`~hf_posbias.study.run`, :mod:`~hf_posbias.study.report` and
:mod:`~hf_posbias.study.publish` (see ``docs/study.md`` for the folder layout).

Example:
    >>> from hf_posbias.study.spec import StudySpec
    >>> spec = StudySpec(bases=["bert-base", "gpt2-medium"], data="d", tasks=["SQuAD-PosQ"])
    >>> [m.name for m in study_models(spec, "out")][:3]
    ['posbias-bert-base-base', 'posbias-bert-base-begin', 'posbias-bert-base-middle']
    >>> spec = StudySpec(bases=["bert-base"], data="d", tasks=["t"], remedies=["maxp"])
    >>> [(m.name, m.config) for m in study_models(spec, "out")][1]
    ('posbias-bert-base-base-maxp', 'base +maxp')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.evaluation.runs.remedies import remedy_label
from hf_posbias.rows.readers import read_json
from hf_posbias.study.spec import StudySpec, training_values

if TYPE_CHECKING:
    from hf_posbias.training.matrix import Run
    from hf_posbias.training.training_settings import TrainingSettings

BASE_CONFIG = "base"
OFF_THE_SHELF = "off-the-shelf"
BASE_MARKER = "posbias_study_base.json"
EVAL_MARKER = "posbias_study_eval.json"


@dataclass(frozen=True)
class StudyModel:
    """One model of the study: a checkpoint to train or an untrained base."""

    base: str
    config: str
    pooling: str | None
    folder: str
    """The model folder (for ``off-the-shelf``: the model argument of ``posbias evaluate``)."""
    remedy: str | None = None
    """An inference-time remedy the model is evaluated with (config ``base +<remedy>``: the
    untrained base's folder behind the remedy)."""

    @property
    def name(self) -> str:
        """``posbias-<base>-<config>[-<pooling>]`` (the folder name under ``eval/``)."""
        from hf_posbias.training.matrix import run_name

        return run_name(self.base, self.config, self.pooling)

    @property
    def trained(self) -> bool:
        """Whether this model is a checkpoint the study trains."""
        return self.config not in (BASE_CONFIG, OFF_THE_SHELF) and self.remedy is None

    @property
    def run(self) -> Run:
        """The training run that makes this model (:class:`hf_posbias.training.matrix.Run`)."""
        from hf_posbias.training.matrix import Run

        return Run(self.base, self.config, self.folder, self.pooling)


def run_settings(spec: StudySpec, model: StudyModel, *, progress: bool = True) -> TrainingSettings:
    """The training settings of ``model``'s run: its base, configuration, folder and pooling on
    the spec's data, with the spec's seed and ``training`` mapping
    (:func:`~hf_posbias.study.spec.training_values`); ``progress=False``: no step bar.

    Example:
        >>> spec = StudySpec(bases=["bert-base"], configs=["begin"], data="d", tasks=["t"],
        ...                  training={"max_steps": 3})
        >>> model = study_models(spec, "o")[-1]
        >>> s = run_settings(spec, model, progress=False)
        >>> s.model, s.config, s.out, s.max_steps, s.seed, s.progress
        ('bert-base', 'begin', 'o/models/posbias-bert-base-begin', 3, 42, False)
    """
    values = training_values(spec)
    if not progress:
        values["progress"] = False
    return model.run.settings(spec.data, **values)


def split_remedy(config: str) -> tuple[str, str | None]:
    """``(configuration, remedy or None)`` of a configuration label (the inverse of
    :func:`hf_posbias.evaluation.runs.remedies.remedy_label`, which names remedy rows).

    Example:
        >>> split_remedy("base +maxp"), split_remedy("uniform")
        (('base', 'maxp'), ('uniform', None))
    """
    plain, _, remedy = config.partition(" +")
    return plain, remedy or None


def study_models(spec: StudySpec, out: str | Path) -> list[StudyModel]:
    """Every model of the study, base-major: the base (then the base under each remedy, then
    off-the-shelf), then its runs."""
    from hf_posbias.training.matrix import expand_runs, run_name

    if not spec.train:  # evaluation only: each base as published
        return [StudyModel(b, OFF_THE_SHELF, None, published_model(b)) for b in spec.bases]
    root = Path(out)
    poolings: list[str | None] = list(spec.poolings) or [None]
    models = []
    for base in spec.bases:
        for pooling in poolings:
            folder = root / "bases" / run_name(base, BASE_CONFIG, pooling)
            models.append(StudyModel(base, BASE_CONFIG, pooling, str(folder)))
            for remedy in spec.remedies:
                config = remedy_label(BASE_CONFIG, remedy)
                models.append(StudyModel(base, config, pooling, str(folder), remedy))
        if spec.off_the_shelf:
            models.append(StudyModel(base, OFF_THE_SHELF, None, published_model(base)))
        for run in expand_runs([base], spec.configs, root / "models", poolings):
            models.append(StudyModel(base, run.config, run.pooling, run.out_dir))
    return models


def base_label(base: str) -> str:
    """The name a base goes by in reports: its spec's name (what a checkpoint's card records).

    Example:
        >>> base_label("bert-base"), base_label("someone/new-model")
        ('bert-base', 'someone/new-model')
    """
    from hf_posbias.errors import PosbiasError
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.modeling.resolve import model_display_name

    try:
        return get_model_spec(base).name
    except PosbiasError:
        return model_display_name(base)


def published_model(base: str) -> str:
    """The model argument of ``posbias evaluate`` for a base as published (a registered base:
    its checkpoint).

    Example:
        >>> published_model("bert-base"), published_model("acme/model")
        ('google-bert/bert-base-uncased', 'acme/model')
    """
    from hf_posbias.modeling.bases import model_names

    if base in model_names():
        from hf_posbias.modeling.bases import get_model_spec

        return get_model_spec(base).checkpoint
    return base


METADATA_FILES = frozenset({"README.md", "posbias_training.json", BASE_MARKER})
"""Files of a model folder that are not the model: the card and its facts (publishing rewrites
them; the evaluation stands)."""


def model_fingerprint(model: StudyModel) -> str:
    """Content hash of a local model folder (weights, config, tokenizer; not the card); the
    model argument itself for a model that is not a local folder."""
    from hf_posbias.hashing import folder_digest
    from hf_posbias.modeling.resolve import model_location

    path = Path(model_location(model.folder))
    if not path.is_dir():
        return model.folder
    names = sorted(
        p.relative_to(path).as_posix()
        for p in path.rglob("*")
        if p.is_file()
        and p.name not in METADATA_FILES
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    return folder_digest(path, names=names, sample_bytes=4 << 20)[:12]


@dataclass(frozen=True)
class StudyTask:
    """An evaluation task of the study, resolved to its folder and fingerprint."""

    spec: str
    name: str
    folder: str
    fingerprint: str
    """The task data's fingerprint, plus ``/<scoring>`` under a protocol other than the
    default (so a changed protocol re-evaluates)."""
    scoring: str = "default"
    """The ``posbias evaluate --scoring`` protocol (:mod:`hf_posbias.study.protocol`)."""
    bases: tuple[str, ...] | None = None
    """The bases of the spec the task runs on (``None``: all)."""

    def runs_on(self, base: str) -> bool:
        """Whether the models of ``base`` are evaluated on this task."""
        return self.bases is None or base in self.bases


def resolve_tasks(specs: Sequence[Any]) -> list[StudyTask]:
    """Load every task once (fails fast, one line) and fingerprint its data; ``specs`` are the
    spec's ``tasks`` entries (a folder of per-domain task folders is one task per domain)."""
    from hf_posbias.evaluation.runs.runner import load_tasks
    from hf_posbias.study.protocol import expand_domains, parse_task_entry

    entries = [part for spec in specs for part in expand_domains(parse_task_entry(spec))]
    out = []
    for entry, task in zip(entries, load_tasks([e.task for e in entries]), strict=True):
        fingerprint = str(task.metadata.revision)
        if entry.evaluate_scoring != "default":
            fingerprint += f"/{entry.evaluate_scoring}"
        out.append(
            StudyTask(
                entry.task,
                task.metadata.name,
                str(task.folder),
                fingerprint,
                scoring=entry.evaluate_scoring,
                bases=entry.bases,
            )
        )
    return out


def eval_dir(out: str | Path, model: StudyModel, task: StudyTask) -> Path:
    """``<out>/eval/<model>/<task>/``: one ``posbias evaluate`` run folder."""
    from hf_posbias.evaluation.runs.exports import safe_name

    return Path(out) / "eval" / model.name / safe_name(task.name)


def evaluation_fingerprint(model: StudyModel, spec: StudySpec) -> str:
    """What an evaluation of ``model`` depends on: its :func:`model_fingerprint`, plus for a
    remedy row the remedy and the settings it reads (``+maxp/128/64``)."""
    fingerprint = model_fingerprint(model)
    if model.remedy is None:
        return fingerprint
    return f"{fingerprint}+{spec.remedy_settings(model.remedy).key}"


def evaluation_done(folder: Path, model_fp: str, task: StudyTask) -> bool:
    """Whether ``folder`` holds this model's evaluation on this task's data (``model_fp``: its
    :func:`evaluation_fingerprint`)."""
    marker = folder / EVAL_MARKER
    if not marker.is_file():
        return False
    data = read_json(marker)
    return data.get("model_fingerprint") == model_fp and data.get("task_fingerprint") == (
        task.fingerprint
    )
