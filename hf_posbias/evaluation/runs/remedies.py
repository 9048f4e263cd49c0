"""Inference-time remedies for bi-encoders (no retraining): scorers, and mteb search models.

:class:`RemedyScorer` embeds and scores documents under a remedy with a SentenceTransformer and
nothing else (what ``posbias analyze evidence-moving`` and the Space use:
:meth:`RemedyScorer.score_documents`); :class:`RemedySearch` is the same scorer as an mteb search
model (queries still go through mteb's own encoder wrapper, so their prompts and counting are
unchanged). The remedies change how documents are embedded and scored:

- ``maxp`` / ``firstp`` / ``sump`` (Dai & Callan, SIGIR 2019): each document is cut into
  passages of ``passage_tokens`` model tokens (special tokens and the document prompt included)
  whose starts are ``stride`` content tokens apart; the document's score is the max / the first
  / the sum of its passages' scores. Every passage is embedded once per corpus (``firstp``
  embeds only the first);
- ``chunk-mean``: the document embedding is the mean of its passage embeddings;
- ``segment-balanced``: one forward pass (truncated at the model's limit, as the plain model);
  the mean pooling's token weights are chosen so each of ``segments`` equal contiguous segments
  of the sequence contributes a vector of the same norm (:func:`balanced_pool`;
  ``segments=1`` is plain mean pooling).

Passages are built from token ids, not decoded text, so one passage covering a document is
exactly the plain model's input. The cost of a run is counted in :class:`RemedyStats`
(``document_tokens``: every non-padding token of every passage fed through the model; the
query encoder counts the queries' tokens).

Example:
    >>> token_windows(list(range(7)), content=3, stride=2)
    [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    >>> segment_bounds(6, 2)
    [(0, 3), (3, 6)]
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.settings import Settings, check_choice, check_positive, flag_name, setting

if TYPE_CHECKING:
    import torch
    from mteb.abstasks.task_metadata import TaskMetadata
    from mteb.models.model_meta import ModelMeta

REMEDIES = ("none", "maxp", "firstp", "sump", "chunk-mean", "segment-balanced")
"""The inference-time remedies for bi-encoders (``none``: the plain model)."""
BIENCODER_REMEDIES = REMEDIES[1:]
"""The remedies proper (every one but ``none``): what ``posbias remedies --remedies`` and a
study's ``remedies`` choose from."""
PASSAGE_REMEDIES = ("maxp", "firstp", "sump", "chunk-mean")
"""The remedies that cut documents into passages."""


@dataclass(kw_only=True)
class PassageSettings(Settings):
    """How the remedies cut and weigh a document: ``--passage-tokens``, ``--stride``,
    ``--segments`` (declared once: :class:`RemedySettings` and the study spec take them from here).

    Example:
        >>> PassageSettings(passage_tokens=64, stride=65)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --stride must be at most --passage-tokens (64), got 65
        >>> PassageSettings(passage_tokens=64, stride=32).remedy_settings("maxp").remedy
        'maxp'
    """

    passage_tokens: int = setting(
        "passage length in model tokens, special tokens included (maxp/firstp/sump/chunk-mean)",
        default=128,
        metavar="N",
    )
    stride: int = setting(
        "tokens between the starts of consecutive passages (at most --passage-tokens)",
        default=64,
        metavar="S",
    )
    segments: int = setting(
        "equal segments of the document weighted equally (segment-balanced)",
        default=4,
        metavar="K",
    )

    @property
    def uses_passages(self) -> bool:
        """Whether passages will be cut (``--stride`` is checked against ``--passage-tokens``
        only then)."""
        return True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "passage_tokens", "stride", "segments")
        if self.uses_passages and self.stride > self.passage_tokens:
            raise InputError(
                f"{flag_name('stride')} must be at most {flag_name('passage_tokens')} "
                f"({self.passage_tokens}), got {self.stride}"
            )

    def remedy_settings(self, remedy: str) -> RemedySettings:
        """``remedy`` with these passage settings."""
        return RemedySettings(
            remedy=remedy,
            passage_tokens=self.passage_tokens,
            stride=self.stride,
            segments=self.segments,
        )


@dataclass(kw_only=True)
class RemedySettings(PassageSettings):
    """An inference-time remedy for a bi-encoder: ``--remedy`` and its passage settings.

    The checks that need the model (passage length against the prompt and the model's limit)
    run when the remedy wraps it, before any encoding
    (:func:`check_remedy_fits`).

    Example:
        >>> RemedySettings(remedy="maxp", passage_tokens=64, stride=32).stride
        32
        >>> RemedySettings(remedy="maxp", passage_tokens=64, stride=32).key
        'maxp/64/32'
    """

    remedy: str = setting(
        "inference-time remedy for a bi-encoder: none, maxp / firstp / sump (score = max / "
        "first / sum over the document's passages), chunk-mean (document = mean of its passage "
        "embeddings) or segment-balanced (mean pooling with each of --segments equal segments "
        "weighted equally); see docs/remedies.md",
        default="none",
        choices=REMEDIES,
    )

    @property
    def uses_passages(self) -> bool:
        """Whether a remedy will cut passages (``--stride`` is checked against
        ``--passage-tokens`` only then: ``posbias evaluate`` shares ``--passage-tokens`` with a
        listwise reranker; segment-balanced reads ``--segments`` only)."""
        return self.remedy in PASSAGE_REMEDIES

    @property
    def read_settings(self) -> dict[str, int]:
        """The passage settings this remedy reads (what its results depend on besides its
        name): ``passage_tokens`` and ``stride`` for the passage remedies, ``segments`` for
        segment-balanced, nothing for none.

        Example:
            >>> RemedySettings(remedy="segment-balanced").read_settings
            {'segments': 4}
        """
        if self.remedy in PASSAGE_REMEDIES:
            return {"passage_tokens": self.passage_tokens, "stride": self.stride}
        if self.remedy == "segment-balanced":
            return {"segments": self.segments}
        return {}

    @property
    def key(self) -> str:
        """The remedy and the settings it reads, e.g. ``maxp/128/64`` or
        ``segment-balanced/4`` (what a stored result of this remedy depends on)."""
        return "/".join([self.remedy, *(str(v) for v in self.read_settings.values())])

    def __post_init__(self) -> None:
        check_choice("remedy", self.remedy, REMEDIES)
        super().__post_init__()


@dataclass
class RemedyStats:
    """What a remedy cost on the document side (queries are counted by the query encoder)."""

    documents: int = 0
    passages: int = 0
    document_tokens: int = 0
    index_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


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


def _special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text (``[CLS]`` / ``[SEP]`` for BERT)."""
    probe = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(probe) + 1):
        if full[i : i + len(probe)] == probe:
            return list(full[:i]), list(full[i + len(probe) :])
    return [], []


def _prompt_ids(st_model: Any, tokenizer: Any, prompt: str | None) -> list[int]:
    return list(tokenizer(prompt, add_special_tokens=False)["input_ids"]) if prompt else []


def _longest_prompt(st_model: Any, tokenizer: Any) -> int:
    prompts = dict(getattr(st_model, "prompts", None) or {})
    return max((len(_prompt_ids(st_model, tokenizer, p)) for p in prompts.values()), default=0)


def check_remedy_fits(st_model: Any, settings: RemedySettings) -> None:
    """One-line :class:`InputError` when the passage settings cannot work with this model.

    A passage must hold the special tokens, the longest prompt (query prefix) and at least one
    content token, and must fit the model's limit (``max_seq_length``).
    """
    if settings.remedy not in PASSAGE_REMEDIES:
        return
    tokenizer = st_model.tokenizer
    head, tail = _special_tokens(tokenizer)
    prefix = len(head) + len(tail) + _longest_prompt(st_model, tokenizer)
    n = settings.passage_tokens
    if n <= prefix:
        raise InputError(
            f"{flag_name('passage_tokens')} {n} leaves no room for text after the model's "
            f"special tokens and prompt ({prefix} tokens); use more than {prefix}"
        )
    limit = int(st_model.max_seq_length)
    if n > limit:
        raise InputError(
            f"{flag_name('passage_tokens')} {n} is above the model's limit of {limit} tokens"
        )
    content = n - prefix
    if settings.stride > content:
        raise InputError(
            f"{flag_name('stride')} {settings.stride} is above the passage's {content} text "
            f"tokens ({flag_name('passage_tokens')} {n} minus {prefix} special/prompt tokens): "
            "text would be skipped"
        )


def _mean_pooling_index(st_model: Any) -> int:
    """Position of the model's mean-pooling module (one-line error when it pools otherwise)."""
    for i, module in enumerate(st_model):
        mode = getattr(module, "pooling_mode", None)
        if mode is not None:
            modes = (mode,) if isinstance(mode, str) else tuple(mode)
            if modes == ("mean",):
                return i
            raise InputError(
                f"{flag_name('remedy')} segment-balanced needs a mean-pooling model; this one "
                f"pools with {'+'.join(modes)}"
            )
    raise InputError(f"{flag_name('remedy')} segment-balanced needs a model with a Pooling module")


def remedy_label(name: str, remedy: str | None) -> str:
    """A model's label under a remedy (tables, plots, leaderboards): ``"<name> +<remedy>"``.

    Example:
        >>> remedy_label("all-MiniLM-L6-v2", "maxp"), remedy_label("B", None)
        ('all-MiniLM-L6-v2 +maxp', 'B')
    """
    return f"{name} +{remedy}" if remedy and remedy != "none" else name


def require_bi_encoder(kind: str) -> None:
    """The one-line error for a remedy on a model that is not a dense bi-encoder.

    Example:
        >>> require_bi_encoder("sparse")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --remedy needs a dense bi-encoder, not a sparse model
    """
    if kind != "bi-encoder":
        article = "an" if kind[:1] in ("a", "e", "i", "o", "u") else "a"
        raise InputError(
            f"{flag_name('remedy')} needs a dense bi-encoder, not {article} {kind} model"
        )


@dataclass
class PassageIndex:
    """A corpus embedded under a remedy: one row of ``embeddings`` per passage (per document for
    ``firstp``, ``chunk-mean`` and ``segment-balanced``), ``owner[i]`` the document of row ``i``."""

    embeddings: torch.Tensor
    owner: torch.Tensor
    documents: int


class RemedyScorer:
    """Documents embedded and scored under a remedy by a SentenceTransformer (no mteb).

    Args:
        st_model: the SentenceTransformer (a dense bi-encoder).
        settings: the remedy and its passage settings, checked against the model here, before
            any encoding (one-line :class:`InputError`).

    Example:
        >>> # scorer = RemedyScorer(model, RemedySettings(remedy="maxp", passage_tokens=64,
        >>> #     stride=32)); scorer.score_documents(query_embeddings, texts)  # (queries, docs)
        >>> RemedyScorer(None, RemedySettings())
        Traceback (most recent call last):
        ...
        ValueError: a RemedyScorer needs a remedy; use the plain model for none
    """

    def __init__(self, st_model: Any, settings: RemedySettings) -> None:
        if settings.remedy == "none":
            raise ValueError("a RemedyScorer needs a remedy; use the plain model for none")
        check_remedy_fits(st_model, settings)
        if settings.remedy == "segment-balanced":
            self._pooling = _mean_pooling_index(st_model)
        self.st_model = st_model
        self.settings = settings
        self.stats = RemedyStats()
        self._tokenizer = st_model.tokenizer
        self._head, self._tail = _special_tokens(self._tokenizer)

    @property
    def cut_at_model_limit(self) -> bool:
        """Whether a document is read in one sequence cut at the model's limit, as the plain
        model reads it (``segment-balanced``); passage remedies read past it."""
        return self.settings.remedy not in PASSAGE_REMEDIES

    # ----------------------------------------------------------------- encoding

    def _content_tokens(self, prompt: str | None) -> tuple[list[int], int | None]:
        """(prompt ids, text tokens the remedy reads of a document: the first passage's for
        ``firstp``, the model limit's for ``segment-balanced``, ``None`` = all)."""
        prompt_ids = _prompt_ids(self.st_model, self._tokenizer, prompt)
        fixed = len(self._head) + len(self._tail) + len(prompt_ids)
        if self.settings.remedy == "segment-balanced":
            return prompt_ids, max(0, int(self.st_model.max_seq_length) - fixed)
        content = self.settings.passage_tokens - fixed
        return prompt_ids, content if self.settings.remedy == "firstp" else None

    def _bodies(self, texts: list[str]) -> list[list[int]]:
        return self._tokenizer([t.strip() for t in texts], add_special_tokens=False)["input_ids"]

    def count_unread(self, texts: list[str], prompt: str | None = None) -> int:
        """How many ``texts`` the remedy does not read to their end (beyond ``firstp``'s first
        passage, or ``segment-balanced``'s model limit; 0 for the other remedies).

        Example:
            >>> # RemedyScorer(model, RemedySettings(remedy="maxp")).count_unread(texts) → 0
        """
        _, readable = self._content_tokens(prompt)
        if readable is None:
            return 0
        return sum(1 for ids in self._bodies(texts) if len(ids) > readable)

    def _sequences(self, texts: list[str], prompt: str | None) -> list[list[list[int]]]:
        """Per document, its passages as full model inputs (special tokens and prompt added)."""
        s = self.settings
        prompt_ids, readable = self._content_tokens(prompt)
        fixed = len(self._head) + len(self._tail) + len(prompt_ids)
        out = []
        for ids in self._bodies(texts):
            if s.remedy == "segment-balanced":
                passages = [list(ids[:readable])]
            else:
                passages = token_windows(ids, content=s.passage_tokens - fixed, stride=s.stride)
                if s.remedy == "firstp":
                    passages = passages[:1]
            out.append([self._head + prompt_ids + p + self._tail for p in passages])
        return out

    def _forward(self, sequences: list[list[int]], batch_size: int) -> torch.Tensor:
        """Sentence embeddings of token-id sequences (segment-balanced pooling if chosen)."""
        import torch

        device = self.st_model.device
        order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i]))
        out: list[Any] = [None] * len(sequences)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            feats = self._tokenizer.pad(
                {"input_ids": [sequences[i] for i in idx]}, return_tensors="pt"
            )
            feats = {k: v.to(device) for k, v in feats.items()}
            self.stats.document_tokens += int(feats["attention_mask"].sum())
            with torch.inference_mode():
                if self.settings.remedy == "segment-balanced":
                    emb = self._segment_balanced(feats)
                else:
                    emb = self.st_model(feats)["sentence_embedding"]
            for row, i in enumerate(idx):
                out[i] = emb[row].float().cpu()
        return torch.stack(out) if out else torch.zeros(0)

    def _segment_balanced(self, feats: dict[str, Any]) -> torch.Tensor:
        import torch

        modules = list(self.st_model)
        for module in modules[: self._pooling]:
            feats = module(feats)
        tokens = feats["token_embeddings"]
        lengths = feats["attention_mask"].sum(dim=1).tolist()
        # Right padding (the tokenizer's default for encoders): real tokens come first.
        pooled = torch.cat(
            [
                balanced_pool(tokens[row, : int(n)].double(), self.settings.segments)
                for row, n in enumerate(lengths)
            ]
        ).to(tokens.dtype)
        feats["sentence_embedding"] = pooled
        for module in modules[self._pooling + 1 :]:
            feats = module(feats)
        return feats["sentence_embedding"]

    def embed_documents(
        self, texts: list[str], prompt: str | None = None, batch_size: int = 32
    ) -> PassageIndex:
        """Embed every passage of ``texts`` once (``chunk-mean``: one mean vector per document);
        the cost is added to :attr:`stats`."""
        import torch

        start = time.perf_counter()
        per_doc = self._sequences(texts, prompt)
        flat = [seq for passages in per_doc for seq in passages]
        owner = torch.tensor([d for d, passages in enumerate(per_doc) for _ in passages])
        embeddings = self._forward(flat, batch_size)
        if self.settings.remedy == "chunk-mean":
            summed = torch.zeros(len(per_doc), embeddings.shape[1], dtype=embeddings.dtype)
            summed.index_add_(0, owner, embeddings)
            counts = torch.bincount(owner, minlength=len(per_doc)).unsqueeze(1)
            embeddings = summed / counts.to(embeddings.dtype)
            owner = torch.arange(len(per_doc))
        self.stats.documents += len(per_doc)
        self.stats.passages += len(flat)
        self.stats.index_seconds += time.perf_counter() - start
        return PassageIndex(embeddings, owner, len(per_doc))

    def scores(
        self, query_embeddings: Any, index: PassageIndex, similarity: Any = None
    ) -> torch.Tensor:
        """``(queries, documents)`` scores: the max (``maxp``) or sum (``sump``) of the
        query–passage similarities of each document (its one vector's for the others).

        ``similarity`` defaults to the model's own (``st_model.similarity``: what mteb's
        wrapper calls); ``query_embeddings`` is one row per query (array or tensor).
        """
        import torch

        similarity = similarity or self.st_model.similarity
        q = torch.as_tensor(query_embeddings).float()
        sims = torch.as_tensor(similarity(q.reshape(-1, q.shape[-1]), index.embeddings)).double()
        owner = index.owner.unsqueeze(0).expand(sims.shape[0], -1)
        if self.settings.remedy == "sump":
            scores = torch.zeros(sims.shape[0], index.documents, dtype=sims.dtype)
            scores.scatter_add_(1, owner, sims)
        else:  # maxp; firstp and chunk-mean have one vector per document
            scores = torch.full((sims.shape[0], index.documents), -torch.inf, dtype=sims.dtype)
            scores.scatter_reduce_(1, owner, sims, reduce="amax")
        return scores

    def score_documents(
        self,
        query_embeddings: Any,
        texts: list[str],
        prompt: str | None = None,
        *,
        batch_size: int = 32,
        similarity: Any = None,
    ) -> torch.Tensor:
        """``(queries, documents)`` scores of ``texts`` under the remedy: the public,
        mteb-independent entry point (:meth:`embed_documents` then :meth:`scores`, exactly what
        :class:`RemedySearch` ranks by). ``prompt``: the document prompt text, if any."""
        return self.scores(
            query_embeddings, self.embed_documents(texts, prompt, batch_size), similarity
        )


def remedy_scorer(model: Any, settings: RemedySettings | None) -> RemedyScorer | None:
    """The scorer of a remedy for a loaded model (a SentenceTransformer or a
    :class:`hf_posbias.embedding.TextEmbedder`); ``None`` for no remedy. A model that is not a
    dense sentence-transformers bi-encoder (an endpoint, an mteb registry wrapper, a sparse or
    multi-vector encoder) gets the one-line :func:`require_bi_encoder` error.

    Example:
        >>> remedy_scorer(object(), RemedySettings()) is None
        True
    """
    if settings is None or settings.remedy == "none":
        return None
    require_bi_encoder(getattr(model, "kind", "bi-encoder"))
    st_model = getattr(model, "sentence_transformer", model)
    from sentence_transformers import MultiVectorEncoder, SparseEncoder

    if isinstance(st_model, SparseEncoder):
        require_bi_encoder("sparse")
    if isinstance(st_model, MultiVectorEncoder):
        require_bi_encoder("multi-vector")
    return RemedyScorer(st_model, settings)


class RemedySearch(RemedyScorer):
    """A bi-encoder with an inference-time remedy, as an mteb search model.

    Args:
        st_model: the SentenceTransformer.
        encoder: mteb's encoder wrapper of the same model (encodes the queries; similarity).
        settings: the remedy and its passage settings (checked against the model here).
        meta: the mteb metadata of the plain model; the remedy goes into ``experiment_kwargs``
            so mteb files each remedy's results separately.
    """

    def __init__(
        self, st_model: Any, encoder: Any, settings: RemedySettings, meta: ModelMeta
    ) -> None:
        super().__init__(st_model, settings)
        self.encoder = encoder
        experiment = dict(meta.experiment_kwargs or {})
        experiment.update(remedy=settings.remedy, **settings.read_settings)
        self._meta = meta.model_copy(update={"experiment_kwargs": experiment})
        self._index: PassageIndex | None = None
        self._doc_ids: list[str] = []

    @property
    def mteb_model_meta(self) -> ModelMeta:
        """The plain model's metadata with the remedy as experiment settings."""
        return self._meta

    # ----------------------------------------------------------------- mteb protocol

    def index(
        self,
        corpus: Any,
        *,
        task_metadata: TaskMetadata,
        hf_split: str,
        hf_subset: str,
        encode_kwargs: dict[str, Any],
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Embed every passage of the corpus once (mteb calls this once per subset)."""
        from mteb._create_dataloaders import create_dataloader
        from mteb.types import PromptType

        loader = create_dataloader(
            corpus, task_metadata=task_metadata, prompt_type=PromptType.document, batch_size=1
        )
        texts = [str(t) for t in loader.dataset["text"]]
        prompt = self._prompt(task_metadata, PromptType.document)
        self._index = self.embed_documents(texts, prompt, int(encode_kwargs.get("batch_size", 32)))
        self._doc_ids = [str(i) for i in corpus["id"]]

    def _prompt(self, task_metadata: TaskMetadata, prompt_type: Any) -> str | None:
        from mteb.models.sentence_transformer_wrapper import _resolve_prompt

        prompts = getattr(getattr(self.encoder, "model", None), "model_prompts", None)
        return _resolve_prompt(prompts, task_metadata, prompt_type) if prompts else None

    def search(
        self,
        queries: Any,
        *,
        task_metadata: TaskMetadata,
        hf_split: str,
        hf_subset: str,
        top_k: int,
        encode_kwargs: dict[str, Any],
        top_ranked: dict[str, list[str]] | None = None,
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> dict[str, dict[str, float]]:
        """Top ``top_k`` documents per query, scored by the remedy (:meth:`scores`)."""
        import torch
        from mteb._create_dataloaders import create_dataloader
        from mteb.types import PromptType

        if self._index is None:
            raise RuntimeError("RemedySearch.index must be called before search")
        loader = create_dataloader(
            queries, task_metadata=task_metadata, prompt_type=PromptType.query, **encode_kwargs
        )
        q = self.encoder.encode(
            loader,
            task_metadata=task_metadata,
            hf_split=hf_split,
            hf_subset=hf_subset,
            prompt_type=PromptType.query,
            **encode_kwargs,
        )
        scores = self.scores(q, self._index, self.encoder.similarity)
        out: dict[str, dict[str, float]] = {}
        for row, qid in enumerate(queries["id"]):
            allowed = set(top_ranked.get(qid, [])) if top_ranked else None
            values, idx = torch.sort(scores[row], descending=True, stable=True)
            ranked: dict[str, float] = {}
            for v, d in zip(values.tolist(), idx.tolist(), strict=True):
                doc = self._doc_ids[d]
                if allowed is None or doc in allowed:
                    ranked[doc] = float(v)
                if len(ranked) >= top_k:
                    break
            out[qid] = ranked
        return out


def encoded_token_count(st_model: Any, texts: list[str], prompt: str | None = None) -> int:
    """Tokens the plain model feeds through itself for ``texts`` (truncated at its limit).

    Example:
        >>> # encoded_token_count(model, ["a query"]) → 4 for BERT ([CLS] a query [SEP])
    """
    tokenizer = st_model.tokenizer
    head, tail = _special_tokens(tokenizer)
    fixed = len(head) + len(tail) + len(_prompt_ids(st_model, tokenizer, prompt))
    limit = int(st_model.max_seq_length)
    bodies = tokenizer([t.strip() for t in texts], add_special_tokens=False)["input_ids"]
    return sum(min(limit, fixed + len(ids)) for ids in bodies)
