"""Evidence-moving pairs from MS MARCO, the source YHP26 names for its evidence-moving probe.

An MS MARCO (v1.1) row is a query with the ten passages Bing returned for it, the one a human
selected as answering it marked ``is_selected``. A pair is a row with exactly one selected
passage: the query is the query, the selected passage is the evidence, and the other passages,
in their order, are the fixed document. The insertion points are the starts of those passages,
so the evidence always moves as a whole passage between whole passages (nine others give exactly
the ten slots p1…p10 of YHP26).

The rows are read with :func:`hf_posbias.rows.readers.read_dataset`: the Hub id
``microsoft/ms_marco`` (config ``v1.1``, split ``validation``) by default, or a local copy of the
same rows.

Example:
    >>> row = {"query": "what is a comet", "query_id": 7,
    ...        "passages": {"is_selected": [0, 1, 0],
    ...                     "passage_text": ["Cats purr.", "A comet is ice.", "Dogs bark."]}}
    >>> case = pair_from_row(row)
    >>> case.evidence, case.base, case.insertion_points()
    ('A comet is ice.', 'Cats purr. Dogs bark.', [0, 11, 21])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hf_posbias.analysis.evidence_cases import EvidenceCase
from hf_posbias.analysis.evidence_moving import PairLoadReport, _case_from_sentences
from hf_posbias.errors import InputError

MSMARCO = "msmarco"
"""The pair source name of MS MARCO (``msmarco`` or ``msmarco:<repo id or folder>``)."""
MSMARCO_REPO = "microsoft/ms_marco"
MSMARCO_CONFIG = "v1.1"
MSMARCO_SPLIT = "validation"


def is_msmarco_source(source: str) -> bool:
    """Whether a pair source names MS MARCO.

    Example:
        >>> [is_msmarco_source(s) for s in ("msmarco", "msmarco:/data/ms", "p.jsonl")]
        [True, True, False]
    """
    return source == MSMARCO or source.startswith(MSMARCO + ":")


def pair_from_row(row: Mapping[str, Any]) -> EvidenceCase | None:
    """The pair of one MS MARCO row (``None`` unless exactly one passage is selected and at
    least one other passage is left as the document)."""
    passages = row.get("passages") or {}
    selected = list(passages.get("is_selected") or [])
    texts = [str(t) for t in passages.get("passage_text") or []]
    if selected.count(1) != 1 or len(texts) != len(selected) or len(texts) < 2:
        return None
    return _case_from_sentences(
        str(row.get("query") or ""), texts, [selected.index(1)], f"msmarco:{row.get('query_id')}"
    )


def msmarco_pairs(
    rows: Iterable[Mapping[str, Any]], source: str
) -> tuple[list[EvidenceCase], PairLoadReport]:
    """Every usable pair of ``rows``, and what was read and skipped."""
    report = PairLoadReport(source, "msmarco")
    cases = []
    for row in rows:
        report.read += 1
        try:
            case = pair_from_row(row)
        except InputError:
            report.skip("empty_query_or_passage")
            continue
        if case is None:
            report.skip("not_one_selected_passage")
            continue
        cases.append(case)
    report.kept = len(cases)
    return cases, report


def load_msmarco_pairs(source: str = MSMARCO) -> tuple[list[EvidenceCase], PairLoadReport]:
    """The pairs of ``msmarco`` (the Hub's ``microsoft/ms_marco`` v1.1 validation split) or
    ``msmarco:<repo id or folder>`` (the same rows elsewhere)."""
    from hf_posbias.rows.readers import read_dataset

    _, _, where = source.partition(":")
    repo = where or MSMARCO_REPO
    rows = read_dataset(repo, MSMARCO_CONFIG if repo == MSMARCO_REPO else None, MSMARCO_SPLIT)
    return msmarco_pairs(rows, f"{repo} ({MSMARCO_SPLIT})")


def resolve_pairs(
    source: str, split: str = "train", config: str = "uniform"
) -> tuple[list[EvidenceCase], PairLoadReport]:
    """The pairs of any pair source: ``msmarco[:<repo id or folder>]`` here, everything else
    through :func:`hf_posbias.analysis.evidence_moving.load_pairs` (SciFact, JSONL, training
    sets) — what ``--pairs`` and the study's ``analysis_pairs`` take.

    Example:
        >>> resolve_pairs("/no/such/pairs.jsonl")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: pair source not found: /no/such/pairs.jsonl
    """
    from hf_posbias.analysis.evidence_moving import load_pairs

    if is_msmarco_source(str(source)):
        return load_msmarco_pairs(str(source))
    return load_pairs(source, split, config)
