"""Encode-once benchmark: plain per-subset mteb evaluation vs the embedding cache.

Same model (all-MiniLM-L6-v2 if installed, else a tiny random SentenceTransformer), same
position task (3 buckets over one shared corpus of real Wikipedia passages from ../shared/data,
or synthetic text when that folder is absent). mteb encodes the corpus once per ``hf_subset``;
:class:`hf_posbias.evaluation.cache.CachedEncoder` encodes it once per model. Prints texts
encoded and wall time of both runs, their ratios, and checks that the scores are identical.

Run:
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/eval_encode_once.py --max-docs 600
"""

from __future__ import annotations

import argparse
import os
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hf_posbias.corpus import segment_spans  # noqa: E402
from hf_posbias.evaluation.taskdata import PositionTaskData, TaskInfo  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
THIRDS = ["begin", "middle", "end"]
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")


class CountingEncoder:
    """Forwards to an mteb encoder and counts the texts it is asked to encode (no cache)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.mteb_model_meta = model.mteb_model_meta
        self.texts_encoded = 0
        self.by_type: dict[str, int] = {}

    def encode(self, inputs: Any, *, prompt_type: Any = None, **kwargs: Any) -> Any:
        n = len(inputs.dataset)
        self.texts_encoded += n
        kind = str(getattr(prompt_type, "value", prompt_type))
        self.by_type[kind] = self.by_type.get(kind, 0) + n
        return self.model.encode(inputs, prompt_type=prompt_type, **kwargs)

    def similarity(self, a: Any, b: Any) -> Any:
        return self.model.similarity(a, b)

    def similarity_pairwise(self, a: Any, b: Any) -> Any:
        return self.model.similarity_pairwise(a, b)


def _passages(max_docs: int, chars: int, seed: int) -> list[str]:
    if SHARED.is_dir():
        from hf_posbias.corpus import read_wikiextractor

        out = []
        for article in read_wikiextractor(SHARED / "wikipedia_enwiki_wikiextractor"):
            text = " ".join(article["text"].split())
            start = 0
            while start + chars // 2 < len(text) and len(out) < max_docs:
                end = text.rfind(" ", start, start + chars)
                end = end if end > start else min(len(text), start + chars)
                out.append(text[start:end].strip())
                start = end + 1
            if len(out) >= max_docs:
                break
        return [p for p in out if len(p) >= chars // 2]
    rng = random.Random(seed)  # synthetic fallback: sentences of random words
    words = [f"w{i}" for i in range(3000)]
    return [
        " ".join(" ".join(rng.choice(words) for _ in range(12)) + "." for _ in range(chars // 80))
        for _ in range(max_docs)
    ]


def build_task(folder: Path, max_docs: int, queries_per_bucket: int, seed: int) -> Path:
    """A 3-bucket task: queries are sentences from one third of a passage (seeded choice)."""
    rng = random.Random(seed)
    passages = _passages(max_docs, 1000, seed)
    corpus = [{"id": f"d{i}", "title": "", "text": t} for i, t in enumerate(passages)]
    queries, qrels = [], []
    order = list(range(len(passages)))
    rng.shuffle(order)
    for i in order:
        if len(queries) >= 3 * queries_per_bucket:
            break
        bucket = THIRDS[len(queries) % 3]
        text = passages[i]
        lo, hi = segment_spans(text, 3)[THIRDS.index(bucket)]
        match = next((m for m in _SENTENCE.finditer(text, lo) if m.end() <= hi), None)
        if match is None or len(match.group().strip()) < 20:
            continue
        qid = f"q{len(queries)}"
        queries.append(
            {
                "id": qid,
                "text": match.group().strip(),
                "bucket": bucket,
                "evidence_start": match.start(),
                "evidence_end": match.end(),
                "doc_length": len(text),
            }
        )
        qrels.append({"query_id": qid, "doc_id": f"d{i}", "score": 1})
    info = TaskInfo(name="EncodeOnceBench", description="benchmark", buckets=THIRDS)
    return PositionTaskData(info=info, corpus=corpus, queries=queries, qrels=qrels).save(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-docs", type=int, default=600)
    parser.add_argument("--queries-per-bucket", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    from mteb.models import SentenceTransformerEncoderWrapper

    from hf_posbias.evaluation.cache import CachedEncoder, unique_model_meta
    from hf_posbias.evaluation.runner import LoadedModel, run_task, scores_by_subset
    from hf_posbias.evaluation.tasks import get_task
    from hf_posbias.modeling import load_sentence_transformer, packaged_model_path

    tmp = Path(tempfile.mkdtemp(prefix="encode-once-"))
    folder = build_task(tmp / "task", args.max_docs, args.queries_per_bucket, args.seed)
    data = PositionTaskData.load(folder)
    model_path = packaged_model_path("all-MiniLM-L6-v2")
    if model_path is None:
        from hf_posbias.testing import build_tiny_sentence_transformer

        model_path = build_tiny_sentence_transformer(tmp / "tiny-st")
    st = load_sentence_transformer(model_path)
    print(f"model: {model_path}")
    print(
        f"task: {len(data.corpus)} documents ({'Wikipedia' if SHARED.is_dir() else 'synthetic'})"
        f", queries per bucket {data.bucket_counts()}"
    )

    results = {}
    for label in ("plain", "cached"):
        wrapper = SentenceTransformerEncoderWrapper(st)
        meta = unique_model_meta(wrapper.mteb_model_meta, f"bench/{label}", "bench")
        wrapper.mteb_model_meta = meta
        model = CountingEncoder(wrapper) if label == "plain" else CachedEncoder(wrapper, meta=meta)
        loaded = LoadedModel(spec=label, model=model, kind="bi-encoder", name=label, revision="b")
        task = get_task(folder)
        start = time.perf_counter()
        result = run_task(loaded, task, batch_size=args.batch_size, results_dir=None)
        elapsed = time.perf_counter() - start
        scores = {b: s["ndcg_at_10"] for b, s in scores_by_subset(result).items()}
        encoded = model.texts_encoded if label == "plain" else model.stats.texts_encoded
        by_type = model.by_type if label == "plain" else model.stats.encoded_by_type
        results[label] = (encoded, elapsed, scores)
        print(
            f"{label:>6}: texts encoded {encoded:,} {by_type}, wall {elapsed:.1f} s, "
            f"nDCG@10 {scores}"
        )

    (p_n, p_t, p_s), (c_n, c_t, c_s) = results["plain"], results["cached"]
    print(f"ratio plain/cached: texts encoded {p_n / c_n:.2f}x, wall time {p_t / c_t:.2f}x")
    identical = all(abs(p_s[b] - c_s[b]) < 1e-9 for b in p_s) and p_s.keys() == c_s.keys()
    print(f"scores identical: {identical}")
    assert identical, (p_s, c_s)


if __name__ == "__main__":
    main()
