"""SciFact evidence-position subset: claims bucketed by where their first evidence sentence lies.

Source: the ``allenai/scifact`` configurations exported to CSV (``claims_<split>.csv`` with
``id, claim, evidence_doc_id, evidence_label, evidence_sentences, cited_doc_ids``, one row per
claim × evidence set; ``corpus_train.csv`` with ``doc_id, title, abstract, structured``, where
``abstract`` is the numpy repr of a list of sentence strings, ``"['s1'\\n 's2']"``).

Decisions:

* **Document text** = the abstract sentences joined by one space, as BEIR's SciFact corpus does;
  the title is the separate ``title`` field and is **not** counted in evidence offsets (MTEB
  prepends it as a short constant prefix; counting it would shift every position by a few
  percent of a typical abstract).
* **Queries** = claims with at least one evidence document (claims without evidence have no
  position and are counted as dropped). BEIR's SciFact test set is the ``validation`` split (300
  claims, 188 of them with evidence).
* **Gold documents** (qrels) = every evidence document of the claim.
* **Position** = character start of the claim's first evidence sentence (lowest sentence index
  over all its evidence sets) in its first evidence document (file order), divided by the
  document length; bucketed in thirds (or any relative rule).

Example:
    >>> from hf_posbias.tasks.builders.scifact import parse_sentence_list
    >>> parse_sentence_list("['First one.'\\n \\"It's second.\\"]")
    ['First one.', "It's second."]
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hf_posbias import citations
from hf_posbias.errors import InputError
from hf_posbias.settings import setting, shared_setting
from hf_posbias.tasks.benchmark_registry import Benchmark
from hf_posbias.tasks.bucketing import Anchor, IntervalBuckets
from hf_posbias.tasks.builders.common import (
    BuilderOutput,
    RelativeBuckets,
    TaskAssembler,
    evidence_card,
    join_sentences,
    parse_int_list,
    require_fields,
    settings_build,
)
from hf_posbias.tasks.taskdata import PositionTaskData

CARD = evidence_card(
    name="SciFact-Evidence",
    class_name="SciFactEvidence",
    description=(
        "SciFact claims retrieved from the abstract corpus; queries are bucketed by the "
        "relative position of their first rationale sentence in the cited abstract."
    ),
    reference="https://github.com/allenai/scifact",
    citation=citations.SCIFACT,
    license="https://creativecommons.org/licenses/by-nc/2.0/",
    domains=("Academic", "Medical", "Written"),
    date=("2020-01-01", "2020-05-01"),
    annotations_creators="expert-annotated",
    adapted_from=("SciFact",),
)

SPLITS = ("train", "validation", "test")


def parse_sentence_list(value: str) -> list[str]:
    """Sentences out of a numpy/Python repr of a list of strings (quotes and escapes intact): the
    one parser of the SciFact CSV export's ``abstract`` column (the task builder and the
    evidence-moving pairs read it).

    ``ast.literal_eval`` of the whole value would silently concatenate adjacent literals (numpy
    writes no commas), so each string token is read on its own. Python's tokenizer reads each
    string literal exactly as written, whichever quote style numpy chose, so apostrophes,
    escaped quotes and backslashes survive.
    """
    text = str(value).strip()
    if not text.startswith("[") or not text.endswith("]"):
        raise InputError(f"not a list of sentences: {text[:60]!r}")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        return [ast.literal_eval(t.string) for t in tokens if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError, ValueError) as err:
        raise InputError(f"unparseable sentence list ({err})") from None


def _export_files(folder: Path, split: str) -> tuple[Path, Path]:
    """``claims_<split>.csv`` and ``corpus_train.csv`` of the CSV export (one line if absent)."""
    claims_path, corpus_path = folder / f"claims_{split}.csv", folder / "corpus_train.csv"
    for path in (claims_path, corpus_path):
        if not path.is_file():
            raise InputError(f"{path}: not found (expected the allenai/scifact CSV export)")
    return claims_path, corpus_path


def build_scifact(
    folder: str | Path,
    split: str = "validation",
    buckets: str | IntervalBuckets = "thirds",
    anchor: Anchor = "start",
    name: str | None = None,
) -> PositionTaskData:
    """Build the SciFact evidence-position task from the CSV export.

    Args:
        folder: folder with ``claims_<split>.csv`` and ``corpus_train.csv``.
        split: ``validation`` (= BEIR test), ``train`` (= BEIR train); ``test`` has no labels.
        buckets: bucketing rule (default thirds).
        anchor: ``start`` (evidence start) or ``center`` of the first evidence sentence.
        name: task name (default ``SciFact-Evidence``, ``-train`` suffixed for the train split).

    Example:
        >>> data = build_scifact("scifact_csv")  # doctest: +SKIP
        >>> data.bucket_counts()  # doctest: +SKIP
    """
    import pandas as pd

    folder = Path(folder)
    if split not in SPLITS:
        raise InputError(f"SciFact split must be one of {SPLITS}, got {split!r}")
    claims_path, corpus_path = _export_files(folder, split)
    claims = pd.read_csv(claims_path, dtype={"evidence_sentences": str, "cited_doc_ids": str})
    corpus = pd.read_csv(corpus_path)
    for frame, path, cols in (
        (claims, claims_path, ("id", "claim", "evidence_doc_id", "evidence_sentences")),
        (corpus, corpus_path, ("doc_id", "title", "abstract")),
    ):
        require_fields(frame.columns, cols, str(path), columns=True)

    asm = TaskAssembler(buckets, anchor=anchor, source=str(folder))
    # sentence start offsets per document, to point at the evidence sentence exactly
    starts: dict[str, list[tuple[int, int]]] = {}
    for row in corpus.itertuples(index=False):
        doc_id = str(int(row.doc_id))
        try:
            sentences = parse_sentence_list(row.abstract)
        except InputError as err:
            asm.report.drop(f"corpus: {str(err).split(' (')[0]}")
            continue
        text, offsets = join_sentences(sentences)
        if not text.strip():
            asm.report.drop("corpus: empty abstract")
            continue
        title = "" if pd.isna(row.title) else str(row.title)
        asm.add_document(doc_id, text, title, where=str(corpus_path))
        starts[doc_id] = offsets

    # claim id -> (text, ordered {doc_id: [sentence indices]})
    grouped: OrderedDict[int, tuple[str, OrderedDict[str, list[int]]]] = OrderedDict()
    for row in claims.itertuples(index=False):
        entry = grouped.setdefault(int(row.id), (str(row.claim), OrderedDict()))
        if pd.isna(row.evidence_doc_id):
            continue
        doc_id = str(int(row.evidence_doc_id))
        entry[1].setdefault(doc_id, []).extend(parse_int_list(row.evidence_sentences))
    asm.report.read = len(grouped)
    multi = 0
    for claim_id, (text, evidence) in grouped.items():
        if not evidence:
            asm.report.drop("claim without evidence")
            continue
        multi += len(evidence) > 1
        first_doc, indices = next(iter(evidence.items()))
        if first_doc not in starts:
            asm.report.drop("evidence document not in corpus")
            continue
        if not indices or min(indices) < 0 or max(indices) >= len(starts[first_doc]):
            asm.report.drop("evidence sentence index out of range")
            continue
        start, end = starts[first_doc][min(indices)]
        asm.add_query(str(claim_id), text, list(evidence), start, end)
    asm.report.note("claims_with_several_evidence_documents", multi)
    suffix = "" if split == "validation" else f"-{split}"
    info = CARD.task_info(
        name=name or f"{CARD.name}{suffix}",
        description=(
            f"SciFact ({split} split) claims with rationale annotations, bucketed by the relative "
            "character position of the first evidence sentence in its abstract."
        ),
        source=f"allenai/scifact (CSV export: {claims_path.name}, {corpus_path.name})",
    )
    return asm.finish(
        info,
        extra={
            "split": split,
            "document_text": "abstract sentences joined by one space (BEIR); title not counted",
            "position": "first evidence sentence (lowest index) in the first evidence document",
        },
    )


@dataclass(kw_only=True)
class SciFactSettings(RelativeBuckets, BuilderOutput):
    """``posbias benchmark build scifact``."""

    input: str = setting("folder with claims_<split>.csv and corpus_train.csv")
    split: Literal["train", "validation"] = shared_setting("split", default="validation")


BENCHMARK = Benchmark(
    name="scifact",
    help="SciFact CSV export → evidence-position task",
    cards=(CARD,),
    settings=SciFactSettings,
    build=settings_build(build_scifact),
    order=40,
)


def build_scifact_beir(folder: str | Path, out: str | Path, split: str = "validation") -> Path:
    """Write BEIR's SciFact folder for one split from the CSV export (standard retrieval).

    BEIR's SciFact: the corpus is every abstract (sentences joined by one space, the title
    apart); every claim of the split is a query; its cited documents are its qrels (score 1).
    The ``validation`` split is BEIR's ``test`` split (300 claims, 339 judgements) and is
    written as ``qrels/test.tsv``; ``train`` is written as ``qrels/train.tsv``.

    Example:
        >>> build_scifact_beir("scifact_allenai", "scifact-beir")  # doctest: +SKIP
    """
    import pandas as pd

    from hf_posbias.tasks.beir import write_beir_folder

    folder = Path(folder)
    if split not in ("train", "validation"):
        raise InputError(f"SciFact BEIR split must be train or validation, got {split!r}")
    claims_path, corpus_path = _export_files(folder, split)
    claims = pd.read_csv(claims_path, dtype={"cited_doc_ids": str})
    corpus: dict[str, tuple[str, str]] = {}
    for row in pd.read_csv(corpus_path).itertuples(index=False):
        title = "" if pd.isna(row.title) else str(row.title)
        corpus[str(int(row.doc_id))] = (title, " ".join(parse_sentence_list(row.abstract)))
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for row in claims.itertuples(index=False):
        qid = str(int(row.id))
        queries[qid] = str(row.claim)
        for doc_id in parse_int_list(row.cited_doc_ids):
            qrels.setdefault(qid, {})[str(doc_id)] = 1
    return write_beir_folder(
        out, corpus, queries, qrels, split="test" if split == "validation" else split
    )
