"""Encode-once benchmark: one ``hf_subset`` per bucket (the old layout) vs one subset per task.

Same model (all-MiniLM-L6-v2 if installed, else a tiny random SentenceTransformer), same
position task (3 buckets over one shared corpus of real Wikipedia passages from the real-data
folder ``$POSBIAS_SHARED_DATA``, or synthetic text when that folder is absent), both measured
in the same run:

- ``per-bucket``: the layout hf-posbias used before — one mteb subset per bucket over the same
  corpus; mteb encodes the corpus once per subset (no cache in front of the model);
- ``one-subset``: :class:`hf_posbias.tasks.mteb_tasks.PositionRetrievalTask` as it is now —
  every
  query in one subset, per-bucket scores from ``task_specific_scores``; mteb encodes the corpus
  once by itself.

Prints texts encoded and wall time of both, their ratios, and checks that the per-bucket nDCG@10
agree (mteb rounds its subset scores to 5 decimals).

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

from hf_posbias.corpus.documents import segment_spans
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo  # noqa: E402

SHARED = Path(
    os.environ.get(
        "POSBIAS_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
)
THIRDS = ["begin", "middle", "end"]
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")


def per_bucket_task(folder: Path) -> Any:
    """The old layout: one mteb subset per bucket, every subset over the same corpus."""
    from datasets import Dataset

    from hf_posbias.tasks.mteb_tasks import PositionRetrievalTask

    class PerBucketSubsets(PositionRetrievalTask):
        def __init__(self, path: Path) -> None:
            super().__init__(path)
            self.metadata = self.metadata.model_copy(
                update={"eval_langs": {b: ["eng-Latn"] for b in THIRDS}}
            )
            self.hf_subsets = list(THIRDS)

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            if self.data_loaded:
                return
            super().load_data()
            whole = next(iter(self.dataset.values()))["test"]
            data = self.task_data
            self.dataset = {}
            for bucket in THIRDS:
                queries = [q for q in data.queries if q["bucket"] == bucket]
                qids = [str(q["id"]) for q in queries]
                self.dataset[bucket] = {
                    "test": {
                        "corpus": whole["corpus"],
                        "queries": Dataset.from_dict(
                            {"id": qids, "text": [str(q["text"]) for q in queries]}
                        ),
                        "relevant_docs": {q: whole["relevant_docs"][q] for q in qids},
                        "top_ranked": None,
                    }
                }

        def task_specific_scores(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return {}

    return PerBucketSubsets(folder)


def _passages(max_docs: int, chars: int, seed: int) -> list[str]:
    if SHARED.is_dir():
        from hf_posbias.corpus.sources import read_wikiextractor

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-docs", type=int, default=600)
    parser.add_argument("--queries-per-bucket", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)

    from mteb.models import SentenceTransformerEncoderWrapper

    from hf_posbias.evaluation.runs.mteb_models import CountingEncoder, MtebModel, unique_model_meta
    from hf_posbias.evaluation.runs.runner import run_task, scores_by_subset
    from hf_posbias.modeling.loaders import load_sentence_transformer
    from hf_posbias.modeling.resolve import packaged_model_path
    from hf_posbias.tasks.mteb_tasks import get_task

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
    for label in ("per-bucket", "one-subset"):
        wrapper = SentenceTransformerEncoderWrapper(st)
        meta = unique_model_meta(wrapper.mteb_model_meta, f"bench/{label}", "bench")
        wrapper.mteb_model_meta = meta
        model = CountingEncoder(wrapper, meta=meta)
        loaded = MtebModel(spec=label, model=model, kind="bi-encoder", name=label, revision="b")
        task = per_bucket_task(folder) if label == "per-bucket" else get_task(folder)
        start = time.perf_counter()
        result = run_task(loaded, task, batch_size=args.batch_size, results_dir=None)
        elapsed = time.perf_counter() - start
        if label == "per-bucket":
            scores = {b: s["ndcg_at_10"] for b, s in scores_by_subset(result).items()}
        else:
            [entry] = scores_by_subset(result).values()
            scores = dict(entry["position"]["ndcg_at_10"])
        results[label] = (model.stats.texts_encoded, elapsed, scores)
        print(
            f"{label:>10}: texts encoded {model.stats.texts_encoded:,} "
            f"{model.stats.encoded_by_type}, wall {elapsed:.1f} s, nDCG@10 "
            + ", ".join(f"{b}={v:.5f}" for b, v in scores.items())
        )

    (p_n, p_t, p_s), (o_n, o_t, o_s) = results["per-bucket"], results["one-subset"]
    print(
        f"ratio per-bucket/one-subset: texts encoded {p_n / o_n:.2f}x, wall time {p_t / o_t:.2f}x"
    )
    agree = p_s.keys() == o_s.keys() and all(abs(p_s[b] - o_s[b]) <= 1e-5 for b in p_s)
    print(f"per-bucket nDCG@10 agree (to mteb's 5 rounded decimals): {agree}")
    assert agree, (p_s, o_s)


if __name__ == "__main__":
    main()
