"""Build a SentenceTransformer bi-encoder from a base checkpoint, the way YHP26 trains it.

A plain transformers checkpoint becomes ``Transformer → Pooling`` with the pooling of its
:class:`~hf_posbias.training.models.ModelSpec` built explicitly (sentence-transformers would
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
    >>> from hf_posbias.training.models import get_model_spec
    >>> path = build_tiny_checkpoint("gpt2", tempfile.mkdtemp(), head="causal-lm")
    >>> model = build_sentence_transformer(get_model_spec(path))
    >>> model[1].pooling_mode, model.prompts["query"], model.tokenizer.padding_side
    ('lasttoken', 'Retrieve a relevant passage: ', 'right')
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hf_posbias.errors import ModelLoadError
from hf_posbias.training.models import POOLINGS, ModelSpec

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)


def _position_limit(config: object) -> int | None:
    """The longest input the model's position table allows (None for ALiBi / NoPE models)."""
    for key in ("max_position_embeddings", "n_positions"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            if getattr(config, "model_type", "") in ("roberta", "longformer", "xlm-roberta"):
                # RoBERTa-style tables reserve padding_idx + 1 slots.
                value -= int(getattr(config, "pad_token_id", 1) or 1) + 1
            return value
    return None


def build_sentence_transformer(
    spec: ModelSpec,
    pooling: str | None = None,
    max_length: int | None = None,
    device: str | None = None,
) -> SentenceTransformer:
    """A SentenceTransformer for ``spec`` with the right pooling, pad token, length and prompts.

    Args:
        spec: the base model (see :func:`~hf_posbias.training.models.get_model_spec`).
        pooling: override the spec's pooling (``cls``/``mean``/``max``/``lasttoken``).
        max_length: override the spec's maximum length (still capped by the position table).
        device: torch device; default: sentence-transformers' choice.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from hf_posbias.modeling import load_sentence_transformer, resolve_model

    pool_mode = pooling or spec.pooling
    if pool_mode not in POOLINGS:
        raise ModelLoadError(f"pooling must be one of {', '.join(POOLINGS)}, got {pool_mode!r}")
    wanted = int(max_length or spec.max_length)

    if spec.is_sentence_transformer:
        model = load_sentence_transformer(spec.checkpoint, device=device)
        if pooling is not None:
            # Replace the pooling module in place; the rest of the pipeline is kept.
            for idx, module in enumerate(model):
                if isinstance(module, Pooling):
                    model[idx] = Pooling(module.get_embedding_dimension(), pooling_mode=pool_mode)
        transformer = model[0]
    else:
        try:
            transformer = Transformer(resolve_model(spec.checkpoint))
        except Exception as err:  # every failure here means "this checkpoint cannot load"
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ModelLoadError(
                f"cannot load checkpoint {spec.checkpoint!r}: {first[:300]}"
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

    limit = _position_limit(transformer.auto_model.config)
    model.max_seq_length = min(wanted, limit) if limit else wanted
    # Saved with the model (training-time prompts are not): inference uses the same prefix.
    model.prompts = {"query": spec.query_prefix, "document": spec.document_prefix}
    model.default_prompt_name = None
    return model


@dataclass(frozen=True)
class TruncationReport:
    """How many training documents exceed the model's maximum length (tokens, with specials)."""

    n_documents: int
    n_truncated: int
    max_length: int
    longest: int

    @property
    def share(self) -> float:
        """Fraction of documents that will be truncated."""
        return self.n_truncated / self.n_documents if self.n_documents else 0.0


def count_truncated(
    model: SentenceTransformer,
    documents: Sequence[str],
    prefix: str = "",
    batch_size: int = 512,
    warn: bool = True,
) -> TruncationReport:
    """Tokenise ``documents`` and count those longer than ``model.max_seq_length``.

    sentence-transformers truncates silently; a position-bias study must know how much of the
    *end* of its documents the model never sees, so the number and share are logged as a warning.

    Example:
        >>> import tempfile
        >>> from hf_posbias.testing import build_tiny_checkpoint
        >>> from hf_posbias.training.builder import build_sentence_transformer, count_truncated
        >>> from hf_posbias.training.models import get_model_spec
        >>> m = build_sentence_transformer(get_model_spec(build_tiny_checkpoint("bert",
        ...     tempfile.mkdtemp())), max_length=16)
        >>> count_truncated(m, ["short", "the fox " * 40], warn=False).n_truncated
        1
    """
    from tqdm.auto import tqdm

    tokenizer = model.tokenizer
    limit = int(model.max_seq_length)
    n_over = 0
    longest = 0
    for start in tqdm(
        range(0, len(documents), batch_size), desc="counting tokens", disable=len(documents) < 5000
    ):
        chunk = [prefix + text for text in documents[start : start + batch_size]]
        lengths = [len(ids) for ids in tokenizer(chunk, truncation=False)["input_ids"]]
        n_over += sum(n > limit for n in lengths)
        longest = max([longest, *lengths])
    report = TruncationReport(len(documents), n_over, limit, longest)
    if warn and n_over:
        logger.warning(
            "%d of %d training documents (%.1f%%) exceed max_seq_length=%d tokens (longest %d) "
            "and will be truncated: their ends are never seen in training",
            n_over,
            len(documents),
            100 * report.share,
            limit,
            longest,
        )
    return report
