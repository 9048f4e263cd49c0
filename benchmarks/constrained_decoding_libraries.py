"""Structured-generation libraries compared for hf-posbias's constrained decoding.

For each of llguidance, xgrammar, outlines and lm-format-enforcer that imports, with
transformers' ``generate`` on CPU:

1. **Cost, teacher-forced** (no model forward, so the load of a shared machine matters little):
   the SmolLM2-135M tokenizer, YHP26's Stage-2 schema (``hf_posbias.generation.llm.
   STAGE2_SCHEMA``), a fixed valid reply fed token by token through the library's logits
   processor. Prints tokenizer set-up, schema compile time and mask time per token (3 repeats).
   A library that refuses a token of the canonical tokenization is reported (it would force
   another tokenization).
2. **Validity from random weights**: tiny random Llama and Qwen3 (``hf_posbias.testing``) sample
   8 Stage-1 and 8 Stage-2 replies each under the schemas; a reply counts as valid when
   ``json.loads`` (strict: no raw control characters) parses it with exactly the schema's keys.

llguidance is a dependency of ``hf-posbias[local-lm]``; install the others beside it without
touching the environment (each in a folder of its own, here under ``sg/``), then point
``PYTHONPATH`` at them, e.g.::

    pip install --no-deps --target sg/xg xgrammar apache-tvm-ffi
    pip install --no-deps --target sg/ol outlines outlines_core diskcache genson jsonschema \
        jsonschema-specifications referencing rpds-py cloudpickle
    pip install --no-deps --target sg/lmfe lm-format-enforcer interegular
    PYTHONPATH=sg/xg .venv/bin/python benchmarks/constrained_decoding_libraries.py xgrammar

Run (one library per process, so that each is imported alone):
    .venv/bin/python benchmarks/constrained_decoding_libraries.py llguidance

``--samples`` and ``--max-new-tokens`` shrink part 2 (the test suite runs it at 1 and 16).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import types
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from hf_posbias.generation.llm import STAGE2_SCHEMA, stage1_schema  # noqa: E402

Factory = Callable[[dict[str, Any], int], Any]
"""(schema, prompt length) → a fresh logits processor for one ``generate`` call."""


def factory(library: str, tokenizer: Any, vocab_size: int, model: Any = None) -> Factory:
    """A processor factory for ``library`` over ``tokenizer``; compiled grammars not cached."""
    if library == "llguidance":
        from hf_posbias.generation.constrained import (
            JsonSchemaLogitsProcessor,
            compile_json_schema,
            grammar_tokenizer,
        )

        lltok = grammar_tokenizer(tokenizer, vocab_size, tokenizer.eos_token_id)
        return lambda schema, n: JsonSchemaLogitsProcessor(lltok, compile_json_schema(schema), n)
    if library == "xgrammar":
        import xgrammar as xgr
        from xgrammar.contrib.hf import LogitsProcessor

        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        return lambda schema, n: LogitsProcessor(
            compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
        )
    if library == "outlines":
        import outlines
        from outlines.backends import get_json_schema_logits_processor

        wrapped = outlines.from_transformers(model, tokenizer)
        return lambda schema, n: get_json_schema_logits_processor(
            "outlines_core", wrapped, json.dumps(schema)
        )
    if library == "lm-format-enforcer":
        import transformers

        # 0.11.3 imports transformers.tokenization_utils.PreTrainedTokenizerBase, a
        # transformers-4 path: without this shim its integration does not import at all.
        shim = types.ModuleType("transformers.tokenization_utils")
        shim.PreTrainedTokenizerBase = transformers.PreTrainedTokenizerBase  # type: ignore[attr-defined]
        sys.modules.setdefault("transformers.tokenization_utils", shim)
        from lmformatenforcer import JsonSchemaParser
        from lmformatenforcer.integrations.transformers import (
            build_token_enforcer_tokenizer_data,
            build_transformers_prefix_allowed_tokens_fn,
        )
        from transformers.generation.logits_process import PrefixConstrainedLogitsProcessor

        data = build_token_enforcer_tokenizer_data(tokenizer)
        return lambda schema, n: PrefixConstrainedLogitsProcessor(
            build_transformers_prefix_allowed_tokens_fn(data, JsonSchemaParser(schema)), 1
        )
    raise SystemExit(f"unknown library {library!r}")


def teacher_forced_cost(library: str) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hf_posbias.modeling.causal_lm import causal_lm_folder

    folder = causal_lm_folder("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder) if library == "outlines" else None
    vocab = 49152
    start = time.perf_counter()
    make = factory(library, tokenizer, vocab, model)
    setup = time.perf_counter() - start
    reply = {
        "query": "What was the death toll of the 1970 Bhola cyclone in East Pakistan and India?",
        "answer": "At least 300,000 people died, possibly as many as 500,000.",
        "reasoning": "Only the middle segment gives the death toll; the others do not.",
    }
    # Compact separators for the libraries that can drop optional whitespace, else ", " ": ".
    compact = library == "llguidance"
    text = json.dumps(reply, separators=(",", ":") if compact else (", ", ": "))
    target = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    prompt = tokenizer("Write JSON:", add_special_tokens=False)["input_ids"]
    compile_s, per_token_ms, refused = [], [], ""
    for _ in range(3):
        t0 = time.perf_counter()
        try:
            processor = make(STAGE2_SCHEMA, len(prompt))
        except Exception as err:  # a library that cannot compile the schema: that is the result
            print(f"{library}: cannot compile the Stage-2 schema: {str(err).splitlines()[0]}")
            return
        compile_s.append(time.perf_counter() - t0)
        ids = torch.tensor([prompt])
        t0 = time.perf_counter()
        for step, token in enumerate(target):
            try:
                scores = processor(ids, torch.zeros(1, vocab))
            except AssertionError:  # xgrammar's processor asserts on a token it rejected
                scores = None
            except Exception as err:  # lm-format-enforcer compiles lazily, at the first step
                print(f"{library}: cannot apply the Stage-2 schema: {str(err).splitlines()[0]}")
                return
            if scores is None or not torch.isfinite(scores[0, token]):
                refused = refused or f"{tokenizer.decode(target[: step + 1])!r}"
                if scores is None:
                    break
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
        per_token_ms.append(1000 * (time.perf_counter() - t0) / (step + 1))
    print(
        f"{library}: tokenizer set-up {setup:.2f} s; Stage-2 schema compile "
        f"{', '.join(f'{s:.3f}' for s in compile_s)} s; mask per token "
        f"{', '.join(f'{m:.2f}' for m in per_token_ms)} ms over {len(target)} tokens; "
        f"first canonical token refused: {refused or 'none'}"
    )


def random_lm_validity(library: str, samples: int = 8, max_new_tokens: int = 600) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hf_posbias.testing import build_tiny_checkpoint

    for family in ("llama", "qwen3"):
        path = build_tiny_checkpoint(
            family, tempfile.mkdtemp(), head="causal-lm", max_positions=4096
        )
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path).eval()
        make = factory(library, tokenizer, model.config.vocab_size, model)
        prompt = tokenizer("Reef fish shelter among corals. Answer in JSON:", return_tensors="pt")
        n = int(prompt["input_ids"].shape[1])
        valid, total, example = 0, 0, ""
        for schema in (stage1_schema(3), STAGE2_SCHEMA):
            for seed in range(samples):
                torch.manual_seed(seed)
                try:
                    processor = make(schema, n)
                except Exception as err:  # see teacher_forced_cost
                    print(f"{library}: cannot compile {schema['title']}: {err}"[:200])
                    break
                try:
                    out = model.generate(
                        **prompt,
                        do_sample=True,
                        top_k=0,
                        max_new_tokens=max_new_tokens,
                        logits_processor=[processor],
                        pad_token_id=tokenizer.eos_token_id,
                    )
                except Exception as err:  # see teacher_forced_cost
                    print(f"{library}: cannot apply {schema['title']}: {err}"[:200])
                    break
                text = tokenizer.decode(out[0, n:], skip_special_tokens=True)
                total += 1
                try:
                    valid += set(json.loads(text)) == set(schema["properties"])
                except ValueError:
                    example = example or text
        bad = f"; e.g. invalid: {example[:80]!r}" if example else ""
        print(f"{library} / tiny random {family}: {valid}/{total} replies valid JSON{bad}")


LIBRARIES = ("llguidance", "xgrammar", "outlines", "lm-format-enforcer")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", nargs="?", default="llguidance", choices=LIBRARIES)
    parser.add_argument("--samples", type=int, default=8, help="replies per schema and model")
    parser.add_argument("--max-new-tokens", type=int, default=600, help="per sampled reply")
    args = parser.parse_args(argv)
    # Mask costs are per call, not per thread; one thread keeps a shared machine's noise down.
    torch.set_num_threads(1)
    teacher_forced_cost(args.library)
    random_lm_validity(args.library, args.samples, args.max_new_tokens)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
