"""The settings of ``posbias analyze …``: one dataclass per verb, from shared option groups.

Example:
    >>> from hf_posbias.settings import parse_settings_args
    >>> s = parse_settings_args(EvidenceMovingSettings, ["--pairs", "p", "--out", "o"])
    >>> s.n, s.models, s.progress
    (10, ('all-MiniLM-L6-v2',), True)
    >>> SegmentProfileSettings(corpus="demo", out="o", n=1)
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: n must be >= 2, got 1
"""

from __future__ import annotations

from dataclasses import dataclass

from hf_posbias.devices import check_device
from hf_posbias.errors import InputError
from hf_posbias.evaluation.runs.remedies import RemedySettings
from hf_posbias.modeling.resolve import ModelSettings
from hf_posbias.setting_values import at_least
from hf_posbias.settings import ProgressSettings, Settings, setting, setting_label, shared_setting

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@dataclass(kw_only=True)
class AnalysisOptions(ProgressSettings):
    """What every analysis takes: slots, sample, seed, output, device, length policy."""

    n: int = setting("positions p1…pn", default=10, range=at_least(2))
    # Not --limit (the data verbs' "read at most N records"): a seeded sample.
    sample_size: int = setting("pairs/documents sampled (0 = all)", default=200, range=at_least(0))
    seed: int = shared_setting("seed")
    out: str = shared_setting("out")
    device: str = shared_setting("device", default="cpu")
    max_seq_length: int | None = setting(
        "override the model's max_seq_length (tokens)", default=None, range=at_least(1)
    )
    allow_truncation: bool = setting(
        "keep inputs longer than the model's max_seq_length (default: skip and count)",
        default=False,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_device(self.device)


@dataclass(kw_only=True)
class PairSource(Settings):
    """Claim–evidence pairs (evidence moving)."""

    pairs: str | None = setting(
        "SciFact folder (claims_*.csv), user .jsonl, training-set .parquet or folder, or "
        "msmarco[:REPO_OR_FOLDER] (MS MARCO, YHP26's source)",
        default=None,
    )
    split: str = shared_setting("split", default="train")
    config: str = shared_setting("config", default="uniform")


@dataclass(kw_only=True)
class DocumentSource(Settings):
    """Documents to analyse: ``--corpus``, ``--clip-chars`` (segment profile, pooling)."""

    corpus: str | None = shared_setting("corpus", default=None)
    clip_chars: int | None = setting("keep the first N characters", default=None, range=at_least(1))


def _require(settings: Settings, name: str) -> None:
    if not getattr(settings, name):
        raise InputError(f"{setting_label(name)} is required")


@dataclass(kw_only=True)
class ModelsSettings(ModelSettings):
    """The embedding models compared by an analysis, loaded by the one resolver (a local or
    packaged model, an mteb registry name with its prompts, a Hub id, ``openai:<model>``)."""

    models: tuple[str, ...] = setting(
        "[LABEL=]model, one or more, repeatable: a local folder, a packaged model, an mteb "
        "registry name, a Hub id or openai:<model> (with --base-url)",
        default=(DEFAULT_MODEL,),
        flag="--model",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.models = tuple(self.models)


@dataclass(kw_only=True)
class EvidenceMovingSettings(ModelsSettings, PairSource, AnalysisOptions, RemedySettings):
    """``posbias analyze evidence-moving``; with ``--remedy``, every model's curve is also
    computed under the remedy (a row ``<label> +<remedy>`` beside the plain one)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(self, "pairs")


@dataclass(kw_only=True)
class SegmentProfileSettings(ModelsSettings, DocumentSource, AnalysisOptions):
    """``posbias analyze segment-profile``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(self, "corpus")


@dataclass(kw_only=True)
class PoolingSettings(PairSource, DocumentSource, AnalysisOptions):
    """``posbias analyze pooling``."""

    model: str = setting("checkpoint or SentenceTransformer folder")
    modes: str = setting("comma-separated pooling modes", default="cls,mean,max,lasttoken")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.pairs and not self.corpus:
            raise InputError(f"give {setting_label('pairs')}, {setting_label('corpus')} or both")
