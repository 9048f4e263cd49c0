"""Inference-time remedies for bi-encoders (no retraining): scorers, and mteb search models.

:class:`RemedyScorer` embeds and scores documents under a remedy with a SentenceTransformer and
nothing else (what ``posbias analyze evidence-moving`` and the Space use:
:meth:`RemedyScorer.score_documents`); :class:`RemedySearch` is the same scorer as an mteb search
model (queries still go through mteb's own encoder wrapper, so their prompts and counting are
unchanged). What a remedy does to a document is its :class:`~hf_posbias.evaluation.runs.
remedy_kinds.Remedy` object (:mod:`~hf_posbias.evaluation.runs.remedy_kinds`: the built-in
ones, and plugins registered under the entry-point group ``hf_posbias.remedies``). The built-in
remedies change how documents are embedded and scored:

- ``maxp`` / ``firstp`` / ``sump`` (Dai & Callan, SIGIR 2019): each document is cut into
  passages of ``passage_tokens`` model tokens (special tokens and the document prompt included)
  whose starts are ``stride`` content tokens apart; the document's score is the max / the first
  / the sum of its passages' scores. Every passage is embedded once per corpus (``firstp``
  embeds only the first);
- ``chunk-mean``: the document embedding is the mean of its passage embeddings;
- ``segment-balanced``: one forward pass (truncated at the model's limit, as the plain model);
  the mean pooling's token weights are chosen so each of ``segments`` equal contiguous segments
  of the sequence contributes a vector of the same norm
  (:func:`~hf_posbias.evaluation.runs.remedy_kinds.balanced_pool`; ``segments=1`` is plain mean
  pooling).

Passages are built from token ids, not decoded text, so one passage covering a document is
exactly the plain model's input. The cost of a run is counted in :class:`RemedyStats`
(``document_tokens``: every non-padding token of every passage fed through the model; the
query encoder counts the queries' tokens).

Example:
    >>> REMEDIES
    ('none', 'maxp', 'firstp', 'sump', 'chunk-mean', 'segment-balanced')
    >>> RemedySettings(remedy="sump", passage_tokens=64, stride=32).read_settings
    {'passage_tokens': 64, 'stride': 32}
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.evaluation.runs.remedy_kinds import (
    CHUNK_MEAN,
    FIRSTP,
    MAXP,
    SEGMENT_BALANCED,
    SUMP,
    Budget,
    Remedy,
    prompt_token_ids,
    special_tokens,
)
from hf_posbias.evaluation.runs.search import CorpusSearch, SearchContext
from hf_posbias.jsonable import JsonRecord
from hf_posbias.plugins import NO_REMEDY, Registry, remedy_registry
from hf_posbias.setting_values import at_least
from hf_posbias.settings import (
    Settings,
    check_choice,
    setting,
    setting_label,
    shared_setting,
)

if TYPE_CHECKING:
    import torch
    from mteb.abstasks.task_metadata import TaskMetadata
    from mteb.models.model_meta import ModelMeta

BUILTIN_REMEDIES: tuple[Remedy, ...] = (MAXP, FIRSTP, SUMP, CHUNK_MEAN, SEGMENT_BALANCED)
"""The remedies hf-posbias ships (:mod:`~hf_posbias.evaluation.runs.remedy_kinds`), in the order
of ``posbias analyze remedies``: a new one is registered here."""

REMEDY_REGISTRY: Registry[Remedy] = remedy_registry(
    "remedies", Remedy, what="remedy", builtins=lambda: BUILTIN_REMEDIES
)
"""The remedy registry: :data:`BUILTIN_REMEDIES`, then the plugins of the entry-point group
``hf_posbias.remedies``."""


def remedy_names() -> tuple[str, ...]:
    """Every remedy proper (built-in, then plugins; no plugin is imported).

    Example:
        >>> remedy_names()[:2]
        ('maxp', 'firstp')
    """
    return tuple(REMEDY_REGISTRY.names())


def get_remedy(name: str) -> Remedy:
    """The remedy named ``name``; an unknown one is a one-line error listing the known ones.

    Example:
        >>> get_remedy("sump").reads
        ('passage_tokens', 'stride')
    """
    remedy = REMEDY_REGISTRY.get(name)
    if remedy is None:
        known = ", ".join(remedy_names())
        raise InputError(f"{setting_label('remedy')}: unknown remedy {name!r}; known: {known}")
    return remedy


REMEDIES = (NO_REMEDY, *(r.name for r in BUILTIN_REMEDIES))
"""The built-in inference-time remedies for bi-encoders (``none``: the plain model)."""
BIENCODER_REMEDIES = REMEDIES[1:]
"""The built-in remedies proper (every one but ``none``): the default of ``posbias analyze remedies
--remedies``; that flag and a study's ``remedies`` also take the plugins'
(:func:`remedy_names`)."""
PASSAGE_REMEDIES = tuple(r.name for r in BUILTIN_REMEDIES if r.cuts_passages)
"""The built-in remedies that cut documents into passages."""


def remedy_choices() -> tuple[str, ...]:
    """What ``--remedy`` accepts: ``none`` and every remedy, plugins included.

    Example:
        >>> remedy_choices()[:3]
        ('none', 'maxp', 'firstp')
    """
    return (NO_REMEDY, *remedy_names())


@dataclass(kw_only=True)
class PassageSettings(Settings):
    """How the remedies cut and weigh a document: ``--passage-tokens``, ``--stride``,
    ``--segments`` (declared once: :class:`RemedySettings` and the study spec take them from here).

    Example:
        >>> PassageSettings(passage_tokens=64, stride=65)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: stride must be at most passage_tokens (64), got 65
        >>> PassageSettings(passage_tokens=64, stride=32).remedy_settings("maxp").remedy
        'maxp'
    """

    passage_tokens: int = shared_setting("passage_tokens", default=128)
    stride: int = setting(
        "tokens between the starts of consecutive passages (at most --passage-tokens)",
        default=64,
        range=at_least(1),
    )
    segments: int = setting(
        "equal segments of the document weighted equally (segment-balanced)",
        default=4,
        range=at_least(1),
    )

    @property
    def uses_passages(self) -> bool:
        """Whether passages will be cut (``--stride`` is checked against ``--passage-tokens``
        only then)."""
        return True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.uses_passages and self.stride > self.passage_tokens:
            raise InputError(
                f"{setting_label('stride')} must be at most {setting_label('passage_tokens')} "
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
        choices=remedy_choices,
    )

    @property
    def uses_passages(self) -> bool:
        """Whether a remedy will cut passages (``--stride`` is checked against
        ``--passage-tokens`` only then: ``posbias evaluate`` shares ``--passage-tokens`` with a
        listwise reranker; segment-balanced reads ``--segments`` only)."""
        return self.remedy != NO_REMEDY and get_remedy(self.remedy).cuts_passages

    @property
    def read_settings(self) -> dict[str, int]:
        """The passage settings this remedy reads (what its results depend on besides its
        name): ``passage_tokens`` and ``stride`` for the passage remedies, ``segments`` for
        segment-balanced, nothing for none.

        Example:
            >>> RemedySettings(remedy="segment-balanced").read_settings
            {'segments': 4}
        """
        if self.remedy == NO_REMEDY:
            return {}
        return {name: getattr(self, name) for name in get_remedy(self.remedy).reads}

    @property
    def key(self) -> str:
        """The remedy and the settings it reads, e.g. ``maxp/128/64`` or
        ``segment-balanced/4`` (what a stored result of this remedy depends on)."""
        return "/".join([self.remedy, *(str(v) for v in self.read_settings.values())])

    def __post_init__(self) -> None:
        check_choice("remedy", self.remedy, remedy_choices())
        super().__post_init__()


@dataclass
class RemedyStats(JsonRecord):
    """What a remedy cost on the document side (queries are counted by the query encoder)."""

    documents: int = 0
    passages: int = 0
    document_tokens: int = 0
    index_seconds: float = 0.0


def check_remedy_fits(st_model: Any, settings: RemedySettings) -> None:
    """One-line :class:`InputError` when the remedy's settings cannot work with this model
    (:meth:`~hf_posbias.evaluation.runs.remedy_kinds.Remedy.check`: a passage must hold the
    special tokens, the longest prompt and a content token and fit the model's limit;
    segment-balanced needs mean pooling); nothing to check for ``none``."""
    if settings.remedy != NO_REMEDY:
        get_remedy(settings.remedy).check(st_model, settings)


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
        hf_posbias.errors.InputError: remedy needs a dense bi-encoder, not a sparse model
    """
    if kind != "bi-encoder":
        article = "an" if kind[:1] in ("a", "e", "i", "o", "u") else "a"
        raise InputError(
            f"{setting_label('remedy')} needs a dense bi-encoder, not {article} {kind} model"
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
        if settings.remedy == NO_REMEDY:
            raise ValueError("a RemedyScorer needs a remedy; use the plain model for none")
        check_remedy_fits(st_model, settings)
        self.remedy = get_remedy(settings.remedy)
        self.st_model = st_model
        self.settings = settings
        self.stats = RemedyStats()
        self._tokenizer = st_model.tokenizer
        self._head, self._tail = special_tokens(self._tokenizer)

    @property
    def cut_at_model_limit(self) -> bool:
        """Whether a document is read in one sequence cut at the model's limit, as the plain
        model reads it (``segment-balanced``); passage remedies read past it."""
        return not self.remedy.cuts_passages

    # ----------------------------------------------------------------- encoding

    def _budget(self, prompt: str | None) -> tuple[list[int], Budget]:
        """(prompt ids, the text tokens of one passage and of one model input)."""
        prompt_ids = prompt_token_ids(self._tokenizer, prompt)
        fixed = len(self._head) + len(self._tail) + len(prompt_ids)
        model = max(0, int(self.st_model.max_seq_length) - fixed)
        return prompt_ids, Budget(passage=self.settings.passage_tokens - fixed, model=model)

    def _bodies(self, texts: list[str]) -> list[list[int]]:
        return self._tokenizer([t.strip() for t in texts], add_special_tokens=False)["input_ids"]

    def count_unread(self, texts: list[str], prompt: str | None = None) -> int:
        """How many ``texts`` the remedy does not read to their end (beyond ``firstp``'s first
        passage, or ``segment-balanced``'s model limit; 0 for the other remedies).

        Example:
            >>> # RemedyScorer(model, RemedySettings(remedy="maxp")).count_unread(texts) → 0
        """
        readable = self.remedy.readable(self._budget(prompt)[1])
        if readable is None:
            return 0
        return sum(1 for ids in self._bodies(texts) if len(ids) > readable)

    def _sequences(self, texts: list[str], prompt: str | None) -> list[list[list[int]]]:
        """Per document, its passages as full model inputs (special tokens and prompt added)."""
        prompt_ids, budget = self._budget(prompt)
        return [
            [
                self._head + prompt_ids + p + self._tail
                for p in self.remedy.passages(ids, budget, self.settings)
            ]
            for ids in self._bodies(texts)
        ]

    def _forward(self, sequences: list[list[int]], batch_size: int) -> torch.Tensor:
        """Sentence embeddings of token-id sequences (the remedy's pooling)."""
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
                emb = self.remedy.embed(self.st_model, feats, self.settings)
            for row, i in enumerate(idx):
                out[i] = emb[row].float().cpu()
        return torch.stack(out) if out else torch.zeros(0)

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
        embeddings, owner = self.remedy.document_vectors(embeddings, owner, len(per_doc))
        self.stats.documents += len(per_doc)
        self.stats.passages += len(flat)
        self.stats.index_seconds += time.perf_counter() - start
        return PassageIndex(embeddings, owner, len(per_doc))

    def scores(
        self, query_embeddings: Any, index: PassageIndex, similarity: Any = None
    ) -> torch.Tensor:
        """``(queries, documents)`` scores: the remedy's combination of each document's
        query–vector similarities (the max for ``maxp``, the sum for ``sump``, its one vector's
        for ``firstp``, ``chunk-mean`` and ``segment-balanced``).

        ``similarity`` defaults to the model's own (``st_model.similarity``: what mteb's
        wrapper calls); ``query_embeddings`` is one row per query (array or tensor).
        """
        import torch

        similarity = similarity or self.st_model.similarity
        q = torch.as_tensor(query_embeddings).float()
        sims = torch.as_tensor(similarity(q.reshape(-1, q.shape[-1]), index.embeddings)).double()
        return self.remedy.combine(sims, index.owner, index.documents)

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
    if settings is None or settings.remedy == NO_REMEDY:
        return None
    require_bi_encoder(getattr(model, "kind", "bi-encoder"))
    st_model = getattr(model, "sentence_transformer", model)
    from sentence_transformers import MultiVectorEncoder, SparseEncoder

    if isinstance(st_model, SparseEncoder):
        require_bi_encoder("sparse")
    if isinstance(st_model, MultiVectorEncoder):
        require_bi_encoder("multi-vector")
    return RemedyScorer(st_model, settings)


class RemedySearch(CorpusSearch, RemedyScorer):
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

    @property
    def mteb_model_meta(self) -> ModelMeta:
        """The plain model's metadata with the remedy as experiment settings."""
        return self._meta

    # ----------------------------------------------------------------- mteb protocol

    def build_index(self, corpus: Any, context: SearchContext) -> list[str]:
        """Embed every passage of the corpus once."""
        from mteb._create_dataloaders import create_dataloader
        from mteb.types import PromptType

        task = context.task_metadata
        loader = create_dataloader(
            corpus, task_metadata=task, prompt_type=PromptType.document, batch_size=1
        )
        texts = [str(t) for t in loader.dataset["text"]]
        prompt = self._prompt(task, PromptType.document)
        batch_size = int(context.encode_kwargs.get("batch_size", 32))
        self._index = self.embed_documents(texts, prompt, batch_size)
        return [str(i) for i in corpus["id"]]

    def _prompt(self, task_metadata: TaskMetadata, prompt_type: Any) -> str | None:
        from mteb.models.sentence_transformer_wrapper import _resolve_prompt

        prompts = getattr(getattr(self.encoder, "model", None), "model_prompts", None)
        return _resolve_prompt(prompts, task_metadata, prompt_type) if prompts else None

    def score_queries(
        self, queries: Any, top_k: int, context: SearchContext
    ) -> list[list[tuple[int, float]]]:
        """Every document per query, scored by the remedy (:meth:`scores`), best first."""
        import torch
        from mteb._create_dataloaders import create_dataloader
        from mteb.types import PromptType

        task, encode_kwargs = context.task_metadata, context.encode_kwargs
        loader = create_dataloader(
            queries, task_metadata=task, prompt_type=PromptType.query, **encode_kwargs
        )
        q = self.encoder.encode(
            loader,
            task_metadata=task,
            hf_split=context.hf_split,
            hf_subset=context.hf_subset,
            prompt_type=PromptType.query,
            **encode_kwargs,
        )
        scores = self.scores(q, self._index, self.encoder.similarity)
        values, idx = torch.sort(scores, dim=1, descending=True, stable=True)
        return [
            list(zip(i, v, strict=True)) for i, v in zip(idx.tolist(), values.tolist(), strict=True)
        ]


def encoded_token_count(st_model: Any, texts: list[str], prompt: str | None = None) -> int:
    """Tokens the plain model feeds through itself for ``texts`` (truncated at its limit).

    Example:
        >>> # encoded_token_count(model, ["a query"]) → 4 for BERT ([CLS] a query [SEP])
    """
    tokenizer = st_model.tokenizer
    head, tail = special_tokens(tokenizer)
    fixed = len(head) + len(tail) + len(prompt_token_ids(tokenizer, prompt))
    limit = int(st_model.max_seq_length)
    bodies = tokenizer([t.strip() for t in texts], add_special_tokens=False)["input_ids"]
    return sum(min(limit, fixed + len(ids)) for ids in bodies)
