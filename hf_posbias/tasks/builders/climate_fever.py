"""Climate-FEVER evidence-position subset.

Source: the official release ``climate-fever.jsonl`` — one claim per line with ``claim_id``,
``claim``, ``claim_label`` and five ``evidences`` ``{evidence_id: "Article title:sentence_idx",
evidence_label, article, evidence, entropy, votes}``.

The release does **not** ship the articles' full text, so the evidence position is found in one
of two ways:

* **exact** — with a BEIR-format corpus (``corpus.jsonl``: ``_id``, ``title``, ``text`` of the
  Wikipedia articles, e.g. BEIR's ``climate-fever`` corpus), each evidence sentence is located in
  its article's text (exact match, then whitespace-insensitive); the corpus is the whole file.
* **reconstructed (approximation)** — without it, each article is rebuilt as the ordered
  (by ``sentence_idx``) distinct sentences of it that appear anywhere in the release, joined by one
  space; the relative position is the evidence's character offset within that reconstruction.
  This keeps sentence *order* but not the true distance between sentences (the unseen sentences
  are missing), so positions are an approximation; ``task.json`` ``extra`` says so. The corpus is
  every reconstructed article (1,344 in the release).

Queries are claims with at least one evidence labelled as in ``labels`` (default ``SUPPORTS`` and
``REFUTES``); the gold documents are the articles of those evidences; the position is that of the
first such evidence in the listed order.

Example:
    >>> from hf_posbias.tasks.builders.climate_fever import split_evidence_id
    >>> split_evidence_id("Global warming: causes:14")
    ('Global warming: causes', 14)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias import citations
from hf_posbias.errors import InputError
from hf_posbias.rows.readers import iter_jsonl_objects
from hf_posbias.settings import setting
from hf_posbias.tasks.benchmark_registry import Benchmark
from hf_posbias.tasks.bucketing import Anchor, IntervalBuckets
from hf_posbias.tasks.builders.common import (
    BuilderOutput,
    RelativeBuckets,
    TaskAssembler,
    evidence_card,
    join_sentences,
    locate,
    require_fields,
    settings_build,
    split_labels,
)
from hf_posbias.tasks.taskdata import PositionTaskData

CARD = evidence_card(
    name="ClimateFEVER-Evidence",
    class_name="ClimateFEVEREvidence",
    description=(
        "Climate-FEVER claims retrieved from the Wikipedia articles of their evidence "
        "sentences; queries are bucketed by the relative position of the evidence sentence."
    ),
    reference="https://github.com/tdiggelm/climate-fever-dataset",
    citation=citations.CLIMATE_FEVER,
    # The authors state no licence; the evidence sentences are Wikipedia (CC BY-SA).
    license="not specified",
    date=("2020-01-01", "2020-12-01"),
    adapted_from=("ClimateFEVER",),
)

RECONSTRUCTION_NOTE = (
    "approximation: the release does not ship article texts; each article is rebuilt from the "
    "distinct sentences of it that appear in the release, ordered by sentence index and joined "
    "by one space; relative position = character offset of the evidence in that reconstruction"
)


def split_evidence_id(evidence_id: str) -> tuple[str, int]:
    """``"Title:idx"`` → ``(title, idx)``; titles may themselves contain colons."""
    title, sep, idx = str(evidence_id).rpartition(":")
    if not sep or not idx.strip().lstrip("-").isdigit():
        raise InputError(f"evidence_id {evidence_id!r} is not 'Article title:sentence_idx'")
    return title, int(idx)


def build_climate_fever(
    path: str | Path,
    corpus: str | Path | None = None,
    labels: Sequence[str] = ("SUPPORTS", "REFUTES"),
    buckets: str | IntervalBuckets = "thirds",
    anchor: Anchor = "start",
    name: str = CARD.name,
) -> PositionTaskData:
    """Build the Climate-FEVER evidence-position task.

    Args:
        path: ``climate-fever.jsonl`` of the official release.
        corpus: optional BEIR ``corpus.jsonl`` with the articles' full text (exact positions).
        labels: evidence labels that make an evidence count (``NOT_ENOUGH_INFO`` too if wanted).
        buckets: bucketing rule (default thirds).
        anchor: ``start`` or ``center`` of the evidence sentence.
        name: task name.

    Example:
        >>> data = build_climate_fever("climate-fever.jsonl")
        ... # doctest: +SKIP
    """
    wanted = {str(label).upper() for label in labels}
    if not wanted:
        raise InputError("at least one evidence label is needed")
    claims: list[tuple[str, dict[str, Any]]] = []
    for where, obj in iter_jsonl_objects(path):
        require_fields(obj, ("claim_id", "claim", "evidences"), where)
        if not isinstance(obj["evidences"], list):
            raise InputError(f"{where}: 'evidences' must be a list")
        for ev in obj["evidences"]:
            if not isinstance(ev, dict) or not {"evidence_id", "evidence"} <= set(ev):
                raise InputError(f"{where}: each evidence needs 'evidence_id' and 'evidence'")
        claims.append((where, obj))
    asm = TaskAssembler(buckets, anchor=anchor, source=str(path))
    asm.report.read = len(claims)

    # (article, sentence_idx) -> (start, end) in that article's text
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    if corpus is None:
        sentences: dict[str, dict[int, str]] = {}
        for _, obj in claims:
            for ev in obj["evidences"]:
                title, idx = split_evidence_id(ev["evidence_id"])
                known = sentences.setdefault(title, {})
                if idx in known and known[idx] != ev["evidence"]:
                    asm.report.count_note("conflicting_sentence_texts_kept_first")
                known.setdefault(idx, ev["evidence"])
        for title, by_idx in sentences.items():
            order = sorted(by_idx)
            text, offsets = join_sentences([by_idx[idx] for idx in order])
            spans.update({(title, idx): span for idx, span in zip(order, offsets)})
            asm.add_document(title, text, title)
        mode = "reconstructed"
    else:
        from hf_posbias.corpus.sources import read_jsonl

        for record in read_jsonl(corpus, id_field="_id", text_field="text"):
            asm.add_document(str(record["id"]), record["text"], record.get("title") or "")
        mode = "exact"

    asm.report.note("claims_whose_evidences_span_several_buckets", 0)
    for _, obj in claims:
        chosen = [
            ev for ev in obj["evidences"] if str(ev.get("evidence_label", "")).upper() in wanted
        ]
        if not chosen:
            asm.report.drop(f"claim without {'/'.join(sorted(wanted))} evidence")
            continue
        located: list[tuple[str, int, int]] = []
        for ev in chosen:
            title, idx = split_evidence_id(ev["evidence_id"])
            if not asm.has_document(title):
                asm.report.drop("evidence: article not in corpus")
                continue
            if mode == "reconstructed":
                start, end = spans[(title, idx)]
            else:
                span = locate(asm.document(title)["text"], ev["evidence"])
                if span is None:
                    asm.report.drop("evidence: sentence not found in article text")
                    continue
                start, end = span
            located.append((title, start, end))
        if not located:
            asm.report.drop("claim: no evidence could be located")
            continue
        asm.add_located_query(
            str(obj["claim_id"]),
            str(obj["claim"]),
            located,
            "claims_whose_evidences_span_several_buckets",
        )
    info = CARD.task_info(
        name=name,
        description=(
            "Climate-FEVER claims with "
            + "/".join(sorted(wanted))
            + " Wikipedia evidence, bucketed by the relative character position of the first "
            "such evidence sentence in its article"
            + (" (article reconstructed from the release's sentences)." if mode != "exact" else ".")
        ),
        source="Climate-FEVER release climate-fever.jsonl"
        + (f" + corpus {Path(corpus).name}" if corpus is not None else ""),
    )
    return asm.finish(
        info,
        extra={
            "evidence_labels": sorted(wanted),
            "position_mode": mode,
            "position_note": RECONSTRUCTION_NOTE
            if mode == "reconstructed"
            else "exact: evidence located in the supplied article texts",
            "position": "first evidence with a selected label, in the listed order",
        },
    )


@dataclass(kw_only=True)
class ClimateFeverSettings(RelativeBuckets, BuilderOutput):
    """``posbias benchmark build climate-fever``."""

    input: str = setting("climate-fever.jsonl of the official release")
    corpus: str | None = setting(
        "BEIR corpus.jsonl with full article texts (exact positions); without it articles are "
        "reconstructed from the release's sentences (approximation)",
        default=None,
    )
    labels: str = setting("evidence labels to use", default="SUPPORTS,REFUTES")

    def builder_kwargs(self) -> dict[str, Any]:
        """``--labels A,B`` → ``labels=["A", "B"]``."""
        return {**super().builder_kwargs(), "labels": split_labels(self.labels)}


BENCHMARK = Benchmark(
    name="climate-fever",
    help="Climate-FEVER release → evidence-position task",
    cards=(CARD,),
    settings=ClimateFeverSettings,
    build=settings_build(build_climate_fever),
    order=50,
)
