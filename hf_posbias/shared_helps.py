"""The settings that mean the same in every verb, each with its one help text.

A field of one of these names declared with :func:`hf_posbias.settings.shared_setting` reads the
same in every ``--help``, so a flag name has one meaning across ``posbias``
(``scripts/cli_surface.py --helps`` lists the flags that still differ). Kept apart from
:mod:`hf_posbias.settings` because it is a table of texts, not the settings machinery.

Example:
    >>> from hf_posbias.shared_helps import SHARED_HELPS
    >>> SHARED_HELPS["out"]
    'output folder'
"""

from __future__ import annotations

SHARED_HELPS: dict[str, str] = {
    "seed": "seed of every random draw (samples, shuffles, resampling, weight initialisation): "
    "the same seed gives the same result",
    "out": "output folder",
    "batch_size": "inputs per forward pass: texts for an encoder, (query, passage) pairs for a "
    "cross-encoder, prompt windows for a listwise reranker, requests per call to an LLM endpoint",
    "n_resamples": "resamples of the paired bootstrap or randomization test",
    "api_key_env": "environment variable holding the endpoint's API key",
    "base_url": "OpenAI-compatible endpoint URL, e.g. http://127.0.0.1:8000/v1",
    "hub_token": "Hub token",
    "max_steps": "stop training after N optimisation steps",
    "epochs": "passes over the training set",
    "logging_steps": "log the losses every N steps",
    "warmup_ratio": "linear warm-up share of steps",
    "scoring": "per-position protocol: default (pytrec_eval, each query in one bucket), zeng2025 "
    "(Zeng et al.'s reference code: top-100 nDCG@10, inclusive buckets) or posir (PosIR's 20 "
    "relative bins); see docs/evaluation.md",
    "exclude_truncated": "leave out the queries whose evidence starts at or beyond the model's "
    "max_seq_length (counted per bucket either way; recorded in summary.json)",
    "trust_remote_code": "run the Python code a Hub model repository ships (gte-multilingual, "
    "jina, stella and the `paper` rerankers need it); off by default: only for repositories "
    "you trust",
    "device": "torch device, e.g. cpu, cuda, cuda:1 or mps",
    # The data and benchmark builders
    "corpus": "the corpus: demo (the packaged Wikipedia sample), a .jsonl/.json/.parquet file "
    "(id, title, text), a WikiExtractor folder, a datasets folder or hf:<dataset id>[:<config>]",
    "limit": "read at most this many corpus records",
    "overwrite": "replace what the output holds when another verb or other settings made it, "
    "instead of refusing (the old run stays until the new one finishes; a run with the same "
    "settings resumes either way)",
    "llm_model": "the LLM every generation (and judging) step calls: a packaged name, a folder "
    "or a Hub id for a local LM, or the model name an endpoint serves",
    "constrained": "decode every LLM reply under its stage's JSON schema (local LM: llguidance; "
    "endpoint: response_format); --no-constrained decodes free-form (reproduces YHP26 §3's "
    "parse-failure accounting)",
    "max_concurrency": "concurrent requests to the endpoint",
    "tiny": "also build the tiny variant: a seeded sample of the queries (its size: "
    "--tiny-size or --per-position), corpus unchanged",
    "per_position": "queries per position in the tiny variant",
    "anchor": "which point of the evidence span is bucketed",
    "name": "task name written into task.json",
    "config": "training-set configuration: begin | middle | end | uniform (where the evidence "
    "sits) or b:m:e proportions",
    "split": "which split of the input to read: a BEIR folder's qrels split or a source's own "
    "(SciFact's validation is BEIR's test; evidence-moving also takes all: both)",
    # Training
    "global_batch": "training examples per optimisation step over all processes (train: rows, "
    "each query's in-batch negatives, YHP26: 256; listwise: windows, Q26: 8); each of W "
    "processes takes global/W; must be divisible by W",
    "mini_batch_size": "training examples per forward pass: N, or auto = the GPU memory "
    "preflight's choice (train: rows of the cached loss, GradCache, 32 on CPU; listwise: "
    "windows, the largest divisor of a process's share <= N, the rest gradient accumulation, "
    "one on CPU)",
    "lr": "peak learning rate",
    "lambda": "λ of λ·L_Rank(-IPS) + L_LM (Q26: 0.1)",
    "pos_aug": "Pos-Aug on the fly: every window becomes n rotated permutations (n must divide "
    "the window size); with --augmentation rand-aug, n random shuffles",
    # Evaluation and the listwise experiments
    "passage_tokens": "passage length in model tokens (special tokens included): the passages a "
    "remedy (maxp, firstp, sump, chunk-mean) splits a document into, or the cut of each passage "
    "a listwise reranker reads (words for an endpoint; train with the value you test with)",
    "bootstrap": "bootstrap resamples of every percentile interval and paired test (queries "
    "resampled within buckets)",
    "remedies": "inference-time remedies run beside the plain model (none) on the same queries "
    "(posbias list remedies; a study adds rows `base +<remedy>` for each untrained base)",
    "plot": "also write the figure as PNG (evaluate: per-task position curves; remedies: PSI "
    "against cost)",
    "method": "paired test (per query)",
    "alpha": "significance level of the paired test (leaderboard: neighbours that differ; "
    "listwise table: the marks)",
    "title": "title of the report (and of the dataset card it writes)",
    "k": "list length: the first stage's top k of each query, the list the reranker orders",
    "first_stage": "first-stage retriever whose top list the reranker reorders: bm25 or an "
    "embedding model (listwise verbs: a sparse encoder too, splade++ or sparse:<model>, and two "
    "or more fused by reciprocal rank fusion; Q26 evaluates on facebook/contriever-msmarco)",
    "reranker": "the reranker (posbias list rerankers shows how a name is matched): a listwise "
    "LLM slid over the list (smollm2-135m, a FIRST/DebiasFirst checkpoint folder or Hub causal "
    "LM; openai:<model> or a served model name with --base-url), a cross-encoder "
    "(cross-encoder:NAME; evaluate: also a *ForSequenceClassification model or an mteb registry "
    "reranker) or bm25 (the position-free control); evaluate: it reorders --model's top "
    "--rerank-k, the rest keep their first-stage order",
    "identifiers": "passage identifiers in the prompt: letters [A]…[T] or numbers [1]…[20]",
    "window": "sliding-window size",
    "positions": "comma-separated input slots tested",
    "calibrate": "slot calibration: each slot's identifier-logit prior from one content-free "
    "window is subtracted from the recorded scores (test: also OUT/calibrated/; remedies: a "
    "row); needs k <= --window",
    "shuffles": "seeded shuffles of each query's list: m of shuffle-eval, n (Fisher–Yates) of "
    "the propensities ω; remedies: the numbers m of inputs aggregated per ranking, the list as "
    "given plus m-1 shuffles (m=1 is the plain reranker), comma-separated",
    "smoothing": "add α to every transition count of the propensities ω before normalising "
    "(0: Eq. 5 exactly)",
}
"""The settings that mean the same in every verb, each with its one help text: a field of that
name declared with :func:`shared_setting` reads the same in every ``--help``
(``scripts/cli_surface.py --helps`` lists the flags that still differ). What a verb writes into
``--out``, or which draws its ``--seed`` drives, is said by that verb's description."""

SHARED_UNSET: dict[str, str] = {
    "device": "a GPU if one is visible, else cpu",
    "base_url": "the OpenAI API",
    "hub_token": "HF_TOKEN or the stored login",
    "name": "derived from the input",
    "positions": "1..k",
    "pos_aug": "the data as it is (e.g. already augmented)",
}
"""What leaving a shared setting unset does, where a verb leaves it unset (default ``None``):
``--help`` shows it as the default (``hf_posbias.settings.default_note``), a verb that gives the
setting a default shows that one instead. Where what unset means differs by verb, the verb's
field declares its own ``unset=``."""
