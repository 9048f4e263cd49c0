"""The reranker panel: every member scores a candidate's query against its three segments.

A candidate (CONTRIBUTING "Candidates") has a query written for one target segment of its
document. Every panel member scores the query against the begin, middle and end segment; the
member's margin is ``R(q, s_target) − max_u R(q, s_u)`` over the two non-target segments, and the
consensus margin of YHP26 is the minimum over members. A candidate is kept iff ``m_cons ≥ δ``
(default 0.3). :func:`parse_panel` builds a panel from a spec (``bm25``, cross-encoder ids,
``paper``); :func:`check_delta` refuses a δ the panel's score scale cannot reach.

Throughput: each unique (query, segment) text pair is scored once per member, pairs are sorted
by length once for all members, and a cross-encoder member tokenizes each distinct text once
and batches pairs of nearly equal token length (:mod:`~hf_posbias.verification.pair_inputs`).

Example:
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.2, 0.5],    # member 1: begin, middle, end
    ...                    [0.7, 0.6, 0.1]])   # member 2
    >>> member_margins, margin = consensus_margin(scores, target_index=0)
    >>> [round(m, 2) for m in member_margins], round(margin, 2)
    ([0.4, 0.1], 0.1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_posbias.errors import InputError, PosbiasError
from hf_posbias.positions import POSITIONS
from hf_posbias.progress import progress as progress_bar
from hf_posbias.verification.members import (
    BI_ENCODER_NORMALIZATIONS,
    BM25_NORMALIZATIONS,
    CROSS_ENCODER_NORMALIZATIONS,
    BiEncoderMember,
    BM25Member,
    CrossEncoderMember,
    PanelMember,
    describe_member,
    member_saturation,
    normalize_scores,
    score_range,
)

PAPER_PANEL: tuple[str, ...] = (
    "BAAI/bge-reranker-v2-m3",
    "Alibaba-NLP/gte-multilingual-reranker-base",
    "jinaai/jina-reranker-v2-base-multilingual",
)
"""The three cross-encoders of YHP26's verification panel (Hub ids)."""

# gte-multilingual-reranker and jina-reranker-v2 ship their modelling code in the repo; the
# paper's panel cannot load without it, so `paper` needs the user's --trust-remote-code.
_REMOTE_CODE_MODELS = frozenset(PAPER_PANEL[1:])


def check_paper_panel(trust_remote_code: bool) -> None:
    """Refuse the ``paper`` panel without the remote-code opt-in (two of its rerankers run
    their repositories' own code).

    Example:
        >>> check_paper_panel(False)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: panel 'paper' runs the code of ... add --trust-remote-code ...
    """
    if not trust_remote_code:
        names = " and ".join(sorted(_REMOTE_CODE_MODELS))
        raise InputError(
            f"panel 'paper' runs the code of {names} (their own modelling code): add "
            "--trust-remote-code only if you trust these repositories"
        )


# --------------------------------------------------------------------------- margins


def consensus_margin(scores: np.ndarray, target_index: int) -> tuple[list[float], float]:
    """Per-member margins and the consensus margin (their minimum) for one candidate.

    Args:
        scores: normalised scores, shape ``(n_members, n_segments)``.
        target_index: the target segment's column.

    Returns:
        ``(member_margins, margin)`` with ``member_margins[r] = s[r, t] − max_{u≠t} s[r, u]``.
    """
    s = np.asarray(scores, dtype=np.float64)
    others = np.delete(s, target_index, axis=1)
    member_margins = s[:, target_index] - others.max(axis=1)
    return [float(m) for m in member_margins], float(member_margins.min())


def target_index(row: dict[str, Any]) -> int:
    """The column of a candidate's target segment (begin 0, middle 1, end 2)."""
    position = row.get("target_position")
    if position not in POSITIONS:
        raise InputError(
            f"candidate {row.get('candidate_id')!r}: target_position must be one of "
            f"{', '.join(POSITIONS)}, got {position!r}"
        )
    return POSITIONS.index(position)


def check_candidate(row: dict[str, Any]) -> None:
    """Refuse a candidate row that breaks the contract (one-line :class:`InputError`)."""
    missing = [k for k in ("candidate_id", "query", "segments", "target_position") if k not in row]
    if missing:
        raise InputError(
            f"candidate row {row.get('candidate_id', '?')!r} lacks column(s) {', '.join(missing)}"
        )
    segments = row["segments"]
    # Lists from parquet rows, tuples, or numpy arrays from pandas: any sized non-string.
    if (
        isinstance(segments, (str, bytes))
        or not hasattr(segments, "__len__")
        or len(segments) != len(POSITIONS)
    ):
        raise InputError(
            f"candidate {row['candidate_id']!r}: segments must be a list of {len(POSITIONS)} "
            f"texts (begin/middle/end), got {type(segments).__name__} of length "
            f"{len(segments) if hasattr(segments, '__len__') else '?'}"
        )
    if not all(isinstance(seg, str) for seg in segments):
        raise InputError(f"candidate {row['candidate_id']!r}: every segment must be a string")
    if not isinstance(row["query"], str) or not row["query"].strip():
        raise InputError(f"candidate {row['candidate_id']!r}: empty query")
    target_index(row)


# --------------------------------------------------------------------------- the panel


@dataclass
class PanelScores:
    """Scores of a batch of candidates: ``normalized[i, r, s]`` = member r on segment s."""

    raw: np.ndarray
    normalized: np.ndarray
    member_margins: np.ndarray
    margin: np.ndarray
    pairs_total: int = 0
    pairs_scored: int = 0


class RerankerPanel:
    """A panel of verifiers whose consensus margin decides which candidates are kept.

    Example:
        >>> panel = RerankerPanel([BM25Member()])
        >>> rows = [{"candidate_id": "d::end", "query": "where do owls nest",
        ...          "target_position": "end",
        ...          "segments": ["lions hunt at dusk", "fish swim", "owls nest in old trees"]}]
        >>> panel.prepare(rows)
        >>> result = panel.score(rows, progress=False)
        >>> round(float(result.margin[0]), 2)
        1.0
    """

    def __init__(self, members: Sequence[PanelMember], chunk_batches: int = 8) -> None:
        if not members:
            raise InputError("a reranker panel needs at least one member")
        names = [m.name for m in members]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InputError(f"panel members must be distinct, repeated: {', '.join(dupes)}")
        self.members = list(members)
        # Pairs handed to a member per call: a few batches, so the progress bar moves and
        # memory stays bounded while each call still batches efficiently.
        self.chunk_batches = chunk_batches

    @property
    def names(self) -> list[str]:
        """Member names in panel order (the row order of ``panel_scores``)."""
        return [m.name for m in self.members]

    def describe(self) -> list[dict[str, Any]]:
        """Member names, kinds and normalisations (goes into the manifest and the report)."""
        return [describe_member(m) for m in self.members]

    def load(self) -> None:
        """Load every member that has a model to load (a bad id raises ``ModelLoadError``)."""
        for member in self.members:
            loader = getattr(member, "load", None)
            if callable(loader):
                loader()

    def prepare(self, candidates: Sequence[dict[str, Any]]) -> None:
        """Fit members that need collection statistics (BM25) on all segments of the run."""
        fitters = [m for m in self.members if callable(getattr(m, "fit", None))]
        if not fitters:
            return
        for member in fitters:
            # A stream of every segment (repeats included): the member keeps what it needs.
            member.fit(str(s) for row in candidates for s in row["segments"])  # type: ignore[attr-defined]

    def _score_member(
        self,
        member: PanelMember,
        pairs: list[tuple[str, str]],
        order: list[int],
        progress: bool,
    ) -> np.ndarray:
        step = max(1, int(getattr(member, "batch_size", 256)) * self.chunk_batches)
        out = np.zeros(len(pairs), dtype=np.float64)
        bar = progress_bar(
            total=len(pairs), desc=f"verify {member.name}", unit="pair", disable=not progress
        )
        for start in range(0, len(order), step):
            idx = order[start : start + step]
            scores = np.asarray(
                member.score_pairs([pairs[i][0] for i in idx], [pairs[i][1] for i in idx]),
                dtype=np.float64,
            ).reshape(-1)
            if scores.shape[0] != len(idx):
                raise RuntimeError(
                    f"member {member.name!r} returned {scores.shape[0]} scores for {len(idx)} pairs"
                )
            if not np.isfinite(scores).all():
                raise PosbiasError(f"panel member {member.name!r} returned non-finite scores")
            out[idx] = scores
            bar.update(len(idx))
        bar.close()
        return out

    def pair_scores(
        self, queries: Sequence[str], passages: Sequence[str], progress: bool = False
    ) -> tuple[np.ndarray, int]:
        """Raw scores of every member on the pairs ``(queries[i], passages[i])``.

        Each unique pair is scored once per member, in one length order shared by all members
        (longest first: similar lengths share a call, and an out-of-memory batch fails early).

        Returns:
            ``(raw, unique)``: ``raw[r, i]`` is member r's score of pair i; ``unique`` pairs
            were scored.

        Example:
            >>> panel = RerankerPanel([BM25Member(normalization="none")])
            >>> panel.prepare([{"segments": ["owls nest in trees", "fish swim"]}])
            >>> raw, unique = panel.pair_scores(["owls", "owls"], ["owls nest in trees"] * 2)
            >>> raw.shape, unique, bool(raw[0, 0] == raw[0, 1] > 0)
            ((1, 2), 1, True)
        """
        if len(queries) != len(passages):
            raise ValueError(f"{len(queries)} queries but {len(passages)} passages")
        index: dict[tuple[str, str], int] = {}
        cell = np.fromiter(
            (index.setdefault(pair, len(index)) for pair in zip(queries, passages)),
            dtype=np.int64,
            count=len(queries),
        )
        pairs = list(index)
        order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
        raw = np.zeros((len(self.members), len(queries)), dtype=np.float64)
        for r, member in enumerate(self.members):
            if pairs:
                raw[r] = self._score_member(member, pairs, order, progress)[cell]
        return raw, len(pairs)

    def score(self, candidates: Sequence[dict[str, Any]], progress: bool = True) -> PanelScores:
        """Score every candidate's query against its segments with every member.

        Each unique (query, segment) text pair is scored once per member; duplicates (the same
        candidate twice, repeated queries over a shared segment) reuse that score.
        """
        n, k = len(candidates), len(POSITIONS)
        for row in candidates:
            check_candidate(row)
        flat, unique = self.pair_scores(
            [row["query"] for row in candidates for _ in range(k)],
            [seg for row in candidates for seg in row["segments"]],
            progress,
        )
        raw = flat.reshape(len(self.members), n, k).transpose(1, 0, 2).copy()
        norm = np.zeros_like(raw)
        for r, member in enumerate(self.members):
            norm[:, r, :] = normalize_scores(
                raw[:, r, :], member.normalization, member_saturation(member)
            )
        targets = np.array([target_index(row) for row in candidates], dtype=np.int64)
        # Vectorised consensus_margin: target score minus the best non-target score.
        is_target = np.zeros((n, 1, k), dtype=bool)
        is_target[np.arange(n), 0, targets] = True
        target_scores = np.where(is_target, norm, 0.0).sum(axis=2)
        best_other = np.where(is_target, -np.inf, norm).max(axis=2)
        member_margins = target_scores - best_other
        margin = member_margins.min(axis=1) if n else np.zeros(0)
        return PanelScores(raw, norm, member_margins, margin, n * k, unique)


# --------------------------------------------------------------------------- panel specs


def parse_panel(
    spec: str,
    normalization: str | None = None,
    *,
    batch_size: int = 32,
    max_length: int | None = None,
    device: str | None = None,
    load: bool = True,
    trust_remote_code: bool = False,
) -> RerankerPanel:
    """Build a panel from a comma-separated spec.

    Members: ``bm25``; ``bi:<embedding model>`` (a bi-encoder's cosine, a stand-in where no
    cross-encoder loads); any cross-encoder Hub id or local path; ``paper`` = YHP26's three
    rerankers (:data:`PAPER_PANEL`). A member may carry its own normalisation after ``@``
    (``bm25@softmax``, ``BAAI/bge-reranker-v2-m3@none``); otherwise ``normalization`` applies
    where it is valid for the member kind, else the kind's default (cross-encoder ``sigmoid``,
    BM25 ``share``). With ``load`` (default) every cross-encoder is loaded now, so a bad id
    fails before any work starts. ``trust_remote_code`` (``--trust-remote-code``) lets a
    cross-encoder run its repository's own code; without it ``paper`` is refused.

    Example:
        >>> panel = parse_panel("bm25@softmax")
        >>> [(d["name"], d["normalization"]) for d in panel.describe()]
        [('bm25', 'softmax')]
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("panel spec is empty: give e.g. 'bm25', 'paper' or 'bm25,<cross-encoder>'")
    members: list[PanelMember] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            raise InputError(f"panel spec {spec!r} has an empty member (stray comma?)")
        name, at, norm = part.partition("@")
        name, norm = name.strip(), norm.strip() or None
        if at and norm is None:
            raise InputError(f"panel spec {spec!r}: member {part!r} has '@' but no normalisation")
        if not name:
            raise InputError(f"panel spec {spec!r}: member {part!r} has no name")
        if name.lower() == "bm25":
            chosen = norm or (normalization if normalization in BM25_NORMALIZATIONS else "share")
            members.append(BM25Member(normalization=chosen))
            continue
        if name.lower().startswith("bi:"):
            chosen = norm or (
                normalization if normalization in BI_ENCODER_NORMALIZATIONS else "clip"
            )
            members.append(
                BiEncoderMember(
                    name[3:], normalization=chosen, batch_size=batch_size, device=device
                )
            )
            continue
        names = [name]
        if name.lower() == "paper":
            check_paper_panel(trust_remote_code)
            names = list(PAPER_PANEL)
        for model in names:
            chosen = norm or (
                normalization if normalization in CROSS_ENCODER_NORMALIZATIONS else "sigmoid"
            )
            members.append(
                CrossEncoderMember(
                    model,
                    normalization=chosen,
                    batch_size=batch_size,
                    max_length=max_length,
                    device=device,
                    trust_remote_code=trust_remote_code,
                )
            )
    if normalization is not None and not any(m.normalization == normalization for m in members):
        raise InputError(
            f"normalisation {normalization!r} applies to no member of panel {spec!r} "
            f"(cross-encoder: {', '.join(CROSS_ENCODER_NORMALIZATIONS)}; "
            f"bm25: {', '.join(BM25_NORMALIZATIONS)}; "
            f"bi-encoder: {', '.join(BI_ENCODER_NORMALIZATIONS)})"
        )
    panel = RerankerPanel(members)
    if load:
        panel.load()
    return panel


def margin_ceiling(panel: RerankerPanel) -> float:
    """The largest consensus margin a panel can give: the smallest member score range width.

    Example:
        >>> margin_ceiling(parse_panel("bm25")), margin_ceiling(parse_panel("bm25@none"))
        (1.0, inf)
    """
    widths = []
    for member in panel.members:
        lo, hi = score_range(member.normalization)
        widths.append(hi - lo)
    return min(widths)


def check_delta(delta: Any, panel: RerankerPanel) -> float:
    """Refuse a δ that is not a finite number ≥ 0 or that the panel's margins can never reach.

    Example:
        >>> check_delta(0.3, parse_panel("bm25", load=False))
        0.3
        >>> check_delta(5, parse_panel("bm25", load=False))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: delta 5 is above the largest margin panel bm25 (share) ...
    """
    from hf_posbias.settings import check_number, setting_label
    from hf_posbias.verification.report import DELTA

    if isinstance(delta, bool) or not isinstance(delta, int | float):
        raise InputError(f"{setting_label('delta')} must be a number, got {delta!r}")
    check_number("delta", delta, DELTA)
    ceiling = margin_ceiling(panel)
    if delta > ceiling:
        members = ", ".join(f"{m.name} ({m.normalization})" for m in panel.members)
        raise InputError(
            f"delta {delta:g} is above the largest margin panel {members} can give "
            f"({ceiling:g} on its normalised score scale): no candidate could be kept; "
            f"choose a delta in [0, {ceiling:g}]"
        )
    return float(delta)
