"""YHP26's LLM segment audit: does a yes/no judge agree with the panel, stratum by stratum?

Scored candidates are split into the disjoint margin strata of
:func:`~hf_posbias.verification.report.stratum_labels`; a sample per stratum is judged segment by
segment (the judge never learns which segment is the target). TargetYes = the target segment
judged answering; DistractorNo = a non-target segment judged not answering; Exclusive = target
yes and both distractors no. Unparseable replies and failed calls are counted, never guessed.

The judge is :mod:`hf_posbias.verification.judge`'s with its ``SEGMENT_AUDIT`` prompt (the
benchmark builder's 0–4 relevance judge is the same code with another prompt); the chat backend
is called in one place, ``judge.ask_judge``. By default the judge answers under
:data:`AUDIT_SCHEMA` (``{"answer": "yes"|"no"}``), the same schema-constrained decoding as query
generation (:mod:`hf_posbias.generation.constrained` for a local LM, ``response_format`` for an
endpoint, with the endpoint's counted free-form fallback); ``constrained=False`` asks for one
free-form word, as YHP26 did. :func:`parse_judge_reply` reads either.

Example:
    >>> audit_messages("q?", "passage")[1]["role"]
    'user'
    >>> parse_judge_reply('{"answer":"no"}'), parse_judge_reply("yes")
    (False, True)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.generation.backends import reply_decoding
from hf_posbias.jsonable import JsonRecord
from hf_posbias.positions import POSITIONS
from hf_posbias.rows.arrow import select_columns
from hf_posbias.tables import as_table
from hf_posbias.verification.judge import (
    SEGMENT_AUDIT,
    ask_judge,
    parse_judge_reply,
)
from hf_posbias.verification.panel import check_candidate, target_index
from hf_posbias.verification.report import DEFAULT_DELTA, margin_stratum, stratum_labels

if TYPE_CHECKING:
    from hf_posbias.generation.backends import ChatBackend

AUDIT_SCHEMA: dict[str, Any] = SEGMENT_AUDIT.schema
"""The judge's reply under constrained decoding: ``{"answer": "yes"}`` or ``{"answer": "no"}``."""

CONSTRAINED_MAX_TOKENS = SEGMENT_AUDIT.constrained_max_tokens
FREE_FORM_MAX_TOKENS = SEGMENT_AUDIT.free_form_max_tokens


def audit_messages(query: str, segment: str) -> list[dict[str, str]]:
    """The judge's chat messages for one segment (the target position is never revealed)."""
    return SEGMENT_AUDIT.messages(query, segment)


@dataclass
class AuditStratum:
    """Judge agreement in one margin stratum (percentages over parsed answers)."""

    stratum: str
    candidates: int = 0
    audited: int = 0
    target_yes: float | None = None
    distractor_no: float | None = None
    exclusive: float | None = None
    unparsed_answers: int = 0
    failed_calls: int = 0
    incomplete_candidates: int = 0


@dataclass
class AuditReport(JsonRecord):
    """TargetYes / DistractorNo / Exclusive per margin stratum (YHP26's LLM audit)."""

    delta: float
    per_stratum: int
    seed: int
    strata: list[AuditStratum] = field(default_factory=list)
    decodings: dict[str, int] = field(default_factory=dict)
    """Replies by how they were decoded (``json_schema``, ``free_form``, ``free_form_fallback``:
    the endpoint refused the schema)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditReport:
        """Inverse of :meth:`to_dict` (e.g. ``scored/audit.json`` read back)."""
        strata = [AuditStratum(**s) for s in data.get("strata", [])]
        return cls(
            delta=float(data["delta"]),
            per_stratum=int(data["per_stratum"]),
            seed=int(data["seed"]),
            strata=strata,
            decodings=dict(data.get("decodings", {})),
        )

    def to_markdown(self) -> str:
        """One markdown row per stratum (``—`` where nothing could be judged)."""

        def pct(x: float | None) -> str:
            return "—" if x is None else f"{x:.1f}"

        rows = [
            {
                "stratum": s.stratum,
                "audited": s.audited,
                "TargetYes %": pct(s.target_yes),
                "DistractorNo %": pct(s.distractor_no),
                "Exclusive %": pct(s.exclusive),
                "unparsed": s.unparsed_answers,
                "failed": s.failed_calls,
            }
            for s in self.strata
        ]
        return as_table(rows).to_markdown() + "\n"

    def table_rows(self) -> list[dict[str, Any]]:
        """The strata as plain rows (for a dataset card's margin-strata section)."""
        return [
            {
                "stratum": s.stratum,
                "candidates": s.candidates,
                "audited": s.audited,
                "TargetYes %": s.target_yes,
                "DistractorNo %": s.distractor_no,
                "Exclusive %": s.exclusive,
            }
            for s in self.strata
        ]

    def summary_lines(self) -> list[str]:
        """Human-readable lines for the CLI."""
        lines = [f"audit: up to {self.per_stratum} candidates per stratum, seed {self.seed}"]
        if self.decodings:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(self.decodings.items()))
            lines.append(f"  replies decoded: {counts}")
        for s in self.strata:
            lines.append(
                f"  {s.stratum}: audited {s.audited}/{s.candidates} "
                f"TargetYes {s.target_yes} DistractorNo {s.distractor_no} "
                f"Exclusive {s.exclusive} (unparsed {s.unparsed_answers}, "
                f"failed calls {s.failed_calls}, incomplete {s.incomplete_candidates})"
            )
        return lines


def audit_segments(
    rows: Sequence[dict[str, Any]],
    backend: ChatBackend,
    *,
    per_stratum: int = 100,
    seed: int = 42,
    delta: float = DEFAULT_DELTA,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
    constrained: bool = True,
    prompt: Any = None,
) -> AuditReport:
    """Ask a yes/no LLM judge, segment by segment, whether each segment answers the query.

    Scored rows are split into the disjoint margin strata of :func:`stratum_labels`; up to
    ``per_stratum`` candidates per stratum are drawn (sorted by ``candidate_id``, then a seeded
    draw). For each: TargetYes = the target segment judged answering; DistractorNo = a
    non-target segment judged not answering; Exclusive = target yes and both distractors no.
    Unparseable replies and failed calls are counted, never guessed. ``constrained`` decodes
    each reply under :data:`AUDIT_SCHEMA`; ``max_tokens`` defaults to
    :data:`CONSTRAINED_MAX_TOKENS` or :data:`FREE_FORM_MAX_TOKENS` accordingly. ``prompt``
    replaces the judge's user message (a ``{query}``/``{segment}`` string or a prompt file's
    template, :mod:`hf_posbias.generation.prompt_files`).
    """
    from dataclasses import replace

    judge = SEGMENT_AUDIT if prompt is None else replace(SEGMENT_AUDIT, template=prompt)
    if per_stratum < 1:
        raise InputError(f"per_stratum must be >= 1, got {per_stratum}")
    # The strata are drawn from two light columns, a (candidate id, row number) pair per
    # candidate; only the drawn rows are read whole (a pool of millions of candidates is never
    # held). Sorting by id first keeps the draw independent of the pool's order.
    by_stratum: dict[str, list[tuple[str, int]]] = {label: [] for label in stratum_labels(delta)}
    if "margin" not in getattr(rows, "column_names", ["margin"]):
        raise InputError("the candidates have no margin column: audit a scored pool")
    for i, row in enumerate(select_columns(rows, ["candidate_id", "margin"])):
        if row.get("margin") is None:
            raise InputError(
                f"candidate {row.get('candidate_id')!r} has no margin: audit a scored pool"
            )
        by_stratum[margin_stratum(float(row["margin"]), delta)].append(
            (str(row["candidate_id"]), i)
        )

    picked: list[tuple[str, dict[str, Any]]] = []
    report = AuditReport(delta=float(delta), per_stratum=per_stratum, seed=seed)
    for label, members in by_stratum.items():
        members.sort(key=lambda m: m[0])
        chosen = random.Random(f"{seed}|{label}").sample(members, min(per_stratum, len(members)))
        for _, i in chosen:
            candidate = rows[i]
            check_candidate(candidate)
            picked.append((label, candidate))
        report.strata.append(AuditStratum(stratum=label, candidates=len(members)))

    requests = [judge.messages(r["query"], seg) for _, r in picked for seg in r["segments"]]
    replies = ask_judge(
        backend,
        requests,
        seed=seed,
        temperature=temperature,
        max_tokens=SEGMENT_AUDIT.max_tokens(constrained) if max_tokens is None else max_tokens,
        batch_size=batch_size,
        progress=progress,
        json_schema=AUDIT_SCHEMA if constrained else None,
        tag=SEGMENT_AUDIT.name,
    )

    for reply in replies:
        if not isinstance(reply, Exception):
            decoding = reply_decoding(reply)
            report.decodings[decoding] = report.decodings.get(decoding, 0) + 1

    tallies = {s.stratum: {"ty": [0, 0], "dn": [0, 0], "ex": [0, 0]} for s in report.strata}
    stratum_of = {s.stratum: s for s in report.strata}
    k = len(POSITIONS)
    for c, (label, row) in enumerate(picked):
        s, t = stratum_of[label], tallies[label]
        s.audited += 1
        target = target_index(row)
        answers: list[bool | None] = []
        for j in range(k):
            reply = replies[c * k + j]
            if isinstance(reply, Exception):
                s.failed_calls += 1
                answers.append(None)
                continue
            ans = parse_judge_reply(reply)
            if ans is None:
                s.unparsed_answers += 1
            answers.append(ans)
        for j, ans in enumerate(answers):
            if ans is None:
                continue
            if j == target:
                t["ty"][0] += ans
                t["ty"][1] += 1
            else:
                t["dn"][0] += not ans
                t["dn"][1] += 1
        if any(a is None for a in answers):
            s.incomplete_candidates += 1
        else:
            exclusive = answers[target] and not any(a for j, a in enumerate(answers) if j != target)
            t["ex"][0] += bool(exclusive)
            t["ex"][1] += 1
    for s in report.strata:
        t = tallies[s.stratum]
        s.target_yes = _ratio(t["ty"])
        s.distractor_no = _ratio(t["dn"])
        s.exclusive = _ratio(t["ex"])
    return report


def _ratio(hits_total: list[int]) -> float | None:
    hits, total = hits_total
    return round(100.0 * hits / total, 2) if total else None
