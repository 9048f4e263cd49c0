#!/usr/bin/env python
"""Outputs of fixed cases, hashed, to prove a refactor changes none of them.

Runs a handful of small, deterministic, CPU-only, offline cases through the public CLI
(``python -m hf_posbias.cli …``, with this interpreter, so ``PYTHONPATH`` decides which code
runs) and writes a JSON manifest mapping every output file (path relative to ``--out``) to the
sha256 of its normalised content. Run it before and after a refactor and compare the manifests:
identical manifests mean identical outputs.

    PYTHONPATH=$PWD python scripts/record_outputs.py --out /tmp/golden-run --manifest before.json
    # … refactor …
    PYTHONPATH=$PWD python scripts/record_outputs.py --out /tmp/golden-run --manifest after.json
    python scripts/record_outputs.py --compare before.json after.json

About 100 s of CPU time (2 to 4 minutes on 2 busy cores).

Cases (everything below ``--out``):

1. ``data``: ``posbias data build`` on the first 1,000 records of the embedded default corpus (ICT
   generator, BM25 panel, 10% held out), then the stage verbs ``posbias data corpus`` and
   ``posbias data generate`` over the held-out documents.
2. ``evaluate``: a thirds task made from those held-out documents with
   ``posbias benchmark build jsonl`` (one ICT query per document, as ``posbias demo`` does),
   ``posbias benchmark subsample``, ``posbias evaluate`` of BM25 and of a tiny random BERT,
   ``posbias compare`` of the two and ``posbias leaderboard``.
3. ``study``: ``posbias study run`` (the tiny BERT × begin/middle/end/uniform, two training
   steps each, on the build's training sets) and ``posbias study report``.
4. ``listwise``: ``posbias listwise test`` with the BM25 control and with a tiny random Llama
   (FIRST scoring) on the sampled task, and ``posbias listwise compare-tests`` of the two.

The other inputs (the tiny random models, the JSONL the task is made from — picked from the
held-out candidates —, the study spec) are written here with public libraries only
(transformers, tokenizers, pyarrow) and recorded under ``fixtures/``, so a changed input is told
apart from a changed output. No module of ``hf_posbias`` is imported: the script runs unchanged
on the refactored code.

Every command runs inside ``--out`` with paths relative to it, so what the outputs record of
their inputs (and the fingerprints hashed over it) does not depend on where ``--out`` is; the
environment is offline, CPU-only and single-threaded (:func:`child_env`). The manifest holds the
hashes (``files``), the files of each case (``cases``), the commands and the normalisation; it
is itself deterministic (timings go to ``OUT/.logs/timings.json``, each command's standard
error to ``OUT/.logs/``), so ``--compare`` or a plain ``cmp`` of two manifests tells.

Normalisation (nothing else is changed before hashing):

- JSON files (``.json``, and each line of ``.jsonl``): keys whose names denote wall-clock time,
  dates, durations, machine-specific paths, library versions or hosts are dropped, at any depth
  (:data:`DROPPED_KEYS`, :data:`DROPPED_KEY_SUFFIXES`, :data:`DROPPED_KEY_TOKENS`); the
  re-serialised JSON (sorted keys) is hashed. The manifest lists the keys it dropped
  (``normalisation.dropped_keys_seen``).
- Every text (JSON strings included): the absolute ``--out`` folder becomes ``<OUT>``, the
  folder holding the ``hf_posbias`` package ``<REPO>``, the interpreter's prefix ``<PREFIX>``,
  the home folder ``<HOME>``.
- Parquet files: hashed by table content (column names and types, the schema metadata and the
  rows, normalised as JSON values), not by bytes.
- PNG files: recorded as present (``png: not hashed``), their bytes are not hashed.
- Markdown/text lines in :data:`VOLATILE_TEXT_PATTERNS` (durations, dates, versions) are
  rewritten to placeholders; the printed standard output of every command is recorded the same
  way as ``stdout/<step>.txt``.
- ``mteb``'s revision of a local model, ``local-<12 hex>`` (a hash of the model folder, card
  and its training time included), in folder names and JSON values becomes
  ``local-<fingerprint>``; the weights themselves are hashed byte for byte.
- Other binary files (``model.safetensors``): their bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SEED = 42

# --------------------------------------------------------------------------- normalisation

DROPPED_KEYS: frozenset[str] = frozenset(
    {
        # wall-clock time, dates, durations
        "date",
        "created",
        "created_at",
        "started",  # a unit's state record (<out>/units/*.json): when it started
        "started_at",
        "finished_at",
        "updated_at",
        "timestamp",
        "time",
        "elapsed",
        "duration",
        "runtime",
        "train_runtime",
        "train_samples_per_second",
        "train_steps_per_second",
        "evaluation_time",
        "evaluation_time_s",
        "evaluation_phases",  # mteb: start/end seconds of each phase
        "kg_co2_emissions",
        "seconds_per_step",
        "steps_per_second",
        "samples_per_second",
        "total_flos",
        # library versions
        "version",
        "versions",
        "mteb_version",
        "transformers_version",
        "torch_version",
        "sentence_transformers_version",
        "pandas_version",
        "hf_posbias_version",
        "posbias_version",
        "python_version",
        "__version__",
        # machine-specific paths and hosts
        "path",
        "task_path",
        "mteb_result_path",
        "cache_dir",
        "cwd",
        "hostname",
        "host",
        "pid",
        "_name_or_path",
    }
)
"""JSON keys dropped wherever they occur (compared case-insensitively)."""

DROPPED_KEY_SUFFIXES: tuple[str, ...] = (
    "_time",
    "_time_s",
    "_seconds",
    "_duration",
    "_elapsed",
    "_timestamp",
    "_date",
    "_version",
)
"""JSON keys ending in one of these are dropped too (``train_time``, ``build_date`` …)."""

DROPPED_KEY_TOKENS: frozenset[str] = frozenset(
    {"seconds", "secs", "runtime", "timestamp", "elapsed", "duration", "hostname"}
)
"""JSON keys with one of these among their ``_``-separated words are dropped too
(``seconds``, ``seconds_this_run``, ``train_seconds``)."""

VOLATILE_TEXT_PATTERNS: tuple[tuple[str, str], ...] = (
    # durations: "35.2 s", "1m05s", "(35.16 s/step)", "ETA 3.5 min", "done in 12.3s"
    (r"\b\d+m\d{2}s\b", "<DURATION>"),
    (r"\b\d+(?:\.\d+)?\s?(?:s|sec|secs|seconds|min|minutes|h|hours)(?:/step)?\b", "<DURATION>"),
    (r"ETA \d[^\s,)]*", "ETA <DURATION>"),
    # dates and times
    (
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
        "<DATE>",
    ),
    # library versions in prose: "mteb 2.26.24", "transformers==5.24.0", "torch 2.13.0+cpu"
    (r"\b(\d+\.\d+\.\d+(?:[.+-][0-9A-Za-z.]+)?)\b", "<VERSION>"),
)
"""Regular expressions rewritten in text files and in the recorded standard output."""

PRINTED_ITEM = re.compile(
    r"""(['"])([A-Za-z_][A-Za-z0-9_]*)\1(\s*:\s*)('[^']*'|"[^"]*"|[^,}\s]+)"""
)
"""A key and its value in printed text (the trainer's ``{'train_runtime': '2.62', …}``)."""


def is_dropped_key(key: str) -> bool:
    """Whether the JSON key ``key`` names a time, date, duration, path, version or host."""
    lowered = key.lower()
    return (
        lowered in DROPPED_KEYS
        or lowered.endswith(DROPPED_KEY_SUFFIXES)
        or not DROPPED_KEY_TOKENS.isdisjoint(lowered.split("_"))
    )


FINGERPRINT_DIR = re.compile(r"^local-[0-9a-f]{12}$")
FINGERPRINT_VALUE = re.compile(r"\blocal-[0-9a-f]{12}\b")
"""mteb's revision of a local model folder: a content hash that covers the model card, which
states the training time."""


@dataclass
class Normaliser:
    """Replaces machine-specific strings and drops volatile keys."""

    out: Path
    replacements: list[tuple[str, str]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        pairs = [(str(self.out.resolve()), "<OUT>"), (str(self.out), "<OUT>")]
        repo = package_root()
        if repo is not None:
            pairs.append((str(repo), "<REPO>"))
        pairs += [(sys.prefix, "<PREFIX>"), (sys.base_prefix, "<PREFIX>")]
        home = os.path.expanduser("~")
        seen: set[str] = set()
        # longest first, so a folder inside another is replaced whole
        for old, new in sorted(pairs, key=lambda p: -len(p[0])):
            if old and old not in seen and old != "/":
                seen.add(old)
                self.replacements.append((old, new))
        if home and home != "/":
            self.replacements.append((home, "<HOME>"))

    def text(self, value: str) -> str:
        for old, new in self.replacements:
            value = value.replace(old, new)
        return value

    def volatile(self, value: str) -> str:
        # printed dicts (the trainer's log lines): values of the dropped keys
        value = PRINTED_ITEM.sub(
            lambda m: m.expand(r"\1\2\1\3<DROPPED>") if is_dropped_key(m.group(2)) else m.group(0),
            value,
        )
        for pattern, new in VOLATILE_TEXT_PATTERNS:
            value = re.sub(pattern, new, value)
        return value

    def drop(self, key: str) -> bool:
        if is_dropped_key(key):
            self.dropped[key] += 1
            return True
        return False

    def json_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                self.text(str(k)): self.json_value(v)
                for k, v in value.items()
                if not self.drop(str(k))
            }
        if isinstance(value, (list, tuple)):
            return [self.json_value(v) for v in value]
        if isinstance(value, str):
            return FINGERPRINT_VALUE.sub("local-<fingerprint>", self.text(value))
        if isinstance(value, bytes):
            return "bytes:" + hashlib.sha256(value).hexdigest()
        if isinstance(value, float) and value != value:
            return "NaN"
        return value

    def relative_name(self, rel: str) -> str:
        parts = ["local-<fingerprint>" if FINGERPRINT_DIR.match(p) else p for p in rel.split("/")]
        return "/".join(parts)


def package_root() -> Path | None:
    """The folder holding the ``hf_posbias`` package that runs (found, not imported)."""
    import importlib.util

    spec = importlib.util.find_spec("hf_posbias")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent.parent


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True).encode()


def digest_file(path: Path, norm: Normaliser) -> str:
    """The sha256 of ``path``'s normalised content (see the module docstring)."""
    suffix = path.suffix.lower()
    if suffix == ".png":
        return "png: not hashed"
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        schema = [(f.name, str(f.type)) for f in table.schema]
        metadata = {
            k.decode(errors="replace"): _maybe_json(v.decode(errors="replace"))
            for k, v in (table.schema.metadata or {}).items()
        }
        payload = {
            "schema": schema,
            "metadata": norm.json_value(metadata),
            "rows": norm.json_value(table.to_pylist()),
        }
        return hashlib.sha256(canonical(payload)).hexdigest()
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:  # other binary files (weights): their bytes
        return hashlib.sha256(raw).hexdigest()
    if suffix == ".json":
        try:
            return hashlib.sha256(canonical(norm.json_value(json.loads(text)))).hexdigest()
        except json.JSONDecodeError:
            pass
    if suffix == ".jsonl":
        try:
            rows = [norm.json_value(json.loads(line)) for line in text.splitlines() if line.strip()]
            return hashlib.sha256(canonical(rows)).hexdigest()
        except json.JSONDecodeError:
            pass
    text = norm.text(text)
    if suffix in {".md", ".txt", ".log", ".html"}:
        text = norm.volatile(text)
    return hashlib.sha256(text.encode()).hexdigest()


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


# --------------------------------------------------------------------------- fixtures

FIXTURE_TEXT = """
The quick brown fox jumps over the lazy dog. Retrieval models encode a query and a document
into vectors and compare them with cosine similarity. Position bias means a model prefers
documents whose relevant evidence appears near the beginning. Wikipedia articles describe
people, places, science, history, music, sport, politics and technology. A length bin groups
documents by their number of characters. The middle of a long document is often ignored.
Queries ask who, what, when, where, why and how. Numbers like 1, 2, 3, 10, 100, 1999 and 2024
appear in text. The city was founded in the century by the king of the country and its river
became the capital of the state. He was born in the year after the war and was known for his
work on the university, the church, the army and the government of the island. The species is
found in the region, the language is spoken by the people, the film was released by the company.
The end of the story reveals the answer. Evidence sentences support or refute a claim.
"""
"""Text the tiny BERT's WordPiece vocabulary is built from (with every ASCII character)."""

_BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_tiny_bert(folder: Path, vocab_size: int = 512) -> Path:
    """A random BERT (hidden 64, 2 layers) and a WordPiece tokenizer whose vocabulary is fixed
    here (specials, ASCII characters alone and as ``##`` pieces, then the words of
    :data:`FIXTURE_TEXT` by frequency), saved with ``save_pretrained``."""
    import string

    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words: Counter[str] = Counter()
    for line in FIXTURE_TEXT.strip().splitlines():
        words.update(w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(line)))
    chars = sorted(set(string.ascii_lowercase + string.digits + string.punctuation))
    tokens = [*_BERT_SPECIALS, *chars, *(f"##{c}" for c in chars)]
    for word, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(tokens) < vocab_size and word not in tokens:
            tokens.append(word)
    tok = Tokenizer(models.WordPiece(vocab={t: i for i, t in enumerate(tokens)}, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tokens.index("[CLS]")), ("[SEP]", tokens.index("[SEP]"))],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )
    config = BertConfig(
        vocab_size=len(tokens),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=512,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_llama(folder: Path) -> Path:
    """A random Llama causal LM (hidden 64, 2 layers, 2,048 positions) with a byte-level
    tokenizer without merges (every byte one token, so ``[A]`` … ``[T]`` have single-token
    letters), saved with ``save_pretrained``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    eos = "<|endoftext|>"
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {eos: 0, **{c: i + 1 for i, c in enumerate(alphabet)}}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=eos, eos_token=eos, unk_token=eos, model_max_length=2048
    )
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=2048,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_models(out: Path) -> None:
    build_tiny_bert(out / "fixtures" / "tiny-bert")
    build_tiny_llama(out / "fixtures" / "tiny-llama")


def write_heldout_jsonl(work: Path, out: Path, distractors: Path) -> None:
    """One query per held-out document from ``posbias data generate``'s candidates (the candidate
    picked by a stable hash of the document id; the evidence is where the ICT sentence was
    removed), as ``posbias benchmark build jsonl`` reads it; documents without a candidate are
    written to ``distractors``."""
    import pyarrow.parquet as pq

    candidates: dict[str, list[dict[str, Any]]] = {}
    for row in pq.read_table(work / "candidates" / "candidates.parquet").to_pylist():
        candidates.setdefault(row["doc_id"], []).append(row)
    documents = pq.read_table(work / "corpus" / "documents.parquet").to_pylist()
    with out.open("w") as records, distractors.open("w") as others:
        for document in sorted(documents, key=lambda d: d["id"]):
            options = sorted(candidates.get(document["id"], []), key=lambda r: r["candidate_id"])
            if not options:
                row = {"id": document["id"], "text": document["text"], "title": document["title"]}
                others.write(json.dumps(row, sort_keys=True) + "\n")
                continue
            pick = int(hashlib.sha256(document["id"].encode()).hexdigest(), 16) % len(options)
            chosen = options[pick]
            meta = json.loads(chosen["meta"])
            evidence = min(int(meta["removed_start"]), len(chosen["positive"]) - 1)
            row = {
                "query": chosen["query"],
                "document": chosen["positive"],
                "doc_id": document["id"],
                "evidence_start": evidence,
                "title": document["title"],
            }
            records.write(json.dumps(row, sort_keys=True) + "\n")


def write_study_spec(out: Path) -> None:
    """The study spec: the tiny BERT × the four configurations of the build, two training steps
    each (paths relative to the output folder, where the commands run)."""
    spec = {
        "bases": ["fixtures/tiny-bert"],
        "configs": ["begin", "middle", "end", "uniform"],
        "data": "build/train",
        "tasks": ["task"],
        # no warm-up and a large rate, so that each step moves the tiny model's weights
        "training": {
            "max_steps": 2,
            "global_batch": 4,
            "logging_steps": 1,
            "warmup_ratio": 0.0,
            "lr": 0.001,
        },
        "bootstrap": 50,
        "seed": 3,
    }
    out.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")


# --------------------------------------------------------------------------- the cases


@dataclass
class Step:
    """One command (``argv`` after ``posbias``; ``{out}`` is the output folder) or one Python
    action that writes fixtures."""

    name: str
    case: str
    argv: list[str] | None = None
    action: Callable[[Path], None] | None = None
    outputs: list[str] = field(default_factory=list)


def steps() -> list[Step]:
    """Every step, in order; ``outputs`` are the folders/files (relative to ``--out``) the step
    writes, recorded under its case."""
    lw = ["--k", "4", "--max-queries", "6", "--passage-tokens", "16", "--n-resamples", "100"]
    lw += ["--seed", "5", "--dtype", "float32", "--device", "cpu", "--no-progress"]
    ev = ["--bootstrap", "200", "--seed", "7", "--no-progress", "--device", "cpu"]
    return [
        Step(
            "fixtures-models",
            "fixtures",
            action=build_tiny_models,
            outputs=["fixtures/tiny-bert", "fixtures/tiny-llama"],
        ),
        # 1. the data build
        Step(
            "build",
            "data",
            argv=["data", "build", "--corpus", "demo", "--limit", "1000", "--holdout", "0.1"]
            + ["--delta", "0.1", "--seed", str(SEED), "--out", "{out}/build", "--no-progress"],
            outputs=["build"],
        ),
        Step(
            "heldout-corpus",
            "data",
            argv=["data", "corpus", "--corpus", "{out}/build/work/heldout/documents.parquet"]
            + ["--work", "{out}/heldout", "--no-progress"],
            outputs=["heldout/corpus"],
        ),
        Step(
            "heldout-generate",
            "data",
            argv=["data", "generate", "--work", "{out}/heldout", "--seed", str(SEED)]
            + ["--no-progress"],
            outputs=["heldout/candidates"],
        ),
        # 2. evaluation
        Step(
            "fixtures-task-jsonl",
            "fixtures",
            action=lambda o: write_heldout_jsonl(
                o / "heldout",
                o / "fixtures" / "heldout-eval.jsonl",
                o / "fixtures" / "heldout-distractors.jsonl",
            ),
            outputs=["fixtures/heldout-eval.jsonl", "fixtures/heldout-distractors.jsonl"],
        ),
        Step(
            "benchmark-from-jsonl",
            "evaluate",
            argv=["benchmark", "build", "jsonl", "--input", "{out}/fixtures/heldout-eval.jsonl"]
            + ["--distractors", "{out}/fixtures/heldout-distractors.jsonl"]
            + ["--name", "HeldoutEvidence", "--out", "{out}/task"],
            outputs=["task"],
        ),
        Step(
            "benchmark-sample",
            "evaluate",
            argv=["benchmark", "subsample", "--task", "{out}/task", "--per-bucket", "3"]
            + ["--seed", "11", "--out", "{out}/task-sample"],
            outputs=["task-sample"],
        ),
        Step(
            "evaluate-bm25",
            "evaluate",
            argv=["evaluate", "--model", "bm25", "--task", "{out}/task"]
            + ["--out", "{out}/eval/bm25", "--plot", *ev],
            outputs=["eval/bm25"],
        ),
        Step(
            "evaluate-tiny-bert",
            "evaluate",
            argv=["evaluate", "--model", "{out}/fixtures/tiny-bert", "--task", "{out}/task"]
            + ["--out", "{out}/eval/tiny-bert", *ev],
            outputs=["eval/tiny-bert"],
        ),
        Step(
            "compare",
            "evaluate",
            argv=["compare", "{out}/eval/bm25", "{out}/eval/tiny-bert", "--n-resamples", "300"]
            + ["--seed", "7", "--out", "{out}/compare"],
            outputs=["compare"],
        ),
        Step(
            "leaderboard",
            "evaluate",
            argv=["leaderboard", "{out}/eval/bm25", "{out}/eval/tiny-bert"]
            + ["--n-resamples", "200", "--seed", "7", "--out", "{out}/leaderboard"],
            outputs=["leaderboard"],
        ),
        # 3. the study
        Step(
            "fixtures-study-spec",
            "fixtures",
            action=lambda o: write_study_spec(o / "fixtures" / "study.json"),
            outputs=["fixtures/study.json"],
        ),
        Step(
            "study-run",
            "study",
            argv=["study", "run", "{out}/fixtures/study.json", "--out", "{out}/study"]
            + ["--in-process"],
            outputs=["study"],
        ),
        Step("study-report", "study", argv=["study", "report", "{out}/study"], outputs=["study"]),
        # 4. the listwise side
        Step(
            "listwise-test-bm25",
            "listwise",
            argv=["listwise", "test", "--reranker", "bm25", "--task", "{out}/task-sample"]
            + ["--out", "{out}/listwise/bm25", *lw],
            outputs=["listwise/bm25"],
        ),
        Step(
            "listwise-test-tiny-llama",
            "listwise",
            argv=["listwise", "test", "--reranker", "{out}/fixtures/tiny-llama"]
            + ["--task", "{out}/task-sample", "--out", "{out}/listwise/tiny-llama", *lw],
            outputs=["listwise/tiny-llama"],
        ),
        Step(
            "listwise-compare",
            "listwise",
            argv=["listwise", "compare-tests", "{out}/listwise/tiny-llama", "{out}/listwise/bm25"]
            + ["--label-a", "tiny-llama", "--label-b", "bm25", "--n-resamples", "200"]
            + ["--seed", "5", "--out", "{out}/listwise/compare"],
            outputs=["listwise/compare"],
        ),
    ]


CASES = ("fixtures", "data", "evaluate", "study", "listwise")
MARKER = ".record_outputs"
"""File that marks ``--out`` as this script's (only such a folder is emptied)."""


def child_env(out: Path) -> dict[str, str]:
    """The environment of every command: offline, CPU only, single-threaded, seeded hashing,
    caches inside ``out``; ``PYTHONPATH`` is passed on (it picks the code that runs)."""
    env = dict(os.environ)
    cache = out / ".cache"
    env.update(
        {
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_DATASETS_CACHE": str(cache / "datasets"),
            "MTEB_CACHE": str(cache / "mteb"),
            "TRANSFORMERS_VERBOSITY": "error",
            "TOKENIZERS_PARALLELISM": "false",
            "CUDA_VISIBLE_DEVICES": "",
            "ACCELERATE_USE_CPU": "true",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0",
            "MPLBACKEND": "Agg",
            "TZ": "UTC",
            "WANDB_DISABLED": "true",
            "NO_COLOR": "1",
        }
    )
    return env


def cpu_seconds() -> float:
    """CPU time of this process and its finished children so far."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_step(step: Step, out: Path, env: dict[str, str], log: Path) -> tuple[float, str]:
    """Run one step; returns (wall seconds, standard output)."""
    start = time.monotonic()
    if step.action is not None:
        step.action(out)
        return time.monotonic() - start, ""
    assert step.argv is not None
    # paths relative to ``out`` (the working directory): what the outputs record of them, and
    # the fingerprints hashed over them, do not depend on where ``out`` is
    argv = [a.replace("{out}/", "") for a in step.argv]
    command = [sys.executable, "-m", "hf_posbias.cli", *argv]
    proc = subprocess.run(command, env=env, cwd=out, capture_output=True, text=True)
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{step.name}.stderr.log").write_text(proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.splitlines()[-20:])
        raise SystemExit(
            f"step {step.name} failed (exit {proc.returncode}): {' '.join(command)}\n{tail}"
        )
    return time.monotonic() - start, proc.stdout


def collect(out: Path, rel: str) -> list[Path]:
    target = out / rel
    if target.is_file():
        return [target]
    return sorted(p for p in target.rglob("*") if p.is_file())


def record(out: Path, selected: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the selected cases; returns the manifest and the timings (kept out of the manifest,
    so that two manifests of the same outputs are byte-identical files)."""
    norm = Normaliser(out)
    env = child_env(out)
    log = out / ".logs"
    files: dict[str, str] = {}
    cases: dict[str, list[str]] = {c: [] for c in CASES if c in selected}
    timings: dict[str, dict[str, float]] = {}
    commands: dict[str, list[str] | None] = {}
    plan = [s for s in steps() if s.case in selected or s.case == "fixtures"]
    for step in plan:
        print(f"[{step.case}] {step.name} …", flush=True)
        cpu = cpu_seconds()
        seconds, stdout = run_step(step, out, env, log)
        cpu = cpu_seconds() - cpu
        timings[step.name] = {"wall_s": round(seconds, 1), "cpu_s": round(cpu, 1)}
        commands[step.name] = None if step.argv is None else ["posbias", *step.argv]
        print(f"[{step.case}] {step.name}: {seconds:.1f} s wall, {cpu:.1f} s CPU", flush=True)
        if step.argv is not None:
            stdout_file = out / "stdout" / f"{step.name}.txt"
            stdout_file.parent.mkdir(parents=True, exist_ok=True)
            stdout_file.write_text(norm.volatile(norm.text(stdout)))
    for step in plan:
        paths = [p for rel in step.outputs for p in collect(out, rel)]
        if step.argv is not None:
            paths.append(out / "stdout" / f"{step.name}.txt")
        for path in paths:
            rel = norm.relative_name(path.relative_to(out).as_posix())
            if rel in files:
                continue
            files[rel] = digest_file(path, norm)
            if step.case in cases:
                cases[step.case].append(rel)
    return {
        "about": "outputs of fixed cases, hashed (scripts/record_outputs.py)",
        "files": dict(sorted(files.items())),
        "cases": {c: sorted(v) for c, v in cases.items()},
        "commands": commands,
        "normalisation": {
            "dropped_keys": sorted(DROPPED_KEYS),
            "dropped_key_suffixes": list(DROPPED_KEY_SUFFIXES),
            "dropped_keys_seen": dict(sorted(norm.dropped.items())),
            "text_patterns": [p for p, _ in VOLATILE_TEXT_PATTERNS],
        },
    }, timings


def compare(before: Path, after: Path) -> int:
    """Print the files whose hashes differ between two manifests; 0 when none does."""
    a = json.loads(before.read_text())["files"]
    b = json.loads(after.read_text())["files"]
    differ = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    for label, names in (("differs", differ), ("only before", only_a), ("only after", only_b)):
        for name in names:
            print(f"{label}: {name}")
    same = len(set(a) & set(b)) - len(differ)
    print(f"{same} identical, {len(differ)} differ, {len(only_a)} + {len(only_b)} unmatched")
    return 1 if differ or only_a or only_b else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, help="work folder (emptied first; outputs of an earlier run only)"
    )
    parser.add_argument("--manifest", type=Path, help="JSON manifest to write")
    parser.add_argument(
        "--cases", nargs="+", choices=CASES[1:], default=list(CASES[1:]), help="cases to run"
    )
    parser.add_argument(
        "--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="compare manifests"
    )
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None or args.manifest is None:
        parser.error("--out and --manifest are required (or --compare BEFORE AFTER)")
    out = args.out.resolve()
    if out.exists():
        if any(out.iterdir()) and not (out / MARKER).exists():
            parser.error(
                f"{out} is not empty and was not written by this script: pick another --out"
            )
        shutil.rmtree(out)
    (out / "fixtures").mkdir(parents=True)
    (out / MARKER).write_text("written by scripts/record_outputs.py, emptied by each run\n")
    os.environ.update(child_env(out))  # the fixtures are built here, offline, single-threaded
    root = package_root()
    print(f"code under test: {root}  (python: {sys.executable})", flush=True)
    start = time.monotonic()
    selected = set(args.cases) | {"fixtures", "data"}  # every case reads the build
    if "study" in selected or "listwise" in selected:
        selected.add("evaluate")  # the task they read
    manifest, timings = record(out, selected)
    timings["total"] = {
        "wall_s": round(time.monotonic() - start, 1),
        "cpu_s": round(cpu_seconds(), 1),
    }
    (out / ".logs" / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    args.manifest.parent.mkdir(parents=True, exist_ok=True)
    args.manifest.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    for case, names in manifest["cases"].items():
        print(f"\n{case}: {len(names)} file(s)")
        for name in names:
            print(f"  {manifest['files'][name][:16]}  {name}")
    total = timings["total"]
    print(
        f"\nrecorded {len(manifest['files'])} file(s) in {total['wall_s']} s "
        f"({total['cpu_s']} s CPU; per step: {out / '.logs' / 'timings.json'})"
    )
    print(f"manifest: {args.manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
