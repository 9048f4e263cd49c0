"""PosIR (Zeng et al. 2026): position-aware retrieval over 10 languages × 31 domains.

Source layout (Hub ``infgrad/PosIR-Benchmark-v1``, as its evaluation script ``eval.sh`` walks
it): ``{language}/{domain}/corpus.parquet``, ``{language}/{domain}/queries.parquet`` and
``{language}/{domain}/qrels/test.parquet``. Columns, as ``eval.py`` reads them: corpus ``_id``,
``text`` (``title`` if present); queries ``_id``, ``text``, ``pos_char_span`` ([start, end] of the
evidence), ``pos_char_length`` (document length in characters), ``pos_token_length`` (document
length in tokens); qrels ``query-id``, ``corpus-id``, ``score``. A flat folder whose
``{domain}/`` sub-folders sit directly under ``root`` also works (``language=None``).

Several domains merge into one task; ids are prefixed ``{domain}/`` so they cannot collide.
Domains are matched case-insensitively with spaces/underscores/hyphens equivalent, so
``"Law Judiciary"`` finds ``law_judiciary``. :data:`YHP26_DOMAINS` are the four English domains
YHP26 evaluates on.

Bucket schemes:

* ``posir20`` — PosIR's own 20 relative bins (right-closed) on the **centre** of the evidence span
  divided by ``pos_char_length``, clipped to [0, 1] (``ndcg_PSI_analysis.py``); queries with
  ``pos_char_length <= 0`` or a negative span are dropped, as there.
* ``token-length`` — PosIR's document token-length groups ``(0, 512]``, ``(512, 1024]``,
  ``(1024, 1536]``, ``(1536, ∞)`` on ``pos_token_length``.
* ``thirds`` (or relative edges) — begin/middle/end on the same centre position.

Example:
    >>> from hf_posbias.tasks.builders.posir import normalise_domain
    >>> normalise_domain("Law Judiciary") == normalise_domain("law_judiciary")
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hf_posbias import citations
from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_parquet
from hf_posbias.settings import setting, shared_setting
from hf_posbias.tasks.benchmark_registry import Benchmark, TaskCard
from hf_posbias.tasks.bucketing import (
    POSIR_RELATIVE_20,
    POSIR_TOKEN_LENGTH,
    Anchor,
    IntervalBuckets,
    parse_buckets,
    relative_position,
)
from hf_posbias.tasks.builders.common import (
    BuilderOutput,
    TaskAssembler,
    require_fields,
    settings_build,
)
from hf_posbias.tasks.taskdata import PositionTaskData

HUB_ID = "infgrad/PosIR-Benchmark-v1"
YHP26_DOMAINS = ("Subject Education", "News Media", "Law Judiciary", "Finance Economics")
SCHEMES = ("posir20", "token-length", "thirds")

CARD = TaskCard(
    name="PosIR",
    class_name="PosIR",
    description=(
        "PosIR position-aware retrieval benchmark: queries carry the character span of their "
        "evidence; buckets are PosIR's 20 relative positions of the evidence-span centre."
    ),
    reference="https://arxiv.org/abs/2601.08363",
    citation=citations.Z26,
    license="not specified",
    buckets=POSIR_RELATIVE_20.labels,
    domains=("Non-fiction", "News", "Legal", "Financial", "Written"),
    date=("2020-01-01", "2026-01-01"),
    sample_creation="LM-generated and verified",
)


def normalise_domain(name: str) -> str:
    """Lower-case, runs of non-alphanumerics → ``_`` (matching folder names loosely)."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


def _read(path: Path, columns: Sequence[str]) -> list[dict[str, Any]]:

    if not path.is_file():
        raise InputError(f"{path}: not found (PosIR layout: <lang>/<domain>/…)")
    table = read_parquet(path)
    require_fields(table.column_names, columns, str(path), columns=True)
    return table.to_pylist()


def build_posir(
    root: str | Path,
    language: str | None = "eng-Latn",
    domains: Sequence[str] | None = YHP26_DOMAINS,
    scheme: str | IntervalBuckets = "posir20",
    anchor: Anchor = "center",
    name: str | None = None,
) -> PositionTaskData:
    """Build a PosIR position task from a local copy of the benchmark.

    Args:
        root: folder holding ``{language}/{domain}/…`` (a snapshot of the Hub dataset).
        language: language folder (``eng-Latn`` …); ``None`` when ``root`` holds domains directly.
        domains: domain names (loosely matched); ``None`` = every domain of the language.
        scheme: ``posir20``, ``token-length``, ``thirds`` or relative edges / a rule object.
        anchor: which point of the evidence span positions use (PosIR: ``center``).
        name: task name (default ``PosIR`` for the 20 bins, else ``PosIR-<scheme>``).

    Example:
        >>> data = build_posir("PosIR-Benchmark-v1", domains=None)  # doctest: +SKIP
    """
    base = Path(root) / language if language else Path(root)
    if not base.is_dir():
        raise InputError(f"{base}: no such folder (expected a PosIR snapshot)")
    available = {normalise_domain(p.name): p for p in sorted(base.iterdir()) if p.is_dir()}
    if domains is None:
        chosen = list(available.values())
    else:
        chosen = []
        for domain in domains:
            folder = available.get(normalise_domain(domain))
            if folder is None:
                raise InputError(
                    f"PosIR domain {domain!r} not found under {base}; available: "
                    f"{', '.join(p.name for p in available.values()) or 'none'}"
                )
            chosen.append(folder)
    if not chosen:
        raise InputError(f"{base}: no domain folders")
    token_scheme = scheme == "token-length" or scheme is POSIR_TOKEN_LENGTH
    rule = POSIR_TOKEN_LENGTH if token_scheme else parse_buckets(scheme)
    asm = TaskAssembler(rule, anchor=anchor, source=str(base))
    length_mismatch = 0
    for folder in chosen:
        prefix = f"{folder.name}/"
        for doc in _read(folder / "corpus.parquet", ("_id", "text")):
            asm.add_document(prefix + str(doc["_id"]), doc["text"] or "", doc.get("title") or "")
        qrels: dict[str, list[str]] = {}
        for row in _read(folder / "qrels" / "test.parquet", ("query-id", "corpus-id", "score")):
            if float(row["score"]) > 0:
                qrels.setdefault(str(row["query-id"]), []).append(prefix + str(row["corpus-id"]))
        queries = _read(
            folder / "queries.parquet",
            ("_id", "text", "pos_char_span", "pos_char_length", "pos_token_length"),
        )
        asm.report.read += len(queries)
        for q in queries:
            docs = qrels.get(str(q["_id"]))
            if not docs:
                asm.report.drop("query without qrels")
                continue
            span = list(q["pos_char_span"] or [])
            length = int(q["pos_char_length"] or 0)
            if len(span) != 2 or length <= 0 or span[0] < 0 or span[1] < span[0]:
                asm.report.drop("missing or invalid pos_char_span / pos_char_length")
                continue
            start, end = int(span[0]), int(span[1])
            if asm.has_document(docs[0]) and len(asm.document(docs[0])["text"]) != length:
                length_mismatch += 1
            if token_scheme:
                value = float(q["pos_token_length"])
            else:
                value = relative_position(start, end, length, anchor)
            kept = asm.add_query(
                prefix + str(q["_id"]), q["text"], docs, start, end, length, bucket_value=value
            )
            if kept and q.get("pos_token_length") is not None:
                # PosIR's own token length: the posir scoring's length strata use it.
                asm.queries[-1]["doc_tokens"] = int(q["pos_token_length"])
    asm.report.note("pos_char_length_differs_from_document_text_length", length_mismatch)
    info = CARD.task_info(
        name=name
        or (CARD.name if rule.scheme == POSIR_RELATIVE_20.scheme else f"PosIR-{rule.scheme}"),
        description=(
            f"PosIR ({language or 'local'}; domains: {', '.join(p.name for p in chosen)}) "
            "queries bucketed by "
            + (
                "document token length."
                if token_scheme
                else "the relative position of the evidence span centre."
            )
        ),
        source=f"{HUB_ID} via {root}",
    )
    return asm.finish(
        info,
        extra={
            "language": language,
            "domains": [p.name for p in chosen],
            "position": "centre of pos_char_span / pos_char_length, clipped to [0, 1] (PosIR)",
        },
    )


@dataclass(kw_only=True)
class PosIRSettings(BuilderOutput):
    """``posbias benchmark build posir``."""

    input: str = setting("local snapshot folder holding <language>/<domain>/…")
    language: str = setting("language folder ('' = flat layout)", default="eng-Latn")
    domains: str = setting(
        "yhp26 (Subject Education, News Media, Law Judiciary, Finance Economics), all, "
        "or a comma-separated list",
        default="yhp26",
    )
    scheme: str = setting("posir20, token-length, thirds or edges", default="posir20")
    anchor: Literal["start", "center"] = shared_setting("anchor", default="center")
    name: str | None = shared_setting("name", default=None)

    def builder_kwargs(self) -> dict[str, Any]:
        """``--language ''`` → ``language=None``; ``--domains`` ``yhp26``/``all``/a list →
        :data:`YHP26_DOMAINS`/``None``/the list."""
        spec = self.domains.strip()
        domains: Sequence[str] | None
        if spec.lower() == "yhp26":
            domains = YHP26_DOMAINS
        elif spec.lower() == "all":
            domains = None
        else:
            domains = [d for d in spec.split(",") if d.strip()]
        return {**super().builder_kwargs(), "language": self.language or None, "domains": domains}


BENCHMARK = Benchmark(
    name="posir",
    help="infgrad/PosIR-Benchmark-v1 snapshot → PosIR task",
    cards=(CARD,),
    settings=PosIRSettings,
    build=settings_build(build_posir),
    order=30,
)
