"""A tiny study: training data with the four configurations and a thirds task on the same text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

WORDS = [
    "fox",
    "dog",
    "model",
    "query",
    "document",
    "vector",
    "science",
    "history",
    "music",
    "sport",
    "river",
    "city",
    "protein",
    "cell",
    "gene",
    "drug",
    "climate",
    "claim",
    "story",
    "answer",
    "evidence",
    "number",
    "year",
    "island",
    "bridge",
    "garden",
]
POSITIONS = ("begin", "middle", "end")


def sentence(seed: int, n: int = 6) -> str:
    """A deterministic pseudo-sentence."""
    return " ".join(WORDS[(seed * 7 + i * 5) % len(WORDS)] for i in range(n)).capitalize() + "."


def document(d: int) -> list[str]:
    """Document ``d`` as nine sentences (three per third)."""
    return [sentence(d * 11 + k) for k in range(9)]


def write_train_data(folder: Path, n_docs: int = 12) -> str:
    """A `posbias build`-like training folder with configs begin, middle, end, uniform."""
    from hf_posbias.publish.repo import front_matter_yaml, write_dataset_repo

    rows = []
    for d in range(n_docs):
        sentences = document(d)
        for k, position in enumerate(POSITIONS):
            rows.append(
                {
                    "query": sentences[3 * k + 1],
                    "positive": " ".join(sentences),
                    "doc_id": f"doc{d}",
                    "length_bin": "0-1k",
                    "target_position": position,
                }
            )
    configs = {p: [r for r in rows if r["target_position"] == p] for p in POSITIONS}
    configs["uniform"] = rows
    card = f"---\n{front_matter_yaml(list(configs))}---\n\ntest training data\n"
    return str(write_dataset_repo(folder, configs, card))


def write_task(folder: Path, n_docs: int = 18, name: str = "TinyStudyTask") -> str:
    """A thirds task: each query is a sentence of one third of its document (kept in it)."""
    from hf_posbias.evaluation.builders.jsonl import build_from_records

    records = []
    for d in range(100, 100 + n_docs):
        sentences = document(d)
        k = d % 3
        text = " ".join(sentences)
        target = sentences[3 * k + 1]
        records.append({"query": target, "document": text, "evidence_start": text.index(target)})
    return str(build_from_records(records, name=name).save(folder))


@pytest.fixture(scope="session")
def study_inputs(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> dict:
    """Training data, a task, a tiny random BERT base and a spec file of the 2 × 4 study."""
    from hf_posbias.testing import build_tiny_checkpoint

    root = tmp_path_factory.mktemp("study-inputs")
    data = write_train_data(root / "train")
    task = write_task(root / "task")
    tiny = build_tiny_checkpoint("bert", root / "tiny-bert", extra_text=" ".join(WORDS))
    spec = {
        "bases": [tiny, "all-MiniLM-L6-v2"],  # the packaged model (minilm_path: installed)
        "configs": ["begin", "middle", "end", "uniform"],
        "data": data,
        "tasks": [task],
        "training": {"max_steps": 1, "global_batch": 4, "logging_steps": 1},
        "bootstrap": 50,
        "seed": 3,
    }
    spec_path = root / "study.yaml"
    spec_path.write_text(json.dumps(spec))  # JSON is YAML
    json_path = root / "study.json"
    json_path.write_text(json.dumps(spec))
    return {"root": root, "data": data, "task": task, "tiny": tiny, "spec": str(spec_path),
            "spec_json": str(json_path), "minilm": "all-MiniLM-L6-v2"}  # fmt: skip
