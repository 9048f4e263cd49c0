"""Publish a study: every checkpoint as ``ORG/posbias-<base>-<config>``, the results as a dataset.

1. each trained checkpoint's card (``README.md``, rendered by
   :func:`hf_posbias.cards.checkpoint.write_checkpoint_card`) gets its evaluation results — nDCG@10
   per position, mean and PSI with their 95% intervals, per task — as ``model-index`` metadata the
   Hub renders, and the folder is uploaded to ``ORG/posbias-<base>-<config>``
   (:func:`hf_posbias.training.card.hub_repo_name`);
   then its evaluations on Hub benchmarks go to the repo's ``.eval_results``
   (:func:`push_eval_results`), where the Hub shows them on the model page and the
   benchmark's board;
2. the results become a dataset repo folder ``<out>/hub/results`` (``write_dataset_repo``:
   configs ``cells`` — one row per task × model × configuration, the report's numbers —,
   ``psi_reductions`` and ``per_query`` — every per-query row with its task, model and
   configuration), its card holding the report's tables; uploaded to
   ``ORG/posbias-study-results``. ``load_dataset(<out>/hub/results, "cells")`` reads it back.

Uploads go through :func:`hf_posbias.hub.upload_folder` (tests patch ``HfApi``).

Example:
    >>> cell = {"task": "T", "config": "uniform", "model": "m", "per_position": {"begin": 0.5},
    ...         "mean": 0.5, "psi": 0.1, "ci": {"per_position": {"begin": [0.4, 0.6]},
    ...         "mean": [0.4, 0.6], "psi": [0.0, 0.2]}}
    >>> [m["type"] for m in model_index_metrics(cell)][::3]
    ['ndcg_at_10', 'psi', 'ndcg_at_10_begin']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS_REPO = "posbias-study-results"
HUB_DIRNAME = "hub"


def _metric(kind: str, value: float | None, name: str, interval: Sequence[float] | None) -> list:
    if value is None:
        return []
    out = [{"type": kind, "value": round(float(value), 6), "name": name}]
    if interval:
        out.append({"type": f"{kind}_ci_low", "value": round(float(interval[0]), 6),
                    "name": f"{name}, 95% CI low"})  # fmt: skip
        out.append({"type": f"{kind}_ci_high", "value": round(float(interval[1]), 6),
                    "name": f"{name}, 95% CI high"})  # fmt: skip
    return out


def model_index_metrics(cell: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``metrics`` of one task's ``model-index`` result: mean, PSI, every position."""
    ci = cell["ci"]
    metrics = _metric("ndcg_at_10", cell["mean"], "nDCG@10 (mean over positions)", ci["mean"])
    metrics += _metric("psi", cell["psi"], "Position Sensitivity Index", ci["psi"])
    for position, value in cell["per_position"].items():
        metrics += _metric(
            f"ndcg_at_10_{position}",
            value,
            f"nDCG@10 at {position}",
            ci["per_position"][position],
        )
    return metrics


def model_index_yaml(name: str, cells: Sequence[Mapping[str, Any]]) -> str:
    """The ``model-index:`` block of a card (one result per task)."""
    import yaml

    results = [
        {
            "task": {"type": "retrieval", "name": "Position-bucketed retrieval"},
            "dataset": {"name": cell["task"], "type": cell["task"]},
            "metrics": model_index_metrics(cell),
        }
        for cell in cells
    ]
    block = yaml.safe_dump(
        {"model-index": [{"name": name, "results": results}]}, sort_keys=False, allow_unicode=True
    )
    return block.rstrip("\n")


def add_results_to_card(folder: str | Path, repo_name: str, cells: Sequence[Mapping]) -> Path:
    """Re-render a checkpoint's card with its study results (body table + ``model-index``)."""
    from hf_posbias.cards.checkpoint import write_checkpoint_card
    from hf_posbias.training.card import BI_ENCODER_CARD

    first = cells[0]
    evaluation = {
        "benchmark": ", ".join(c["task"] for c in cells),
        "ndcg_at_10": first["per_position"],
        "psi": first["psi"] if first["psi"] is not None else float("nan"),
        "notes": f"Per-position scores above: {first['task']}. All tasks with 95% bootstrap "
        "intervals are in the model-index metadata.",
        "model_index": model_index_yaml(repo_name.split("/")[-1], cells),
    }
    return write_checkpoint_card(BI_ENCODER_CARD, folder, evaluation=evaluation)


def write_results_repo(out: str | Path) -> Path:
    """The study's results as a Hub dataset repo folder ``<out>/hub/results``."""
    from hf_posbias.evaluation.runs.exports import read_per_query
    from hf_posbias.publish.repo import front_matter_yaml, write_dataset_repo
    from hf_posbias.study.report import read_report

    root = Path(out)
    report = read_report(root)
    cells = []
    per_query: list[dict[str, Any]] = []
    for cell in report["cells"]:
        keys = {k: cell[k] for k in ("task", "model", "config")}
        keys["pooling"] = cell["pooling"] or ""
        cells.append(
            {
                **keys,
                "mean": cell["mean"],
                "mean_ci_low": cell["ci"]["mean"][0],
                "mean_ci_high": cell["ci"]["mean"][1],
                "psi": cell["psi"],
                "psi_ci_low": (cell["ci"]["psi"] or [None, None])[0],
                "psi_ci_high": (cell["ci"]["psi"] or [None, None])[1],
                "per_position": json.dumps(cell["per_position"]),
                "per_position_ci": json.dumps(cell["ci"]["per_position"]),
                "n_queries": json.dumps(cell["n_queries"]),
            }
        )
        for row in read_per_query(root / cell["per_query"]):
            per_query.append(
                {
                    **keys,
                    "query_id": str(row["query_id"]),
                    "bucket": str(row["bucket"]),
                    "ndcg_at_10": float(row["ndcg_at_10"]),
                }
            )
    reductions = [
        {**r, "pooling": r["pooling"] or "", "ci_low": r["ci"][0], "ci_high": r["ci"][1]}
        for r in report["psi_reductions"]
    ]
    for r in reductions:
        r.pop("ci")
    configs: dict[str, list[dict[str, Any]]] = {"cells": cells, "per_query": per_query}
    if reductions:
        configs["psi_reductions"] = reductions
    body = (root / "report" / "report.md").read_text()
    body = "\n".join(line for line in body.splitlines() if not line.startswith("!["))
    header = front_matter_yaml(
        list(configs),
        default_config="cells",
        tags=["position-bias", "hf-posbias", "retrieval"],
        pretty_name="hf-posbias study results",
    )
    card = f"---\n{header}---\n\n{body}\n"
    return write_dataset_repo(root / HUB_DIRNAME / "results", configs, card, overwrite=True)


def push_eval_results(out: str | Path, model: str, repo_id: str, token: str) -> list[str]:
    """Send a checkpoint's evaluations to its model repo's ``.eval_results`` (one entry per task
    id of each Hub benchmark it was evaluated on:
    :func:`hf_posbias.evaluation.reports.hub_results.push_results`, the folder kept under
    ``<out>/hub/eval-results/<model>``); tasks read from folders built here have no benchmark
    repo to name and are listed as left out. One line each."""
    from hf_posbias.evaluation.reports.hub_results import push_results, split_pushable
    from hf_posbias.evaluation.summary import read_summaries

    runs = sorted((Path(out) / "eval" / model).glob("*/summary.json"))
    pushable, skipped = split_pushable([s for run in runs for s in read_summaries(run)])
    lines = []
    if pushable:
        url = push_results(
            pushable,
            repo_id,
            command=f"posbias study run (spec: {Path(out).name}/study.json)",
            folder=Path(out) / HUB_DIRNAME / "eval-results" / model,
            token=token,
        )
        lines.append(f"pushed {model}'s .eval_results ({len(pushable)} task(s)) → {url}")
    if skipped:
        lines.append(
            f"{model}: not sent to the Hub's benchmark boards: {', '.join(skipped)} (evaluated "
            "from task folders built here, or under another scoring)"
        )
    return lines


def publish_study(out: str | Path, org: str, token: str | None = None) -> list[str]:
    """Push every trained checkpoint (card with results) and the results dataset; one line each."""
    from hf_posbias.hub import resolve_token, upload_folder
    from hf_posbias.study.layout import base_label, study_models
    from hf_posbias.study.report import read_report
    from hf_posbias.study.spec import spec_from_folder
    from hf_posbias.training.card import hub_repo_name

    token = resolve_token(token, purpose=f"hub_org {org}", flag="--hub-token")
    spec = spec_from_folder(out)
    cells = read_report(out)["cells"]
    lines = []
    for model in study_models(spec, out):
        if not model.trained:
            continue
        label = base_label(model.base)
        config = model.config if not model.pooling else f"{model.config}-{model.pooling}"
        mine = [
            c
            for c in cells
            if c["model"] == label and c["config"] == model.config
            and (c["pooling"] or None) in (None, model.pooling)
        ]  # fmt: skip
        repo_id = hub_repo_name(org, label, config)
        add_results_to_card(model.folder, repo_id, mine)
        url = upload_folder(
            model.folder,
            repo_id,
            repo_type="model",
            token=token,
            commit_message="posbias study: checkpoint, card and evaluation results",
        )
        lines.append(f"pushed {model.name} → {url}")
        lines += push_eval_results(out, model.name, repo_id, token)
    folder = write_results_repo(out)
    url = upload_folder(
        folder,
        f"{org}/{RESULTS_REPO}",
        repo_type="dataset",
        token=token,
        commit_message="posbias study: results (cells, PSI reductions, per-query tables)",
    )
    lines.append(f"pushed the results → {url}")
    return lines
