"""Segment profile: how much of each part of a document survives in its embedding (query-free).

YHP26 §6 / App. F: cut a document into ``n`` equal-length segments (``corpus.segment_spans``,
cut points snapped to whitespace), embed the full document and every segment, and take
cosine(document, segment i). Averaged over a corpus, the curve shows which part of the text the
pooled embedding is dominated by; its range (max − min) summarises the bias and compares base
against fine-tuned models without any query. YHP26 App. C reports the range over segments 1–9
of the ten, the last segment left out: :attr:`SegmentProfile.app_c_range`, beside the range over
every segment.

Example:
    >>> from hf_posbias.analysis.segment_profile import SegmentProfile
    >>> p = SegmentProfile("m", mean=(0.71, 0.65, 0.60), stderr=(0.0, 0.0, 0.0), n_docs=4)
    >>> p.peak_position, p.lowest_position, round(p.range, 2), round(p.app_c_range, 2)
    ('p1', 'p3', 0.11, 0.06)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.analysis.evidence_moving import (
    MeanCurve,
    count_truncated_for_model,
    encode_texts,
    mean_and_stderr,
    skipped_column,
)
from hf_posbias.errors import InputError
from hf_posbias.progress import progress as progress_bar

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_SEGMENTS = 10


@dataclass
class SegmentProfile(MeanCurve):
    """Mean cosine(document, segment i) over a corpus for one model."""

    n_docs: int
    n_input: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    per_document: list[tuple[str, tuple[float, ...]]] = field(default_factory=list, repr=False)

    @property
    def range(self) -> float:
        """max − min of the mean curve (cosine units)."""
        return max(self.mean) - min(self.mean)

    @property
    def app_c_segments(self) -> tuple[int, int]:
        """The segments (first, last, 1-based) of :attr:`app_c_range`: 1–9 of YHP26's ten; of
        another ``n``, 1…n−1 (the project's reading: App. C states ten segments only)."""
        return 1, max(len(self.mean) - 1, 1)

    @property
    def app_c_range(self) -> float:
        """YHP26 App. C's range: max − min of the mean curve over segments 1–9 (of ten; the
        last segment left out), in cosine units.

        Example:
            >>> curve = (0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.7, 0.2)
            >>> p = SegmentProfile("m", curve, (0.0,) * 10, 1)
            >>> round(p.range, 2), round(p.app_c_range, 2), p.app_c_segments
            (0.7, 0.2, (1, 9))
        """
        first, last = self.app_c_segments
        head = self.mean[first - 1 : last]
        return max(head) - min(head)

    def to_row(self) -> dict[str, Any]:
        """A flat CSV row: model, documents, p1…pn, se_p1…, peak, lowest, range, App. C's
        range, skipped."""
        return self.curve_row(
            "documents",
            self.n_docs,
            range=round(self.range, 6),
            app_c_range=round(self.app_c_range, 6),
            skipped=skipped_column(self.skipped),
        )


def document_profile(
    model: SentenceTransformer, text: str, n: int = DEFAULT_SEGMENTS
) -> tuple[float, ...]:
    """cosine(document, segment i) for ``i = 1…n``: the document and its segments in one batch.

    Example:
        >>> from hf_posbias.modeling.loaders import load_sentence_transformer
        >>> m = load_sentence_transformer("all-MiniLM-L6-v2", device="cpu")
        >>> len(document_profile(m, "Cats purr. Dogs bark. Birds sing. Fish swim.", n=4))
        4
    """
    import numpy as np

    from hf_posbias.corpus.documents import segment_spans

    segments = [text[s:e].strip() for s, e in segment_spans(text, n)]
    if any(not s for s in segments):
        raise InputError(f"a document of {len(text)} characters has an empty segment for n={n}")
    vectors = np.asarray(encode_texts(model, [text, *segments], "document"), dtype=np.float64)
    return tuple(float(c) for c in vectors[1:] @ vectors[0])


def segment_profile(
    model: SentenceTransformer,
    documents: Iterable[tuple[str, str]],
    n: int = DEFAULT_SEGMENTS,
    label: str = "model",
    allow_truncation: bool = False,
    progress: bool = True,
) -> SegmentProfile:
    """Average :func:`document_profile` over ``(id, text)`` documents.

    Documents too short for ``n`` segments, and (unless ``allow_truncation``) documents longer
    than the model's maximum sequence length — whose embedding never saw their end, which would
    fake an "end is ignored" profile — are skipped and counted.

    Raises:
        InputError: when no document is left.
    """
    docs = list(documents)
    skipped: Counter[str] = Counter()
    rows: list[tuple[str, tuple[float, ...]]] = []
    for doc_id, text in progress_bar(
        docs, desc=f"segment profile [{label}]", unit="doc", disable=not progress
    ):
        text = text.strip()
        if len(text) < 2 * n:
            skipped["too_short_for_segments"] += 1
            continue
        if not allow_truncation and count_truncated_for_model(model, [text]):
            skipped["longer_than_model_max_seq_length"] += 1
            continue
        try:
            rows.append((doc_id, document_profile(model, text, n)))
        except InputError:
            skipped["too_short_for_segments"] += 1
    if not rows:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) or "no documents"
        raise InputError(f"no usable documents for {label} ({reasons})")
    mean, stderr = mean_and_stderr([r for _, r in rows])
    return SegmentProfile(
        model=label,
        mean=mean,
        stderr=stderr,
        n_docs=len(rows),
        n_input=len(docs),
        skipped=dict(skipped),
        per_document=rows,
    )


def sample_profile_documents(
    corpus: str,
    limit: int | None = None,
    seed: int = 42,
    clip_chars: int | None = None,
    words: tuple[int | None, int | None] = (None, None),
) -> tuple[list[tuple[str, str]], str | None]:
    """``(id, text)`` documents of ``corpus`` (any source
    :func:`hf_posbias.corpus.sources.read_corpus` reads), each clipped at the last sentence start
    within ``clip_chars``, those whose word count lies within ``words`` (``(min, max)``, ``None``
    = no bound) kept, and ``limit`` of them sampled with ``seed`` (in corpus order); returns them
    and a line saying what was sampled.

    Example:
        >>> sample_profile_documents("/no/such.jsonl")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: corpus not found: /no/such.jsonl
    """
    import random

    from hf_posbias.analysis.evidence_cases import sentence_boundaries
    from hf_posbias.corpus.sources import read_corpus

    def kept() -> Iterator[tuple[str, str]]:
        for record in read_corpus(corpus):
            text = record["text"] if isinstance(record["text"], str) else ""
            if clip_chars and len(text) > clip_chars:
                # Clip at a sentence start so the last segment is not a broken sentence.
                cuts = [c for c in sentence_boundaries(text) if 0 < c <= clip_chars]
                text = text[: cuts[-1] if cuts else clip_chars]
            n_words = len(text.split())
            if (words[0] and n_words < words[0]) or (words[1] and n_words > words[1]):
                continue
            yield str(record["id"]), text.strip()

    # Two passes, never more than ``limit`` documents held: a corpus the size of FineWeb-Edu's
    # samples (millions of rows) is counted first, then the drawn ones are read.
    docs, total = [], 0
    for doc in kept():
        total += 1
        if not limit or total <= limit:
            docs.append(doc)
    if not total:
        bounds = "" if words == (None, None) else f" of {words[0] or 0}–{words[1] or '∞'} words"
        raise InputError(f"corpus {corpus} has no documents{bounds}")
    if not limit or limit >= total:
        return docs, None
    chosen = set(random.Random(seed).sample(range(total), limit))
    docs = [doc for index, doc in enumerate(kept()) if index in chosen]
    return docs, f"sampled {limit} of {total} documents (seed {seed})"


def profile_table(profiles: Sequence[SegmentProfile], digits: int = 4) -> str:
    """A markdown table: model, documents, p1…pn, peak, lowest, range, App. C's range.

    Example:
        >>> p = SegmentProfile("m", (0.7, 0.6, 0.4), (0.0, 0.0, 0.0), 3)
        >>> print(profile_table([p], digits=1))
        | model | documents | p1 | p2 | p3 | peak | lowest | range | range p1–p2 (App. C) |
        |---|---|---|---|---|---|---|---|---|
        | m | 3 | 0.7 | 0.6 | 0.4 | p1 | p3 | 0.3000 | 0.1000 |
    """
    from hf_posbias.tables import MarkdownTable

    first, last = profiles[0].app_c_segments
    head = ["model", "documents", *profiles[0].positions, "peak", "lowest", "range"]
    head.append(f"range p{first}–p{last} (App. C)")
    rows = [
        [p.model, str(p.n_docs), *(f"{v:.{digits}f}" for v in p.mean)]
        + [p.peak_position, p.lowest_position, f"{p.range:.4f}", f"{p.app_c_range:.4f}"]
        for p in profiles
    ]
    return MarkdownTable(head, rows).to_markdown()
