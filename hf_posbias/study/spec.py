"""The study spec: one settings dataclass, read from a YAML or JSON file, overridable by flags.

Top-level keys (every one a field of :class:`StudySpec`): ``bases``, ``configs``, ``poolings``,
``data``, ``tasks``, ``training`` (a mapping of
:class:`~hf_posbias.training.training_settings.TrainingSettings` fields by name, e.g.
``max_steps: 3``), ``bootstrap``, ``hub_org``, ``seed``, ``off_the_shelf``, ``remedies`` with
``passage_tokens``, ``stride``, ``segments`` (inference-time remedies evaluated on each untrained
base: rows ``base +<remedy>``), ``analyses`` with ``analysis_pairs``, ``analysis_corpus`` (the
segment profile's document samples, :class:`ProfileSample`), ``analysis_limit``, ``analysis_slots``
(YHP26's representation analyses on every model: :mod:`hf_posbias.study.analyses`), ``train``
(false: evaluation only) and ``scoring`` (the protocol of every task entry that pins none). An entry
of ``tasks`` may pin its protocol — scoring, buckets, the bases it runs on
(:mod:`hf_posbias.study.protocol`). YHP26's study is ``studies/yhp26.yaml``.

Example:
    >>> spec = StudySpec(bases=["bert-base"], data="d", tasks=["SQuAD-PosQ"],
    ...                  training={"max_steps": 3})
    >>> spec.configs, training_values(spec)
    (['begin', 'middle', 'end', 'uniform'], {'seed': 42, 'max_steps': 3})
    >>> StudySpec(bases=["bert-base"], data="d", tasks=["t"], configs=["sideways"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.study.spec.SpecError: --configs: unknown configuration 'sideways' (begin, ...)
    >>> StudySpec(bases=["bert-base"], data="d", tasks=["t"], remedies=["maxq"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.study.spec.SpecError: --remedies: must be one of maxp, firstp, ..., got 'maxq' ...
    >>> StudySpec(bases=["bert-base"], data="d", tasks=["t"], analyses=["reversals"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.study.spec.SpecError: --analyses: must be one of reversal, ..., got 'reversals' ...
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError, first_line
from hf_posbias.evaluation.evaluation_settings import scoring_schemes, scoring_setting
from hf_posbias.evaluation.runs.remedies import (
    PassageSettings,
    get_remedy,
    remedy_names,
)
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.rows.readers import read_json
from hf_posbias.sampling.configs import PAPER_CONFIG_NAMES
from hf_posbias.setting_values import KeyPath, at_least, key_path
from hf_posbias.settings import (
    declared_range,
    flag_name,
    range_problems,
    setting,
    settings_record,
    shared_setting,
    value_problems,
)
from hf_posbias.shards import differences, other_run_error, write_text_atomic
from hf_posbias.suggestions import suggest

if TYPE_CHECKING:
    from hf_posbias.modeling.resolve import ModelSettings

SPEC_FILE = "study.json"
"""The spec a study folder was run with (its identity: a rerun must match it)."""
RUN_FIELDS = ("model", "config", "data", "out", "pooling")
"""Training settings the study sets per run (not allowed under ``training``)."""
IDENTITY_FIELDS = (
    "bases",
    "configs",
    "poolings",
    "data",
    "tasks",
    "training",
    "seed",
    "standard",
    "exclude_truncated",
    "train",
    "scoring",
)
"""What makes two specs the same study (``bootstrap``/``hub_org`` may change on a rerun, and
``remedies`` and the passage settings: they change no trained model, a rerun only evaluates the
remedy rows it lacks, and the evaluation markers name the remedy's settings, so a changed setting
re-evaluates that remedy's rows; likewise ``analyses`` and their settings)."""
ANALYSES = ("reversal", "evidence-moving", "segment-profile")
"""The analyses a study runs on every checkpoint and untrained base
(:mod:`hf_posbias.study.analyses`)."""


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
        "training data: a `posbias data build`/`sample` folder or a Hub repo id", default=""
    )
    tasks: list[str | dict[str, Any]] = setting(
        "evaluation tasks: registered task names or task folders (in a spec file also a mapping "
        "{task, scoring, buckets, bases}: hf_posbias.study.protocol)",
        default_factory=list,
    )
    standard: list[str] = setting(
        "standard retrieval tasks (YHP26's Table 4: `posbias benchmark build beir|msmarco|trec-dl` "
        "folders, plain BEIR/MS MARCO folders or task names), evaluated on every model",
        default_factory=list,
    )
    exclude_truncated: bool = shared_setting(
        "exclude_truncated",
        default=False,
    )
    training: dict[str, Any] = setting(
        "TrainingSettings fields by name for every run (e.g. max_steps: 3)",
        default_factory=dict,
        cli=False,
    )
    bootstrap: int = shared_setting("bootstrap", default=1000)
    hub_org: str | None = setting(
        "push checkpoints and results under this Hub organisation", default=None
    )
    seed: int = shared_setting("seed")
    off_the_shelf: bool = setting(
        "also evaluate each base with its own settings (as published), next to the base with "
        "the checkpoints' settings",
        default=False,
    )
    remedies: list[str] = shared_setting(
        "remedies",
        default_factory=list,
        choices=remedy_names,
    )

    trust_remote_code: bool = shared_setting("trust_remote_code", default=False)
    """Given to every model the study evaluates or analyses (published models such as
    NV-Embed-v2 or stella ship their own code); not part of the study's identity."""

    train: bool = setting(
        "train the configurations (false: evaluation only, every base evaluated as published "
        "and nothing trained: configs, data and training are not used)",
        default=True,
    )
    scoring: str = scoring_setting()
    analyses: list[str] = setting(
        "analyses run on every checkpoint and untrained base: reversal (mirror reversal, "
        "Table 12), evidence-moving (Tables 5/13), segment-profile (Figs. 3/7)",
        default_factory=list,
        choices=ANALYSES,
    )
    analysis_pairs: str = setting(
        "evidence-moving pairs: msmarco (MS MARCO on the Hub, the source YHP26 names; "
        "msmarco:REPO_OR_FOLDER for another copy) or a pair file/folder as `posbias analyze "
        "evidence-moving --pairs` takes",
        default="msmarco",
    )
    analysis_corpus: list[str | dict[str, Any]] = setting(
        "segment-profile documents, one sample per entry: a corpus as `posbias analyze "
        "segment-profile --corpus` takes (a file, a folder, hf:<dataset id>[:<config>]); in a spec "
        "file also a mapping {name, corpus, min_words, max_words} (no corpus: the first task's); "
        "default: one sample of the study's first task's corpus",
        default_factory=list,
    )
    analysis_min_words: int | None = setting(
        "segment profile: only documents of at least this many words, in every sample that "
        "pins none (Zeng et al. App. A.4's length filter)",
        default=None,
        range=at_least(1),
    )
    analysis_max_words: int | None = setting(
        "segment profile: only documents of at most this many words, in every sample that pins "
        "none",
        default=None,
        range=at_least(1),
    )
    analysis_limit: int = setting(
        "pairs and documents sampled per analysis (0 = all)", default=200, range=at_least(0)
    )
    analysis_slots: int = setting(
        "positions p1…pn of evidence moving and segments of the segment profile",
        default=10,
        range=at_least(2),
    )

    @property
    def uses_passages(self) -> bool:
        """Whether a remedy of the study cuts passages (``stride`` is checked only then)."""
        return any(get_remedy(r).cuts_passages for r in self.remedies)

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        problems = spec_problems(values)
        passage = {f.name for f in dataclasses.fields(PassageSettings)}
        ranged = {name for name in values if declared_range(StudySpec, name) is not None}
        # The passage checks read the remedies, and every group's checks begin with the ranges
        # (already among the problems): run them only on well-formed values.
        if not any(path and path[0] in {*passage, *ranged, "remedies"} for path, _ in problems):
            try:
                super().__post_init__()
            except InputError as err:
                problems.append(((), str(err)))
        if not any(path and path[0] in {"tasks", "bases"} for path, _ in problems):
            from hf_posbias.study.protocol import task_entries

            try:
                task_entries(self.tasks, self.bases)
            except InputError as err:
                problems.append((("tasks",), str(err).removeprefix("tasks: ")))
        if problems:
            raise SpecError(problems)
        self.bases, self.configs = list(self.bases), list(self.configs)
        self.poolings, self.tasks = list(self.poolings), list(self.tasks)
        self.analyses = list(dict.fromkeys(self.analyses))
        if self.scoring != "default":
            # The spec's protocol for every entry that pins none (Zeng et al.'s spec).
            self.tasks = [
                {"scoring": self.scoring, **t} if isinstance(t, Mapping) else
                {"task": t, "scoring": self.scoring}
                for t in self.tasks
            ]  # fmt: skip
        from hf_posbias.study.protocol import task_entries

        self.tasks = [e.record() for e in task_entries(self.tasks, self.bases)]
        self.standard = [str(t) for t in self.standard]
        self.training = dict(self.training)
        self.remedies = list(self.remedies)

    @property
    def model_settings(self) -> ModelSettings:
        """How every model of the study is loaded (``trust_remote_code``)."""
        from hf_posbias.modeling.resolve import ModelSettings

        return ModelSettings(trust_remote_code=self.trust_remote_code)

    @property
    def profile_samples(self) -> list[ProfileSample]:
        """The segment profile's document samples (:func:`profile_samples`)."""
        return profile_samples(
            self.analysis_corpus, self.analysis_min_words, self.analysis_max_words
        )

    @property
    def evaluation_tasks(self) -> list[str | dict[str, Any]]:
        """Every task entry the study evaluates: ``tasks`` then ``standard``."""
        return [*self.tasks, *self.standard]

    def identity(self) -> dict[str, Any]:
        """The fields that make two specs the same study."""
        record = settings_record(self)
        return {name: record[name] for name in IDENTITY_FIELDS}


FIRST_TASK_CORPUS = "the first task's corpus"
"""How a sample without a corpus is named: the corpus of the study's first task."""
SAMPLE_KEYS = ("name", "corpus", "min_words", "max_words")
"""The keys of a mapping entry of ``analysis_corpus``."""


@dataclass(frozen=True)
class ProfileSample:
    """One sample of segment-profile documents: where they come from and their word range
    (``analysis_limit`` of them are drawn, seeded).

    Example:
        >>> ProfileSample("FineWeb-Edu", "hf:HuggingFaceFW/fineweb-edu", 200, 500).describe(10000)
        'FineWeb-Edu: hf:HuggingFaceFW/fineweb-edu, 200–500 words, 10,000 sampled'
        >>> ProfileSample("SQuAD v2", None, 100, None).key
        'SQuAD v2=first-task/100-inf'
    """

    name: str
    corpus: str | None
    """A corpus source, or ``None``: the corpus of the study's first task."""
    min_words: int | None = None
    max_words: int | None = None

    @property
    def words(self) -> tuple[int | None, int | None]:
        return self.min_words, self.max_words

    @property
    def key(self) -> str:
        """What the sample's documents depend on (part of an analysis result's key)."""
        return f"{self.name}={self.corpus or 'first-task'}/{self.min_words or 0}-" + str(
            self.max_words or "inf"
        )

    def describe(self, limit: int) -> str:
        """One line for the dry run and the report.

        Example:
            >>> ProfileSample(FIRST_TASK_CORPUS, None).describe(200)
            "the first task's corpus, any length, 200 sampled"
        """
        drawn = f"{limit:,} sampled" if limit else "all"
        source = self.corpus or FIRST_TASK_CORPUS
        words = (
            f"{self.min_words or 0}–{self.max_words or '∞'} words"
            if self.words != (None, None)
            else "any length"
        )
        head = source if self.name == source else f"{self.name}: {source}"
        return f"{head}, {words}, {drawn}"


def profile_samples(
    entries: list[Any], min_words: int | None = None, max_words: int | None = None
) -> list[ProfileSample]:
    """The samples of ``analysis_corpus`` entries: a string is a corpus named by itself, a
    mapping pins its own name, corpus and word range; the spec's word range fills what an entry
    leaves out; no entry is one sample of the first task's corpus.

    Example:
        >>> [s.name for s in profile_samples([])]
        ["the first task's corpus"]
        >>> profile_samples(["c.jsonl", {"name": "F", "corpus": "hf:x", "max_words": 9}], 2)
        ... # doctest: +NORMALIZE_WHITESPACE
        [ProfileSample(name='c.jsonl', corpus='c.jsonl', min_words=2, max_words=None),
         ProfileSample(name='F', corpus='hf:x', min_words=2, max_words=9)]
    """
    if not entries:
        return [ProfileSample(FIRST_TASK_CORPUS, None, min_words, max_words)]
    samples = []
    for entry in entries:
        if isinstance(entry, str):
            samples.append(ProfileSample(entry, entry, min_words, max_words))
            continue
        corpus = entry.get("corpus")
        samples.append(
            ProfileSample(
                str(entry.get("name") or corpus or FIRST_TASK_CORPUS),
                None if corpus is None else str(corpus),
                entry.get("min_words", min_words),
                entry.get("max_words", max_words),
            )
        )
    return samples


def _sample_problems(entries: list[Any]) -> list[tuple[KeyPath, str]]:
    """The mistakes of ``analysis_corpus`` entries: unknown keys, word bounds that are no whole
    number of at least 1, two samples of one name."""
    problems: list[tuple[KeyPath, str]] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue
        for key in entry:
            if key not in SAMPLE_KEYS:
                hint = suggest(str(key), SAMPLE_KEYS) or f" (known: {', '.join(SAMPLE_KEYS)})"
                problems.append((("analysis_corpus", index, key), f"unknown key{hint}"))
        for key in ("min_words", "max_words"):
            value, path = entry.get(key), ("analysis_corpus", index, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                problems.append((path, f"must be a whole number, got {value!r}"))
                continue
            # An entry's word bound takes what the spec's own bound does.
            problem = declared_range(StudySpec, f"analysis_{key}").problem(value)  # type: ignore[union-attr]
            problems += [(path, problem)] if problem else []
    if not problems:
        names = [s.name for s in profile_samples(entries)]
        for index, name in enumerate(names):
            if name in names[:index]:
                problems.append((("analysis_corpus", index), f"a sample is named twice ({name!r})"))
    return problems


class SpecError(InputError):
    """Every mistake of a study spec, each under its key path; the message names them all on one
    line (by flag, as a :class:`StudySpec` built in Python or from flags is; :func:`load_spec`
    names a spec file's keys as the file spells them)."""

    def __init__(
        self,
        problems: list[tuple[KeyPath, str]],
        name: Callable[[KeyPath], str] | None = None,
        *,
        where: str | None = None,
    ) -> None:
        self.problems = problems
        spell = name or _flag_path
        parts = [f"{spell(path)}: {problem}" if path else problem for path, problem in problems]
        lead = f"{where}: " if where else ""
        lead += f"{len(parts)} errors: " if len(parts) > 1 else ""
        super().__init__(lead + "; ".join(parts))


def _flag_path(path: KeyPath) -> str:
    """A key path as the command line spells it (``--configs``; ``training.max_steps``)."""
    return key_path(path) if path[0] == "training" else flag_name(str(path[0]))


def _not_one_of(value: str, known: tuple[str, ...]) -> str:
    return f"must be one of {', '.join(known)}, got {value!r}{suggest(value, known)}"


def spec_problems(values: Mapping[str, Any]) -> list[tuple[KeyPath, str]]:
    """Every mistake in a spec's values (a spec file's mapping, or a :class:`StudySpec`'s
    fields), each with its key path: types, empty lists, unknown configurations, poolings,
    remedies and training settings, and the training settings' own checks. No model is loaded.

    Example:
        >>> for path, problem in spec_problems({"configs": ["begin", "uniforn"],
        ...                                     "bootstrap": "many"}):
        ...     print(key_path(path), problem)  # doctest: +ELLIPSIS
        bootstrap expected a whole number, got 'many'
        bases the study names no base
        tasks the study names no evaluation task
        data the study names no training data
        configs[1] unknown configuration 'uniforn' (did you mean 'uniform'?) (begin, ...)
    """
    from hf_posbias.modeling.bases import POOLINGS
    from hf_posbias.sampling.configs import PositionConfig

    problems = value_problems(StudySpec, values)
    bad = {path[0] for path, _ in problems}
    defaults = {f.name: f for f in dataclasses.fields(StudySpec)}

    def given(name: str) -> Any:
        if name in bad:
            return None
        if name in values:
            return values[name]
        field = defaults[name]
        if field.default_factory is not dataclasses.MISSING:
            return field.default_factory()
        return field.default

    train = given("train") is not False
    for name, what in (
        ("bases", "base"),
        ("configs", "configuration"),
        ("tasks", "evaluation task"),
    ):
        if name not in bad and not given(name) and (train or name != "configs"):
            problems.append(((name,), f"the study names no {'base' if name == 'bases' else what}"))
    if train and "data" not in bad and not given("data"):
        problems.append((("data",), "the study names no training data"))
    scoring = given("scoring")
    if scoring is not None and scoring not in scoring_schemes():
        problems.append((("scoring",), _not_one_of(scoring, scoring_schemes())))
    for index, analysis in enumerate(given("analyses") or ()):
        if analysis not in ANALYSES:
            problems.append((("analyses", index), _not_one_of(analysis, ANALYSES)))
    problems += _sample_problems(list(given("analysis_corpus") or ()))
    problems += range_problems(StudySpec, {name: given(name) for name in defaults})
    known_configs = [*PAPER_CONFIG_NAMES, "ips"]
    for index, config in enumerate(given("configs") or ()):
        if config == "ips":
            continue
        try:
            PositionConfig.parse(config)
        except InputError:
            problems.append(
                (
                    ("configs", index),
                    f"unknown configuration {config!r}{suggest(config, known_configs)} (begin, "
                    "middle, end, uniform, any b:m:e, or ips)",
                )
            )
    for index, pooling in enumerate(given("poolings") or ()):
        if pooling not in POOLINGS:
            problems.append(
                (
                    ("poolings", index),
                    f"unknown pooling {pooling!r}{suggest(pooling, POOLINGS)} "
                    f"({', '.join(POOLINGS)})",
                )
            )
    remedies = list(given("remedies") or ())
    for index, remedy in enumerate(remedies):
        if remedy not in remedy_names():
            problems.append((("remedies", index), _not_one_of(remedy, remedy_names())))
        elif remedy in remedies[:index]:
            problems.append((("remedies", index), f"a remedy is named twice ({remedy!r})"))
    if remedies and not train:
        problems.append(
            (
                ("remedies",),
                "remedies need the untrained bases: an evaluation-only study (train: false) "
                "has none",
            )
        )
    problems += _training_problems(given("training") or {})
    return problems


def _training_problems(training: Mapping[str, Any]) -> list[tuple[KeyPath, str]]:
    """The mistakes of a spec's ``training`` mapping: unknown keys, keys the study sets, values
    of the wrong type or refused by
    :class:`~hf_posbias.training.training_settings.TrainingSettings`."""
    from hf_posbias.training.training_settings import TrainingSettings

    known = {f.name for f in dataclasses.fields(TrainingSettings) if f.init} - set(RUN_FIELDS)
    problems: list[tuple[KeyPath, str]] = []
    valid = {}
    for key, value in training.items():
        if key in RUN_FIELDS:
            problems.append(
                (
                    ("training", key),
                    f"{key!r} is set by the study per run (use bases/configs/poolings/data)",
                )
            )
        elif key not in known:
            hint = suggest(str(key), known) or f" (known: {', '.join(sorted(known))})"
            problems.append((("training", key), f"unknown training setting {key!r}{hint}"))
        else:
            valid[key] = value
    typed = value_problems(TrainingSettings, valid)
    problems += [(("training", *path), problem) for path, problem in typed]
    run = {"model": "m", "config": "begin", "data": "d", "out": "o"}
    for key in set(valid) - {path[0] for path, _ in typed}:
        try:
            TrainingSettings(**run, **{key: valid[key]})
        except InputError as err:
            message = str(err).removeprefix(flag_name(key)).lstrip(": ")
            problems.append((("training", key), message))
    return problems


def training_values(spec: StudySpec) -> dict[str, Any]:
    """The training settings every run of ``spec`` gets, by name, in the spec's order: its
    seed, then its ``training`` mapping (a ``null`` is left to the trainer's default).

    Example:
        >>> training_values(StudySpec(bases=["b"], data="d", tasks=["t"],
        ...                           training={"max_steps": 3, "lr": None}))
        {'seed': 42, 'max_steps': 3}
    """
    training = {"seed": spec.seed, **spec.training}
    return {key: value for key, value in training.items() if value is not None}


def read_spec_text(path: str | Path) -> dict[str, Any]:
    """The mapping of a YAML (``.yaml``/``.yml``) or JSON spec file, any keys (a listwise
    study's spec, ``kind: listwise``, has its own: :mod:`hf_posbias.study.listwise_study`); a
    syntax error names the file, line and column."""
    target = Path(path)
    if not target.is_file():
        raise InputError(f"study spec {target} not found")
    text = target.read_text()
    if target.suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            where = f"{target}:{mark.line + 1}:{mark.column + 1}" if mark else str(target)
            what = ": ".join(str(p) for p in (err.context, err.problem) if p)
            raise InputError(f"{where}: not valid YAML ({what})") from None
        except yaml.YAMLError as err:
            raise InputError(f"{target}: not valid YAML ({first_line(err)})") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(
                f"{target}:{err.lineno}:{err.colno}: not valid JSON ({err.msg})"
            ) from None
    if not isinstance(data, dict):
        raise InputError(f"{target}: a study spec is a mapping of {', '.join(_field_names())}")
    return data


def _unknown_keys(data: Mapping[str, Any]) -> list[tuple[KeyPath, str]]:
    known = _field_names()
    return [
        ((key,), f"unknown key{suggest(str(key), known) or ' (known: ' + ', '.join(known) + ')'}")
        for key in data
        if key not in known
    ]


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The mapping of a YAML (``.yaml``/``.yml``) or JSON spec file; unknown keys refused."""
    data = read_spec_text(path)
    unknown = sorted(str(key) for key in data if key not in _field_names())
    if unknown:
        raise InputError(
            f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(_field_names())})"
        )
    return data


def _field_names() -> list[str]:
    """The spec's keys, its own first (the passage settings it inherits last)."""
    names = [f.name for f in dataclasses.fields(StudySpec)]
    inherited = {f.name for f in dataclasses.fields(PassageSettings)}
    inherited |= {f.name for f in dataclasses.fields(ExecutorSettings)}
    return [n for n in names if n not in inherited] + [n for n in names if n in inherited]


def _tasks_on_bases(tasks: list[Any], bases: list[str]) -> list[Any]:
    """The spec file's task entries for the ``bases`` a flag put in place of its own: a task
    pinned to some bases keeps those still studied, and is left out when none is.

    Example:
        >>> _tasks_on_bases(["A", {"task": "B", "bases": ["x", "y"]}, {"task": "C",
        ...                  "bases": ["x"]}], ["y"])
        ['A', {'task': 'B', 'bases': ['y']}]
    """
    kept: list[Any] = []
    for entry in tasks:
        pinned = entry.get("bases") if isinstance(entry, Mapping) else None
        if not isinstance(pinned, list):
            kept.append(entry)
        elif any(b in bases for b in pinned):
            kept.append({**entry, "bases": [b for b in pinned if b in bases]})
    return kept


def given_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The flags given on the command line (``None``: not given), each checked against its
    field's type and range before the spec file is even read: a flag's own mistake is one line
    naming every such flag.

    Example:
        >>> given_overrides({"seed": -1, "bases": None})
        Traceback (most recent call last):
        ...
        hf_posbias.study.spec.SpecError: --seed: must be >= 0, got -1
    """
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    problems = value_problems(StudySpec, given)
    typed = {path[0] for path, _ in problems}
    problems += range_problems(StudySpec, {k: v for k, v in given.items() if k not in typed})
    if problems:
        raise SpecError(problems, _flag_path)
    return given


def load_spec(path: str | Path, overrides: Mapping[str, Any] | None = None) -> StudySpec:
    """The spec of ``path`` with ``overrides`` (flags given on the command line; ``None`` values
    mean "not given") applied on top.

    Every mistake is reported at once, on one line: a value from the file under its key path
    (``configs[1]``, ``training.max_steps``), a value from a flag under the flag's name.

    Example:
        >>> import pathlib, tempfile
        >>> spec = pathlib.Path(tempfile.mkdtemp()) / "s.yaml"
        >>> _ = spec.write_text("bases: [bert-base]\\ndata: d\\ntasks: [t]\\n"
        ...                     "configs: [begin, uniforn]\\ntraining: {max_step: 3}\\n")
        >>> load_spec(spec)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.study.spec.SpecError: .../s.yaml: 2 errors: configs[1]: unknown configuration ...
        >>> try:
        ...     load_spec(spec)
        ... except SpecError as err:
        ...     print(str(err).split("; ")[-1])
        training.max_step: unknown training setting 'max_step' (did you mean 'max_steps'?)
    """
    given = given_overrides(overrides)
    data = read_spec_text(path)
    data.update(given)
    if "bases" in given and isinstance(data.get("tasks"), list):
        data["tasks"] = _tasks_on_bases(data["tasks"], list(given["bases"]))
    problems = _unknown_keys(data)
    if not problems:
        try:
            return StudySpec(**data)
        except SpecError as err:
            problems = err.problems

    def name(key: KeyPath) -> str:
        return _flag_path(key) if key[0] in given else key_path(key)

    raise SpecError(problems, name, where=str(path)) from None


def spec_from_folder(out: str | Path) -> StudySpec:
    """The spec a study folder was run with (``<out>/study.json``)."""
    target = Path(out) / SPEC_FILE
    if not target.is_file():
        raise InputError(f"{out}: not a study folder (no {SPEC_FILE}; run `posbias study run`)")
    return StudySpec(**read_json(target)["spec"])


def check_out_folder(spec: StudySpec, out: str | Path) -> None:
    """Refuse an output folder that holds another study (or other files), for a study run from
    Python (``posbias study run`` claims its folder first:
    :func:`hf_posbias.output_folders.claim_output_folder`, with the same refusal)."""
    folder = Path(out)
    target = folder / SPEC_FILE
    if target.is_file():
        previous = StudySpec(**read_json(target)["spec"]).identity()
        if previous != spec.identity():
            raise other_run_error(folder, differences(previous, spec.identity()))
    elif folder.is_dir() and any(not p.name.startswith(".") for p in folder.iterdir()):
        # Hidden entries are the folder's lock and run record (hf_posbias.output_folders).
        raise InputError(
            f"{folder} is not empty and holds no study: use another {flag_name('out')}"
        )


def save_spec(spec: StudySpec, out: str | Path) -> Path:
    """Write ``<out>/study.json`` (the spec, secrets removed)."""
    target = Path(out) / SPEC_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    record = {"spec": settings_record(spec)}
    write_text_atomic(target, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return target
