"""A position task from the documents a build held out: ``posbias benchmark build heldout``.

``posbias data build --holdout 0.1 --out data`` holds a stable share of the corpus's documents
out of the training sets and keeps them in the ``heldout`` folder of its work folder. This
builder turns them into an evidence-position task, offline and with no model: one Inverse Cloze
Task sentence is removed from each document and becomes its query, the evidence position is the
character offset where it was, bucketed into thirds. The corpus is every held-out document, so
each query competes against all of them. ``posbias demo`` evaluates on this task.

Example:
    >>> from hf_posbias.tasks.builders.heldout import HeldoutSettings
    >>> HeldoutSettings(input="data", out="tasks/heldout").builder_kwargs()
    {'input': 'data', 'name': 'Heldout-Evidence', 'seed': 42}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.corpus.documents import load_documents
from hf_posbias.corpus.sources import HELDOUT, built_documents
from hf_posbias.errors import InputError
from hf_posbias.setting_values import DEFAULT_SEED
from hf_posbias.settings import flag_name, setting, shared_setting
from hf_posbias.tasks.benchmark_registry import Benchmark
from hf_posbias.tasks.builders.common import BuilderOutput, settings_build
from hf_posbias.tasks.taskdata import PositionTaskData

DEFAULT_NAME = "Heldout-Evidence"


def build_heldout(
    input: str | Path, name: str = DEFAULT_NAME, seed: int = DEFAULT_SEED
) -> PositionTaskData:
    """The evidence-position task of a build's held-out documents (``input``: the build's
    ``--out`` folder or its work folder); one query per document, whose third rotates by a
    stable hash of the document id and ``seed``."""
    from hf_posbias.generation.base import GenerationFailure, stable_seed
    from hf_posbias.generation.ict import ICTGenerator
    from hf_posbias.tasks.builders.jsonl import build_from_records

    folder, source = built_documents(input, HELDOUT)
    documents = load_documents(folder)
    if not documents:
        raise InputError(f"{folder} holds no document: build with {flag_name('holdout')} above 0")
    generator = ICTGenerator(seed=seed)
    records: list[dict[str, Any]] = []
    distractors: list[dict[str, Any]] = []
    for document in documents:
        try:
            candidates = generator.generate(document).candidates
        except GenerationFailure:  # no usable sentence: the document still competes
            distractors.append({"id": document.id, "text": document.text, "title": document.title})
            continue
        # One query per document, so the corpus never holds a second copy of the document that
        # still contains the query sentence; positions rotate by a stable hash of the id.
        candidate = candidates[stable_seed("heldout", seed, document.id) % len(candidates)]
        meta = json.loads(candidate.meta)
        # A sentence removed from the very end leaves its position at len(positive): the
        # evidence sat at the last character.
        evidence_start = min(int(meta["removed_start"]), len(candidate.positive) - 1)
        records.append(
            {
                "query": candidate.query,
                "document": candidate.positive,
                "doc_id": document.id,
                "evidence_start": evidence_start,
                "title": document.title,
            }
        )
    return build_from_records(
        records,
        buckets="thirds",
        name=name,
        description=(
            f"Held-out documents of {source.name}: an ICT query sentence is removed from each "
            "document; the evidence position is where it was (thirds)."
        ),
        distractors=distractors,
        source=source.name,
        license=source.license,
    )


@dataclass(kw_only=True)
class HeldoutSettings(BuilderOutput):
    """``posbias benchmark build heldout``."""

    input: str = setting("a posbias data build output folder (or its work folder)")
    name: str = shared_setting("name", default=DEFAULT_NAME)
    seed: int = shared_setting("seed")


BENCHMARK = Benchmark(
    name="heldout",
    help="the held-out documents of posbias data build → evidence-position task (offline)",
    cards=(),
    settings=HeldoutSettings,
    build=settings_build(build_heldout),
    order=95,
)
