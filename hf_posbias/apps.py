"""The building blocks of an app over the library (the Gradio Space), under one stable path.

An app composes more than the face's calls (:mod:`hf_posbias.api`): one evidence-moving curve at
a time, a document's segment profile, a remedy's scorer, the listwise slider, the leaderboard.
Each name here is the owning module's own object, imported on first use (PEP 562), so an app
imports ``hf_posbias.apps`` and ``hf_posbias.errors`` only, and a module that moves inside the
package changes one line of :data:`HOMES`, not the app.

Example:
    >>> from hf_posbias import apps
    >>> apps.slot_names(3)
    ('p1', 'p2', 'p3')
    >>> apps.move_evidence.__module__
    'hf_posbias.analysis.evidence_moving'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the arrows to the owners, for readers and for the import checks
    from hf_posbias.analysis.evidence_moving import (
        EvidenceCase as EvidenceCase,
    )
    from hf_posbias.analysis.evidence_moving import (
        EvidenceCurve as EvidenceCurve,
    )
    from hf_posbias.analysis.evidence_moving import (
        move_evidence as move_evidence,
    )
    from hf_posbias.analysis.evidence_moving import (
        sentence_boundaries as sentence_boundaries,
    )
    from hf_posbias.analysis.evidence_moving import (
        slot_names as slot_names,
    )
    from hf_posbias.analysis.plots import (
        CurveSeries as CurveSeries,
    )
    from hf_posbias.analysis.plots import (
        curve_figure as curve_figure,
    )
    from hf_posbias.analysis.segment_profile import (
        document_profile as document_profile,
    )
    from hf_posbias.evaluation.reports.leaderboard import (
        BOARD_LABELS as BOARD_LABELS,
    )
    from hf_posbias.evaluation.reports.leaderboard import (
        HUB_BENCHMARK_PREFIX as HUB_BENCHMARK_PREFIX,
    )
    from hf_posbias.evaluation.reports.leaderboard import (
        display_name as display_name,
    )
    from hf_posbias.evaluation.reports.leaderboard import (
        hub_board_rows as hub_board_rows,
    )
    from hf_posbias.evaluation.reports.leaderboard import (
        read_board_labels as read_board_labels,
    )
    from hf_posbias.evaluation.reports.leaderboard import (
        read_leaderboard as read_leaderboard,
    )
    from hf_posbias.evaluation.runs.remedies import (
        REMEDIES as REMEDIES,
    )
    from hf_posbias.evaluation.runs.remedies import (
        RemedySettings as RemedySettings,
    )
    from hf_posbias.evaluation.runs.remedies import (
        remedy_label as remedy_label,
    )
    from hf_posbias.evaluation.runs.remedies import (
        remedy_scorer as remedy_scorer,
    )
    from hf_posbias.listwise.experiments.firststage import (
        load_first_stage as load_first_stage,
    )
    from hf_posbias.listwise.experiments.slider import (
        SliderCase as SliderCase,
    )
    from hf_posbias.listwise.experiments.slider import (
        SliderCurve as SliderCurve,
    )
    from hf_posbias.listwise.experiments.slider import (
        rerank_at as rerank_at,
    )
    from hf_posbias.listwise.experiments.slider import (
        slider_case as slider_case,
    )
    from hf_posbias.listwise.experiments.slider import (
        slider_figure as slider_figure,
    )
    from hf_posbias.listwise.experiments.taskio import (
        RerankTask as RerankTask,
    )
    from hf_posbias.listwise.experiments.taskio import (
        load_rerank_task as load_rerank_task,
    )
    from hf_posbias.listwise.training.card import (
        TRAINING_INFO as TRAINING_INFO,
    )
    from hf_posbias.listwise.training.card import (
        load_listwise_info as load_listwise_info,
    )
    from hf_posbias.modeling import (
        PACKAGED_CHAT_MODELS as PACKAGED_CHAT_MODELS,
    )
    from hf_posbias.modeling import (
        load_sentence_transformer as load_sentence_transformer,
    )
    from hf_posbias.modeling import (
        packaged_model_path as packaged_model_path,
    )
    from hf_posbias.rerankers.loading import (
        load_reranker as load_reranker,
    )
    from hf_posbias.rerankers.records import (
        Passage as Passage,
    )

HOMES: dict[str, str] = {
    # evidence moving and the segment profile (the Space's first tab)
    "EvidenceCase": "hf_posbias.analysis.evidence_moving",
    "EvidenceCurve": "hf_posbias.analysis.evidence_moving",
    "move_evidence": "hf_posbias.analysis.evidence_moving",
    "sentence_boundaries": "hf_posbias.analysis.evidence_moving",
    "slot_names": "hf_posbias.analysis.evidence_moving",
    "document_profile": "hf_posbias.analysis.segment_profile",
    "CurveSeries": "hf_posbias.analysis.plots",
    "curve_figure": "hf_posbias.analysis.plots",
    "REMEDIES": "hf_posbias.evaluation.runs.remedies",
    "RemedySettings": "hf_posbias.evaluation.runs.remedies",
    "remedy_label": "hf_posbias.evaluation.runs.remedies",
    "remedy_scorer": "hf_posbias.evaluation.runs.remedies",
    "load_sentence_transformer": "hf_posbias.modeling",
    "packaged_model_path": "hf_posbias.modeling",
    # the listwise slider (second tab)
    "PACKAGED_CHAT_MODELS": "hf_posbias.modeling",
    "SliderCase": "hf_posbias.listwise.experiments.slider",
    "SliderCurve": "hf_posbias.listwise.experiments.slider",
    "rerank_at": "hf_posbias.listwise.experiments.slider",
    "slider_case": "hf_posbias.listwise.experiments.slider",
    "slider_figure": "hf_posbias.listwise.experiments.slider",
    "RerankTask": "hf_posbias.listwise.experiments.taskio",
    "load_rerank_task": "hf_posbias.listwise.experiments.taskio",
    "load_first_stage": "hf_posbias.listwise.experiments.firststage",
    "TRAINING_INFO": "hf_posbias.listwise.training.card",
    "load_listwise_info": "hf_posbias.listwise.training.card",
    "load_reranker": "hf_posbias.rerankers.loading",
    "Passage": "hf_posbias.rerankers.records",
    # the leaderboard (third tab)
    "read_leaderboard": "hf_posbias.evaluation.reports.leaderboard",
    "BOARD_LABELS": "hf_posbias.evaluation.reports.leaderboard",
    "display_name": "hf_posbias.evaluation.reports.leaderboard",
    "read_board_labels": "hf_posbias.evaluation.reports.leaderboard",
    "hub_board_rows": "hf_posbias.evaluation.reports.leaderboard",
    "HUB_BENCHMARK_PREFIX": "hf_posbias.evaluation.reports.leaderboard",
}
"""Each name → the module that owns it."""

__all__ = sorted(HOMES)


def __getattr__(name: str) -> Any:
    """The owning module's object, imported on first use."""
    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
