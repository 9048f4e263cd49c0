"""The study spec: one settings dataclass, read from a YAML or JSON file, overridable by flags.

Top-level keys (every one a field of :class:`StudySpec`): ``bases``, ``configs``, ``poolings``,
``data``, ``tasks``, ``training`` (a mapping of
:class:`~hf_posbias.training.settings.TrainingSettings` fields by name, e.g. ``max_steps: 3``),
``bootstrap``, ``hub_org``, ``seed``, ``off_the_shelf``, ``remedies`` with ``passage_tokens``,
``stride``, ``segments`` (inference-time remedies evaluated on each untrained base: rows
``base +<remedy>``). The paper's study is ``studies/yhp26.yaml``.

Example:
    >>> spec = StudySpec(bases=["bert-base"], data="d", tasks=["SQuAD-PosQ"],
    ...                  training={"max_steps": 3})
    >>> spec.configs, training_argv(spec)
    (['begin', 'middle', 'end', 'uniform'], ['--seed', '42', '--max-steps', '3'])
    >>> StudySpec(bases=["bert-base"], data="d", tasks=["t"], configs=["sideways"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: --configs: unknown configuration 'sideways' (begin, ...)
    >>> StudySpec(bases=["bert-base"], data="d", tasks=["t"], remedies=["maxq"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: --remedies must be one of maxp, firstp, ..., got 'maxq'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError, PosbiasError
from hf_posbias.evaluation.runs.remedies import (
    BIENCODER_REMEDIES,
    PassageSettings,
    get_remedy,
    remedy_names,
)
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.rows import read_json
from hf_posbias.sampling import PAPER_CONFIG_NAMES
from hf_posbias.settings import check_choice, check_positive, flag_name, setting, settings_record

SPEC_FILE = "study.json"
"""The spec a study folder was run with (its identity: a rerun must match it)."""
RUN_FIELDS = ("model", "config", "data", "out", "pooling")
"""Training settings the study sets per run (not allowed under ``training``)."""
IDENTITY_FIELDS = ("bases", "configs", "poolings", "data", "tasks", "training", "seed")
"""What makes two specs the same study (``bootstrap``/``hub_org`` may change on a rerun, and
``remedies`` and the passage settings: they change no trained model, a rerun only evaluates the
remedy rows it lacks, and the evaluation markers name the remedy's settings, so a changed setting
re-evaluates that remedy's rows)."""


@dataclass(kw_only=True)
class StudySpec(PassageSettings, ExecutorSettings):
    """Which bases, configurations, training data, tasks and settings make up one study.

    The passage settings (``passage_tokens``, ``stride``, ``segments``) are those of
    :class:`~hf_posbias.evaluation.runs.remedies.PassageSettings`, read by ``remedies``; the
    executor settings (``executor``, ``ray_address``, …) those of
    :class:`~hf_posbias.executors.options.ExecutorSettings`: where the units of work run.
    """

    bases: list[str] = setting(
        "base models: registry short names, local folders or Hub ids", default_factory=list
    )
    configs: list[str] = setting(
        "training configurations: begin middle end uniform, any b:m:e, ips",
        default_factory=lambda: list(PAPER_CONFIG_NAMES),
    )
    poolings: list[str] = setting(
        "pooling axis (the pooling ablation): train and evaluate every base with each pooling; "
        "empty = each base's own pooling",
        default_factory=list,
    )
    data: str = setting(
        "training data: a `posbias build`/`sample` folder or a Hub repo id", default=""
    )
    tasks: list[str] = setting(
        "evaluation tasks: registered task names or task folders", default_factory=list
    )
    training: dict[str, Any] = setting(
        "TrainingSettings fields by name for every run (e.g. max_steps: 3)",
        default_factory=dict,
        cli=False,
    )
    bootstrap: int = setting("bootstrap resamples of every interval and test", default=1000)
    hub_org: str | None = setting(
        "push checkpoints and results under this Hub organisation", default=None
    )
    seed: int = setting("seed of training (unless training sets one) and bootstrap", default=42)
    off_the_shelf: bool = setting(
        "also evaluate each base with its own settings (as published), next to the base with "
        "the checkpoints' settings",
        default=False,
    )
    remedies: list[str] = setting(
        "inference-time remedies evaluated on each untrained base (rows `base +<remedy>`, with "
        "--passage-tokens/--stride/--segments; no retraining): " + ", ".join(BIENCODER_REMEDIES),
        default_factory=list,
        choices=remedy_names,
    )

    @property
    def uses_passages(self) -> bool:
        """Whether a remedy of the study cuts passages (``stride`` is checked only then)."""
        return any(get_remedy(r).cuts_passages for r in self.remedies)

    def __post_init__(self) -> None:
        from hf_posbias.sampling import PositionConfig
        from hf_posbias.training.models import POOLINGS

        self.bases, self.configs = list(self.bases), list(self.configs)
        self.poolings, self.tasks = list(self.poolings), list(self.tasks)
        for name, values in (("bases", self.bases), ("configs", self.configs)):
            if not values:
                raise InputError(f"{flag_name(name)}: the study names no {name[:-1]}")
        if not self.tasks:
            raise InputError(f"{flag_name('tasks')}: the study names no evaluation task")
        if not self.data:
            raise InputError(f"{flag_name('data')}: the study names no training data")
        for config in self.configs:
            if config == "ips":
                continue
            try:
                PositionConfig.parse(config)
            except InputError:
                raise InputError(
                    f"{flag_name('configs')}: unknown configuration {config!r} (begin, middle, "
                    "end, uniform, any b:m:e, or ips)"
                ) from None
        for pooling in self.poolings:
            if pooling not in POOLINGS:
                raise InputError(
                    f"{flag_name('poolings')}: unknown pooling {pooling!r} ({', '.join(POOLINGS)})"
                )
        if not isinstance(self.training, Mapping):
            raise InputError("training: must be a mapping of training settings by name")
        self.training = dict(self.training)
        _check_training_keys(self.training)
        check_positive(self, "bootstrap")
        self.remedies = list(self.remedies)
        for remedy in self.remedies:
            check_choice("remedies", remedy, remedy_names())
        if len(set(self.remedies)) < len(self.remedies):
            raise InputError(f"{flag_name('remedies')}: a remedy is named twice")
        super().__post_init__()

    def identity(self) -> dict[str, Any]:
        """The fields that make two specs the same study."""
        record = settings_record(self)
        return {name: record[name] for name in IDENTITY_FIELDS}


def _check_training_keys(training: Mapping[str, Any]) -> None:
    from hf_posbias.training.settings import TrainingSettings

    known = {f.name for f in dataclasses.fields(TrainingSettings) if f.init}
    for key in training:
        if key in RUN_FIELDS:
            raise InputError(
                f"training: {key!r} is set by the study per run (use bases/configs/poolings/data)"
            )
        if key not in known:
            raise InputError(
                f"training: unknown training setting {key!r} "
                f"(known: {', '.join(sorted(known - set(RUN_FIELDS)))})"
            )


def training_argv(spec: StudySpec) -> list[str]:
    """The training flags every run of ``spec`` gets (its ``training`` mapping + the seed)."""
    argv: list[str] = []
    training = {"seed": spec.seed, **spec.training}
    for key, value in training.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + key.replace("_", "-"))
        elif value is not None:
            argv += [flag, str(value)]
    return argv


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The mapping of a YAML (``.yaml``/``.yml``) or JSON spec file; unknown keys refused."""
    target = Path(path)
    if not target.is_file():
        raise InputError(f"study spec {target} not found")
    text = target.read_text()
    try:
        if target.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as err:  # any parse failure is the user's file
        raise InputError(f"{target}: not a valid spec file ({str(err).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{target}: a study spec is a mapping of {', '.join(_field_names())}")
    unknown = sorted(set(data) - set(_field_names()))
    if unknown:
        raise InputError(
            f"{target}: unknown key(s) {', '.join(unknown)} (known: {', '.join(_field_names())})"
        )
    return data


def _field_names() -> list[str]:
    """The spec's keys, its own first (the passage settings it inherits last)."""
    names = [f.name for f in dataclasses.fields(StudySpec)]
    inherited = {f.name for f in dataclasses.fields(PassageSettings)}
    inherited |= {f.name for f in dataclasses.fields(ExecutorSettings)}
    return [n for n in names if n not in inherited] + [n for n in names if n in inherited]


def load_spec(path: str | Path, overrides: Mapping[str, Any] | None = None) -> StudySpec:
    """The spec of ``path`` with ``overrides`` (flags given on the command line; ``None`` values
    mean "not given") applied on top."""
    data = read_spec_file(path)
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return StudySpec(**data)
    except TypeError as err:  # e.g. a list where a number belongs
        raise InputError(f"{path}: {err}") from None


def spec_from_folder(out: str | Path) -> StudySpec:
    """The spec a study folder was run with (``<out>/study.json``)."""
    target = Path(out) / SPEC_FILE
    if not target.is_file():
        raise InputError(f"{out}: not a study folder (no {SPEC_FILE}; run `posbias study run`)")
    return StudySpec(**read_json(target)["spec"])


def check_inputs(spec: StudySpec, out: str | Path | None, hub_token: str | None = None) -> None:
    """Every check that needs no model, before anything trains or evaluates (one line each).

    Unknown base or task, training data lacking a configuration, a Hub org without a token, an
    output folder holding another study.
    """
    from hf_posbias.tasks.mteb_tasks import get_task
    from hf_posbias.training.models import get_model_spec

    for base in spec.bases:
        try:
            get_model_spec(base)
        except PosbiasError as err:
            if "/" in base and not Path(base).expanduser().exists():
                continue  # a Hub id: resolved when its run starts
            raise InputError(f"bases: {err}") from None
    for task in spec.tasks:
        get_task(task)
    if Path(spec.data).expanduser().is_dir():
        from hf_posbias.training.train import resolve_repo_config

        for config in spec.configs:
            resolve_repo_config(spec.data, config)
    if spec.hub_org:
        from hf_posbias.hub import resolve_token

        resolve_token(hub_token, purpose=f"hub_org {spec.hub_org}", flag="--hub-token")
    if out is not None:
        check_out_folder(spec, out)


def check_out_folder(spec: StudySpec, out: str | Path) -> None:
    """Refuse an output folder that holds another study (or other files)."""
    folder = Path(out)
    target = folder / SPEC_FILE
    if target.is_file():
        previous = StudySpec(**read_json(target)["spec"]).identity()
        if previous != spec.identity():
            changed = [k for k in previous if previous[k] != spec.identity()[k]]
            raise InputError(
                f"{folder} holds another study (different {', '.join(changed)}): use another "
                f"{flag_name('out')}"
            )
    elif folder.is_dir() and any(folder.iterdir()):
        raise InputError(
            f"{folder} is not empty and holds no study: use another {flag_name('out')}"
        )


def save_spec(spec: StudySpec, out: str | Path) -> Path:
    """Write ``<out>/study.json`` (the spec, secrets removed)."""
    target = Path(out) / SPEC_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"spec": settings_record(spec)}, indent=2, sort_keys=True) + "\n")
    return target
