"""Pooling ablation: one transformer, four poolings, both analyses (YHP26 §6: ModernBERT-base with
CLS, mean, max and last-token pooling).

The transformer comes from a plain checkpoint (``AutoModel`` folder or Hub id) or from a
SentenceTransformer folder (its ``Transformer`` module is reused, its pooling replaced). The same
transformer weights are shared by the four models, so only the pooling differs.

Example:
    >>> from hf_posbias.analysis.pooling import build_pooled_models
    >>> models = build_pooled_models("all-MiniLM-L6-v2", modes=("cls", "mean"))
    >>> sorted(models), models["cls"][1].get_config_dict()["pooling_mode"]
    (['cls', 'mean'], 'cls')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError, ModelLoadError, first_line
from hf_posbias.modeling.bases import POOLINGS

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from hf_posbias.analysis.evidence_cases import EvidenceCase
    from hf_posbias.analysis.evidence_moving import EvidenceMovingSummary
    from hf_posbias.analysis.segment_profile import SegmentProfile


def _transformer_module(name: str, device: str | None) -> tuple[Any, dict[str, str]]:
    """The ``Transformer`` module of ``name`` and the prompts to keep (from an ST folder)."""
    from sentence_transformers.sentence_transformer.modules import Transformer

    from hf_posbias.modeling.loaders import load_sentence_transformer
    from hf_posbias.modeling.resolve import model_location

    resolved = model_location(name)
    if (Path(resolved) / "modules.json").exists():
        st = load_sentence_transformer(resolved, device=device)
        first = st[0]
        if not isinstance(first, Transformer):
            raise ModelLoadError(
                f"{name!r}: the first module is {type(first).__name__}, not a Transformer"
            )
        return first, dict(getattr(st, "prompts", None) or {})
    try:
        return Transformer(resolved), {}
    except Exception as err:  # any load failure means "this checkpoint cannot be used"
        raise ModelLoadError(f"cannot load transformer {name!r}: {first_line(err)}") from None


def build_pooled_models(
    name: str, modes: Sequence[str] = POOLINGS, device: str | None = "cpu"
) -> dict[str, SentenceTransformer]:
    """``{mode: SentenceTransformer(modules=[transformer, Pooling(dim, pooling_mode=mode)])}``."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    unknown = [m for m in modes if m not in POOLINGS]
    if unknown or not modes:
        raise InputError(f"unknown pooling mode(s) {unknown}; choose from {list(POOLINGS)}")
    transformer, prompts = _transformer_module(name, device)
    tokenizer = transformer.tokenizer
    if getattr(tokenizer, "pad_token", "") is None:
        # Decoder tokenizers often lack a pad token; batching needs one (last-token pooling reads
        # the attention mask, so the pad id itself does not matter).
        tokenizer.pad_token = tokenizer.eos_token
    dim = transformer.get_embedding_dimension()
    models: dict[str, SentenceTransformer] = {}
    for mode in modes:
        model = SentenceTransformer(
            modules=[transformer, Pooling(dim, pooling_mode=mode)], device=device
        )
        model.prompts = dict(prompts)
        models[mode] = model
    return models


@dataclass(frozen=True)
class PoolingRow:
    """One pooling mode's results from both analyses."""

    pooling: str
    evidence: EvidenceMovingSummary | None
    profile: SegmentProfile | None

    def to_row(self) -> dict[str, Any]:
        """Flat CSV row: evidence peak/lowest/Δ×10³ and profile peak/lowest/range."""
        row: dict[str, Any] = {"pooling": self.pooling}
        if self.evidence is not None:
            row.update(
                pairs=self.evidence.n_pairs,
                evidence_peak=self.evidence.peak_position,
                evidence_lowest=self.evidence.lowest_position,
                evidence_delta_e3=round(self.evidence.delta, 2),
            )
        if self.profile is not None:
            row.update(
                documents=self.profile.n_docs,
                profile_peak=self.profile.peak_position,
                profile_lowest=self.profile.lowest_position,
                profile_range=round(self.profile.range, 4),
            )
        return row


def pooling_ablation(
    name: str,
    cases: Sequence[EvidenceCase] = (),
    documents: Sequence[tuple[str, str]] = (),
    n: int = 10,
    modes: Sequence[str] = POOLINGS,
    allow_truncation: bool = False,
    load_skipped: dict[str, int] | None = None,
    device: str | None = "cpu",
    progress: bool = True,
) -> list[PoolingRow]:
    """Run evidence moving (on ``cases``) and the segment profile (on ``documents``) for every
    pooling of ``name``'s transformer; either input may be empty to skip that analysis.
    """
    from hf_posbias.analysis.evidence_moving import run_evidence_moving
    from hf_posbias.analysis.segment_profile import segment_profile

    if not cases and not documents:
        raise InputError("pooling ablation needs evidence pairs, documents, or both")
    rows = []
    for mode, model in build_pooled_models(name, modes, device=device).items():
        evidence = (
            run_evidence_moving(
                model, cases, n, mode, allow_truncation, load_skipped, progress=progress
            )
            if cases
            else None
        )
        profile = (
            segment_profile(model, documents, n, mode, allow_truncation, progress=progress)
            if documents
            else None
        )
        rows.append(PoolingRow(mode, evidence, profile))
    return rows


def pooling_table(rows: Sequence[PoolingRow]) -> str:
    """A markdown table with one line per pooling mode.

    Example:
        >>> print(pooling_table([PoolingRow("cls", None, None)]))
        | pooling |
        |---|
        | cls |
    """
    from hf_posbias.tables import MarkdownTable

    keys: list[str] = []
    for row in rows:
        keys += [k for k in row.to_row() if k not in keys]
    cells = [[str(row.to_row().get(k, "")) for k in keys] for row in rows]
    return MarkdownTable(keys, cells).to_markdown()
