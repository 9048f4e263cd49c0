"""The first stage on its own: Q26 Table 2's first-stage rows (its "first-stage retriever
effectiveness" block).

:func:`run_first_stage_eval` lists every selected judged query's first-stage top-k — the very
lists every reranker of the same dataset, first stage, k and queries reorders
(:func:`~hf_posbias.listwise.experiments.lists.first_stage_lists`, cached in
``first_stage.json`` under the same key) — and scores the first stage's own order: nDCG@10 per
query (``per_query.jsonl``) and its mean (``first_stage_eval.json``). nDCG@10 reads the top 10
only, so with k ≥ 10 a top-k list scores exactly as the first stage's whole ranking does; the
file records k.

Example:
    >>> import tempfile
    >>> from hf_posbias.listwise.experiments.experiment_settings import FirstStageEvalSettings
    >>> from hf_posbias.tasks.beir import write_beir_folder
    >>> docs = {"d1": ("", "cats purr"), "d2": ("", "dogs bark"), "d3": ("", "cows moo")}
    >>> folder = write_beir_folder(tempfile.mkdtemp(), docs, {"q": "why do dogs bark"},
    ...                            {"q": {"d2": 1}})
    >>> s = FirstStageEvalSettings(task=str(folder), k=3, out=tempfile.mkdtemp(), progress=False)
    >>> run_first_stage_eval(s)["ndcg_at_10"]
    1.0
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hf_posbias.listwise.experiments.experiment_settings import FirstStageEvalSettings

EVAL_FILE = "first_stage_eval.json"
"""The summary a first-stage evaluation writes beside ``per_query.jsonl``."""


def run_first_stage_eval(settings: FirstStageEvalSettings) -> dict[str, Any]:
    """List and score the first stage (see the module docstring); the summary's payload.
    Resumable as every listwise run: the lists are cached in ``first_stage.json``."""
    from hf_posbias.listwise.experiments.lists import (
        describe_lists,
        first_stage_lists,
        select_queries,
    )
    from hf_posbias.listwise.experiments.runs import first_stage_ndcg, write_jsonl
    from hf_posbias.listwise.experiments.taskio import check_split_queries, load_rerank_task
    from hf_posbias.shards import write_json

    s = settings
    task = load_rerank_task(s.task, s.split)
    check_split_queries(Path(s.task).name, task.split, len(task.judged_queries()))
    out = Path(s.out)
    out.mkdir(parents=True, exist_ok=True)
    query_ids = select_queries(task, s.max_queries, s.seed)
    lists = first_stage_lists(
        task, query_ids, s.first_stage, s.k, out,
        show_progress=s.progress, **s.first_stage_options(),
    )  # fmt: skip
    scores = first_stage_ndcg(lists, task.qrels)
    payload = {
        "task": task.name,
        "split": task.split,
        "first_stage": s.first_stage,
        **({"first_stage_options": s.first_stage_options()} if s.first_stage_options() else {}),
        "k": s.k,
        "seed": s.seed,
        "ndcg_at_10": sum(scores.values()) / len(scores),
        **describe_lists(lists),
    }
    write_jsonl(
        out / "per_query.jsonl", [{"query_id": q, "ndcg_at_10": v} for q, v in scores.items()]
    )
    write_json(out / EVAL_FILE, payload)
    return payload
