"""HotpotQA evidence-position subset, from the distractor-setting annotation format.

HotpotQA (Yang et al. 2018), distractor format: ``_id``, ``question``, ``supporting_facts``
(``[[title, sent_idx], …]``, or the Hub's ``{"title": […], "sent_id": […]}``), ``context``
(``[[title, [sentences…]], …]``, or ``{"title": […], "sentences": [[…], …]}``). The context
paragraphs contain the sentences themselves, so positions are exact: a paragraph's text is its
sentences concatenated as given (HotpotQA sentences carry their own leading spaces). The corpus
is every paragraph of every question, one per title; gold documents are the supporting
paragraphs; the position is the first listed supporting fact (how many questions have supporting
facts in different buckets is counted in the build report).

Example:
    >>> from hf_posbias.evaluation.builders.hotpotqa import build_hotpotqa
    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "hotpot.json")
    >>> with open(path, "w") as f:
    ...     json.dump([{"_id": "a", "question": "Who?", "supporting_facts": [["P", 1]],
    ...                 "context": [["P", ["First.", " Second."]]]}], f)
    >>> build_hotpotqa(path).queries[0]["evidence_start"]
    7
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.evaluation.builders.common import TaskAssembler, load_rows
from hf_posbias.evaluation.positions import Anchor, IntervalBuckets, parse_buckets
from hf_posbias.evaluation.taskdata import PositionTaskData, TaskInfo

HOTPOTQA_CITATION = """@inproceedings{yang-etal-2018-hotpotqa,
  title = {{H}otpot{QA}: A Dataset for Diverse, Explainable Multi-hop Question Answering},
  author = {Yang, Zhilin and Qi, Peng and Zhang, Saizheng and Bengio, Yoshua and
            Cohen, William and Salakhutdinov, Ruslan and Manning, Christopher D.},
  booktitle = {Proceedings of the 2018 Conference on Empirical Methods in Natural Language
               Processing},
  year = {2018},
  pages = {2369--2380},
  url = {https://aclanthology.org/D18-1259}
}"""


def _pairs(value: Any, keys: tuple[str, str], where: str) -> list[tuple[Any, Any]]:
    """``[[a, b], …]`` or ``{keys[0]: [a…], keys[1]: [b…]}`` → list of pairs."""
    if isinstance(value, dict):
        if not set(keys) <= set(value):
            raise InputError(f"{where}: expected keys {keys}, got {sorted(value)}")
        return list(zip(value[keys[0]], value[keys[1]]))
    if isinstance(value, list):
        if any(not isinstance(v, (list, tuple)) or len(v) != 2 for v in value):
            raise InputError(f"{where}: expected a list of [{keys[0]}, {keys[1]}] pairs")
        return [(a, b) for a, b in value]
    raise InputError(f"{where}: expected a list of pairs or a dict of lists")


def build_hotpotqa(
    source: str | Path,
    buckets: str | IntervalBuckets = "thirds",
    anchor: Anchor = "start",
    split: str = "validation",
    name: str = "HotpotQA-Evidence",
) -> PositionTaskData:
    """Build the HotpotQA evidence-position task from the distractor format.

    Args:
        source: ``hotpot_dev_distractor_v1.json`` (a JSON list), a JSONL/parquet of the same
            rows, or a Hub-layout folder/id (``hotpotqa/hotpot_qa`` ``distractor``) with ``split``.
        buckets: bucketing rule (default thirds).
        anchor: ``start`` or ``center`` of the first supporting sentence.
        split: split of a folder/Hub source.
        name: task name.

    Example:
        >>> data = build_hotpotqa("hotpot_dev_distractor_v1.json")  # doctest: +SKIP
    """
    rows = load_rows(source, split=split)
    asm = TaskAssembler(parse_buckets(buckets), anchor=anchor, source=str(source))
    asm.report.read = len(rows)
    # title -> {sent_idx: (start, end)}
    spans: dict[str, dict[int, tuple[int, int]]] = {}
    parsed = []
    for i, row in enumerate(rows):
        where = f"{source}: row {i}"
        missing = [k for k in ("question", "supporting_facts", "context") if k not in row]
        if missing:
            raise InputError(f"{where}: missing field(s) {missing}")
        paragraphs = _pairs(row["context"], ("title", "sentences"), where)
        facts = _pairs(row["supporting_facts"], ("title", "sent_id"), where)
        for title, sentences in paragraphs:
            title = str(title)
            text = "".join(sentences)
            if title in spans:
                if asm.document(title)["text"] != text:
                    asm.report.count_note("paragraph_title_with_different_text_kept_first")
                continue
            if not text.strip():
                continue
            pos, by_idx = 0, {}
            for idx, sentence in enumerate(sentences):
                # skip the sentence's own leading space so the offset is its first character
                lead = len(sentence) - len(sentence.lstrip())
                by_idx[idx] = (pos + lead, pos + len(sentence.rstrip()))
                pos += len(sentence)
            spans[title] = by_idx
            asm.add_document(title, text, title, where)
        parsed.append((str(row.get("_id", row.get("id", i))), str(row["question"]), facts))
    asm.report.note("questions_whose_supporting_facts_span_several_buckets", 0)
    for qid, question, facts in parsed:
        located = []
        for title, idx in facts:
            title = str(title)
            if title not in spans:
                asm.report.drop("supporting fact: paragraph not in context")
            elif int(idx) not in spans[title]:
                asm.report.drop("supporting fact: sentence index out of range")
            else:
                located.append((title, *spans[title][int(idx)]))
        if not located:
            asm.report.drop("question: no supporting fact located")
            continue
        asm.add_located_query(
            qid, question, located, "questions_whose_supporting_facts_span_several_buckets"
        )
    info = TaskInfo(
        name=name,
        description=(
            "HotpotQA (distractor) questions retrieving their supporting Wikipedia paragraphs, "
            "bucketed by the relative character position of the first supporting sentence."
        ),
        buckets=[],
        source=f"HotpotQA distractor via {source}",
        license="CC BY-SA 4.0",
        reference="https://hotpotqa.github.io/",
        citation=HOTPOTQA_CITATION,
    )
    return asm.finish(
        info,
        extra={
            "document_text": "paragraph sentences concatenated as given (exact offsets)",
            "position": "first listed supporting fact",
            "corpus": "every context paragraph of every question, one per title",
        },
    )
