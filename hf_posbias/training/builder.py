"""Build a SentenceTransformer bi-encoder from a base checkpoint, the way YHP26 trains it.

A plain transformers checkpoint becomes ``Transformer → Pooling`` with the pooling of its
:class:`~hf_posbias.modeling.bases.ModelSpec` built explicitly (sentence-transformers would
default to mean pooling for most plain checkpoints). Decoders get their EOS token as pad token and
right padding: ``Pooling("lasttoken")`` picks the last position whose attention mask is 1, which is
right for either padding side, but right padding keeps absolute position ids (GPT-2) identical to
the unpadded sequence. ``max_seq_length`` is the spec's maximum length capped by the model's
position table. The query prompt is stored in ``model.prompts`` so that it is saved with the
checkpoint (training-time ``prompts`` are not).

An existing sentence-transformers folder (e.g. ``all-MiniLM-L6-v2``) is loaded as is; its pooling
is replaced only when asked.

Example:
    >>> import tempfile
    >>> from hf_posbias.testing import build_tiny_checkpoint
    >>> from hf_posbias.training.builder import build_sentence_transformer
    >>> from hf_posbias.modeling.bases import get_model_spec
    >>> path = build_tiny_checkpoint("gpt2", tempfile.mkdtemp(), head="causal-lm")
    >>> model = build_sentence_transformer(get_model_spec(path))
    >>> model[1].pooling_mode, model.prompts["query"], model.tokenizer.padding_side
    ('lasttoken', 'Retrieve a relevant passage: ', 'right')
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import ModelLoadError, first_line
from hf_posbias.modeling.bases import POOLINGS, ModelSpec

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)


def position_limit(config: object) -> int | None:
    """The longest input the model's position table allows (None for ALiBi / NoPE models)."""
    for key in ("max_position_embeddings", "n_positions"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            if getattr(config, "model_type", "") in ("roberta", "longformer", "xlm-roberta"):
                # RoBERTa-style tables reserve padding_idx + 1 slots.
                value -= int(getattr(config, "pad_token_id", 1) or 1) + 1
            return value
    return None


def max_seq_length(config: object, spec: ModelSpec, max_length: int | None = None) -> int:
    """The sequence length a run uses: ``max_length`` (or the spec's) capped by the position
    table of ``config`` (:func:`position_limit`); one rule for the model, the pre-load checks and
    the memory plan.

    Example:
        >>> from types import SimpleNamespace
        >>> spec = SimpleNamespace(max_length=8192)
        >>> max_seq_length(SimpleNamespace(max_position_embeddings=512), spec)
        512
        >>> max_seq_length(SimpleNamespace(), spec, max_length=1024)  # NoPE: no table
        1024
    """
    wanted = int(max_length or spec.max_length)
    limit = position_limit(config)
    return min(wanted, limit) if limit else wanted


def build_sentence_transformer(
    spec: ModelSpec,
    pooling: str | None = None,
    max_length: int | None = None,
    device: str | None = None,
    attn_implementation: str | None = None,
) -> SentenceTransformer:
    """A SentenceTransformer for ``spec`` with the right pooling, pad token, length and prompts.

    Args:
        spec: the base model (see :func:`~hf_posbias.modeling.bases.get_model_spec`).
        pooling: override the spec's pooling (``cls``/``mean``/``max``/``lasttoken``).
        max_length: override the spec's maximum length (still capped by the position table).
        device: torch device; default: sentence-transformers' choice.
        attn_implementation: attention kernel to load the model with (see
            :func:`~hf_posbias.trainer_base.attention.model_attn_implementation`); None =
            transformers' default.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from hf_posbias.modeling.loaders import load_sentence_transformer
    from hf_posbias.modeling.resolve import model_location

    pool_mode = pooling or spec.pooling
    if pool_mode not in POOLINGS:
        raise ModelLoadError(f"pooling must be one of {', '.join(POOLINGS)}, got {pool_mode!r}")
    model_kwargs = {"attn_implementation": attn_implementation} if attn_implementation else {}

    if spec.is_sentence_transformer:
        model = load_sentence_transformer(
            spec.checkpoint,
            device=device,
            **({"model_kwargs": model_kwargs} if model_kwargs else {}),
        )
        if pooling is not None:
            # Replace the pooling module in place; the rest of the pipeline is kept.
            for idx, module in enumerate(model):
                if isinstance(module, Pooling):
                    model[idx] = Pooling(module.get_embedding_dimension(), pooling_mode=pool_mode)
        transformer = model[0]
    else:
        try:
            transformer = Transformer(model_location(spec.checkpoint), model_kwargs=model_kwargs)
        except Exception as err:  # every failure here means "this checkpoint cannot load"
            raise ModelLoadError(
                f"cannot load checkpoint {spec.checkpoint!r}: {first_line(err)}"
            ) from None
        dim = transformer.get_embedding_dimension()
        model = SentenceTransformer(
            modules=[transformer, Pooling(dim, pooling_mode=pool_mode)], device=device
        )

    tokenizer = model.tokenizer
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ModelLoadError(f"{spec.checkpoint!r} has neither a pad nor an EOS token")
        tokenizer.pad_token = tokenizer.eos_token
    if spec.is_decoder:
        tokenizer.padding_side = "right"

    model.max_seq_length = max_seq_length(transformer.auto_model.config, spec, max_length)
    # Saved with the model (training-time prompts are not): inference uses the same prefix.
    model.prompts = {"query": spec.query_prefix, "document": spec.document_prefix}
    model.default_prompt_name = None
    return model


def checkpoint_folder(spec: ModelSpec) -> str:
    """Where the transformers config and tokenizer of ``spec`` live (a folder or a Hub id).

    A sentence-transformers folder may keep its transformer in a sub-folder.
    """
    from hf_posbias.modeling.resolve import model_location

    resolved = model_location(spec.checkpoint)
    folder = Path(resolved)
    if folder.is_dir() and not (folder / "config.json").is_file():
        nested = sorted(folder.glob("*/config.json"))
        if nested:
            return str(nested[0].parent)
    return resolved


def load_text_setup(spec: ModelSpec, max_length: int | None = None) -> tuple[Any, Any, int]:
    """``(config, tokenizer, max_seq_length)`` of ``spec`` without loading its weights.

    ``max_seq_length`` is what :func:`build_sentence_transformer` will set: ``max_length`` (or the
    spec's) capped by the position table. Lets a run check token budgets and count truncated
    documents before the model is loaded.
    """
    from hf_posbias.modeling.loaders import load_tokenizer_config

    tokenizer, config = load_tokenizer_config(checkpoint_folder(spec), spec.checkpoint)
    return config, tokenizer, max_seq_length(config, spec, max_length)


@dataclass(frozen=True)
class TruncationReport:
    """How many training texts exceed the model's maximum length (tokens, with specials)."""

    n_documents: int
    n_truncated: int
    max_length: int
    longest: int
    lengths: tuple[int, ...] = field(default=(), repr=False, compare=False)
    """Token length of every text (before truncation), in input order."""

    @property
    def share(self) -> float:
        """Fraction of documents that will be truncated."""
        return self.n_truncated / self.n_documents if self.n_documents else 0.0


def count_truncated(
    tokenizer: Any,
    max_length: int,
    documents: Sequence[str],
    prefix: str = "",
    batch_size: int = 512,
    warn: bool = True,
) -> TruncationReport:
    """Tokenise ``documents`` and count those longer than ``max_length`` tokens.

    sentence-transformers truncates silently; a position-bias study must know how much of the
    *end* of its documents the model never sees, so the number and share are logged as a warning.
    The token lengths come back too (the batch sampler sorts rows by them).

    Example:
        >>> import tempfile
        >>> from hf_posbias.testing import build_tiny_checkpoint
        >>> from hf_posbias.training.builder import count_truncated, load_text_setup
        >>> from hf_posbias.modeling.bases import get_model_spec
        >>> spec = get_model_spec(build_tiny_checkpoint("bert", tempfile.mkdtemp()))
        >>> _, tokenizer, limit = load_text_setup(spec, max_length=16)
        >>> report = count_truncated(tokenizer, limit, ["short", "the fox " * 40], warn=False)
        >>> report.n_truncated, len(report.lengths), report.longest > 16
        (1, 2, True)
    """
    from hf_posbias.progress import progress

    limit = int(max_length)
    lengths: list[int] = []
    starts = range(0, len(documents), batch_size)
    for start in progress(
        starts, total=len(starts), desc="counting tokens", disable=len(documents) < 5000
    ):
        chunk = [prefix + text for text in documents[start : start + batch_size]]
        # verbose=False: counting over-long documents is the point, not worth a tokenizer warning
        encoded = tokenizer(chunk, truncation=False, verbose=False)
        lengths.extend(len(ids) for ids in encoded["input_ids"])
    n_over = sum(n > limit for n in lengths)
    report = TruncationReport(
        len(documents), n_over, limit, max(lengths, default=0), tuple(lengths)
    )
    if warn and n_over:
        logger.warning(
            "%d of %d training documents (%.1f%%) exceed max_seq_length=%d tokens (longest %d) "
            "and will be truncated: their ends are never seen in training",
            n_over,
            len(documents),
            100 * report.share,
            limit,
            report.longest,
        )
    return report
