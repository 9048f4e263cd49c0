"""Stage 3 — verification: a reranker panel scores each candidate against its three segments.

A candidate (see CONTRIBUTING "Candidates") has a query written for one target segment of its
document. Every panel member scores the query against the begin, middle and end segment; the
member's margin is ``R(q, s_target) − max_u R(q, s_u)`` over the two non-target segments, and the
consensus margin of YHP26 is the minimum over members. A candidate is kept iff
``m_cons ≥ δ`` (default 0.3).

Scores are normalised **explicitly** before margins are taken, because a margin threshold is
only meaningful on a bounded scale:

- cross-encoders: ``sigmoid`` (default; maps the relevance logit to [0, 1], the scale δ = 0.3
  was chosen on) or ``none`` (raw logits; δ then means logit units) or ``softmax``;
- BM25: ``share`` (default; a segment's share ``x / Σx`` of the candidate's total BM25 mass, in
  [0, 1]; invariant to the query-length scaling of BM25, unlike a softmax over raw scores whose
  margin grows with every extra query word), ``softmax`` over the three segments, ``saturate``
  (``x / (x + k)``, per segment, ``k`` = ``BM25Member.saturation``) or ``none``.

Throughput: each unique (query, segment) text pair is scored once per member, and pairs are
sorted by length before batching so batches hold similar lengths (less padding).

Example:
    >>> import numpy as np
    >>> from hf_posbias.verification import consensus_margin
    >>> scores = np.array([[0.9, 0.2, 0.5],    # member 1: begin, middle, end
    ...                    [0.7, 0.6, 0.1]])   # member 2
    >>> member_margins, margin = consensus_margin(scores, target_index=0)
    >>> [round(m, 2) for m in member_margins], round(margin, 2)
    ([0.4, 0.1], 0.1)
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from hf_posbias import POSITIONS
from hf_posbias.corpus import bin_sort_key
from hf_posbias.errors import InputError, ModelLoadError, PosbiasError
from hf_posbias.generation.base import stable_seed

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from hf_posbias.generation.backends import ChatBackend

DEFAULT_DELTA = 0.3
"""YHP26's consensus-margin threshold δ."""

PAPER_PANEL: tuple[str, ...] = (
    "BAAI/bge-reranker-v2-m3",
    "Alibaba-NLP/gte-multilingual-reranker-base",
    "jinaai/jina-reranker-v2-base-multilingual",
)
"""The three cross-encoders of YHP26's verification panel (Hub ids)."""

# gte-multilingual-reranker and jina-reranker-v2 ship their modelling code in the repo; the
# paper's panel cannot load without it, so `paper` opts in for exactly these two ids.
_REMOTE_CODE_MODELS = frozenset(PAPER_PANEL[1:])

REPORT_THRESHOLDS: tuple[float, ...] = (0.0, 0.1, 0.2)
"""Margin thresholds of YHP26 Table 6; δ is always added."""

CROSS_ENCODER_NORMALIZATIONS = ("sigmoid", "none", "softmax")
BM25_NORMALIZATIONS = ("share", "softmax", "saturate", "none")

# Whether a normalisation looks only at one score (elementwise) or at the candidate's three.
_ELEMENTWISE = {"sigmoid", "none", "saturate"}


# --------------------------------------------------------------------------- normalisation


def normalize_scores(raw: np.ndarray, method: str, saturation: float = 1.0) -> np.ndarray:
    """Normalise raw scores of shape ``(n_candidates, 3)`` (one row = a candidate's segments).

    Example:
        >>> import numpy as np
        >>> normalize_scores(np.array([[0.0, 2.0, 2.0]]), "share").tolist()
        [[0.0, 0.5, 0.5]]
        >>> normalize_scores(np.array([[0.0]]), "sigmoid").tolist()
        [[0.5]]
    """
    x = np.asarray(raw, dtype=np.float64)
    if method == "none":
        return x.copy()
    if method == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if method == "softmax":
        shifted = x - x.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        return e / e.sum(axis=-1, keepdims=True)
    if method == "share":
        if (x < 0).any():
            raise InputError("'share' normalisation needs non-negative scores (BM25)")
        total = x.sum(axis=-1, keepdims=True)
        # A query sharing no word with any segment has no evidence anywhere: all shares 0,
        # margin 0 — it passes no positive δ.
        return np.divide(x, total, out=np.zeros_like(x), where=total > 0)
    if method == "saturate":
        if (x < 0).any():
            raise InputError("'saturate' normalisation needs non-negative scores (BM25)")
        return x / (x + saturation)
    raise InputError(f"unknown normalisation {method!r}")


# --------------------------------------------------------------------------- panel members


@runtime_checkable
class PanelMember(Protocol):
    """One verifier: scores (query, passage) pairs on its raw scale.

    ``normalization`` names how the panel maps its raw scores to a bounded scale. Members that
    need collection statistics (BM25) also define ``fit(passages)``, which the panel calls once
    with every unique segment of the run.
    """

    name: str
    normalization: str

    def score_pairs(self, queries: list[str], passages: list[str]) -> np.ndarray:
        """Raw relevance scores, one per pair."""
        ...


class CrossEncoderMember:
    """A sentence-transformers ``CrossEncoder`` (any Hub id or local path) as a panel member.

    Raw logits are returned (``activation_fn=Identity``); the panel applies ``normalization``.

    Example:
        >>> import tempfile
        >>> from hf_posbias.testing import build_tiny_cross_encoder
        >>> member = CrossEncoderMember(build_tiny_cross_encoder(tempfile.mkdtemp()))
        >>> member.score_pairs(["a query"], ["a passage"]).shape
        (1,)
    """

    def __init__(
        self,
        model: str,
        normalization: str = "sigmoid",
        batch_size: int = 32,
        max_length: int | None = None,
        device: str | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        if normalization not in CROSS_ENCODER_NORMALIZATIONS:
            raise InputError(
                f"normalisation {normalization!r} is not valid for cross-encoder {model!r}; "
                f"choose one of {', '.join(CROSS_ENCODER_NORMALIZATIONS)}"
            )
        if batch_size < 1:
            raise InputError(f"batch size must be >= 1, got {batch_size}")
        self.model_name = str(model)
        self.name = self.model_name
        self.normalization = normalization
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.trust_remote_code = trust_remote_code
        self._model: CrossEncoder | None = None

    def load(self) -> CrossEncoder:
        """Load the model once (raises :class:`ModelLoadError` with a one-line message)."""
        if self._model is None:
            from hf_posbias.modeling import load_cross_encoder

            kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
            if self.max_length is not None:
                kwargs["max_length"] = self.max_length
            model = load_cross_encoder(self.model_name, device=self.device, **kwargs)
            if model.num_labels != 1:
                raise ModelLoadError(
                    f"cross-encoder {self.model_name!r} has {model.num_labels} output labels; "
                    "a reranker panel member must output one relevance score"
                )
            self._model = model
        return self._model

    def describe(self) -> dict[str, Any]:
        """What pins this member's output (for the manifest and the report)."""
        return {
            "name": self.name,
            "kind": "cross-encoder",
            "normalization": self.normalization,
            "max_length": self.max_length,
        }

    def score_pairs(self, queries: list[str], passages: list[str]) -> np.ndarray:
        """Raw logits for ``(queries[i], passages[i])``."""
        import torch

        if not queries:
            return np.zeros(0, dtype=np.float64)
        model = self.load()
        scores = model.predict(
            list(zip(queries, passages)),
            batch_size=self.batch_size,
            activation_fn=torch.nn.Identity(),
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(scores, dtype=np.float64).reshape(-1)


class BM25Member:
    """Okapi BM25 (Lucene variant, as ``bm25s``) with statistics fitted on the run's segments.

    ``fit`` counts document frequencies over the unique segments (sorted, so the statistics do
    not depend on candidate order); ``score_pairs`` then scores a query against any passage
    directly in ``O(|q| + |d|)`` — unlike a full-index lookup, whose cost grows with the
    collection. Tokenisation is ``bm25s.tokenize`` (lower-cased words, English stop words).

    Example:
        >>> member = BM25Member()
        >>> member.fit(["cats purr softly", "dogs bark loudly", "birds sing"])
        >>> scores = member.score_pairs(["why do dogs bark"] * 2,
        ...                             ["dogs bark loudly", "cats purr softly"])
        >>> bool(scores[0] > 0 == scores[1])
        True
    """

    def __init__(
        self,
        normalization: str = "share",
        k1: float = 1.5,
        b: float = 0.75,
        saturation: float = 1.0,
        stopwords: str | None = "en",
    ) -> None:
        if normalization not in BM25_NORMALIZATIONS:
            raise InputError(
                f"normalisation {normalization!r} is not valid for bm25; "
                f"choose one of {', '.join(BM25_NORMALIZATIONS)}"
            )
        self.name = "bm25"
        self.normalization = normalization
        self.k1 = k1
        self.b = b
        self.saturation = saturation
        self.stopwords = stopwords
        self._df: Counter[str] = Counter()
        self._n_docs = 0
        self._avgdl = 0.0

    def describe(self) -> dict[str, Any]:
        """What pins this member's output (for the manifest and the report)."""
        return {
            "name": self.name,
            "kind": "bm25",
            "normalization": self.normalization,
            "k1": self.k1,
            "b": self.b,
            "saturation": self.saturation if self.normalization == "saturate" else None,
            "stopwords": self.stopwords,
        }

    def tokenize(self, texts: list[str]) -> list[list[str]]:
        """``bm25s`` tokenisation (the same for fitting and scoring)."""
        import bm25s

        if not texts:
            return []
        return bm25s.tokenize(
            texts, stopwords=self.stopwords or [], return_ids=False, show_progress=False
        )

    def fit(self, passages: Iterable[str]) -> None:
        """Collection statistics (N, document frequencies, mean length) over unique passages."""
        unique = sorted(set(passages))
        if not unique:
            raise InputError("BM25 needs at least one segment to fit its statistics")
        tokens = self.tokenize(unique)
        self._df = Counter()
        total = 0
        for toks in tokens:
            self._df.update(set(toks))
            total += len(toks)
        self._n_docs = len(unique)
        # An all-stop-word collection has mean length 0; 1 keeps the formula defined.
        self._avgdl = total / len(unique) or 1.0

    def _idf(self, term: str) -> float:
        df = self._df.get(term, 0)
        return math.log(1 + (self._n_docs - df + 0.5) / (df + 0.5))

    def score_pairs(self, queries: list[str], passages: list[str]) -> np.ndarray:
        """Raw BM25 scores for ``(queries[i], passages[i])`` under the fitted statistics."""
        if self._n_docs == 0:
            raise RuntimeError("BM25Member.fit must be called before score_pairs")
        uq = sorted(set(queries))
        up = sorted(set(passages))
        q_tok = dict(zip(uq, self.tokenize(uq)))
        p_tok = {p: Counter(t) for p, t in zip(up, self.tokenize(up))}
        p_len = {p: sum(c.values()) for p, c in p_tok.items()}
        out = np.zeros(len(queries), dtype=np.float64)
        for i, (q, p) in enumerate(zip(queries, passages)):
            tf, dl = p_tok[p], p_len[p]
            norm = self.k1 * (1 - self.b + self.b * dl / self._avgdl)
            # Repeated query words count once per occurrence, as in bm25s.get_scores.
            out[i] = sum(
                self._idf(t) * tf[t] / (tf[t] + norm) for t in q_tok[q] if tf.get(t, 0) > 0
            )
        return out


def _member_saturation(member: PanelMember) -> float:
    return float(getattr(member, "saturation", 1.0))


def _describe_member(member: PanelMember) -> dict[str, Any]:
    describe = getattr(member, "describe", None)
    if callable(describe):
        return dict(describe())
    kind = type(member).__name__
    return {"name": member.name, "kind": kind, "normalization": member.normalization}


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


def _target_index(row: dict[str, Any]) -> int:
    position = row.get("target_position")
    if position not in POSITIONS:
        raise InputError(
            f"candidate {row.get('candidate_id')!r}: target_position must be one of "
            f"{', '.join(POSITIONS)}, got {position!r}"
        )
    return POSITIONS.index(position)


def _check_candidate(row: dict[str, Any]) -> None:
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
    _target_index(row)


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
        return [_describe_member(m) for m in self.members]

    def prepare(self, candidates: Sequence[dict[str, Any]]) -> None:
        """Fit members that need collection statistics (BM25) on all segments of the run."""
        fitters = [m for m in self.members if callable(getattr(m, "fit", None))]
        if not fitters:
            return
        segments = sorted({s for row in candidates for s in row["segments"]})
        for member in fitters:
            member.fit(segments)  # type: ignore[attr-defined]

    def _score_member(
        self, member: PanelMember, pairs: list[tuple[str, str]], progress: bool
    ) -> np.ndarray:
        from tqdm.auto import tqdm

        # Longest first: similar lengths share a batch, and an out-of-memory batch fails early.
        order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
        step = max(1, int(getattr(member, "batch_size", 256)) * self.chunk_batches)
        out = np.zeros(len(pairs), dtype=np.float64)
        bar = tqdm(
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

    def score(self, candidates: Sequence[dict[str, Any]], progress: bool = True) -> PanelScores:
        """Score every candidate's query against its segments with every member.

        Each unique (query, segment) text pair is scored once per member; duplicates (the same
        candidate twice, repeated queries over a shared segment) reuse that score.
        """
        n, k = len(candidates), len(POSITIONS)
        for row in candidates:
            _check_candidate(row)
        index: dict[tuple[str, str], int] = {}
        cell_pair = np.zeros((n, k), dtype=np.int64)
        for i, row in enumerate(candidates):
            for j, seg in enumerate(row["segments"]):
                cell_pair[i, j] = index.setdefault((row["query"], seg), len(index))
        pairs = list(index)
        raw = np.zeros((n, len(self.members), k), dtype=np.float64)
        norm = np.zeros_like(raw)
        for r, member in enumerate(self.members):
            unique_scores = self._score_member(member, pairs, progress) if pairs else np.zeros(0)
            raw[:, r, :] = unique_scores[cell_pair] if n else 0.0
            norm[:, r, :] = normalize_scores(
                raw[:, r, :], member.normalization, _member_saturation(member)
            )
        targets = np.array([_target_index(row) for row in candidates], dtype=np.int64)
        # Vectorised consensus_margin: target score minus the best non-target score.
        is_target = np.zeros((n, 1, k), dtype=bool)
        is_target[np.arange(n), 0, targets] = True
        target_scores = np.where(is_target, norm, 0.0).sum(axis=2)
        best_other = np.where(is_target, -np.inf, norm).max(axis=2)
        member_margins = target_scores - best_other
        margin = member_margins.min(axis=1) if n else np.zeros(0)
        return PanelScores(raw, norm, member_margins, margin, n * k, len(pairs))


# --------------------------------------------------------------------------- panel specs


def parse_panel(
    spec: str,
    normalization: str | None = None,
    *,
    batch_size: int = 32,
    max_length: int | None = None,
    device: str | None = None,
    load: bool = True,
) -> RerankerPanel:
    """Build a panel from a comma-separated spec.

    Members: ``bm25``; any cross-encoder Hub id or local path; ``paper`` = YHP26's three
    rerankers (:data:`PAPER_PANEL`). A member may carry its own normalisation after ``@``
    (``bm25@softmax``, ``BAAI/bge-reranker-v2-m3@none``); otherwise ``normalization`` applies
    where it is valid for the member kind, else the kind's default (cross-encoder ``sigmoid``,
    BM25 ``share``). With ``load`` (default) every cross-encoder is loaded now, so a bad id
    fails before any work starts.

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
        names = list(PAPER_PANEL) if name.lower() == "paper" else [name]
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
                    trust_remote_code=model in _REMOTE_CODE_MODELS,
                )
            )
    if normalization is not None and not any(m.normalization == normalization for m in members):
        raise InputError(
            f"normalisation {normalization!r} applies to no member of panel {spec!r} "
            f"(cross-encoder: {', '.join(CROSS_ENCODER_NORMALIZATIONS)}; "
            f"bm25: {', '.join(BM25_NORMALIZATIONS)})"
        )
    panel = RerankerPanel(members)
    if load:
        for member in panel.members:
            if isinstance(member, CrossEncoderMember):
                member.load()
    return panel


# --------------------------------------------------------------------------- report


def report_thresholds(delta: float) -> list[float]:
    """YHP26's Table 6 thresholds 0, 0.1, 0.2 plus δ, sorted and unique."""
    return sorted({*REPORT_THRESHOLDS, float(delta)})


def stratum_labels(delta: float) -> list[str]:
    """Disjoint margin strata: ``failed`` (m < 0), ``[a,b)`` between thresholds, ``≥last``."""
    t = report_thresholds(delta)
    return ["failed", *(f"[{a:g},{b:g})" for a, b in zip(t, t[1:])), f">={t[-1]:g}"]


def margin_stratum(margin: float, delta: float) -> str:
    """The stratum label of one margin (see :func:`stratum_labels`).

    Example:
        >>> [margin_stratum(m, 0.3) for m in (-0.2, 0.0, 0.15, 0.29, 0.3)]
        ['failed', '[0,0.1)', '[0.1,0.2)', '[0.2,0.3)', '>=0.3']
    """
    t = report_thresholds(delta)
    labels = stratum_labels(delta)
    if margin < t[0]:
        return labels[0]
    for i, (a, b) in enumerate(zip(t, t[1:])):
        if a <= margin < b:
            return labels[i + 1]
    return labels[-1]


def _pct(count: int, total: int) -> float:
    return round(100.0 * count / total, 2) if total else 0.0


@dataclass
class VerificationReport:
    """Filtering statistics of one verification run (YHP26 Table 6 and its strata).

    ``cumulative`` rows: ``threshold, count, pct`` (of generated) and per-position counts of
    candidates with ``m ≥ threshold``; ``failed`` = candidates with ``m < 0`` (fail the
    top-rank check). ``strata``: disjoint margin ranges whose counts sum to ``generated``.
    """

    delta: float
    members: list[dict[str, Any]]
    generated: int
    generated_per_position: dict[str, int]
    failed: dict[str, Any]
    cumulative: list[dict[str, Any]]
    strata: list[dict[str, Any]]
    retained: int
    retained_per_bin: dict[str, dict[str, int]]
    pairs_total: int = 0
    pairs_scored: int = 0

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[dict[str, Any]],
        delta: float = DEFAULT_DELTA,
        members: list[dict[str, Any]] | None = None,
        pairs_total: int = 0,
        pairs_scored: int = 0,
    ) -> VerificationReport:
        """Compute the report from scored rows (``margin``, ``target_position``, ``length_bin``).

        Example:
            >>> rows = [{"margin": m, "target_position": p, "length_bin": "256-512"}
            ...         for m, p in [(-0.1, "begin"), (0.05, "middle"), (0.5, "end")]]
            >>> r = VerificationReport.from_rows(rows, delta=0.3)
            >>> r.failed["count"], r.retained, [s["count"] for s in r.strata]
            (1, 1, [1, 1, 0, 0, 1])
        """
        margins = [float(r["margin"]) for r in rows]
        positions = [r["target_position"] for r in rows]
        total = len(rows)

        def per_pos(mask: Iterable[bool]) -> dict[str, int]:
            counts = dict.fromkeys(POSITIONS, 0)
            for keep, pos in zip(mask, positions):
                if keep:
                    counts[pos] = counts.get(pos, 0) + 1
            return counts

        failed_mask = [m < 0 for m in margins]
        failed = {
            "count": sum(failed_mask),
            "pct": _pct(sum(failed_mask), total),
            **per_pos(failed_mask),
        }
        cumulative = []
        for t in report_thresholds(delta):
            mask = [m >= t for m in margins]
            cumulative.append(
                {"threshold": t, "count": sum(mask), "pct": _pct(sum(mask), total), **per_pos(mask)}
            )
        strata_of = [margin_stratum(m, delta) for m in margins]
        strata = []
        for label in stratum_labels(delta):
            mask = [s == label for s in strata_of]
            strata.append({"stratum": label, "count": sum(mask), **per_pos(mask)})
        retained_per_bin: dict[str, dict[str, int]] = {}
        for row, m in zip(rows, margins):
            cell = retained_per_bin.setdefault(
                str(row.get("length_bin")), dict.fromkeys(POSITIONS, 0)
            )
            if m >= delta:
                cell[row["target_position"]] += 1
        return cls(
            delta=float(delta),
            members=list(members or []),
            generated=total,
            generated_per_position=per_pos([True] * total),
            failed=failed,
            cumulative=cumulative,
            strata=strata,
            retained=sum(m >= delta for m in margins),
            retained_per_bin=dict(
                sorted(retained_per_bin.items(), key=lambda kv: bin_sort_key(kv[0]))
            ),
            pairs_total=pairs_total,
            pairs_scored=pairs_scored,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)

    def to_markdown(self) -> str:
        """Markdown tables: filtering (cumulative), margin strata, retained per bin × position."""
        head = "| filter | retained | % | " + " | ".join(POSITIONS) + " |"
        sep = "|---|---|---|" + "---|" * len(POSITIONS)
        lines = [f"Verification panel: {', '.join(self._member_labels())}; δ = {self.delta:g}", ""]
        lines += [head, sep]
        lines.append(
            f"| fails top-rank check | {self.failed['count']:,} (removed) | "
            f"{self.failed['pct']:.2f} | " + " | ".join("" for _ in POSITIONS) + " |"
        )
        for row in self.cumulative:
            cells = " | ".join(f"{row[p]:,}" for p in POSITIONS)
            lines.append(
                f"| m ≥ {row['threshold']:g} | {row['count']:,} | {row['pct']:.2f} | {cells} |"
            )
        lines += ["", "| margin stratum | candidates | " + " | ".join(POSITIONS) + " |"]
        lines.append("|---|---|" + "---|" * len(POSITIONS))
        for row in self.strata:
            cells = " | ".join(f"{row[p]:,}" for p in POSITIONS)
            lines.append(f"| {row['stratum']} | {row['count']:,} | {cells} |")
        lines += ["", f"Retained (m ≥ {self.delta:g}) per length bin:", ""]
        lines.append("| length bin | " + " | ".join(POSITIONS) + " | total |")
        lines.append("|---|" + "---|" * (len(POSITIONS) + 1))
        for label, cell in self.retained_per_bin.items():
            cells = " | ".join(f"{cell[p]:,}" for p in POSITIONS)
            lines.append(f"| {label} | {cells} | {sum(cell.values()):,} |")
        return "\n".join(lines) + "\n"

    def _member_labels(self) -> list[str]:
        return [f"{m.get('name')} ({m.get('normalization')})" for m in self.members]

    def summary_lines(self) -> list[str]:
        """Human-readable lines for the CLI stage report."""
        lines = [
            f"verify: panel {', '.join(self._member_labels()) or '?'}; delta {self.delta:g}",
            f"  generated: {self.generated:,} "
            + " / ".join(f"{p} {self.generated_per_position.get(p, 0):,}" for p in POSITIONS),
            f"  fails top-rank check (m < 0): {self.failed['count']:,} ({self.failed['pct']:.2f}%)",
        ]
        for row in self.cumulative:
            lines.append(
                f"  m >= {row['threshold']:g}: {row['count']:,} ({row['pct']:.2f}%) "
                + " / ".join(f"{p} {row[p]:,}" for p in POSITIONS)
            )
        lines.append(f"  retained (m >= {self.delta:g}): {self.retained:,}")
        for label, cell in self.retained_per_bin.items():
            lines.append(f"  bin {label}: " + " / ".join(f"{p} {cell[p]:,}" for p in POSITIONS))
        if self.pairs_total:
            lines.append(
                f"  pairs: {self.pairs_total:,} (query, segment) cells, "
                f"{self.pairs_scored:,} unique pairs scored per member"
            )
        return lines


# --------------------------------------------------------------------------- the stage


def run_verification(
    candidates: Sequence[dict[str, Any]],
    panel: RerankerPanel,
    out_dir: str | Path,
    *,
    delta: float = DEFAULT_DELTA,
    shard_size: int = 4096,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], VerificationReport]:
    """Score candidates with the panel, resumably, and return the scored pool and its report.

    Output rows are the candidate columns plus ``panel_scores`` (member × segment, normalised),
    ``member_margins``, ``margin`` and ``retained`` (``margin ≥ delta``), in input order (give
    the candidates in a deterministic order: it defines the shards). Shards and a manifest
    (panel members + normalisations, δ) go to ``out_dir``; a rerun skips finished shards and
    does no scoring for them. The report is also written to ``out_dir/report.json``; its
    ``pairs_total``/``pairs_scored`` count the shards this process scored in this call (0 on a
    complete resume).

    Example:
        >>> import tempfile
        >>> rows = [{"candidate_id": "d::begin", "doc_id": "d", "length_bin": "256-512",
        ...          "target_position": "begin", "query": "owls nest in trees",
        ...          "segments": ["owls nest in old trees", "fish swim", "lions hunt"]}]
        >>> pool, report = run_verification(rows, parse_panel("bm25"), tempfile.mkdtemp(),
        ...                                  progress=False)
        >>> pool[0]["retained"], report.retained
        (True, 1)
    """
    from hf_posbias.shards import process_info, run_sharded, write_json

    if not isinstance(delta, (int, float)) or not math.isfinite(delta) or delta < 0:
        raise InputError(f"delta must be a finite number >= 0, got {delta!r}")
    if not candidates:
        raise InputError("no candidates to verify")
    for row in candidates:
        _check_candidate(row)
    ids = [row["candidate_id"] for row in candidates]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise InputError(f"candidate_id {dup!r} occurs more than once")

    state = {"prepared": False, "pairs_total": 0, "pairs_scored": 0}

    def score_shard(shard: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not state["prepared"]:
            # Fitted lazily: a rerun with every shard done fits nothing and scores nothing.
            panel.prepare(candidates)
            state["prepared"] = True
        result = panel.score(shard, progress=progress)
        state["pairs_total"] += result.pairs_total
        state["pairs_scored"] += result.pairs_scored
        out = []
        for i, row in enumerate(shard):
            new = dict(row)
            new["segments"] = [str(x) for x in row["segments"]]
            new["panel_scores"] = [[float(x) for x in r] for r in result.normalized[i]]
            new["member_margins"] = [float(x) for x in result.member_margins[i]]
            new["margin"] = float(result.margin[i])
            new["retained"] = bool(result.margin[i] >= delta)
            out.append(new)
        return out

    params = {"stage": "verify", "panel": panel.describe(), "delta": float(delta)}
    rows = run_sharded(
        list(candidates),
        score_shard,
        out_dir,
        shard_size=shard_size,
        params=params,
        desc="verify",
        progress=progress,
    )
    report = VerificationReport.from_rows(
        rows,
        delta=delta,
        members=panel.describe(),
        pairs_total=int(state["pairs_total"]),
        pairs_scored=int(state["pairs_scored"]),
    )
    if process_info().is_main:
        write_json(Path(out_dir) / "report.json", report.to_dict())
    return rows, report


# --------------------------------------------------------------------------- LLM audit

AUDIT_SYSTEM = "You are a careful annotator of question answering data."
AUDIT_PROMPT = (
    "Passage:\n{segment}\n\nQuestion: {query}\n\n"
    "Can the question be answered using only the information in this passage? "
    "Reply with exactly one word: yes or no."
)
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


def audit_messages(query: str, segment: str) -> list[dict[str, str]]:
    """The judge's chat messages for one segment (the target position is never revealed)."""
    return [
        {"role": "system", "content": AUDIT_SYSTEM},
        {"role": "user", "content": AUDIT_PROMPT.format(segment=segment, query=query)},
    ]


def parse_yes_no(text: str) -> bool | None:
    """``True``/``False`` for the first yes/no word of a reply, ``None`` when there is none.

    Example:
        >>> parse_yes_no("Yes."), parse_yes_no(" no, it cannot"), parse_yes_no("maybe")
        (True, False, None)
    """
    match = _YES_NO.search(text or "")
    return None if match is None else match.group(1).lower() == "yes"


@dataclass
class AuditStratum:
    """Judge agreement in one margin stratum (percentages over parsed answers)."""

    stratum: str
    candidates: int = 0
    audited: int = 0
    target_yes: float | None = None
    distractor_no: float | None = None
    exclusive: float | None = None
    unparsed_answers: int = 0
    failed_calls: int = 0
    incomplete_candidates: int = 0


@dataclass
class AuditReport:
    """TargetYes / DistractorNo / Exclusive per margin stratum (YHP26's LLM audit)."""

    delta: float
    per_stratum: int
    seed: int
    strata: list[AuditStratum] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)

    def to_markdown(self) -> str:
        """One markdown row per stratum."""
        lines = [
            "| stratum | audited | TargetYes % | DistractorNo % | Exclusive % "
            "| unparsed | failed |",
            "|---|---|---|---|---|---|---|",
        ]

        def fmt(x: float | None) -> str:
            return "—" if x is None else f"{x:.1f}"

        for s in self.strata:
            lines.append(
                f"| {s.stratum} | {s.audited} | {fmt(s.target_yes)} | {fmt(s.distractor_no)} | "
                f"{fmt(s.exclusive)} | {s.unparsed_answers} | {s.failed_calls} |"
            )
        return "\n".join(lines) + "\n"

    def summary_lines(self) -> list[str]:
        """Human-readable lines for the CLI."""
        lines = [f"audit: up to {self.per_stratum} candidates per stratum, seed {self.seed}"]
        for s in self.strata:
            lines.append(
                f"  {s.stratum}: audited {s.audited}/{s.candidates} "
                f"TargetYes {s.target_yes} DistractorNo {s.distractor_no} "
                f"Exclusive {s.exclusive} (unparsed {s.unparsed_answers}, "
                f"failed calls {s.failed_calls}, incomplete {s.incomplete_candidates})"
            )
        return lines


def audit_segments(
    rows: Sequence[dict[str, Any]],
    backend: ChatBackend,
    *,
    per_stratum: int = 100,
    seed: int = 42,
    delta: float = DEFAULT_DELTA,
    temperature: float = 0.0,
    max_tokens: int = 4,
    batch_size: int = 64,
    progress: bool = True,
) -> AuditReport:
    """Ask a yes/no LLM judge, segment by segment, whether each segment answers the query.

    Scored rows are split into the disjoint margin strata of :func:`stratum_labels`; up to
    ``per_stratum`` candidates per stratum are drawn (sorted by ``candidate_id``, then a seeded
    draw). For each: TargetYes = the target segment judged answering; DistractorNo = a
    non-target segment judged not answering; Exclusive = target yes and both distractors no.
    Unparseable replies and failed calls are counted, never guessed.
    """
    from tqdm.auto import tqdm

    if per_stratum < 1:
        raise InputError(f"per_stratum must be >= 1, got {per_stratum}")
    by_stratum: dict[str, list[dict[str, Any]]] = {label: [] for label in stratum_labels(delta)}
    for row in rows:
        if "margin" not in row:
            raise InputError(
                f"candidate {row.get('candidate_id')!r} has no margin: audit a scored pool"
            )
        _check_candidate(row)
        by_stratum[margin_stratum(float(row["margin"]), delta)].append(row)

    picked: list[tuple[str, dict[str, Any]]] = []
    report = AuditReport(delta=float(delta), per_stratum=per_stratum, seed=seed)
    for label, members in by_stratum.items():
        members.sort(key=lambda r: str(r["candidate_id"]))
        chosen = random.Random(f"{seed}|{label}").sample(members, min(per_stratum, len(members)))
        picked.extend((label, r) for r in chosen)
        report.strata.append(AuditStratum(stratum=label, candidates=len(members)))

    requests = [audit_messages(r["query"], seg) for _, r in picked for seg in r["segments"]]
    replies: list[str | Exception] = []
    bar = tqdm(total=len(requests), desc="audit", unit="call", disable=not progress)
    for start in range(0, len(requests), batch_size):
        batch = requests[start : start + batch_size]
        # One seed per request, stable across reruns and batch sizes.
        seeds = [stable_seed("audit", seed, start + i) for i in range(len(batch))]
        out = backend.complete_many(
            batch, temperature=temperature, max_tokens=max_tokens, seeds=seeds
        )
        if len(out) != len(batch):
            raise RuntimeError(f"backend returned {len(out)} replies for {len(batch)} requests")
        replies.extend(out)
        bar.update(len(batch))
    bar.close()

    tallies = {s.stratum: {"ty": [0, 0], "dn": [0, 0], "ex": [0, 0]} for s in report.strata}
    stratum_of = {s.stratum: s for s in report.strata}
    k = len(POSITIONS)
    for c, (label, row) in enumerate(picked):
        s, t = stratum_of[label], tallies[label]
        s.audited += 1
        target = _target_index(row)
        answers: list[bool | None] = []
        for j in range(k):
            reply = replies[c * k + j]
            if isinstance(reply, Exception):
                s.failed_calls += 1
                answers.append(None)
                continue
            ans = parse_yes_no(reply)
            if ans is None:
                s.unparsed_answers += 1
            answers.append(ans)
        for j, ans in enumerate(answers):
            if ans is None:
                continue
            if j == target:
                t["ty"][0] += ans
                t["ty"][1] += 1
            else:
                t["dn"][0] += not ans
                t["dn"][1] += 1
        if any(a is None for a in answers):
            s.incomplete_candidates += 1
        else:
            exclusive = answers[target] and not any(a for j, a in enumerate(answers) if j != target)
            t["ex"][0] += bool(exclusive)
            t["ex"][1] += 1
    for s in report.strata:
        t = tallies[s.stratum]
        s.target_yes = _ratio(t["ty"])
        s.distractor_no = _ratio(t["dn"])
        s.exclusive = _ratio(t["ex"])
    return report


def _ratio(hits_total: list[int]) -> float | None:
    hits, total = hits_total
    return round(100.0 * hits / total, 2) if total else None
