"""Throughput of the verification panel vs a naive per-candidate ``CrossEncoder.predict`` loop.

Three timed runs on the same candidates, each with a cold member (nothing tokenized yet): the
panel (:meth:`RerankerPanel.score`), a benchmark build's Stage 2 pre-label path
(:func:`~hf_posbias.construction.prelabel.stage2_prelabel`: every question against the
three segments of its document, scored as single pairs), and the naive loop. Each must give the
naive loop's scores within ``--atol`` (absolute, on sigmoid scores); the largest difference is
printed.

Builds a tiny random cross-encoder (``hf_posbias.testing``) and candidates from real Wikipedia
paragraphs (``$POSBIAS_SHARED_DATA/wikipedia_enwiki_wikiextractor``) when present, else synthetic
text. Each document gets one candidate per position, and all three share the document's
segments; a fraction ``--repeat`` of documents get the same query for two positions (an LLM at
temperature 1 does return identical queries), which makes whole (query, segment) pairs repeat —
the case the panel's dedup removes. Both ways must give the same scores (``allclose``).

Run:
    .venv/bin/python benchmarks/verify_throughput.py --docs 200
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
WIKI = Path(os.environ.get("POSBIAS_SHARED_DATA", REPO.parent / "shared" / "data")) / (
    "wikipedia_enwiki_wikiextractor"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def load_texts(n_docs: int, seed: int) -> tuple[list[dict], str]:
    """Wikipedia paragraphs of 600–1,800 characters, or synthetic text when the data is absent."""
    if WIKI.is_dir():
        from hf_posbias.corpus.sources import read_wikiextractor

        records = []
        for article in read_wikiextractor(WIKI):
            for i, para in enumerate(p.strip() for p in article["text"].split("\n")):
                if 600 <= len(para) < 1800:
                    records.append({"id": f"{article['id']}-{i}", "text": para})
        return records[:n_docs], f"Wikipedia paragraphs from {WIKI}"
    rng = random.Random(seed)
    words = ["retrieval", "position", "bias", "model", "query", "document", "segment", "answer"]
    records = []
    for i in range(n_docs):
        sentences = [
            " ".join(rng.choice(words) for _ in range(rng.randint(8, 20))).capitalize() + "."
            for _ in range(rng.randint(6, 14))
        ]
        records.append({"id": f"syn-{i}", "text": " ".join(sentences)})
    return records, "synthetic text (shared data absent)"


def build_candidates(records: list[dict], repeat: float, seed: int) -> list[dict]:
    """One candidate per (document, position); the query is the target segment's longest
    sentence, and for a ``repeat`` fraction of documents the middle reuses the begin query."""
    from hf_posbias.corpus.documents import prepare_documents
    from hf_posbias.positions import POSITIONS

    docs, _ = prepare_documents(records)
    rng = random.Random(seed)
    rows = []
    for doc in docs:
        segments = [s.text for s in doc.segments]
        queries = [max(_SENTENCE.split(seg.strip()), key=len) for seg in segments]
        if rng.random() < repeat:
            queries[1] = queries[0]
        for pos, query in zip(POSITIONS, queries):
            rows.append(
                {
                    "candidate_id": f"{doc.id}::{pos}",
                    "doc_id": doc.id,
                    "length_bin": doc.length_bin,
                    "target_position": pos,
                    "query": query,
                    "segments": segments,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300, help="documents (3 candidates each)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeat", type=float, default=0.1, help="documents with a repeated query")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--atol", type=float, default=1e-6, help="largest score difference")
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from hf_posbias.construction.prelabel import stage2_prelabel
    from hf_posbias.testing import build_tiny_cross_encoder
    from hf_posbias.verification.members import CrossEncoderMember
    from hf_posbias.verification.panel import RerankerPanel

    torch.manual_seed(args.seed)
    records, source = load_texts(args.docs, args.seed)
    candidates = build_candidates(records, args.repeat, args.seed)
    n_pairs = 3 * len(candidates)
    path = build_tiny_cross_encoder(tempfile.mkdtemp(prefix="tiny-ce-"), seed=args.seed)

    def cold_panel() -> RerankerPanel:
        member = CrossEncoderMember(path, batch_size=args.batch_size)
        member.load()
        return RerankerPanel([member])

    panel, stage2_panel = cold_panel(), cold_panel()
    model = panel.members[0].load()
    # Warm-up (first forward allocates), then the three timed runs.
    model.predict([(candidates[0]["query"], candidates[0]["segments"][0])])

    start = time.perf_counter()
    result = panel.score(candidates, progress=False)
    panel_s = time.perf_counter() - start

    start = time.perf_counter()
    _, stage2 = stage2_prelabel(
        stage2_panel,
        [c["query"] for c in candidates],
        [c["segments"] for c in candidates],
        threshold=0.5,
    )
    stage2_s = time.perf_counter() - start

    start = time.perf_counter()
    naive = np.array(
        [
            model.predict([(c["query"], s) for s in c["segments"]], show_progress_bar=False)
            for c in candidates
        ]
    )
    naive_s = time.perf_counter() - start

    panel_diff = float(np.abs(result.normalized[:, 0, :] - naive).max())
    stage2_diff = float(np.abs(stage2[0].reshape(naive.shape) - naive).max())
    same = max(panel_diff, stage2_diff) <= args.atol
    print(f"source: {source}")
    print(
        f"candidates: {len(candidates)} ({len(candidates) // 3} documents x 3 positions), "
        f"pairs: {n_pairs}, unique pairs scored by the panel: {result.pairs_scored}"
    )
    print(f"device: cpu, threads: {torch.get_num_threads()}, batch size: {args.batch_size}")
    naive_rate = n_pairs / naive_s
    for label, seconds in (
        ("panel (dedup, texts tokenized once, length-bucketed)", panel_s),
        ("Stage 2 pre-label path (stage2_prelabel)", stage2_s),
        ("naive per-candidate predict loop", naive_s),
    ):
        rate = n_pairs / seconds
        print(f"{label:<54} {seconds:6.2f} s {rate:7,.0f} pairs/s {rate / naive_rate:5.2f}x")
    print(
        f"speed-up: panel {naive_s / panel_s:.2f}x, Stage 2 {naive_s / stage2_s:.2f}x; "
        f"max |score - naive|: panel {panel_diff:.1e}, Stage 2 {stage2_diff:.1e} "
        f"(atol {args.atol:g}): {'same' if same else 'DIFFERENT'}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
