"""Panel members: the verifiers that score (query, segment) pairs, and their normalisations.

A member scores pairs on its own raw scale; the panel maps raw scores to a bounded scale
**explicitly** before margins are taken, because a margin threshold δ is only meaningful on a
bounded scale:

- cross-encoders: ``sigmoid`` (default; maps the relevance logit to [0, 1], the scale δ = 0.3
  was chosen on) or ``none`` (raw logits; δ then means logit units) or ``softmax``;
- BM25: ``share`` (default; a segment's share ``x / Σx`` of the candidate's total BM25 mass, in
  [0, 1]; invariant to the query-length scaling of BM25, unlike a softmax over raw scores whose
  margin grows with every extra query word), ``softmax`` over the three segments, ``saturate``
  (``x / (x + k)``, per segment, ``k`` = ``BM25Member.saturation``) or ``none``.

Example:
    >>> member = BM25Member()
    >>> member.fit(["owls nest in trees", "fish swim", "lions hunt"])
    >>> member.describe()["normalization"], score_range("share")
    ('share', (0.0, 1.0))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from hf_posbias.errors import InputError, ModelLoadError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from hf_posbias.verification.pair_inputs import PairEncoder

CROSS_ENCODER_NORMALIZATIONS = ("sigmoid", "none", "softmax")
BM25_NORMALIZATIONS = ("share", "softmax", "saturate", "none")
BI_ENCODER_NORMALIZATIONS = ("clip", "none")


# The scale each normalisation maps scores to: a margin (target minus best other segment) lies
# in [lo - hi, hi - lo], so δ above hi - lo can never be met.
_SCORE_RANGES: dict[str, tuple[float, float]] = {
    "sigmoid": (0.0, 1.0),
    "softmax": (0.0, 1.0),
    "share": (0.0, 1.0),
    "saturate": (0.0, 1.0),
    "clip": (0.0, 1.0),
    "none": (-math.inf, math.inf),
}


def score_range(normalization: str) -> tuple[float, float]:
    """The interval a normalisation maps scores to (``none``: unbounded).

    Example:
        >>> score_range("sigmoid"), score_range("none")
        ((0.0, 1.0), (-inf, inf))
    """
    if normalization not in _SCORE_RANGES:
        raise InputError(f"unknown normalisation {normalization!r}")
    return _SCORE_RANGES[normalization]


def check_normalization(normalization: str, allowed: Sequence[str], member: str) -> None:
    """One line if ``normalization`` is not one of the ``allowed`` ones of ``member``.

    Example:
        >>> check_normalization("clip", ("share", "none"), "bm25")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: normalisation 'clip' is not valid for bm25; choose one of ...
    """
    if normalization not in allowed:
        raise InputError(
            f"normalisation {normalization!r} is not valid for {member}; "
            f"choose one of {', '.join(allowed)}"
        )


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
    if method == "clip":
        return np.clip(x, 0.0, 1.0)
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
        check_normalization(normalization, CROSS_ENCODER_NORMALIZATIONS, f"cross-encoder {model!r}")
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
        self._encoder: PairEncoder | None = None
        self._encoder_checked = False

    def load(self) -> CrossEncoder:
        """Load the model once (raises :class:`ModelLoadError` with a one-line message)."""
        if self._model is None:
            from hf_posbias.modeling.loaders import load_cross_encoder

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
        """Raw logits for ``(queries[i], passages[i])``.

        Where the model's inputs can be rebuilt exactly (:func:`fast_inputs`), each distinct
        text is tokenized once, pairs are assembled with the tokenizer's template and
        truncation, and batches hold pairs of nearly equal token length; elsewhere
        ``CrossEncoder.predict``. Both give the same scores (the tests compare them).
        """
        if not queries:
            return np.zeros(0, dtype=np.float64)
        model = self.load()
        if not self._encoder_checked:
            self._encoder, self._encoder_checked = fast_inputs(model), True
        if self._encoder is not None:
            pairs = self._encoder.encode(queries, passages)
            return score_pair_inputs(model, self._encoder, pairs, self.batch_size)
        import torch

        scores = model.predict(
            list(zip(queries, passages)),
            batch_size=self.batch_size,
            activation_fn=torch.nn.Identity(),
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(scores, dtype=np.float64).reshape(-1)


def fast_inputs(model: CrossEncoder) -> PairEncoder | None:
    """A :class:`~hf_posbias.verification.pair_inputs.PairEncoder` that builds exactly the
    inputs ``model.predict`` would, or ``None`` where the model needs more than a text-pair
    tokenizer (a prompt, a chat template, processor overrides, flattened flash-attention
    batches, a slow tokenizer).

    Example:
        >>> import tempfile, torch
        >>> from hf_posbias.modeling.loaders import load_cross_encoder
        >>> from hf_posbias.testing import build_tiny_cross_encoder
        >>> model = load_cross_encoder(build_tiny_cross_encoder(tempfile.mkdtemp()))
        >>> pairs = [("a query", "a passage"), ("owls", "owls nest in old trees")]
        >>> encoder = fast_inputs(model)
        >>> inputs = encoder.encode([q for q, _ in pairs], [p for _, p in pairs])
        >>> fast = score_pair_inputs(model, encoder, inputs, batch_size=8)
        >>> slow = model.predict(pairs, activation_fn=torch.nn.Identity())
        >>> bool(abs(fast - slow).max() < 1e-6)
        True
    """
    from hf_posbias.verification.pair_inputs import pair_encoder_for

    try:  # a CrossEncoder that is no module list (older sentence-transformers) takes predict()
        module = model[0] if len(model) else None
    except (TypeError, IndexError, KeyError, AttributeError):
        return None
    modalities = getattr(module, "modality_config", None) or {}
    if (
        module is None
        or list(modalities) != ["text"]
        or getattr(module, "transformer_task", None) != "sequence-classification"
        or getattr(model, "default_prompt_name", None) is not None
    ):
        return None
    merge = getattr(module, "_merge_processing_kwargs", None)
    overrides = merge(None) if callable(merge) else {}
    text = dict(overrides.get("text") or {})
    if set(overrides) - {"text"} or set(text) - {"max_length"}:
        return None
    flatten = getattr(module, "_should_flatten_inputs", None)
    if callable(flatten) and flatten("text", {"text": [("a", "b")]}):
        return None
    return pair_encoder_for(getattr(module, "tokenizer", None), text.get("max_length"))


def score_pair_inputs(
    model: CrossEncoder,
    encoder: PairEncoder,
    pairs: list[tuple[np.ndarray, np.ndarray]],
    batch_size: int,
) -> np.ndarray:
    """Raw scores of encoded pairs (:meth:`PairEncoder.encode`), batched longest first so each
    batch pads to nearly its own length; returned in input order.

    Example: see :func:`fast_inputs`.
    """
    import torch

    order = sorted(range(len(pairs)), key=lambda i: -encoder.length(pairs[i]))
    out = np.zeros(len(pairs), dtype=np.float64)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            features: dict[str, Any] = {
                key: torch.from_numpy(value).to(model.device)
                for key, value in encoder.batch([pairs[i] for i in idx]).items()
            }
            features["modality"] = "text"
            scores = model(features)["scores"]
            if torch.is_floating_point(scores) and torch.finfo(scores.dtype).bits < 32:
                scores = scores.float()
            out[idx] = scores.reshape(len(idx), -1)[:, 0].double().cpu().numpy()
    return out


class BM25Member:
    """BM25 as a panel member: :class:`hf_posbias.bm25.pair.BM25PairScorer` fitted on the run's
    segments.

    The package's one BM25 formula (Lucene variant, as ``bm25s``), scoring each query against its
    own segments directly. Unlike evaluation and the listwise commands, the member does not stem
    (stop words only): its scores are published in the pool and pinned in the verify manifest,
    and ``posbias data build`` on the same input must keep giving the same bytes.

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
        from hf_posbias.bm25.analyzer import BM25Analyzer
        from hf_posbias.bm25.pair import BM25PairScorer

        check_normalization(normalization, BM25_NORMALIZATIONS, "bm25")
        self.name = "bm25"
        self.normalization = normalization
        self.k1 = k1
        self.b = b
        self.saturation = saturation
        self.stopwords = stopwords
        self._scorer = BM25PairScorer(BM25Analyzer(stopwords, stemmer=None), k1=k1, b=b)

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

    def fit(self, passages: Iterable[str]) -> None:
        """Collection statistics (N, document frequencies, mean length) over unique segments."""
        self._scorer.fit(passages)

    def score_pairs(self, queries: list[str], passages: list[str]) -> np.ndarray:
        """Raw BM25 scores for ``(queries[i], passages[i])`` under the fitted statistics."""
        return self._scorer.score_pairs(queries, passages)


class BiEncoderMember:
    """A sentence-transformers bi-encoder (embedding model) as a panel member: the cosine
    similarity of the query and passage embeddings; ``clip`` (default) maps it to [0, 1].

    A stand-in where no cross-encoder can load (offline: the packaged all-MiniLM-L6-v2). Its
    name is ``bi:<model>`` (the spec :func:`~hf_posbias.verification.panel.parse_panel` reads).

    Example:
        >>> member = BiEncoderMember("all-MiniLM-L6-v2")
        >>> member.name, member.describe()["normalization"]
        ('bi:all-MiniLM-L6-v2', 'clip')
    """

    def __init__(
        self,
        model: str,
        normalization: str = "clip",
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        check_normalization(normalization, BI_ENCODER_NORMALIZATIONS, f"bi-encoder {model!r}")
        self.model_name = str(model)
        self.name = f"bi:{self.model_name}"
        self.normalization = normalization
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    def load(self) -> Any:
        """Load the model once (raises :class:`ModelLoadError` with a one-line message)."""
        if self._model is None:
            from hf_posbias.modeling.loaders import load_sentence_transformer

            self._model = load_sentence_transformer(self.model_name, device=self.device)
        return self._model

    def describe(self) -> dict[str, Any]:
        """What pins this member's output (for the manifest and the report)."""
        return {"name": self.name, "kind": "bi-encoder", "normalization": self.normalization}

    def score_pairs(self, queries: list[str], passages: list[str]) -> np.ndarray:
        """Cosine similarities of ``(queries[i], passages[i])`` (each unique text encoded once)."""
        if not queries:
            return np.zeros(0, dtype=np.float64)
        model = self.load()
        uq, up = sorted(set(queries)), sorted(set(passages))
        encode = dict(
            batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        q_emb = dict(zip(uq, np.asarray(model.encode(uq, **encode), dtype=np.float64)))
        p_emb = dict(zip(up, np.asarray(model.encode(up, **encode), dtype=np.float64)))
        return np.array([float(q_emb[q] @ p_emb[p]) for q, p in zip(queries, passages)])


def member_saturation(member: PanelMember) -> float:
    """The ``saturate`` constant of a member (1 for members without one)."""
    return float(getattr(member, "saturation", 1.0))


def describe_member(member: PanelMember) -> dict[str, Any]:
    """What pins a member's output: its ``describe()``, or name, kind and normalisation."""
    describe = getattr(member, "describe", None)
    if callable(describe):
        return dict(describe())
    kind = type(member).__name__
    return {"name": member.name, "kind": kind, "normalization": member.normalization}
