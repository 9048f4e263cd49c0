"""Evidence moving: relocate a query's evidence through a document and watch the cosine.

YHP26 §6: the query-relevant evidence of a (query, document) pair is moved to ``n`` evenly spaced
insertion points ``p1…pn`` (default 10) while the rest of the document stays fixed; the cosine
between the query and each variant traces the model's positional preference. The summary of a
curve is its peak position, its lowest position and ``Δ = (peak − lowest) × 10³`` (YHP26 Table 13:
"ModernBERT-base B peaks at p1 (Δ 21.5)").

Insertion points are sentence boundaries of the document-without-evidence (the start, the end and
every sentence start), chosen as close as possible to ``i · len / (n − 1)``; the evidence is
therefore never inserted inside a word or a sentence. A document with fewer than ``n`` sentence
boundaries (a short abstract) falls back to word boundaries, so the evidence may land inside a
sentence but never inside a word; every report counts the pairs moved that way
(:attr:`EvidenceMovingSummary.n_word_slots`). A curve averaged over fewer than
:data:`MIN_RELIABLE_PAIRS` pairs is marked unreliable in tables, reports and plots.

Pairs come from a span (:meth:`EvidenceCase.from_span`), from an evidence text found in the
document (:meth:`EvidenceCase.from_text`), or from a dataset (:func:`load_pairs`: SciFact,
training sets built by ``posbias data``, user JSONL).

Example:
    >>> from hf_posbias.analysis.evidence_cases import EvidenceCase
    >>> doc = "Alpha one. Beta two. Gamma three. Delta four. Epsilon five."
    >>> case = EvidenceCase.from_text("what is gamma?", doc, "Gamma three.")
    >>> case.base
    'Alpha one. Beta two. Delta four. Epsilon five.'
    >>> [p.text for p in case.placements(3)]  # doctest: +NORMALIZE_WHITESPACE
    ['Gamma three. Alpha one. Beta two. Delta four. Epsilon five.',
     'Alpha one. Beta two. Gamma three. Delta four. Epsilon five.',
     'Alpha one. Beta two. Delta four. Epsilon five. Gamma three.']
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.analysis.evidence_cases import DEFAULT_SLOTS, EvidenceCase, slot_names
from hf_posbias.errors import InputError
from hf_posbias.progress import progress as progress_bar
from hf_posbias.rows.readers import read_parquet

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from hf_posbias.evaluation.runs.remedies import RemedyScorer


MIN_RELIABLE_PAIRS = 20
"""A mean curve over fewer pairs than this is marked unreliable (its s.e. is itself noisy)."""


SKIP_REASONS = {
    "too_short_for_slots": "too short for the slots (fewer word boundaries than positions)",
    "longer_than_model_max_seq_length": "longer than the model's max sequence length",
    "not_usable_by_every_model": "not usable by every compared model",
}
"""Human-readable text of the skip reasons this module counts (other reasons print as keys)."""


def delta_e3(values: Sequence[float]) -> float:
    """``(max − min) × 10³``, the YHP26 Table 13 unit.

    Example:
        >>> round(delta_e3([0.50, 0.5215, 0.51]), 1)
        21.5
    """
    return (max(values) - min(values)) * 1000.0


def skipped_column(skipped: dict[str, int]) -> str:
    """The ``skipped`` CSV column: ``reason=count`` pairs by reason.

    Example:
        >>> skipped_column({"too_short_for_slots": 3, "empty": 1})
        'empty=1;too_short_for_slots=3'
    """
    return ";".join(f"{k}={v}" for k, v in sorted(skipped.items()))


class PositionCurve:
    """Peak/lowest/Δ of a curve over ``p1…pn``; subclasses provide :attr:`values`."""

    @property
    def values(self) -> tuple[float, ...]:
        raise NotImplementedError

    @property
    def positions(self) -> tuple[str, ...]:
        return slot_names(len(self.values))

    @property
    def peak_position(self) -> str:
        return self.positions[max(range(len(self.values)), key=self.values.__getitem__)]

    @property
    def lowest_position(self) -> str:
        return self.positions[min(range(len(self.values)), key=self.values.__getitem__)]

    @property
    def delta(self) -> float:
        """``(peak − lowest) × 10³``."""
        return delta_e3(self.values)


@dataclass(frozen=True)
class EvidenceCurve(PositionCurve):
    """Cosine(query, document) with the evidence at each of ``p1…pn`` for one pair.

    Example:
        >>> c = EvidenceCurve(cosines=(0.52, 0.51, 0.50), offsets=(0, 5, 9))
        >>> c.peak_position, c.lowest_position, round(c.delta, 1)
        ('p1', 'p3', 20.0)
    """

    cosines: tuple[float, ...]
    offsets: tuple[int, ...] = ()
    pair_id: str = ""
    n_truncated: int = 0
    """How many variants exceed the model's maximum sequence length (their ends are not seen)."""
    unit: str = "sentence"
    """``"word"`` when the document was too short for sentence slots (see :meth:`slot_unit`)."""
    index: int = -1
    """Position of the pair in the input list: the key that lines up curves across models."""

    @property
    def values(self) -> tuple[float, ...]:
        return self.cosines


@dataclass
class MeanCurve(PositionCurve):
    """One model's mean curve over ``p1…pn`` with its standard errors: the common part of
    :class:`EvidenceMovingSummary` (over pairs) and ``SegmentProfile`` (over documents).

    Example:
        >>> MeanCurve("B", mean=(0.6, 0.58), stderr=(0.01, 0.02)).curve_row("pairs", 2, note="x")
        {'model': 'B', 'pairs': 2, 'p1': 0.6, 'p2': 0.58, 'se_p1': 0.01, 'se_p2': 0.02, \
'peak': 'p1', 'lowest': 'p2', 'note': 'x'}
    """

    model: str
    mean: tuple[float, ...]
    stderr: tuple[float, ...]

    @property
    def values(self) -> tuple[float, ...]:
        return self.mean

    def curve_row(self, count_column: str, count: int, **after: Any) -> dict[str, Any]:
        """A flat CSV row: model, ``count_column``, ``p1…pn`` and ``se_p1…se_pn`` (6 decimals),
        peak, lowest, then the columns ``after``."""
        row: dict[str, Any] = {"model": self.model, count_column: count}
        row.update({p: round(v, 6) for p, v in zip(self.positions, self.mean)})
        row.update({f"se_{p}": round(v, 6) for p, v in zip(self.positions, self.stderr)})
        row.update(peak=self.peak_position, lowest=self.lowest_position, **after)
        return row


@dataclass
class EvidenceMovingSummary(MeanCurve):
    """The mean curve of one model over many pairs, with its standard error.

    Example:
        >>> s = EvidenceMovingSummary("B", mean=(0.60, 0.58, 0.5785), stderr=(0, 0, 0), n_pairs=3)
        >>> s.headline()
        'B peaks at p1 (Δ 21.5)'
    """

    n_pairs: int
    n_input: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    curves: list[EvidenceCurve] = field(default_factory=list, repr=False)

    @property
    def n_word_slots(self) -> int:
        """Pairs whose evidence moved between words (document too short for sentence slots)."""
        return sum(1 for c in self.curves if c.unit == "word")

    @property
    def reliable(self) -> bool:
        """Whether the curve averages at least :data:`MIN_RELIABLE_PAIRS` pairs."""
        return self.n_pairs >= MIN_RELIABLE_PAIRS

    def usage_line(self) -> str:
        """How many pairs the curve used, skipped (by reason) and moved at word boundaries.

        Example:
            >>> s = EvidenceMovingSummary("B", (0.6, 0.5), (0, 0), n_pairs=1, n_input=100,
            ...     skipped={"too_short_for_slots": 63, "longer_than_model_max_seq_length": 36})
            >>> print(s.usage_line())  # doctest: +NORMALIZE_WHITESPACE
            B: used 1 of 100 pairs; skipped 36 longer than the model's max sequence length,
            63 too short for the slots (fewer word boundaries than positions). UNRELIABLE:
            fewer than 20 pairs.
        """
        total = self.n_input or self.n_pairs + sum(self.skipped.values())
        text = f"{self.model}: used {self.n_pairs} of {total} pairs"
        if self.skipped:
            text += "; skipped " + ", ".join(
                f"{v} {SKIP_REASONS.get(k, k)}" for k, v in sorted(self.skipped.items())
            )
        if self.n_word_slots:
            text += (
                f"; {self.n_word_slots} moved at word boundaries (fewer sentence boundaries "
                "than positions)"
            )
        text += "."
        if not self.reliable:
            text += f" UNRELIABLE: fewer than {MIN_RELIABLE_PAIRS} pairs."
        return text

    def headline(self) -> str:
        """YHP26 style: ``"<model> peaks at p1 (Δ 21.5)"``."""
        return f"{self.model} peaks at {self.peak_position} (Δ {self.delta:.1f})"

    def to_row(self) -> dict[str, Any]:
        """A flat CSV row: model, pairs, p1…pn, se_p1…, peak, lowest, delta_e3, skipped."""
        return self.curve_row(
            "pairs",
            self.n_pairs,
            delta_e3=round(self.delta, 2),
            skipped=skipped_column(self.skipped),
            word_slot_pairs=self.n_word_slots,
            reliable=self.reliable,
        )


def mean_and_stderr(rows: Sequence[Sequence[float]]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Column means and standard errors (sample sd / √n; 0 for a single row).

    Example:
        >>> mean_and_stderr([[1.0, 2.0], [3.0, 2.0]])
        ((2.0, 2.0), (1.0, 0.0))
    """
    if not rows:
        raise InputError("no rows to average")
    n = len(rows)
    means = tuple(sum(col) / n for col in zip(*rows))
    if n == 1:
        return means, tuple(0.0 for _ in means)
    errs = tuple(
        math.sqrt(sum((x - m) ** 2 for x in col) / (n - 1)) / math.sqrt(n)
        for col, m in zip(zip(*rows), means)
    )
    return means, errs


def model_prompt(model: Any, kind: str) -> str | None:
    """The model's prompt for ``kind`` (``query`` / ``document``), ``None`` when it has none.

    Example:
        >>> from types import SimpleNamespace
        >>> model_prompt(SimpleNamespace(prompts={"query": "query: ", "document": ""}), "query")
        'query: '
        >>> model_prompt(SimpleNamespace(prompts={"document": ""}), "document") is None
        True
    """
    return (getattr(model, "prompts", None) or {}).get(kind) or None


def encode_texts(model: SentenceTransformer, texts: Sequence[str], kind: str) -> np.ndarray:
    """Unit-normalised embeddings of ``texts`` in ONE ``model.encode`` call.

    ``kind`` is ``"query"`` or ``"document"``: the model's prompt of that name is applied when it
    is non-empty (our trained models carry ``"query: "``; all-MiniLM-L6-v2 has empty prompts).
    ``model`` may also be a :class:`hf_posbias.embedding.TextEmbedder` (any model argument the
    resolver loads: registry prompts, endpoints), which applies its own prompts.
    """
    if hasattr(model, "embed"):
        if model.kind != "bi-encoder":
            return model.embed(list(texts), kind)
        model = model.sentence_transformer  # one encode call, as for a SentenceTransformer
    kwargs: dict[str, Any] = {"prompt_name": kind} if model_prompt(model, kind) else {}
    return model.encode(
        list(texts),
        batch_size=max(1, len(texts)),
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
        **kwargs,
    )


def count_truncated_for_model(
    model: SentenceTransformer, texts: Sequence[str], kind: str = "document"
) -> int:
    """How many ``texts`` (with the model's prompt) are longer than ``model.max_seq_length``
    (counted by :func:`hf_posbias.training.builder.count_truncated`, the one token counter).

    A truncated variant hides the evidence once it moves past the limit, which would show up as
    a fake "end" penalty; dataset runs skip such pairs unless told otherwise.
    """
    from hf_posbias.training.builder import count_truncated

    tokenizer = getattr(model, "tokenizer", None)
    limit = getattr(model, "max_seq_length", None)
    if tokenizer is None or not limit:
        return 0
    prompt = model_prompt(model, kind) or ""
    return count_truncated(tokenizer, limit, texts, prefix=prompt, warn=False).n_truncated


def remedy_cosines(remedy: RemedyScorer, query: Any, texts: Sequence[str]) -> list[float]:
    """Cosine(query, document) of each text under a remedy: the max (``maxp``) / first
    (``firstp``) / sum (``sump``) of the query–passage cosines, or the cosine with the
    ``chunk-mean`` / ``segment-balanced`` embedding — the scoring rules of ``--remedy``
    (:meth:`~hf_posbias.evaluation.runs.remedies.RemedyScorer.score_documents`), with cosine
    as the similarity, as in the plain curve. The model's document prompt applies.
    """
    from sentence_transformers.util import cos_sim

    prompt = model_prompt(remedy.st_model, "document")
    scores = remedy.score_documents(query, list(texts), prompt, similarity=cos_sim)
    return [float(v) for v in scores[0]]


def move_evidence(
    model: SentenceTransformer,
    case: EvidenceCase,
    n: int = DEFAULT_SLOTS,
    remedy: RemedyScorer | None = None,
) -> EvidenceCurve:
    """Encode the ``n`` variants of ``case`` in one batch and return the cosine curve.

    With a ``remedy`` (:func:`hf_posbias.evaluation.runs.remedies.remedy_scorer` of ``model``)
    the documents are scored under it (:func:`remedy_cosines`); the query is encoded as for the
    plain curve. :attr:`EvidenceCurve.n_truncated` then counts the variants the remedy does not
    read to their end (past ``firstp``'s first passage, past the limit for
    ``segment-balanced``; none for ``maxp``, ``sump`` and ``chunk-mean``).

    Example:
        >>> from hf_posbias.modeling.loaders import load_sentence_transformer
        >>> model = load_sentence_transformer("all-MiniLM-L6-v2", device="cpu")
        >>> doc = " ".join(f"Sentence number {i} is here." for i in range(12))
        >>> case = EvidenceCase.from_text("Where is the cat?", doc, "Sentence number 5 is here.")
        >>> case = EvidenceCase(case.query, case.base, "The cat sleeps on the mat.")
        >>> len(move_evidence(model, case).cosines)
        10
    """
    import numpy as np

    placements = case.placements(n)
    texts = [p.text for p in placements]
    query = encode_texts(model, [case.query], "query")[0]
    if remedy is None:
        docs = encode_texts(model, texts, "document")
        cosines = np.asarray(docs, dtype=np.float64) @ np.asarray(query, dtype=np.float64)
        truncated = count_truncated_for_model(model, texts)
    else:
        cosines = np.asarray(remedy_cosines(remedy, query, texts))
        truncated = remedy.count_unread(texts, model_prompt(remedy.st_model, "document"))
    return EvidenceCurve(
        cosines=tuple(float(c) for c in cosines),
        offsets=tuple(p.offset for p in placements),
        pair_id=case.id,
        n_truncated=truncated,
        unit=case.slot_unit(n),
    )


def run_evidence_moving(
    model: SentenceTransformer,
    cases: Sequence[EvidenceCase],
    n: int = DEFAULT_SLOTS,
    label: str = "model",
    allow_truncation: bool = False,
    load_skipped: dict[str, int] | None = None,
    progress: bool = True,
    remedy: RemedyScorer | None = None,
) -> EvidenceMovingSummary:
    """Average the evidence-moving curve of ``model`` over ``cases``.

    Pairs too short for ``n`` slots even at word boundaries, and (unless ``allow_truncation``)
    pairs whose longest variant exceeds the model's maximum sequence length, are skipped and
    counted in ``skipped``; ``load_skipped`` (from :func:`load_pairs`) is added to the same counts.
    With a passage ``remedy`` (:func:`move_evidence`) no pair is too long: the passages read the
    whole document (``segment-balanced`` reads one sequence cut at the limit: skipped as plain).
    Pairs with fewer than ``n`` sentence boundaries move at word boundaries (counted in
    :attr:`EvidenceMovingSummary.n_word_slots`).

    Raises:
        InputError: when no pair is left to average.
    """
    skipped: Counter[str] = Counter(load_skipped or {})
    curves: list[EvidenceCurve] = []
    for index, case in enumerate(
        progress_bar(cases, desc=f"evidence moving [{label}]", unit="pair", disable=not progress)
    ):
        try:
            case.slots(n)
        except InputError:
            skipped["too_short_for_slots"] += 1
            continue
        if not allow_truncation and (remedy is None or remedy.cut_at_model_limit):
            longest = max((p.text for p in case.placements(n)), key=len)
            if count_truncated_for_model(model, [longest]):
                skipped["longer_than_model_max_seq_length"] += 1
                continue
        curves.append(replace(move_evidence(model, case, n, remedy), index=index))
    if not curves:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) or "no pairs given"
        raise InputError(f"no usable pairs for {label} ({reasons})")
    mean, stderr = mean_and_stderr([c.cosines for c in curves])
    return EvidenceMovingSummary(
        model=label,
        mean=mean,
        stderr=stderr,
        n_pairs=len(curves),
        n_input=len(cases) + sum((load_skipped or {}).values()),
        skipped=dict(skipped),
        curves=curves,
    )


def common_pairs(summaries: Sequence[EvidenceMovingSummary]) -> list[EvidenceMovingSummary]:
    """Every summary restricted to the pairs that every model could use, so that compared curves
    average the same pairs; the others are counted as ``not_usable_by_every_model``.

    Pairs are matched by their index in the input list (:attr:`EvidenceCurve.index`).

    Example:
        >>> a = EvidenceMovingSummary("A", (0.5, 0.5), (0, 0), 2, 2, curves=[
        ...     EvidenceCurve((0.5, 0.4), index=0), EvidenceCurve((0.5, 0.6), index=1)])
        >>> b = EvidenceMovingSummary("B", (0.2, 0.1), (0, 0), 1, 2,
        ...     skipped={"too_short_for_slots": 1}, curves=[EvidenceCurve((0.2, 0.1), index=1)])
        >>> a2, b2 = common_pairs([a, b])
        >>> a2.mean, a2.n_pairs, a2.skipped, b2 == b
        ((0.5, 0.6), 1, {'not_usable_by_every_model': 1}, True)
    """
    if len(summaries) < 2:
        return list(summaries)
    shared = set.intersection(*({c.index for c in s.curves} for s in summaries))
    if not shared:
        raise InputError(
            "no pair is usable by every model: " + "; ".join(s.usage_line() for s in summaries)
        )
    out = []
    for s in summaries:
        curves = [c for c in s.curves if c.index in shared]
        if len(curves) == len(s.curves):
            out.append(s)
            continue
        mean, stderr = mean_and_stderr([c.cosines for c in curves])
        skipped = dict(s.skipped)
        skipped["not_usable_by_every_model"] = len(s.curves) - len(curves)
        out.append(
            replace(
                s, mean=mean, stderr=stderr, n_pairs=len(curves), skipped=skipped, curves=curves
            )
        )
    return out


def save_evidence_moving_plot(
    summaries: Sequence[EvidenceMovingSummary], path: str | Path, title: str = "Evidence moving"
) -> Path:
    """Mean cosine per slot (± standard error), one line per model, written as PNG.

    A curve from fewer than :data:`MIN_RELIABLE_PAIRS` pairs is marked unreliable on the plot.
    """
    from hf_posbias.analysis.plots import CurveSeries, curve_figure
    from hf_posbias.figures import save_figure

    pairs = sorted({s.n_pairs for s in summaries})
    fig = curve_figure(
        [
            CurveSeries(s.model if s.reliable else f"{s.model} (unreliable)", s.mean, s.stderr)
            for s in summaries
        ],
        f"{title} ({'/'.join(map(str, pairs))} pairs; mean ± s.e.)",
        ylabel="cosine(query, document)",
        xlabel="evidence position",
    )
    if not all(s.reliable for s in summaries):
        fig.axes[0].text(
            0.5,
            0.5,
            f"UNRELIABLE: fewer than {MIN_RELIABLE_PAIRS} pairs",
            transform=fig.axes[0].transAxes,
            ha="center",
            va="center",
            color="red",
            alpha=0.6,
            fontsize=14,
        )
    return save_figure(fig, path)


def pairs_cell(summary: EvidenceMovingSummary) -> str:
    """The pair count for a table, flagged when below :data:`MIN_RELIABLE_PAIRS`.

    Example:
        >>> pairs_cell(EvidenceMovingSummary("B", (0.6, 0.58), (0.0, 0.0), 5))
        '5 (unreliable: < 20)'
    """
    if summary.reliable:
        return str(summary.n_pairs)
    return f"{summary.n_pairs} (unreliable: < {MIN_RELIABLE_PAIRS})"


def summary_table(summaries: Sequence[EvidenceMovingSummary], digits: int = 4) -> str:
    """A markdown table: model, pairs, p1…pn, peak, lowest, Δ×10³.

    Example:
        >>> s = EvidenceMovingSummary("B", (0.6, 0.58), (0.0, 0.0), 25)
        >>> print(summary_table([s], digits=2))
        | model | pairs | p1 | p2 | peak | lowest | Δ×10³ |
        |---|---|---|---|---|---|---|
        | B | 25 | 0.60 | 0.58 | p1 | p2 | 20.0 |
    """
    from hf_posbias.tables import MarkdownTable

    head = ["model", "pairs", *summaries[0].positions, "peak", "lowest", "Δ×10³"]
    rows = [
        [s.model, pairs_cell(s), *(f"{v:.{digits}f}" for v in s.mean)]
        + [s.peak_position, s.lowest_position, f"{s.delta:.1f}"]
        for s in summaries
    ]
    return MarkdownTable(head, rows).to_markdown()


@dataclass
class PairLoadReport:
    """What :func:`load_pairs` read, kept and skipped (with reasons)."""

    source: str
    kind: str
    read: int = 0
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary_line(self) -> str:
        extra = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items()))
        return f"pairs from {self.source} ({self.kind}): read {self.read}, kept {self.kept}" + (
            f", skipped: {extra}" if extra else ""
        )


def _int_list(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text or "")]


def _case_from_sentences(
    query: str, sentences: Sequence[str], evidence_idx: Sequence[int], id: str
) -> EvidenceCase:
    keep = [s.strip() for i, s in enumerate(sentences) if i not in set(evidence_idx) and s.strip()]
    evidence = " ".join(sentences[i].strip() for i in sorted(set(evidence_idx)))
    starts, pos = [], 0
    for sentence in keep:
        starts.append(pos)
        pos += len(sentence) + 1
    return EvidenceCase(query, " ".join(keep), evidence, boundaries=tuple(starts), id=id)


def load_scifact_pairs(
    folder: str | Path, split: str = "train"
) -> tuple[list[EvidenceCase], PairLoadReport]:
    """SciFact claims with rationale sentences: the claim is the query, the rationale the evidence.

    ``folder`` holds ``claims_<split>.csv`` and ``corpus_train.csv`` (HF ``allenai/scifact``
    exported to CSV). Each (claim, evidence document) is one pair; its rationale sentences move
    together as one block, the remaining sentences (in order) are the fixed document, and the
    insertion points are their exact sentence starts. ``split`` may be ``train``,
    ``validation`` or ``all``.
    """
    from hf_posbias.tasks.builders.scifact import parse_sentence_list

    folder = Path(folder)
    splits = ["train", "validation"] if split == "all" else [split]
    corpus_path = folder / "corpus_train.csv"
    if not corpus_path.exists():
        raise InputError(f"{folder}: no corpus_train.csv (SciFact corpus)")
    csv.field_size_limit(1 << 24)
    with corpus_path.open(encoding="utf-8", newline="") as handle:
        abstracts = {row["doc_id"]: row["abstract"] for row in csv.DictReader(handle)}
    report = PairLoadReport(str(folder), f"scifact:{split}")
    cases: list[EvidenceCase] = []
    seen: set[tuple[str, str]] = set()
    for name in splits:
        path = folder / f"claims_{name}.csv"
        if not path.exists():
            raise InputError(f"{folder}: no claims_{name}.csv")
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                report.read += 1
                indices = _int_list(row.get("evidence_sentences", ""))
                doc_id = (row.get("evidence_doc_id") or "").strip()
                if not doc_id or not indices:
                    report.skip("no_evidence")
                    continue
                key = (row["id"], doc_id)
                if key in seen:
                    # SciFact lists one row per rationale set; the first set stands for the pair.
                    report.skip("extra_rationale_set")
                    continue
                seen.add(key)
                if doc_id not in abstracts:
                    report.skip("document_not_in_corpus")
                    continue
                sentences = parse_sentence_list(abstracts[doc_id])
                if max(indices) >= len(sentences) or min(indices) < 0:
                    report.skip("evidence_index_out_of_range")
                    continue
                try:
                    case = _case_from_sentences(
                        row["claim"], sentences, indices, f"{name}:{row['id']}:{doc_id}"
                    )
                except InputError as err:
                    report.skip(_reason(err))
                    continue
                cases.append(case)
    report.kept = len(cases)
    return cases, report


def _reason(err: InputError) -> str:
    message = str(err)
    for key in ("query is empty", "evidence not found", "evidence is empty", "splits a word"):
        if key in message:
            return key.replace(" ", "_")
    if "outside the document" in message:
        return "evidence_span_outside_document"
    if "empty once the evidence" in message:
        return "document_empty_without_evidence"
    return "invalid_pair"


JSONL_PAIR_FIELDS = "query, document, and evidence or evidence_start + evidence_end"
"""The fields of a user pair (:func:`load_jsonl_pairs`), as an error names them."""
_FIELD_SKIPS = frozenset({"missing_document", "missing_query", "missing_evidence"})


def columns_error(source: str | Path, needed: str, found: Iterable[str]) -> InputError:
    """The one line of a pair source whose rows lack the fields a pair needs: which it needs and
    which it has.

    Example:
        >>> print(columns_error("p.jsonl", "query, positive", ["a", "b"]))
        p.jsonl: its rows lack the fields of a pair (query, positive); found: a, b
    """
    have = ", ".join(sorted(set(found))) or "none"
    return InputError(f"{source}: its rows lack the fields of a pair ({needed}); found: {have}")


def load_jsonl_pairs(path: str | Path) -> tuple[list[EvidenceCase], PairLoadReport]:
    """User pairs, one JSON object a line: ``query``, ``document`` and either ``evidence`` (a text
    found in the document) or ``evidence_start``/``evidence_end`` (character offsets); ``id``
    optional. Bad lines are skipped and counted, not fatal; a file none of whose lines has those
    fields is one :func:`columns_error` (the fields it needs, those it has).
    """
    path = Path(path)
    report = PairLoadReport(str(path), "jsonl")
    cases: list[EvidenceCase] = []
    fields: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            report.read += 1
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                report.skip("malformed_json")
                continue
            fields.update(record if isinstance(record, dict) else ())
            if not isinstance(record, dict) or not isinstance(record.get("document"), str):
                report.skip("missing_document")
                continue
            query = record.get("query")
            if not isinstance(query, str):
                report.skip("missing_query")
                continue
            pair_id = str(record.get("id", f"line{lineno}"))
            try:
                if isinstance(record.get("evidence"), str):
                    case = EvidenceCase.from_text(
                        query, record["document"], record["evidence"], id=pair_id
                    )
                elif "evidence_start" in record and "evidence_end" in record:
                    case = EvidenceCase.from_span(
                        query,
                        record["document"],
                        int(record["evidence_start"]),
                        int(record["evidence_end"]),
                        id=pair_id,
                    )
                else:
                    report.skip("missing_evidence")
                    continue
            except (InputError, TypeError, ValueError) as err:
                report.skip(_reason(err) if isinstance(err, InputError) else "invalid_pair")
                continue
            cases.append(case)
    if not cases and report.skipped and set(report.skipped) <= _FIELD_SKIPS:
        raise columns_error(path, JSONL_PAIR_FIELDS, fields)
    report.kept = len(cases)
    return cases, report


def training_rows_to_pairs(
    rows: Iterable[dict[str, Any]], source: str = "rows"
) -> tuple[list[EvidenceCase], PairLoadReport]:
    """Training-set rows (``query``, ``positive``, ``target_position``): the target third of the
    positive (``corpus.segment_spans(positive, 3)``) is the evidence.
    """
    from hf_posbias.corpus.documents import segment_spans
    from hf_posbias.positions import POSITIONS

    report = PairLoadReport(source, "training-set")
    cases: list[EvidenceCase] = []
    for i, row in enumerate(rows):
        report.read += 1
        position = row.get("target_position")
        positive = row.get("positive")
        if position not in POSITIONS or not isinstance(positive, str):
            report.skip("missing_positive_or_target_position")
            continue
        try:
            start, end = segment_spans(positive, 3)[POSITIONS.index(position)]
            pair_id = str(row.get("candidate_id") or f"row{i}")
            cases.append(
                EvidenceCase.from_span(row.get("query") or "", positive, start, end, pair_id)
            )
        except InputError as err:
            report.skip(_reason(err))
    report.kept = len(cases)
    return cases, report


def load_pairs(
    source: str | Path, split: str = "train", config: str = "uniform"
) -> tuple[list[EvidenceCase], PairLoadReport]:
    """Load evidence pairs from any supported source, detected from its shape.

    - a folder with ``claims_*.csv`` → SciFact (``split``: train | validation | all);
    - a ``.jsonl`` file → user pairs (:func:`load_jsonl_pairs`);
    - a ``.parquet`` file, or a training-set repo folder (``data/<config>/*.parquet``, written by
      ``posbias data sample``) → training rows (:func:`training_rows_to_pairs`).
    """
    path = Path(source)
    if not path.exists():
        raise InputError(f"pair source not found: {path}")
    if path.is_dir() and any(path.glob("claims_*.csv")):
        return load_scifact_pairs(path, split)
    if path.is_file() and path.suffix in {".jsonl", ".json"}:
        return load_jsonl_pairs(path)
    files: list[Path] = []
    if path.is_file() and path.suffix == ".parquet":
        files = [path]
    elif path.is_dir() and (path / "data").is_dir():
        files = sorted((path / "data" / config).glob("*.parquet"))
        if not files:
            configs = sorted(p.name for p in (path / "data").iterdir() if p.is_dir())
            raise InputError(f"{path}: no parquet files for config {config!r}; has {configs}")
    if not files:
        raise InputError(
            f"unsupported pair source {path}: use a SciFact folder (claims_*.csv), a .jsonl file, "
            "a training-set .parquet or a training-set folder (data/<config>/)"
        )

    rows: list[dict[str, Any]] = []
    for file in files:
        table = read_parquet(file)
        if {"query", "positive", "target_position"} - set(table.column_names):
            raise columns_error(file, "query, positive, target_position", table.column_names)
        rows.extend(table.to_pylist())
    return training_rows_to_pairs(rows, source=str(path))


def sample_pairs(
    cases: Sequence[EvidenceCase], limit: int | None, seed: int = 42
) -> list[EvidenceCase]:
    """A deterministic random subset of ``limit`` pairs (all when ``limit`` is None or larger),
    kept in source order.

    Example:
        >>> cs = [EvidenceCase("q", f"Doc {i}.", "Ev.", id=str(i)) for i in range(10)]
        >>> [c.id for c in sample_pairs(cs, 3, seed=0)] == [c.id for c in sample_pairs(cs, 3, 0)]
        True
    """
    if limit is None or limit >= len(cases):
        return list(cases)
    chosen = sorted(random.Random(seed).sample(range(len(cases)), limit))
    return [cases[i] for i in chosen]
