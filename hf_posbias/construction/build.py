"""Z25's FineWeb-PosQ recipe end to end, as resumable sharded stages (``posbias benchmark build``).

Stages (folders under ``<out>/stages``; each pins its parameters and its input's fingerprint in a
manifest, :mod:`hf_posbias.shards`; the LLM and model stages are sharded, so a rerun after a
kill redoes nothing finished and ``accelerate launch`` gives each process its shards):

1. ``01-passages`` — corpus records → passages of 500–1,024 words (:func:`recipe.cut_passages`).
2. ``02-summary`` — one LLM summary per passage.
3. ``03-chunks`` — 256-word chunks (:func:`recipe.split_recursive`), tagged by Algorithm 1.
4. ``04-faq`` — per chunk plus summary, an LLM FAQ list ``{question, answer, type}``.
5. ``05-stage1-rerank`` — the reranker panel must put the labelled segment first for every member;
   then every position is downsampled to the smallest.
6. ``06-stage1-judge`` — the 0–4 relevance judge: labelled segment ≥ 3 and ≥ 1 above the others.
7. ``07-stage2-recall`` — the embedder's top-k passages per question, pre-labelled by a reranker
   majority ≥ 0.5.
8. ``08-stage2-judges`` — the false-negative judges; a question with a passage that ≥ 2 judges
   grade ≥ 3 is removed.
9. the tiny version: a fixed number per position.

Outputs: the task folder (``corpus/queries/qrels.parquet``, ``task.json``, ``construction.json``,
``build_report.json``), ``<out>/tiny`` (the tiny task), and the Hub dataset repo folder (default
``<out>-hub``) whose card carries the construction table.

Example:
    >>> from hf_posbias.construction.build import construction_markdown
    >>> print(construction_markdown([{"stage": "faq", "begin": 4, "middle": 5, "end": 3}]))
    | stage | begin | middle | end | total |
    |---|---|---|---|---|
    | faq | 4 | 5 | 3 | 12 |
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hf_posbias import POSITIONS
from hf_posbias.construction import recipe
from hf_posbias.construction.settings import BenchmarkBuildSettings
from hf_posbias.errors import InputError
from hf_posbias.rows import read_json
from hf_posbias.settings import flag_name
from hf_posbias.shards import (
    fingerprint,
    pin_parameters,
    process_info,
    read_parquet_rows,
    run_sharded,
    write_json,
    write_parquet,
)

if TYPE_CHECKING:
    from hf_posbias.generation.backends import ChatBackend
    from hf_posbias.tasks.taskdata import PositionTaskData
    from hf_posbias.verification.panel import RerankerPanel

logger = logging.getLogger(__name__)

SUMMARY_SYSTEM = "You write concise, faithful summaries."
SUMMARY_PROMPT = (
    "Write a global summary of the passage below in 2 to 4 sentences.\n\n"
    "Title: {title}\n<passage>\n{passage}\n</passage>\n\n"
    'Answer with JSON: {{"summary": "<the summary>"}}'
)
SUMMARY_SCHEMA: dict[str, Any] = {
    "title": "summary",
    "type": "object",
    "properties": {"summary": {"type": "string", "minLength": 1, "maxLength": 600}},
    "required": ["summary"],
    "additionalProperties": False,
}
FAQ_SYSTEM = "You write FAQ entries for a document. You answer with one JSON object only."
FAQ_PROMPT = (
    "Summary of the whole document:\n{summary}\n\n"
    "A chunk of the document:\n<chunk>\n{chunk}\n</chunk>\n\n"
    "Write up to {n} frequently asked questions that this chunk answers. Each question must be "
    "answerable from the chunk alone and must make sense without seeing the chunk. Mark a "
    'question "simple" when one sentence of the chunk answers it, "complicated" when the answer '
    "combines several sentences.\n"
    'Answer with JSON: {{"faqs": [{{"question": "...", "answer": "...", "type": "simple"}}]}}'
)
"""FAQ generation (after Z25 prompt B.2): a chunk plus the passage summary → a JSON list."""

STAGES = (
    "faq",
    "stage1_rerankers",
    "stage1_downsample",
    "stage1_judge",
    "stage2_false_negatives",
    "tiny",
)
"""The rows of ``construction.json``, in order."""

HUB_SPLIT = "test"
"""The split of every config in the Hub dataset folder (an evaluation set)."""

_NORMALIZATION_FOR_PAIRS = {"share": "saturate", "softmax": "sigmoid"}
"""Stage 2 scores single (question, passage) pairs: a normalisation over a candidate's three
segments has no meaning there, so it is replaced by its per-pair counterpart."""


def _summary_of(reply: str, constrained: bool) -> str:
    """The summary in a reply: the JSON field, or (free-form decoding) the reply itself.

    Example:
        >>> _summary_of('{"summary": " A B. "}', True), _summary_of('{"summ', True)
        ('A B.', '')
    """
    from hf_posbias.generation.llm import extract_json_object

    try:
        return str(extract_json_object(reply).get("summary") or "").strip()
    except ValueError:
        return "" if constrained else reply.strip()


def construction_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The construction table as markdown (counts per stage and position, with totals)."""
    lines = ["| stage | begin | middle | end | total |", "|---|---|---|---|---|"]
    for row in rows:
        counts = [int(row[p]) for p in POSITIONS]
        lines.append(f"| {row['stage']} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} |")
    return "\n".join(lines)


class _Build:
    """One run of the recipe (state shared by the stages)."""

    def __init__(self, settings: BenchmarkBuildSettings) -> None:
        self.s = settings
        self.out = Path(settings.out)
        self.stages = self.out / "stages"
        self.proc = process_info()
        self.drops: dict[str, dict[str, int]] = {}
        self.requests: dict[str, int] = {}
        self.construction: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.notes: dict[str, int] = {}
        self._backends: dict[str, ChatBackend] = {}

    # -- helpers ---------------------------------------------------------------------------
    def backend(self, model: str) -> ChatBackend:
        """The chat backend for ``model`` (one per model, loaded on first request)."""
        from hf_posbias.generation.backends import make_chat_backend

        if model not in self._backends:
            s = self.s
            options: dict[str, Any] = (
                {"max_new_tokens": max(s.summary_max_tokens, s.faq_max_tokens)}
                if s.llm_backend == "local-lm"
                else {
                    "base_url": s.base_url,
                    "api_key_env": s.api_key_env,
                    "max_concurrency": s.max_concurrency,
                }
            )
            self._backends[model] = make_chat_backend(s.llm_backend, model, **options)
        return self._backends[model]

    def llm_params(self, model: str) -> dict[str, Any]:
        return {"backend": self.s.llm_backend, "model": model, "base_url": self.s.base_url}

    def drop(self, stage: str, reason: str, n: int = 1) -> None:
        if n:
            bucket = self.drops.setdefault(stage, {})
            bucket[reason] = bucket.get(reason, 0) + n

    def record(self, stage: str, items: Sequence[dict[str, Any]]) -> None:
        self.construction.append(recipe.position_counts(items, stage))

    def complete(
        self, model: str, requests: list[list[dict[str, str]]], tag: str, **sampling: Any
    ) -> list[Any]:
        from hf_posbias.generation.backends import complete_all
        from hf_posbias.generation.base import stable_seed

        return complete_all(
            self.backend(model),
            requests,
            [stable_seed(tag, self.s.seed, json.dumps(r, sort_keys=True)) for r in requests],
            chunk=self.s.batch_size,
            desc=tag,
            progress=False,
            **sampling,
        )

    def sharded(self, name: str, items: Sequence[Any], fn: Any, params: dict[str, Any]) -> list:
        return run_sharded(
            items,
            fn,
            self.stages / name,
            shard_size=self.s.shard_size,
            params=params,
            desc=name,
            progress=self.s.progress,
            overwrite=self.s.overwrite,
        )

    def llm_stage(
        self,
        name: str,
        system: str,
        requests: list[tuple[str, str]],
        *,
        prompt: str,
        source: str,
        max_tokens: int,
        schema: dict[str, Any],
    ) -> dict[str, str | None]:
        """One chat request per ``(key, user turn)`` after the ``system`` message, sharded and
        resumable; raw replies are stored (``None``: the request failed), so a parser change
        never asks the model again. ``prompt`` and ``source`` are fingerprints of the prompt and
        of the stage's input."""
        s = self.s
        tag = name.split("-", 1)[1]
        params = {
            "llm": self.llm_params(s.llm_model),
            "prompt": prompt,
            "temperature": s.temperature,
            "max_tokens": max_tokens,
            "constrained": s.constrained,
            "seed": s.seed,
            "input": source,
        }
        sampling = {
            "temperature": s.temperature,
            "max_tokens": max_tokens,
            "json_schema": schema if s.constrained else None,
        }

        def work(shard: list[tuple[str, list[dict[str, str]]]]) -> list[dict[str, Any]]:
            replies = self.complete(self.s.llm_model, [m for _, m in shard], tag, **sampling)
            return [
                {
                    "key": key,
                    "reply": None if isinstance(reply, Exception) else str(reply),
                    "finish_reason": getattr(reply, "finish_reason", None),
                }
                for (key, _), reply in zip(shard, replies, strict=True)
            ]

        chats = [
            (key, [{"role": "system", "content": system}, {"role": "user", "content": user}])
            for key, user in requests
        ]
        rows = self.sharded(name, chats, work, params)
        self.notes[f"{tag}_replies_cut_by_token_budget"] = sum(
            r["finish_reason"] == "length" for r in rows
        )
        return {r["key"]: r["reply"] for r in rows}

    # -- 1. passages -----------------------------------------------------------------------
    def passages(self) -> list[dict[str, Any]]:
        from hf_posbias.pipeline.corpus import read_corpus

        s = self.s
        folder = self.stages / "01-passages"
        params = {
            "corpus": str(s.corpus),
            "id_field": s.id_field,
            "text_field": s.text_field,
            "limit": s.limit,
            "min_words": s.min_words,
            "max_words": s.max_words,
            "cut_long": s.cut_long,
            "passages": s.passages,
            "seed": s.seed,
        }
        path = folder / "passages.parquet"
        report_path = folder / "drops.json"
        if self.proc.is_main:
            pin_parameters(folder, params, overwrite=s.overwrite)
            if not path.is_file():
                drops = recipe.DropCounts()
                records = read_corpus(s.corpus, s.id_field, s.text_field, limit=s.limit)
                rows = recipe.cut_passages(
                    records,
                    min_words=s.min_words,
                    max_words=s.max_words,
                    cut_long=s.cut_long,
                    drops=drops,
                )
                if s.passages is not None and s.passages < len(rows):
                    picked = sorted(random.Random(s.seed).sample(range(len(rows)), s.passages))
                    drops.add("not in the passage sample", len(rows) - s.passages)
                    rows = [rows[i] for i in picked]
                if not rows:
                    raise InputError(
                        f"{s.corpus}: no passage of {s.min_words}-{s.max_words} words "
                        f"(dropped: {drops.counts}); try {flag_name('cut_long')} for long documents"
                    )
                write_json(report_path, drops.counts)
                write_parquet(rows, path)
        from hf_posbias.shards import wait_for_everyone

        wait_for_everyone()
        self.drops["passages"] = read_json(report_path)
        return read_parquet_rows(path)

    # -- 2. summaries ----------------------------------------------------------------------
    def summaries(self, passages: list[dict[str, Any]]) -> dict[str, str]:
        s = self.s

        template = self.prompt("summary")
        replies = self.llm_stage(
            "02-summary",
            SUMMARY_SYSTEM,
            [(p["id"], template.format(title=p["title"], passage=p["text"])) for p in passages],
            prompt=fingerprint({"s": SUMMARY_SYSTEM, "p": str(template)}),
            source=fingerprint({"passages": [p["id"] for p in passages]}),
            max_tokens=s.summary_max_tokens,
            schema=SUMMARY_SCHEMA,
        )
        self.requests["summary"] = len(passages)
        out = {}
        for passage_id, reply in replies.items():
            summary = None if reply is None else _summary_of(reply, s.constrained)
            if summary:
                out[passage_id] = summary
            else:
                reason = "request failed" if reply is None else "no summary in the reply"
                self.drop("summary", f"passage without summary ({reason})")
        return out

    # -- 3. chunks -------------------------------------------------------------------------
    def chunks(self, passages: list[dict[str, Any]], summaries: dict[str, str]) -> list[dict]:
        chunks = []
        for p in passages:
            if p["id"] not in summaries:
                continue
            text = p["text"]
            for k, (start, end) in enumerate(recipe.split_recursive(text, self.s.chunk_words)):
                chunks.append(
                    {
                        "chunk_id": f"{p['id']}::c{k}",
                        "passage_id": p["id"],
                        "start": start,
                        "end": end,
                        "tags": recipe.position_tags(start, end, len(text), self.s.tagging),
                    }
                )
        folder = self.stages / "03-chunks"
        if self.proc.is_main:
            pin_parameters(
                folder,
                {
                    "chunk_words": self.s.chunk_words,
                    "separators": list(recipe.SEPARATORS),
                    **({"tagging": self.s.tagging} if self.s.tagging != "single" else {}),
                },
                overwrite=self.s.overwrite,
            )
            write_parquet(chunks, folder / "chunks.parquet")
        return chunks

    # -- 4. FAQ ----------------------------------------------------------------------------
    def faq(
        self, passages: list[dict[str, Any]], summaries: dict[str, str], chunks: list[dict]
    ) -> list[dict[str, Any]]:
        s = self.s
        text_of = {p["id"]: p["text"] for p in passages}
        schema = recipe.faq_schema(s.faq_max_items)

        template = self.prompt("faq")

        def request(c: dict[str, Any]) -> str:
            return template.format(
                summary=summaries[c["passage_id"]],
                chunk=text_of[c["passage_id"]][c["start"] : c["end"]],
                n=s.faq_max_items,
            )

        replies = self.llm_stage(
            "04-faq",
            FAQ_SYSTEM,
            [(c["chunk_id"], request(c)) for c in chunks],
            prompt=fingerprint({"s": FAQ_SYSTEM, "p": str(template), "schema": schema}),
            source=fingerprint({"chunks": chunks, "summaries": summaries}),
            max_tokens=s.faq_max_tokens,
            schema=schema,
        )
        self.requests["faq"] = len(chunks)
        by_chunk = {c["chunk_id"]: c for c in chunks}
        questions: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()
        for chunk_id, reply in replies.items():
            items = None if reply is None else recipe.parse_faq(reply)
            if not items:
                if reply is None:
                    reason = "request failed"
                else:
                    reason = "unparsed reply" if items is None else "no usable item"
                self.drop("faq", f"chunk without FAQ ({reason})")
                continue
            c = by_chunk[chunk_id]
            for k, item in enumerate(items):
                key = (c["passage_id"], item["question"].lower())
                if key in seen:
                    self.drop("faq", "question repeated within its passage")
                    continue
                seen.add(key)
                tags = list(c["tags"])
                for tag in tags:  # two tags (the "Myopic Trap" tagging): a row per tag
                    suffix = f"::{tag}" if len(tags) > 1 else ""
                    questions.append(
                        {
                            **item,
                            "qid": f"{c['chunk_id']}::q{k}{suffix}",
                            "passage_id": c["passage_id"],
                            "chunk_id": c["chunk_id"],
                            "start": c["start"],
                            "end": c["end"],
                            "tag": tag,
                        }
                    )
        self.record("faq", questions)
        return questions

    # -- 5. Stage 1, rerankers + downsampling ----------------------------------------------
    def prompt(self, stage: str) -> Any:
        """The prompt of ``stage`` (``summary``, ``faq``, ``judge``): the shipped one, or the
        user's prompt file (:mod:`hf_posbias.generation.prompt_files`)."""
        from hf_posbias.generation.prompt_files import stage_prompt
        from hf_posbias.verification.judge import RELEVANCE_0_4

        shipped = {"summary": SUMMARY_PROMPT, "faq": FAQ_PROMPT, "judge": RELEVANCE_0_4.template}
        return stage_prompt(getattr(self.s, f"{stage}_prompt_file"), stage, shipped[stage])

    def judge_prompt(self) -> Any:
        """The 0-4 relevance judge with the prompt of :meth:`prompt`."""
        from dataclasses import replace

        from hf_posbias.verification.judge import RELEVANCE_0_4

        return replace(RELEVANCE_0_4, template=self.prompt("judge"))

    def panel(self, stage: int = 1) -> RerankerPanel:
        """Stage 1's reranker panel, or Stage 2's (``--stage2-rerankers``, default the same)."""
        from hf_posbias.verification.panel import parse_panel

        spec = self.s.rerankers if stage == 1 else self.s.stage2_rerankers or self.s.rerankers
        return parse_panel(
            spec, batch_size=max(8, self.s.batch_size), trust_remote_code=self.s.trust_remote_code
        )

    def stage1_rerank(
        self, passages: list[dict[str, Any]], questions: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        text_of = {p["id"]: p["text"] for p in passages}

        def candidate(q: dict[str, Any]) -> dict[str, Any]:
            text = text_of[q["passage_id"]]
            return {
                "candidate_id": q["qid"],
                "query": q["question"],
                "target_position": q["tag"],
                "segments": [text[a:b] for a, b in recipe.third_spans(len(text))],
            }

        panel = self.panel()
        panel.prepare([candidate(q) for q in questions])

        def work(shard: list[dict[str, Any]]) -> list[dict[str, Any]]:
            scored = panel.score([candidate(q) for q in shard], progress=False)
            return [
                {
                    "qid": q["qid"],
                    "keep": recipe.stage1_reranker_keep(scored.normalized[i].tolist(), q["tag"]),
                    "scores": json.dumps(scored.normalized[i].tolist()),
                }
                for i, q in enumerate(shard)
            ]

        params = {
            "panel": panel.describe(),
            "input": fingerprint({"q": [(q["qid"], q["question"]) for q in questions]}),
        }
        rows = self.sharded("05-stage1-rerank", questions, work, params)
        keep = {r["qid"] for r in rows if r["keep"]}
        kept = [q for q in questions if q["qid"] in keep]
        self.drop(
            "stage1_rerankers", "a reranker ranks another segment first", len(questions) - len(kept)
        )
        self.record("stage1_rerankers", kept)
        sampled = recipe.downsample(kept, self.s.seed)
        self.drop(
            "stage1_downsample", "downsampled to the smallest position", len(kept) - len(sampled)
        )
        self.record("stage1_downsample", sampled)
        return list(sampled)

    # -- 6. Stage 1, LLM judge -------------------------------------------------------------
    def stage1_judge(
        self, passages: list[dict[str, Any]], questions: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        from hf_posbias.verification.judge import judge_pairs

        s = self.s
        text_of = {p["id"]: p["text"] for p in passages}
        judge = self.judge_prompt()
        judge_model = s.judge_model or s.llm_model

        def work(shard: list[dict[str, Any]]) -> list[dict[str, Any]]:
            pairs = []
            for q in shard:
                text = text_of[q["passage_id"]]
                pairs.extend((q["question"], text[a:b]) for a, b in recipe.third_spans(len(text)))
            verdicts = judge_pairs(
                self.backend(judge_model),
                judge,
                pairs,
                seed=s.seed,
                temperature=s.judge_temperature,
                batch_size=s.batch_size,
                constrained=s.constrained,
                progress=False,
            )
            k = len(POSITIONS)
            return [
                {"qid": q["qid"], "scores": json.dumps(verdicts.values[i * k : (i + 1) * k])}
                for i, q in enumerate(shard)
            ]

        params = {
            "llm": self.llm_params(judge_model),
            "prompt": fingerprint({"t": str(judge.template), "s": judge.schema}),
            "temperature": s.judge_temperature,
            "constrained": s.constrained,
            "seed": s.seed,
            "input": fingerprint({"q": [q["qid"] for q in questions]}),
        }
        rows = self.sharded("06-stage1-judge", questions, work, params)
        self.requests["stage1_judge"] = len(POSITIONS) * len(questions)
        scores = {r["qid"]: json.loads(r["scores"]) for r in rows}
        kept = []
        for q in questions:
            grades = scores[q["qid"]]
            missing = sum(g is None for g in grades)
            self.drop("stage1_judge", "judge reply outside 0-4 (segment grades)", missing)
            if missing:
                self.drop("stage1_judge", "question with a grade outside 0-4")
            elif recipe.stage1_judge_keep(grades, q["tag"], s.judge_min_score, s.judge_min_gap):
                kept.append({**q, "judge_scores": grades})
            else:
                self.drop("stage1_judge", "labelled segment not graded clearly best")
        self.record("stage1_judge", kept)
        return kept

    # -- 7./8. Stage 2, false negatives ----------------------------------------------------
    def stage2(
        self, passages: list[dict[str, Any]], questions: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        from hf_posbias.modeling import load_sentence_transformer

        s = self.s
        texts = [p["text"] for p in passages]
        ids = [p["id"] for p in passages]
        relevance = self.judge_prompt()
        panel = self.panel(stage=2)
        panel.prepare([{"segments": texts}])  # BM25 statistics over the whole corpus
        k = min(s.recall_k, len(passages))
        encoder: list[Any] = []
        doc_emb: list[np.ndarray] = []

        def work(shard: list[dict[str, Any]]) -> list[dict[str, Any]]:
            if not encoder:
                encoder.append(load_sentence_transformer(s.embedder))
                doc_emb.append(
                    encoder[0].encode(
                        texts,
                        batch_size=s.batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                    )
                )
            q_emb = encoder[0].encode(
                [q["question"] for q in shard],
                batch_size=s.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
            )
            sims = q_emb @ doc_emb[0].T
            recalled = []
            for i, q in enumerate(shard):
                top = [int(j) for j in np.argsort(-sims[i], kind="stable")[:k]]
                recalled.append([j for j in top if ids[j] != q["passage_id"]])
            positives, _ = stage2_prelabel(
                panel,
                [q["question"] for q in shard],
                [[texts[j] for j in others] for others in recalled],
                s.prelabel_threshold,
            )
            return [
                {
                    "qid": q["qid"],
                    "recalled": len(others),
                    "positives": json.dumps([ids[others[c]] for c in positive]),
                }
                for q, others, positive in zip(shard, recalled, positives)
            ]

        params = {
            "embedder": s.embedder,
            "recall_k": s.recall_k,
            "panel": panel.describe(),
            "threshold": s.prelabel_threshold,
            "input": fingerprint({"q": [q["qid"] for q in questions], "p": ids}),
        }
        recall = self.sharded("07-stage2-recall", questions, work, params)
        pairs = [(r["qid"], pid) for r in recall for pid in json.loads(r["positives"])]
        question_of = {q["qid"]: q for q in questions}
        text_of = dict(zip(ids, texts))
        judges = s.judge_models
        # Identical judges decoding greedily give identical grades: ask each model once.
        asked = list(dict.fromkeys(judges)) if s.judge_temperature == 0 else judges

        def judge(shard: list[tuple[str, str]]) -> list[dict[str, Any]]:
            from hf_posbias.verification.judge import judge_pairs

            grades: list[list[Any]] = []
            for j, model in enumerate(asked):
                verdicts = judge_pairs(
                    self.backend(model),
                    relevance,
                    [(question_of[qid]["question"], text_of[pid]) for qid, pid in shard],
                    seed=s.seed + j,
                    temperature=s.judge_temperature,
                    batch_size=s.batch_size,
                    constrained=s.constrained,
                    progress=False,
                )
                grades.append(verdicts.values)
            by_model = dict(zip(asked, grades)) if len(asked) < len(judges) else None
            return [
                {
                    "qid": qid,
                    "passage_id": pid,
                    "scores": json.dumps(
                        [by_model[m][i] for m in judges] if by_model else [g[i] for g in grades]
                    ),
                }
                for i, (qid, pid) in enumerate(shard)
            ]

        judge_params = {
            "judges": [self.llm_params(m) for m in judges],
            "prompt": fingerprint({"t": str(relevance.template), "s": relevance.schema}),
            "temperature": s.judge_temperature,
            "constrained": s.constrained,
            "seed": s.seed,
            "input": fingerprint({"pairs": pairs}),
        }
        judged = self.sharded("08-stage2-judges", pairs, judge, judge_params) if pairs else []
        self.requests["stage2_judges"] = len(pairs) * len(asked)
        self.requests["stage2_reranker_pairs"] = sum(int(r["recalled"]) for r in recall) * len(
            panel.members
        )
        flagged = set()
        for row in judged:
            grades = json.loads(row["scores"])
            self.drop(
                "stage2_false_negatives", "judge reply outside 0-4", sum(g is None for g in grades)
            )
            if recipe.false_negative(grades, s.fn_min_score, s.fn_min_votes):
                flagged.add(row["qid"])
        kept = [q for q in questions if q["qid"] not in flagged]
        self.drop(
            "stage2_false_negatives", "question with a confirmed false negative", len(flagged)
        )
        self.record("stage2_false_negatives", kept)
        return kept


def stage2_prelabel(
    panel: RerankerPanel,
    questions: Sequence[str],
    passages: Sequence[Sequence[str]],
    threshold: float,
    progress: bool = False,
) -> tuple[list[list[int]], np.ndarray]:
    """Stage 2's reranker pre-label: which recalled passages a panel majority calls positive.

    All pairs of all questions go to the panel at once (each unique pair scored once per
    member, batched by length across questions); each member's raw score is normalised per
    pair (:data:`_NORMALIZATION_FOR_PAIRS`), and :func:`recipe.prelabel_positive` votes.

    Args:
        panel: the rerankers (BM25 members already fitted on the corpus).
        questions: one text per question.
        passages: per question, the texts of its recalled passages.
        threshold: the normalised score a member's vote needs.
        progress: show the panel's progress bars.

    Returns:
        ``(positives, normalized)``: per question, the indices into its ``passages`` that are
        pre-labelled positive; ``normalized[r, j]`` is member r's score of the j-th pair in
        question-then-passage order.

    Example:
        >>> from hf_posbias.verification.panel import parse_panel
        >>> panel = parse_panel("bm25@saturate")
        >>> passages = ["owls nest in old trees", "fish swim in rivers", "lions hunt at dusk"]
        >>> panel.prepare([{"segments": passages}])
        >>> positives, norm = stage2_prelabel(panel, ["where do owls nest"], [passages], 0.4)
        >>> positives, norm.shape, bool(norm[0, 0] >= 0.4 > norm[0, 1])
        ([[0]], (1, 3), True)
    """
    from hf_posbias.verification.members import member_saturation, normalize_scores

    raw, _ = panel.pair_scores(
        [q for q, texts in zip(questions, passages) for _ in texts],
        [t for texts in passages for t in texts],
        progress,
    )
    normalized = np.empty_like(raw)
    for r, member in enumerate(panel.members):
        method = _NORMALIZATION_FOR_PAIRS.get(member.normalization, member.normalization)
        normalized[r] = normalize_scores(
            raw[r].reshape(-1, 1), method, member_saturation(member)
        ).reshape(-1)
    positives: list[list[int]] = []
    start = 0
    for texts in passages:
        block = normalized[:, start : start + len(texts)]
        positives.append(
            [c for c in range(len(texts)) if recipe.prelabel_positive(block[:, c], threshold)]
        )
        start += len(texts)
    return positives, normalized


def _task(
    settings: BenchmarkBuildSettings,
    passages: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    extra: dict[str, Any],
    tiny: bool,
) -> PositionTaskData:
    from hf_posbias.tasks.builders.common import TaskAssembler
    from hf_posbias.tasks.positions import THIRDS
    from hf_posbias.tasks.taskdata import TaskInfo

    asm = TaskAssembler(THIRDS, source=str(settings.corpus))
    for p in passages:
        asm.add_document(p["id"], p["text"], p["title"])
    for q in questions:
        asm.add_query(
            q["qid"], q["question"], [q["passage_id"]], q["start"], q["end"], bucket=q["tag"]
        )
    info = TaskInfo(
        name=settings.task_name + ("-tiny" if tiny else ""),
        description=(
            "Position-labelled questions built with Z25's FineWeb-PosQ recipe "
            f"(posbias benchmark build) from {settings.corpus}"
        ),
        buckets=list(POSITIONS),
        source=str(settings.corpus),
        reference="https://arxiv.org/abs/2505.13950",
    )
    return asm.finish(info, extra=extra)


def _hub_card(
    settings: BenchmarkBuildSettings, construction: list[dict[str, Any]], counts: dict
) -> str:
    from hf_posbias.publish.repo import front_matter_yaml, size_category

    header = front_matter_yaml(
        ["queries", "corpus", "qrels", "queries_tiny"],
        split=HUB_SPLIT,
        default_config="queries",
        language=["en"],
        task_categories=["text-retrieval"],
        size_categories=[size_category(sum(counts.values()))],
        pretty_name=settings.task_name,
        tags=["position-bias", "retrieval", "synthetic"],
    )
    return (
        f"---\n{header}---\n# {settings.task_name}\n\n"
        "Questions labelled by where their evidence sits in the passage (begin / middle / end), "
        "built with Z25's FineWeb-PosQ recipe by `posbias benchmark build` (hf-posbias).\n\n"
        f"Source corpus: `{settings.corpus}`. LLM: `{settings.llm_model}` "
        f"({settings.llm_backend}); rerankers: `{settings.rerankers}`; embedder: "
        f"`{settings.embedder}`; false-negative judges: `{settings.fn_judges}`.\n\n"
        "## Construction\n\nQuestions per position after each step:\n\n"
        f"{construction_markdown(construction)}\n\n"
        "Each query's `evidence_start`/`evidence_end` are the character span of the chunk it was "
        "generated from; its bucket is Algorithm 1's tag on character offsets.\n"
    )


def build_benchmark(settings: BenchmarkBuildSettings) -> dict[str, Any]:
    """Run every stage (resuming finished shards) and write the task, tiny task and Hub folder.

    Returns the build report (``construction``, drops per stage, LLM requests, wall time).
    """
    from hf_posbias.publish.repo import write_dataset_repo

    started = time.monotonic()
    run = _Build(settings)
    passages = run.passages()
    summaries = run.summaries(passages)
    chunks = run.chunks(passages, summaries)
    questions = run.faq(passages, summaries, chunks)
    questions = run.stage1_rerank(passages, questions)
    questions = run.stage1_judge(passages, questions)
    questions = run.stage2(passages, questions)
    tiny, short = recipe.tiny_sample(questions, settings.tiny_size, settings.seed)
    run.warnings.extend(short)
    run.record("tiny", tiny)
    report = {
        "construction": run.construction,
        "passages": len(passages),
        "chunks": len(chunks),
        "dropped": run.drops,
        "llm_requests": run.requests,
        "notes": run.notes,
        "warnings": run.warnings,
        "seconds": round(time.monotonic() - started, 1),
    }
    if not run.proc.is_main:
        return report
    if not questions:
        raise InputError(
            f"no question survived the recipe (construction: {run.construction}); "
            "see the drops in the stage folders"
        )
    from hf_posbias.settings import settings_record

    extra = {"construction": run.construction, "settings": settings_record(settings)}
    data = _task(settings, passages, questions, extra, tiny=False)
    folder = data.save(settings.out)
    write_json(folder / "construction.json", run.construction)
    write_json(folder / "build_report.json", report)
    if tiny:
        _task(settings, passages, list(tiny), extra, tiny=True).save(folder / "tiny")
    tiny_ids = {q["qid"] for q in tiny}
    write_dataset_repo(
        settings.hub_dir,
        {
            "queries": data.queries,
            "corpus": data.corpus,
            "qrels": data.qrels,
            "queries_tiny": [q for q in data.queries if q["id"] in tiny_ids],
        },
        _hub_card(settings, run.construction, data.bucket_counts()),
        split=HUB_SPLIT,
        overwrite=True,
    )
    return report
