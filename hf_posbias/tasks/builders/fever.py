"""FEVER evidence-position subset, from the upstream annotation format.

**FEVER** (Thorne et al. 2018): claims JSONL (``id``, ``label``, ``claim``, ``evidence`` = a list
of evidence sets, each a list of ``[annotation_id, evidence_id, wiki_url, sentence_id]``; ``NOT
ENOUGH INFO`` claims carry ``null`` urls) plus the ``wiki-pages`` dump (JSONL files with ``id``,
``text``, ``lines`` = ``"0\\tSentence.\\tlink…\\n1\\t…"``). A page's text is rebuilt from its
``lines`` (non-empty sentences joined by one space) so that every sentence offset is exact.
Queries are claims labelled as in ``labels``; gold documents are every evidence page found in
the dump; the position is the first evidence sentence of the first evidence set.

Example:
    >>> from hf_posbias.tasks.builders.fever import parse_wiki_lines
    >>> parse_wiki_lines("0\\tFirst sentence.\\tLink\\n1\\t\\n2\\tThird one.")
    {0: 'First sentence.', 2: 'Third one.'}
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
    require_fields,
    settings_build,
    split_labels,
)
from hf_posbias.tasks.taskdata import PositionTaskData

CARD = evidence_card(
    name="FEVER-Evidence",
    class_name="FEVEREvidence",
    description=(
        "FEVER claims retrieved from Wikipedia pages; queries are bucketed by the relative "
        "character position of the first evidence sentence in its page."
    ),
    reference="https://fever.ai/dataset/fever.html",
    citation=citations.FEVER,
    license="cc-by-sa-3.0",
    date=("2017-01-01", "2018-06-01"),
    adapted_from=("FEVER",),
)


def parse_wiki_lines(lines: str) -> dict[int, str]:
    """``{sentence_id: sentence}`` from a FEVER wiki-page ``lines`` field (empty ones skipped)."""
    out: dict[int, str] = {}
    for line in str(lines or "").split("\n"):
        parts = line.split("\t")
        if len(parts) < 2 or not parts[0].strip().isdigit() or not parts[1].strip():
            continue
        out[int(parts[0])] = parts[1]
    return out


def _page_files(wiki_pages: str | Path) -> list[Path]:
    path = Path(wiki_pages)
    if path.is_file():
        return [path]
    files = sorted(p for p in path.glob("*.jsonl") if p.is_file()) if path.is_dir() else []
    if not files:
        raise InputError(f"{path}: no wiki-pages JSONL file(s) found")
    return files


def build_fever(
    claims: str | Path,
    wiki_pages: str | Path,
    labels: Sequence[str] = ("SUPPORTS", "REFUTES"),
    buckets: str | IntervalBuckets = "thirds",
    anchor: Anchor = "start",
    all_pages: bool = True,
    name: str = CARD.name,
) -> PositionTaskData:
    """Build the FEVER evidence-position task.

    Args:
        claims: a FEVER claims JSONL (e.g. ``shared_task_dev.jsonl``).
        wiki_pages: the ``wiki-pages`` folder (``wiki-*.jsonl``) or one JSONL file of it.
        labels: claim labels to keep.
        buckets: bucketing rule (default thirds).
        anchor: ``start`` or ``center`` of the evidence sentence.
        all_pages: put every page of the dump in the corpus (BEIR's FEVER corpus); ``False``
            keeps only evidence pages (smaller, easier).
        name: task name.

    Example:
        >>> data = build_fever("shared_task_dev.jsonl", "wiki-pages")  # doctest: +SKIP
    """
    wanted = {str(label).upper() for label in labels}
    claim_rows = []
    needed: set[str] = set()
    for where, obj in iter_jsonl_objects(claims):
        require_fields(obj, ("id", "claim", "label", "evidence"), where)
        claim_rows.append(obj)
        for evidence_set in obj["evidence"] or []:
            for item in evidence_set:
                if not isinstance(item, (list, tuple)) or len(item) != 4:
                    raise InputError(
                        f"{where}: evidence items must be [annotation_id, evidence_id, "
                        "wiki_url, sentence_id]"
                    )
                if item[2] is not None:
                    needed.add(str(item[2]))
    asm = TaskAssembler(buckets, anchor=anchor, source=str(claims))
    asm.report.read = len(claim_rows)
    # page -> {sentence_id: (start, end)}
    offsets: dict[str, dict[int, tuple[int, int]]] = {}
    for file in _page_files(wiki_pages):
        for where, page in iter_jsonl_objects(file):
            page_id = str(page.get("id", ""))
            if not page_id or (not all_pages and page_id not in needed):
                continue
            sentences = parse_wiki_lines(page.get("lines", ""))
            if not sentences:
                continue
            order = sorted(sentences)
            text, spans = join_sentences([sentences[sid] for sid in order])
            asm.add_document(page_id, text, page_id.replace("_", " "), where)
            if page_id in needed:
                offsets[page_id] = dict(zip(order, spans))
    for obj in claim_rows:
        if str(obj["label"]).upper() not in wanted:
            asm.report.drop(f"claim label not in {sorted(wanted)}")
            continue
        located: list[tuple[str, int, int]] = []
        pages: list[str] = []
        for evidence_set in obj["evidence"] or []:
            for _, _, url, sid in evidence_set:
                if url is None:
                    continue
                url = str(url)
                if url not in offsets:
                    asm.report.drop("evidence: page not in the wiki dump")
                    continue
                pages.append(url)
                if sid is None or int(sid) not in offsets[url]:
                    asm.report.drop("evidence: sentence id not in the page")
                    continue
                located.append((url, *offsets[url][int(sid)]))
        if not located:
            asm.report.drop("claim: no evidence sentence located")
            continue
        first_page, start, end = located[0]
        docs = [first_page] + [p for p in dict.fromkeys(pages) if p != first_page]
        asm.add_query(str(obj["id"]), str(obj["claim"]), docs, start, end)
    info = CARD.task_info(
        name=name,
        description=(
            "FEVER claims with Wikipedia evidence, bucketed by the relative character position "
            "of the first evidence sentence in its page."
        ),
        source=f"FEVER {Path(claims).name} + wiki-pages",
    )
    return asm.finish(
        info,
        extra={
            "labels": sorted(wanted),
            "document_text": "non-empty sentences of the page's `lines`, joined by one space",
            "position": "first sentence of the first evidence set",
            "corpus": "all pages of the dump" if all_pages else "evidence pages only",
        },
    )


@dataclass(kw_only=True)
class FeverSettings(RelativeBuckets, BuilderOutput):
    """``posbias benchmark build fever``."""

    input: str = setting("FEVER claims JSONL (e.g. shared_task_dev.jsonl)")
    wiki_pages: str = setting("wiki-pages folder or one of its files")
    labels: str = setting("claim labels to keep", default="SUPPORTS,REFUTES")
    evidence_pages_only: bool = setting("corpus = evidence pages only", default=False)

    def builder_kwargs(self) -> dict[str, Any]:
        """``--labels A,B`` → ``labels=["A", "B"]``; ``--evidence-pages-only`` →
        ``all_pages=False``."""
        kwargs = super().builder_kwargs()
        kwargs["all_pages"] = not kwargs.pop("evidence_pages_only")
        return {**kwargs, "labels": split_labels(self.labels)}


BENCHMARK = Benchmark(
    name="fever",
    help="FEVER claims + wiki-pages → evidence-position task",
    cards=(CARD,),
    settings=FeverSettings,
    build=settings_build(build_fever),
    order=60,
)
