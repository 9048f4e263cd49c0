"""Schema-constrained decoding for local ``transformers`` LMs, with llguidance.

A small instruct model asked for JSON often answers prose, half an object or an object with the
wrong keys (SmolLM2-135M fails YHP26's Stage-1 prompt on nearly every document). Constrained
decoding removes that failure mode: at every step the logits of tokens that would leave the JSON
schema are set to ``-inf``, so whatever the model samples is a prefix of a schema-valid document,
and once the object is closed only the end-of-sequence token remains.

`llguidance <https://github.com/guidance-ai/llguidance>`_ (MIT, a Rust extension with no Python
dependencies) compiles the schema into a grammar and computes each step's token mask; its
comparison with xgrammar, outlines and lm-format-enforcer is in ``docs/generation.md``. This
module holds the three pieces a ``generate`` call needs:

- :func:`compile_json_schema` — schema → llguidance grammar, or a one-line
  :class:`~hf_posbias.errors.InputError` naming what cannot be compiled;
- :func:`grammar_tokenizer` — the model's fast tokenizer in llguidance's form (built once per
  model);
- :class:`JsonSchemaLogitsProcessor` — the per-call logits mask, used in
  ``model.generate(logits_processor=[...])`` (one matcher per batch row).

JSON is produced without optional whitespace (``{"a":1,"b":"x"}``): a random or tiny model could
otherwise spend its whole token budget on spaces between two keys.

Example:
    >>> from hf_posbias.generation.constrained import compile_json_schema
    >>> grammar = compile_json_schema({"type": "object", "properties": {"q": {"type": "string"}}})
    >>> isinstance(grammar, str)
    True
    >>> compile_json_schema({"type": "strin"})
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: cannot compile JSON schema: Invalid type: strin
"""

from __future__ import annotations

import json
from copy import copy
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError, ModelLoadError, first_line
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    import torch

INSTALL_HINT = "pip install 'hf-posbias[local-lm]' (or pass --no-constrained to decode free-form)"
"""How to get the structured-generation library, for error messages."""


def require_llguidance() -> Any:
    """Import llguidance, or raise a one-line :class:`InputError` saying how to install it.

    Example:
        >>> require_llguidance().LLMatcher.__name__
        'LLMatcher'
    """
    try:
        import llguidance
    except ImportError:
        raise InputError(
            f"constrained decoding needs the package 'llguidance': {INSTALL_HINT}"
        ) from None
    return llguidance


def compile_json_schema(schema: dict[str, Any] | str) -> str:
    """Compile a JSON schema into an llguidance grammar (compact JSON, no optional whitespace).

    Raises :class:`InputError` (one line) for a schema that is not JSON, uses an unknown type or
    format, cannot be satisfied, or needs a regex feature llguidance lacks (look-around).

    Example:
        >>> compile_json_schema({"type": "string", "minLength": 5, "maxLength": 2})
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: cannot compile JSON schema: Unsatisfiable schema: ...
    """
    llguidance = require_llguidance()
    prefix = "cannot compile JSON schema"
    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": False}
        )
    except (ValueError, TypeError) as err:
        raise InputError(f"{prefix}: {first_line(err)}") from None
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    if is_error:
        # llguidance quotes regex errors over several lines (pattern, caret, message).
        detail = " ".join(" ".join(messages).split())
        raise InputError(f"{prefix}: {detail[:300]}")
    return grammar


def schema_key(schema: dict[str, Any]) -> str:
    """A canonical string for a schema (compiled-grammar cache key, manifest fingerprint).

    Example:
        >>> schema_key({"b": 1, "a": [2]})
        '{"a":[2],"b":1}'
    """
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def grammar_tokenizer(
    tokenizer: Any, vocab_size: int, eos_token_ids: int | list[int] | None, name: str = ""
) -> Any:
    """The llguidance tokenizer for a fast Hugging Face tokenizer (about 0.3 s: build it once).

    ``vocab_size`` is the width of the model's logits (it may exceed the tokenizer's vocabulary);
    ``eos_token_ids`` are the tokens that end generation, the only ones allowed once the JSON
    object is closed. A tokenizer without a ``tokenizers`` backend raises :class:`ModelLoadError`.
    """
    llguidance = require_llguidance()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ModelLoadError(
            f"constrained decoding needs a fast (tokenizers) tokenizer; {name or 'the model'} "
            f"has a slow one: pass {flag_name('constrained', negated=True)}"
        )
    # Serialise a copy without padding/truncation: llguidance re-creates the Rust tokenizer.
    backend = copy(backend)
    backend.no_padding()
    backend.no_truncation()
    eos = eos_token_ids if eos_token_ids is not None else tokenizer.eos_token_id
    if eos is None:
        raise ModelLoadError(
            f"constrained decoding needs an end-of-sequence token; {name or 'the model'} has none"
        )
    try:
        return llguidance.LLTokenizer(backend.to_str(), n_vocab=int(vocab_size), eos_token=eos)
    except Exception as err:  # llguidance rejects some tokenizer types; say which, on one line
        raise ModelLoadError(
            f"llguidance cannot use the tokenizer of {name or 'the model'}: {first_line(err)}"
        ) from None


class JsonSchemaLogitsProcessor:
    """Mask logits so that only tokens allowed by a compiled schema can be sampled.

    One llguidance matcher per batch row follows the tokens generated so far (everything after
    ``prompt_length``). Use a new processor for every ``generate`` call. Apply it *before*
    temperature / top-p (pass those as later processors): top-p first could keep only
    disallowed tokens and leave nothing to sample.

    ``errors`` lists rows whose matcher failed (a token outside the grammar, which the mask
    prevents): such a row is steered to end-of-sequence and its reply will not parse — counted
    by the caller like any unparseable reply, never hidden.

    Example:
        >>> import torch
        >>> from hf_posbias.testing import build_bpe_tokenizer
        >>> tok = build_bpe_tokenizer()
        >>> lltok = grammar_tokenizer(tok, len(tok), tok.eos_token_id)
        >>> grammar = compile_json_schema({"enum": ["yes", "no"]})
        >>> processor = JsonSchemaLogitsProcessor(lltok, grammar, prompt_length=0)
        >>> masked = processor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(1, len(tok)))
        >>> allowed = masked[0].isfinite().nonzero().flatten().tolist()
        >>> {tok.decode([t]) for t in allowed} <= {'"', '"y', '"n', '"ye', '"yes', '"no', '"no"'}
        True
    """

    def __init__(self, tokenizer: Any, grammar: str, prompt_length: int) -> None:
        self._llguidance = require_llguidance()
        self._tokenizer = tokenizer
        self._grammar = grammar
        self._prompt_length = int(prompt_length)
        self._matchers: list[Any] = []
        self._consumed = 0
        self.errors: list[str] = []

    def _start(self, rows: int) -> None:
        self._matchers = [
            self._llguidance.LLMatcher(self._tokenizer, self._grammar, log_level=0)
            for _ in range(rows)
        ]
        failed = next((m for m in self._matchers if m.is_error()), None)
        if failed is not None:
            raise InputError(f"cannot compile JSON schema: {first_line(failed.get_error())}")

    def finished(self, row: int = 0) -> bool:
        """Whether row ``row`` has produced a complete schema-valid document."""
        return bool(self._matchers) and self._matchers[row].is_accepting()

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import numpy as np
        import torch

        if not self._matchers:
            self._start(int(input_ids.shape[0]))
        generated = int(input_ids.shape[1]) - self._prompt_length
        for row, matcher in enumerate(self._matchers):
            # A finished row keeps receiving padding in batched generation: do not feed it.
            for token in input_ids[row, self._prompt_length + self._consumed :].tolist():
                if matcher.is_stopped() or matcher.is_error():
                    break
                if not matcher.consume_token(int(token)):
                    self.errors.append(f"row {row}: {matcher.get_error()}")
        self._consumed = generated
        width = int(scores.shape[-1])
        masks = []
        for matcher in self._matchers:
            # One bit per token (little-endian within each byte); unpacked with numpy, the
            # fastest of the ways tried (~0.1 ms for the mask, ~0.5 ms to apply, 49k tokens).
            bits = np.unpackbits(
                np.frombuffer(matcher.compute_bitmask(), np.uint8), bitorder="little"
            )
            allowed = np.zeros(width, dtype=bool)
            n = min(width, bits.size)
            allowed[:n] = bits[:n].astype(bool)
            if matcher.is_error() or not allowed.any():
                # Nothing valid to say: end the row (its reply is then counted as unparseable).
                allowed[:] = False
                allowed[self._eos_ids()] = True
            masks.append(allowed)
        blocked = torch.from_numpy(~np.stack(masks)).to(scores.device)
        return scores.masked_fill(blocked, float("-inf"))

    def _eos_ids(self) -> list[int]:
        return [int(e) for e in self._tokenizer.eos_tokens]
