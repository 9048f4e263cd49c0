"""Z25's FineWeb-PosQ recipe end to end, as resumable sharded stages (``posbias benchmark
from-corpus``).

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

Outputs (:mod:`~hf_posbias.construction.outputs`): the task folder
(``corpus/queries/qrels.parquet``, ``task.json``, ``construction.json``, ``build_report.json``),
``<out>/tiny`` (the tiny task), and the Hub dataset repo folder (default ``<out>-hub``) whose card
carries the construction table. The LLM prompts are in :mod:`~hf_posbias.construction.prompts`,
Stage 2's reranker pre-label in :mod:`~hf_posbias.construction.prelabel`.

Example:
    >>> from hf_posbias.construction.outputs import construction_markdown
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

from hf_posbias.construction import recipe
from hf_posbias.construction.outputs import (
    write_outputs,
)
from hf_posbias.construction.prelabel import stage2_prelabel
from hf_posbias.construction.prompts import (
    FAQ_SYSTEM,
    SUMMARY_SCHEMA,
    SUMMARY_SYSTEM,
    relevance_judge,
    stage_prompt,
    summary_of,
)
from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS
from hf_posbias.rows.readers import read_json, read_parquet_rows
from hf_posbias.settings import flag_name
from hf_posbias.shards import (
    fingerprint,
    pin_parameters,
    process_info,
    run_sharded,
    write_json,
    write_parquet,
)

if TYPE_CHECKING:
    from hf_posbias.generation.backends import ChatBackend
    from hf_posbias.verification.panel import RerankerPanel

__all__ = ["build_benchmark"]
"""Besides :func:`build_benchmark`, the names this module held before the split (the prompts,
the construction table, the Stage 2 pre-label): their old path keeps importing."""

logger = logging.getLogger(__name__)


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
        from hf_posbias.corpus.sources import read_corpus

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

        template = stage_prompt(self.s, "summary")
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
            summary = None if reply is None else summary_of(reply, s.constrained)
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

        template = stage_prompt(self.s, "faq")

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
        judge = relevance_judge(self.s)
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
        from hf_posbias.modeling.loaders import load_sentence_transformer

        s = self.s
        texts = [p["text"] for p in passages]
        ids = [p["id"] for p in passages]
        relevance = relevance_judge(self.s)
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


def build_benchmark(settings: BenchmarkBuildSettings) -> dict[str, Any]:
    """Run every stage (resuming finished shards) and write the task, tiny task and Hub folder.

    Returns the build report (``construction``, drops per stage, LLM requests, wall time).
    """
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
    write_outputs(settings, passages, questions, tiny, report)
    return report
