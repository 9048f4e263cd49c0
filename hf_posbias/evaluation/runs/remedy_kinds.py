"""What each inference-time remedy of a bi-encoder does: the :class:`Remedy` objects.

A remedy is one object that says, for a document given as token ids,

- which model inputs it embeds (:meth:`Remedy.passages`: passages cut ``--stride`` tokens apart,
  the first passage only, or the document up to the model's limit),
- how one input is embedded (:meth:`Remedy.embed`: the model's own pooling, or segment-balanced
  pooling),
- how the input vectors become document vectors and scores (:meth:`Remedy.document_vectors`,
  :meth:`Remedy.combine`: the max, the sum, the mean of the embeddings …),

plus the passage settings it reads (``reads``: what its results depend on besides its name) and
the checks it makes against the model before anything is encoded (:meth:`Remedy.check`).
:class:`~hf_posbias.evaluation.runs.remedies.RemedyScorer` runs whichever remedy
``--remedy`` names, looked up in the registry
:data:`~hf_posbias.evaluation.runs.remedies.REMEDY_REGISTRY`. The built-in remedies are the
objects below (:data:`MAXP` … :data:`SEGMENT_BALANCED`); a new one is a :class:`Remedy` in a
module of its own, registered by one line in
:data:`~hf_posbias.evaluation.runs.remedies.BUILTIN_REMEDIES` or, from a third party's
package, by an entry point of the group ``hf_posbias.remedies`` (docs/extending.md).

Example:
    >>> token_windows(list(range(7)), content=3, stride=2)
    [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    >>> from types import SimpleNamespace
    >>> budget, settings = Budget(passage=3, model=5), SimpleNamespace(stride=2)
    >>> MAXP.passages(list(range(7)), budget, settings)
    [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    >>> FIRSTP.passages(list(range(7)), budget, settings)
    [[0, 1, 2]]
    >>> SEGMENT_BALANCED.passages(list(range(7)), budget, settings)
    [[0, 1, 2, 3, 4]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hf_posbias.errors import InputError
from hf_posbias.settings import setting_label

if TYPE_CHECKING:
    import torch


class PassageOptions(Protocol):
    """The settings a remedy may read (:class:`~hf_posbias.evaluation.runs.remedies.
    RemedySettings` has them: ``--passage-tokens``, ``--stride``, ``--segments``)."""

    passage_tokens: int
    stride: int
    segments: int


@dataclass(frozen=True)
class Budget:
    """The text tokens one model input holds once the special tokens and the document prompt are
    taken off: ``passage`` under ``--passage-tokens``, ``model`` under the model's limit."""

    passage: int
    model: int


def token_windows(ids: list[int], *, content: int, stride: int) -> list[list[int]]:
    """A document's token ids cut into the remedies' passages: windows of ``content`` ids
    starting every ``stride`` ids, the last one reaching the end (not
    :func:`hf_posbias.construction.recipe.cut_passages`, which selects corpus records by their
    length in words).

    A document no longer than ``content`` is one passage (an empty one too).

    Example:
        >>> token_windows([1, 2], content=3, stride=1)
        [[1, 2]]
    """
    if len(ids) <= content:
        return [list(ids)]
    out = []
    start = 0
    while True:
        out.append(list(ids[start : start + content]))
        if start + content >= len(ids):
            return out
        start += stride


def segment_bounds(length: int, segments: int) -> list[tuple[int, int]]:
    """``segments`` contiguous, near-equal ``(start, end)`` parts of ``length`` tokens (fewer
    when the sequence is shorter than ``segments``).

    Example:
        >>> segment_bounds(7, 3)
        [(0, 2), (2, 5), (5, 7)]
    """
    k = max(1, min(segments, length))
    cuts = [round(i * length / k) for i in range(k + 1)]
    return list(zip(cuts, cuts[1:], strict=False))


def balanced_pool(tokens: torch.Tensor, segments: int) -> torch.Tensor:
    """Mean pooling whose token weights make each of ``segments`` equal parts contribute equally.

    A segment's contribution is its weighted sum; tokens of segment ``j`` get the weight
    ``a / (k · n_j · ‖m_j‖)`` (``m_j`` its mean token embedding, ``n_j`` its length, ``a`` the
    mean of the ``‖m_j‖``), so every segment adds a vector of the same norm ``a / k`` and one
    segment is exactly mean pooling. Plain mean pooling lets the segments whose token
    embeddings are larger (often the beginning) dominate.

    Example:
        >>> import torch
        >>> t = torch.tensor([[3.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        >>> balanced_pool(t, 1).tolist(), balanced_pool(t, 2).tolist()
        ([[1.5, 0.5]], [[1.0, 1.0]])
    """
    import torch

    means = torch.stack(
        [tokens[lo:hi].mean(dim=0) for lo, hi in segment_bounds(len(tokens), segments)]
    )
    norms = means.norm(dim=1, keepdim=True).clamp_min(torch.finfo(means.dtype).tiny)
    return (norms.mean() * (means / norms)).mean(dim=0, keepdim=True)


def special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text (``[CLS]`` / ``[SEP]`` for BERT)."""
    probe = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(probe) + 1):
        if full[i : i + len(probe)] == probe:
            return list(full[:i]), list(full[i + len(probe) :])
    return [], []


def prompt_token_ids(tokenizer: Any, prompt: str | None) -> list[int]:
    """The ids of a prompt (query or document prefix) without special tokens."""
    return list(tokenizer(prompt, add_special_tokens=False)["input_ids"]) if prompt else []


def _longest_prompt(st_model: Any, tokenizer: Any) -> int:
    prompts = dict(getattr(st_model, "prompts", None) or {})
    return max((len(prompt_token_ids(tokenizer, p)) for p in prompts.values()), default=0)


def check_passages_fit(st_model: Any, settings: PassageOptions) -> None:
    """One-line :class:`InputError` when passages of ``--passage-tokens`` cannot work with this
    model: a passage must hold the special tokens, the longest prompt (query prefix) and at least
    one content token, must fit the model's limit (``max_seq_length``), and ``--stride`` must not
    skip text."""
    tokenizer = st_model.tokenizer
    head, tail = special_tokens(tokenizer)
    prefix = len(head) + len(tail) + _longest_prompt(st_model, tokenizer)
    n = settings.passage_tokens
    if n <= prefix:
        raise InputError(
            f"{setting_label('passage_tokens')} {n} leaves no room for text after the model's "
            f"special tokens and prompt ({prefix} tokens); use more than {prefix}"
        )
    limit = int(st_model.max_seq_length)
    if n > limit:
        raise InputError(
            f"{setting_label('passage_tokens')} {n} is above the model's limit of {limit} tokens"
        )
    content = n - prefix
    if settings.stride > content:
        raise InputError(
            f"{setting_label('stride')} {settings.stride} is above the passage's {content} text "
            f"tokens ({setting_label('passage_tokens')} {n} minus {prefix} special/prompt tokens): "
            "text would be skipped"
        )


@dataclass(frozen=True, kw_only=True)
class Remedy:
    """One inference-time remedy of a bi-encoder (subclass it and override the hooks).

    Attributes:
        name: what ``--remedy`` / ``--remedies`` / a study's ``remedies`` call it.
        help: one line for listings (``posbias list remedies``).
        reads: the passage settings it reads, among ``passage_tokens``, ``stride`` and
            ``segments`` (they go into its run key and mteb's experiment settings; a remedy that
            reads ``stride`` cuts passages, and ``--stride`` is checked against
            ``--passage-tokens`` for it).
    """

    name: str
    help: str
    reads: tuple[str, ...] = ()

    @property
    def cuts_passages(self) -> bool:
        """Whether the remedy cuts passages (it reads past the model's limit)."""
        return "stride" in self.reads

    def check(self, st_model: Any, settings: PassageOptions) -> None:
        """Refuse, in one line, settings this model cannot run (before any encoding)."""
        if self.cuts_passages:
            check_passages_fit(st_model, settings)

    def readable(self, budget: Budget) -> int | None:
        """Text tokens of a document the remedy reads (``None``: all of it)."""
        return None

    def passages(self, ids: list[int], budget: Budget, settings: PassageOptions) -> list[list[int]]:
        """The text token ids of each model input of a document (special tokens and prompt are
        added around each by the scorer)."""
        raise NotImplementedError

    def embed(self, st_model: Any, features: dict[str, Any], settings: PassageOptions) -> Any:
        """Sentence embeddings of one padded batch (default: the model's own pooling)."""
        return st_model(features)["sentence_embedding"]

    def document_vectors(self, embeddings: Any, owner: Any, documents: int) -> tuple[Any, Any]:
        """``(vectors, owner)`` searched for the documents (default: every input's vector,
        ``owner[i]`` the document of row ``i``)."""
        return embeddings, owner

    def combine(self, similarities: Any, owner: Any, documents: int) -> Any:
        """``(queries, documents)`` scores from ``(queries, vectors)`` similarities (default: the
        max over each document's vectors)."""
        import torch

        index = owner.unsqueeze(0).expand(similarities.shape[0], -1)
        shape = (similarities.shape[0], documents)
        scores = torch.full(shape, -torch.inf, dtype=similarities.dtype)
        return scores.scatter_reduce_(1, index, similarities, reduce="amax")


@dataclass(frozen=True, kw_only=True)
class PassageRemedy(Remedy):
    """Passages of ``--passage-tokens`` model tokens (special tokens and the document prompt
    included) whose starts are ``--stride`` text tokens apart (Dai & Callan, SIGIR 2019).

    Attributes:
        first_only: embed the first passage only (FirstP).
        reduce: ``max`` or ``sum`` of the passages' scores.
        average: the document vector is the mean of its passage embeddings (chunk-mean).
    """

    reads: tuple[str, ...] = ("passage_tokens", "stride")
    first_only: bool = False
    reduce: str = "max"
    average: bool = False

    def readable(self, budget: Budget) -> int | None:
        """The first passage's text tokens for FirstP; all of a document otherwise."""
        return budget.passage if self.first_only else None

    def passages(self, ids: list[int], budget: Budget, settings: PassageOptions) -> list[list[int]]:
        """Every passage (the first only for FirstP)."""
        passages = token_windows(ids, content=budget.passage, stride=settings.stride)
        return passages[:1] if self.first_only else passages

    def document_vectors(self, embeddings: Any, owner: Any, documents: int) -> tuple[Any, Any]:
        """One mean vector per document when ``average``; the passages' otherwise."""
        if not self.average:
            return embeddings, owner
        import torch

        summed = torch.zeros(documents, embeddings.shape[1], dtype=embeddings.dtype)
        summed.index_add_(0, owner, embeddings)
        counts = torch.bincount(owner, minlength=documents).unsqueeze(1)
        return summed / counts.to(embeddings.dtype), torch.arange(documents)

    def combine(self, similarities: Any, owner: Any, documents: int) -> Any:
        """The max (or, with ``reduce="sum"``, the sum) of each document's passage scores."""
        if self.reduce != "sum":
            return super().combine(similarities, owner, documents)
        import torch

        index = owner.unsqueeze(0).expand(similarities.shape[0], -1)
        scores = torch.zeros(similarities.shape[0], documents, dtype=similarities.dtype)
        return scores.scatter_add_(1, index, similarities)


def _mean_pooling_index(st_model: Any) -> int:
    """Position of the model's mean-pooling module (one-line error when it pools otherwise)."""
    for i, module in enumerate(st_model):
        mode = getattr(module, "pooling_mode", None)
        if mode is not None:
            modes = (mode,) if isinstance(mode, str) else tuple(mode)
            if modes == ("mean",):
                return i
            raise InputError(
                f"{setting_label('remedy')} segment-balanced needs a mean-pooling model; this one "
                f"pools with {'+'.join(modes)}"
            )
    raise InputError(
        f"{setting_label('remedy')} segment-balanced needs a model with a Pooling module"
    )


@dataclass(frozen=True, kw_only=True)
class SegmentBalancedRemedy(Remedy):
    """One forward pass (truncated at the model's limit, as the plain model); the mean pooling's
    token weights make each of ``--segments`` equal contiguous segments contribute a vector of
    the same norm (:func:`balanced_pool`; one segment is plain mean pooling)."""

    reads: tuple[str, ...] = ("segments",)

    def check(self, st_model: Any, settings: PassageOptions) -> None:
        """A mean-pooling model only."""
        _mean_pooling_index(st_model)

    def readable(self, budget: Budget) -> int | None:
        """The model's limit."""
        return budget.model

    def passages(self, ids: list[int], budget: Budget, settings: PassageOptions) -> list[list[int]]:
        """The document up to the model's limit."""
        return [list(ids[: budget.model])]

    def embed(self, st_model: Any, features: dict[str, Any], settings: PassageOptions) -> Any:
        """The model's modules with segment-balanced pooling in place of its mean pooling."""
        import torch

        pooling = _mean_pooling_index(st_model)
        modules = list(st_model)
        for module in modules[:pooling]:
            features = module(features)
        tokens = features["token_embeddings"]
        lengths = features["attention_mask"].sum(dim=1).tolist()
        # Right padding (the tokenizer's default for encoders): real tokens come first.
        pooled = torch.cat(
            [
                balanced_pool(tokens[row, : int(n)].double(), settings.segments)
                for row, n in enumerate(lengths)
            ]
        ).to(tokens.dtype)
        features["sentence_embedding"] = pooled
        for module in modules[pooling + 1 :]:
            features = module(features)
        return features["sentence_embedding"]


MAXP = PassageRemedy(name="maxp", help="score = the max over the document's passages")
FIRSTP = PassageRemedy(name="firstp", help="score = the first passage's", first_only=True)
SUMP = PassageRemedy(name="sump", help="score = the sum over the passages", reduce="sum")
CHUNK_MEAN = PassageRemedy(
    name="chunk-mean", help="document = the mean of its passage embeddings", average=True
)
SEGMENT_BALANCED = SegmentBalancedRemedy(
    name="segment-balanced",
    help="mean pooling with each of --segments equal segments weighted equally",
)
