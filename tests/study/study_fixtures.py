"""Helpers of the study tests: training data with the four configurations and a thirds task on
the same text (imported by tests/study/conftest.py and the tests)."""

from __future__ import annotations

import re
from pathlib import Path

VOCABULARY = (
    "lantern orchard harbor glacier meadow canyon violin tractor pepper saddle comet marble "
    "falcon quarry velvet anchor thistle beacon cobalt ferry walnut prairie ember summit"
)
WORDS = re.findall(r"[a-z]+", VOCABULARY)
POSITIONS = ("begin", "middle", "end")


def sentence(seed: int, n: int = 6) -> str:
    """A deterministic pseudo-sentence."""
    return " ".join(WORDS[(seed * 7 + i * 5) % len(WORDS)] for i in range(n)).capitalize() + "."


def document(d: int) -> list[str]:
    """Document ``d`` as nine sentences (three per third)."""
    return [sentence(d * 11 + k) for k in range(9)]


def write_train_data(folder: Path, n_docs: int = 12) -> str:
    """A `posbias data build`-like training folder with configs begin, middle, end, uniform."""
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


def write_task(
    folder: Path, n_docs: int = 18, name: str = "TinyStudyTask", spans: bool = False
) -> str:
    """A thirds task: each query is a sentence of one third of its document (kept in it);
    ``spans``: its evidence is a character span (start and end: mirror reversal needs both)."""
    from hf_posbias.tasks.builders.jsonl import build_from_records

    records = []
    for d in range(100, 100 + n_docs):
        sentences = document(d)
        k = d % 3
        text = " ".join(sentences)
        target = sentences[3 * k + 1]
        start = text.index(target)
        record = {"query": target, "document": text, "evidence_start": start}
        records.append({**record, "evidence_end": start + len(target)} if spans else record)
    return str(build_from_records(records, name=name).save(folder))


def files_with_mtimes(folder: Path) -> dict[str, float]:
    """Relative path → mtime of every file below ``folder`` (mteb's cache left out)."""
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file() and "mteb-results" not in p.parts
    }
