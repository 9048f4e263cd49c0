"""The listwise settings, split by job: the DebiasFirst fine-tune's
(:mod:`hf_posbias.listwise.training.settings`: ``ListwiseTrainingSettings``, ``augment``,
``transitions``) and the experiments' (:mod:`hf_posbias.listwise.experiments.settings`: one
dataclass per ``posbias listwise`` verb). This face serves both under the one path every caller
has imported them from.

Example:
    >>> from hf_posbias.listwise.training.settings import ListwiseTrainingSettings as moved
    >>> ListwiseTrainingSettings is moved
    True
"""

from __future__ import annotations

from hf_posbias.listwise.experiments.settings import (
    LIST_PARAMS,
    BuildTrainSettings,
    ControlledTestConfig,
    ConvertSettings,
    CurvesSettings,
    ListSettings,
    ListSource,
    ListwiseCompareSettings,
    ListwiseRemediesConfig,
    ListwiseRemediesSettings,
    ListwiseTestSettings,
    PairedTestSettings,
    PropensityConfig,
    PropensitySettings,
    RerankerName,
    RerankRunSettings,
    RerankSettings,
    ResamplingSettings,
    ShuffleEvalConfig,
    ShuffleEvalSettings,
    ShuffleTableSettings,
    TaskRunSettings,
    parse_counts,
    parse_positions,
)
from hf_posbias.listwise.training.settings import (
    AUGMENTATIONS,
    DEFAULT_LAMBDA,
    IPS_NORMALIZATIONS,
    LAMBDA_FLAG,
    NO_PROPENSITY,
    AugmentSettings,
    ListwiseTrainingSettings,
    TransitionsSettings,
)

__all__ = [
    "AUGMENTATIONS",
    "AugmentSettings",
    "BuildTrainSettings",
    "ControlledTestConfig",
    "ConvertSettings",
    "CurvesSettings",
    "DEFAULT_LAMBDA",
    "IPS_NORMALIZATIONS",
    "LAMBDA_FLAG",
    "LIST_PARAMS",
    "ListSettings",
    "ListSource",
    "ListwiseCompareSettings",
    "ListwiseRemediesConfig",
    "ListwiseRemediesSettings",
    "ListwiseTestSettings",
    "ListwiseTrainingSettings",
    "NO_PROPENSITY",
    "PairedTestSettings",
    "PropensityConfig",
    "PropensitySettings",
    "RerankRunSettings",
    "RerankSettings",
    "RerankerName",
    "ResamplingSettings",
    "ShuffleEvalConfig",
    "ShuffleEvalSettings",
    "ShuffleTableSettings",
    "TaskRunSettings",
    "TransitionsSettings",
    "parse_counts",
    "parse_positions",
]
