"""Tiny random models of every architecture family, built offline from a config.

Tests (and users without Hub access) need checkpoints of each family in the training registry —
BERT, Longformer, ModernBERT, GPT-2, BLOOM, Llama, Qwen3 — that load through exactly the same
``from_pretrained`` path as the real ones (and a tiny ListT5, :func:`build_tiny_listt5`). These
builders create a random model from its transformers config (hidden size 64, 2 layers) with a
tokenizer trained on the fly by ``tokenizers`` (WordPiece for encoders, byte-level BPE for
decoders) and save both to a folder.

Example:
    >>> import tempfile
    >>> from hf_posbias.testing import build_tiny_checkpoint
    >>> path = build_tiny_checkpoint("bert", tempfile.mkdtemp())
    >>> from transformers import AutoModel
    >>> AutoModel.from_pretrained(path).config.hidden_size
    64
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hf_posbias.trainer_base.shapes import ENCODER_FAMILIES, tiny_config

# A few hundred words of varied English, enough for a tokenizer that covers test text.
_TOKENIZER_TEXT = """
The quick brown fox jumps over the lazy dog. Retrieval models encode a query and a document
into vectors and compare them with cosine similarity. Position bias means a model prefers
documents whose relevant evidence appears near the beginning. Wikipedia articles describe
people, places, science, history, music, sport, politics and technology. A length bin groups
documents by their number of characters. The middle of a long document is often ignored.
Queries ask who, what, when, where, why and how. Numbers like 1, 2, 3, 10, 100, 1999 and 2024
appear in text. Climate change, vaccines, proteins, cells, genes and drugs are studied by
scientists. The end of the story reveals the answer. Training uses contrastive loss with
in-batch negatives. Evidence sentences support or refute a claim.
""".strip()

_SPECIALS_ENCODER = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _corpus(extra_text: str | None) -> list[str]:
    lines = [line for line in _TOKENIZER_TEXT.splitlines() if line.strip()]
    if extra_text:
        lines.extend(line for line in extra_text.splitlines() if line.strip())
    return lines * 4


def _wordpiece_vocab(
    lines: list[str], vocab_size: int, normalizer: Any, pre_tokenizer: Any
) -> dict[str, int]:
    """Specials, every character (alone and as a ``##`` continuation), whole words, then the
    commonest word-initial and ``##`` continuation pieces of 2–4 characters, each group by
    descending frequency (ties by spelling), up to ``vocab_size``. The pieces keep unseen words
    (e.g. real Wikipedia text) at about one token per 2–3 characters, as a trained WordPiece does.

    Built here rather than by ``tokenizers``' ``WordPieceTrainer``, whose merges break count
    ties in hash order: it returned a different vocabulary (382 or 383 tokens) from run to run,
    so the "same" tiny model encoded text differently in each test session.
    """
    from collections import Counter

    words: Counter[str] = Counter()
    for line in lines:
        text = normalizer.normalize_str(line)
        words.update(word for word, _ in pre_tokenizer.pre_tokenize_str(text))
    chars = sorted({c for word in words for c in word})
    tokens = list(_SPECIALS_ENCODER) + chars + [f"##{c}" for c in chars]
    seen = set(tokens)
    pieces: Counter[str] = Counter()
    for word, count in words.items():
        for n in (2, 3, 4):
            if len(word) > n:
                pieces[word[:n]] += count
            for start in range(1, len(word) - n + 1):
                pieces[f"##{word[start : start + n]}"] += count
    for group in (words, pieces):
        for token, _ in sorted(group.items(), key=lambda kv: (-kv[1], kv[0])):
            if len(tokens) >= vocab_size:
                break
            if token not in seen:
                tokens.append(token)
                seen.add(token)
    return {token: index for index, token in enumerate(tokens)}


def build_wordpiece_tokenizer(vocab_size: int = 512, extra_text: str | None = None) -> Any:
    """A BERT-style WordPiece tokenizer built locally (``[CLS] … [SEP]`` post-processing),
    identical on every call with the same arguments.

    Example:
        >>> tok = build_wordpiece_tokenizer()
        >>> tok.tokenize("Position bias zq")
        ['position', 'bias', 'z', '##q']
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    vocab = _wordpiece_vocab(_corpus(extra_text), vocab_size, normalizer, pre_tokenizer)
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def build_bpe_tokenizer(vocab_size: int = 512, extra_text: str | None = None) -> Any:
    """A GPT-2-style byte-level BPE tokenizer trained locally (no pad token, like real decoders)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        _corpus(extra_text),
        BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )


def build_tiny_checkpoint(
    family: str,
    out_dir: str | Path,
    seed: int = 0,
    head: str = "base",
    max_positions: int = 512,
    extra_text: str | None = None,
) -> str:
    """Save a tiny random ``family`` checkpoint (model + tokenizer) to ``out_dir``.

    Args:
        family: one of :data:`hf_posbias.trainer_base.shapes.FAMILIES`.
        out_dir: target folder (created).
        seed: torch seed for the random weights.
        head: ``"base"`` (AutoModel), ``"causal-lm"`` (decoders: the ``*ForCausalLM`` class, as
            real decoder checkpoints are saved) or ``"sequence-classification"`` (one label: a
            tiny cross-encoder) or ``"masked-lm"`` (encoders: an MLM head, what SPLADE reads).
        max_positions: maximum sequence length of the model.
        extra_text: more text for the tokenizer's training corpus.

    Returns:
        The folder path as a string.
    """
    import torch
    from transformers import (
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForSequenceClassification,
    )

    torch.manual_seed(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    is_encoder = family in ENCODER_FAMILIES
    tokenizer = (
        build_wordpiece_tokenizer(extra_text=extra_text)
        if is_encoder
        else build_bpe_tokenizer(extra_text=extra_text)
    )
    tokenizer.model_max_length = max_positions
    config = tiny_config(family, vocab_size=len(tokenizer), max_positions=max_positions)
    if head == "sequence-classification":
        config.num_labels = 1
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        config.pad_token_id = tokenizer.pad_token_id
        model = AutoModelForSequenceClassification.from_config(config)
    elif head == "causal-lm":
        model = AutoModelForCausalLM.from_config(config)
    elif head == "masked-lm":
        model = AutoModelForMaskedLM.from_config(config)
    else:
        model = AutoModel.from_config(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


def build_tiny_sentence_transformer(
    out_dir: str | Path, family: str = "bert", pooling: str = "mean", seed: int = 0
) -> str:
    """Save a tiny random SentenceTransformer (Transformer + Pooling) and return its folder."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    base = build_tiny_checkpoint(family, Path(out_dir) / "_base", seed=seed)
    transformer = Transformer(base)
    if transformer.tokenizer.pad_token is None:
        transformer.tokenizer.pad_token = transformer.tokenizer.eos_token
    pool = Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)
    model = SentenceTransformer(modules=[transformer, pool], device="cpu")
    model.save(str(out_dir))
    return str(out_dir)


def build_tiny_cross_encoder(out_dir: str | Path, seed: int = 0) -> str:
    """Save a tiny random BERT cross-encoder (one relevance logit) and return its folder."""
    return build_tiny_checkpoint("bert", out_dir, seed=seed, head="sequence-classification")


def build_tiny_sparse_encoder(out_dir: str | Path, seed: int = 0) -> str:
    """Save a tiny random SPLADE-style ``SparseEncoder`` (MLM head + max pooling); its folder."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

    base = build_tiny_checkpoint("bert", Path(out_dir) / "_base", seed=seed, head="masked-lm")
    model = SparseEncoder(modules=[MLMTransformer(base), SpladePooling("max")], device="cpu")
    model.save(str(out_dir))
    return str(out_dir)


def build_tiny_multi_vector_encoder(out_dir: str | Path, seed: int = 0) -> str:
    """Save a tiny random late-interaction ``MultiVectorEncoder`` (ColBERT-style: one vector per
    token, MaxSim); its folder."""
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.sentence_transformer.modules import Transformer

    base = build_tiny_checkpoint("bert", Path(out_dir) / "_base", seed=seed)
    model = MultiVectorEncoder(modules=[Transformer(base)], device="cpu")
    model.save(str(out_dir))
    return str(out_dir)


def build_tiny_listt5(out_dir: str | Path, seed: int = 0, fid_layout: bool = True) -> str:
    """Save a tiny random ListT5 checkpoint (a T5 encoder–decoder, hidden 64, 2 layers each, with
    a WordPiece tokenizer) and return its folder. ``fid_layout``: the weights under the names
    ListT5's ``FiDT5`` class saves them (``encoder.encoder.block.N.module.…``) and
    ``architectures: ["FiDT5"]``, as the released checkpoints; else transformers' own T5 layout.
    """
    import re

    import torch
    from safetensors.torch import save_file
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_wordpiece_tokenizer(extra_text="Query Index Context 1 2 3 4 5 6 7")
    tokenizer.eos_token = "[SEP]"
    config = T5Config(
        vocab_size=len(tokenizer), d_model=64, d_kv=16, d_ff=128, num_layers=2,
        num_decoder_layers=2, num_heads=4, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    model = T5ForConditionalGeneration(config)
    tokenizer.save_pretrained(out)
    if not fid_layout:
        model.save_pretrained(out)
        return str(out)
    config.architectures = ["FiDT5"]
    config.save_pretrained(out)
    wrapped = {}
    for key, value in model.state_dict().items():
        key = re.sub(r"^encoder\.block\.(\d+)\.", r"encoder.block.\1.module.", key)
        wrapped[re.sub(r"^encoder\.", "encoder.encoder.", key)] = value.clone().contiguous()
    save_file(wrapped, str(out / "model.safetensors"), metadata={"format": "pt"})
    return str(out)
