"""The data pipeline's settings: option groups whose checks run once (:class:`CorpusSettings`,
:class:`GeneratorSettings`, :class:`PanelSettings`, …) combined into each stage verb's settings
and :class:`BuildSettings` (``posbias data build``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hf_posbias.corpus.sources import CorpusSource, describe_source
from hf_posbias.errors import InputError
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.generation.backends import CHAT_BACKENDS, EndpointSettings
from hf_posbias.generation.generator_registry import GENERATORS
from hf_posbias.generation.ict import KEEP_PROBABILITY, MIN_WORDS
from hf_posbias.generation.prompt_files import check_prompt_files, prompt_file_setting
from hf_posbias.pipeline.checks import (
    AUDIT_PER_STRATUM,
    CONFIG_FLAG,
    HOLDOUT,
    check_audit_options,
    check_corpus_options,
    check_folder_target,
    make_stage_panel,
    parse_configs,
)
from hf_posbias.sampling.configs import PAPER_CONFIG_NAMES
from hf_posbias.sampling.draw import CELL_ROWS
from hf_posbias.setting_values import at_least
from hf_posbias.settings import (
    ProgressSettings,
    Settings,
    check_choices,
    setting,
    setting_label,
    shared_setting,
)
from hf_posbias.verification.report import DEFAULT_DELTA, DELTA

if TYPE_CHECKING:
    from hf_posbias.verification.panel import RerankerPanel


@dataclass(kw_only=True)
class StageSettings(ProgressSettings):
    """What every data verb takes: progress and whether to replace outputs of other parameters."""

    overwrite: bool = shared_setting("overwrite", default=False)


@dataclass(kw_only=True)
class WorkSettings(Settings):
    """The work folder of a stage verb."""

    work: str = setting("the pipeline's work folder")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_folder_target(self.work, setting_label("work"))


@dataclass(kw_only=True)
class OutSettings(Settings):
    """Where ``build`` and ``publish`` put the Hub repo folders."""

    out: str = shared_setting("out")


@dataclass(kw_only=True)
class SeedSettings(Settings):
    """The one seed of generation, sampling and the audit's draw."""

    seed: int = shared_setting("seed")


@dataclass(kw_only=True)
class CorpusSettings(Settings):
    """The corpus stage's options (checked once, here)."""

    corpus: str = shared_setting("corpus")
    bins: str | None = setting("length-bin edges in characters, e.g. 256,512,1024", default=None)
    limit: int | None = shared_setting("limit", default=None)
    holdout: float = setting(
        "fraction of documents held out for evaluation (stable hash of the id)",
        default=0.0,
        range=HOLDOUT,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_corpus_options(self.bins, self.limit, self.holdout)


@dataclass(kw_only=True)
class GeneratorSettings(EndpointSettings, SeedSettings, ProgressSettings):
    """Query generation's options."""

    generator: str = setting(
        "ict = Inverse Cloze Task (offline default); openai = any OpenAI-compatible endpoint; "
        "local-lm = a local transformers causal LM",
        default="ict",
        choices=GENERATORS,
    )
    llm_model: str | None = shared_setting("llm_model", default=None)
    personas: str | None = setting(
        "persona file (.jsonl/.txt) or Hub id, e.g. proj-persona/PersonaHub (LLM generators; "
        "default: the project's own packaged pool)",
        default=None,
    )
    persona_model: str | None = setting(
        "LLM generators: the embedding model that picks each document's personas (YHP26: "
        "BAAI/bge-m3; default: the packaged all-MiniLM-L6-v2)",
        default=None,
    )
    stage1_prompt_file: str | None = prompt_file_setting(
        "stage1", "the stage-1 prompt", scope="LLM generators: "
    )
    stage2_prompt_file: str | None = prompt_file_setting(
        "stage2", "the stage-2 prompt", scope="LLM generators: "
    )
    constrained: bool = shared_setting(
        "constrained",
        default=True,
    )
    concurrency: int = setting("parallel requests (openai)", default=8, range=at_least(1))
    min_words: int | None = setting(
        "ICT: minimum words of a query sentence", default=None, range=MIN_WORDS
    )
    keep_probability: float | None = setting(
        "ICT: probability of keeping the query sentence in the document (default 0)",
        default=None,
        range=KEEP_PROBABILITY,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choices(self, "generator")
        if self.generator != "ict" and not self.llm_model:
            raise InputError(
                f"{setting_label('generator')} {self.generator} needs {setting_label('llm_model')}"
            )
        check_prompt_files(self, "stage1", "stage2")

    def generator_options(self) -> dict[str, Any]:
        """The keyword options of
        :func:`hf_posbias.generation.generator_registry.make_generator`."""
        options: dict[str, Any] = {"seed": self.seed}
        if self.generator == "ict":
            if self.min_words is not None:
                options["min_words"] = self.min_words
            if self.keep_probability is not None:
                options["keep_probability"] = self.keep_probability
            return options
        options.update(
            model=self.llm_model,
            personas=self.personas,
            constrained=self.constrained,
            progress=self.progress,
        )
        if self.persona_model:
            options["persona_model"] = self.persona_model
        for stage in ("stage1", "stage2"):
            path = getattr(self, f"{stage}_prompt_file")
            if path is not None:
                options[f"{stage}_prompt"] = path
        if self.generator == "openai":
            options.update(
                base_url=self.base_url,
                api_key_env=self.api_key_env,
                max_concurrency=self.concurrency,
            )
        return options


@dataclass(kw_only=True)
class PanelSettings(Settings):
    """The verification panel and δ (δ checked once, here, against the panel's score range)."""

    panel: str = setting(
        "comma-separated verifiers: bm25 and/or cross-encoder ids/paths; 'paper' = the three "
        "rerankers of YHP26 (member@normalisation to override one)",
        default="bm25",
    )
    normalization: str | None = setting(
        "score normalisation for the members (default: per kind)", default=None
    )
    delta: float | None = setting(
        f"consensus-margin threshold δ, within the panel's score range (default {DEFAULT_DELTA})",
        default=None,
        # Its ceiling is the panel's (check_delta, below).
        range=DELTA,
    )
    trust_remote_code: bool = shared_setting(
        "trust_remote_code",
        default=False,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from hf_posbias.verification.panel import check_delta

        delta = DEFAULT_DELTA if self.delta is None else self.delta
        self.delta = check_delta(delta, self.make_panel(load=False))

    def make_panel(self, *, load: bool = True) -> RerankerPanel:
        """The panel (cross-encoders loaded unless ``load`` is false)."""
        return make_stage_panel(
            self.panel, self.normalization, load=load, trust_remote_code=self.trust_remote_code
        )


@dataclass(kw_only=True)
class AuditSettings(EndpointSettings):
    """YHP26's optional LLM segment audit of the scored pool."""

    audit_model: str | None = setting(
        "run YHP26's segment audit (TargetYes / DistractorNo / Exclusive per margin stratum) "
        "with this model on an OpenAI-compatible endpoint",
        default=None,
    )
    audit_backend: str = setting(
        "openai: an OpenAI-compatible endpoint (--base-url); local-lm: a local causal LM "
        "(folder, Hub id, .gguf or smollm2-135m)",
        default="openai",
        choices=CHAT_BACKENDS,
    )
    audit_free_form: bool = setting(
        "ask for one free-form word instead of decoding the judge's reply under its JSON "
        'schema ({"answer": "yes"|"no"})',
        default=False,
    )
    audit_per_stratum: int = setting("candidates per stratum", default=100, range=AUDIT_PER_STRATUM)
    audit_prompt_file: str | None = prompt_file_setting("audit", "the audit judge's prompt")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.audit_model:
            check_audit_options(
                self.audit_per_stratum, self.audit_backend, not self.audit_free_form
            )
        check_prompt_files(self, "audit")


@dataclass(kw_only=True)
class SampleSettings(SeedSettings):
    """Controlled sampling's options (checked once, here, for every configuration)."""

    configs: tuple[str, ...] = setting(
        "training-set configurations, one or more: begin | middle | end | uniform (where the "
        "evidence sits) or b:m:e proportions",
        default=PAPER_CONFIG_NAMES,
        flag=CONFIG_FLAG,
    )
    budget: int | None = setting(
        "per (bin, position) budget (default: smallest cell)", default=None, range=CELL_ROWS
    )
    min_cell: int = setting(
        "exclude bins whose smallest (bin, position) cell is below this (reported)",
        default=1,
        range=CELL_ROWS,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.configs = tuple(self.configs)
        parse_configs(self.configs)


@dataclass(kw_only=True)
class PublishSettings(Settings):
    """Where and how the Hub dataset repos are published."""

    repo_id: str | None = setting(
        "<org>/<name>: also upload <name>-pool and <name>-train to the Hub", default=None
    )
    token: str | None = setting("Hub token (default: HF_TOKEN or the stored login)", default=None)
    corpus_name: str | None = setting("source description for the dataset cards", default=None)
    corpus_license: str | None = setting(
        "Hub licence id of the source text, e.g. cc-by-sa-3.0", default=None
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.repo_id:
            from hf_posbias.hub import check_repo_id

            check_repo_id(self.repo_id)

    def source(self, corpus: str) -> CorpusSource:
        """The corpus name and licence on the cards: ``--corpus-name``/``--corpus-license`` over
        :func:`describe_source`."""
        source = describe_source(corpus)
        if self.corpus_name or self.corpus_license:
            source = CorpusSource(
                name=self.corpus_name or source.name,
                license=self.corpus_license or source.license,
                license_note=source.license_note if corpus == "demo" else "",
            )
        return source


@dataclass(kw_only=True)
class CorpusStageSettings(CorpusSettings, WorkSettings, StageSettings):
    """``posbias data corpus``."""


@dataclass(kw_only=True)
class GenerateSettings(ExecutorSettings, GeneratorSettings, WorkSettings, StageSettings):
    """``posbias data generate``."""


@dataclass(kw_only=True)
class VerifySettings(
    ExecutorSettings, PanelSettings, AuditSettings, SeedSettings, WorkSettings, StageSettings
):
    """``posbias data verify``."""


@dataclass(kw_only=True)
class SampleStageSettings(SampleSettings, WorkSettings, StageSettings):
    """``posbias data sample``."""


@dataclass(kw_only=True)
class PublishStageSettings(PublishSettings, OutSettings, WorkSettings, StageSettings):
    """``posbias data publish``."""


@dataclass(kw_only=True)
class BuildSettings(
    # Listed last-shown first: --help shows --out and the corpus options first.
    ExecutorSettings,
    StageSettings,
    PublishSettings,
    SampleSettings,
    PanelSettings,
    GeneratorSettings,
    CorpusSettings,
    OutSettings,
):
    """Every setting of :func:`~hf_posbias.pipeline.runner.build` (``posbias data build``): each
    group's checks run once, when the object is made, before any stage runs."""
