"""``posbias analyze remedies``: the plain bi-encoder and each inference-time remedy on the same
queries.

Per task, one row per remedy (``none`` first): mean nDCG@10, PSI, the harmonic mean of the
per-position scores, Δ mean against ``none`` with a paired p-value
(:func:`hf_posbias.evaluation.compare.compare_runs`), and the cost measured in the same
run
(tokens through the model, seconds of the evaluation).

Example:
    >>> from hf_posbias.evaluation.summary import EvaluationSummary
    >>> s = EvaluationSummary.from_scores("m", "T", ["a", "b"], {"a": .5, "b": 1.0},
    ...                                   n_queries={"a": 1, "b": 1})
    >>> sorted(remedy_row("none", s, 10))[:3]
    ['delta_mean', 'encoded_tokens', 'harmonic_mean']
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.figures import save_figure

if TYPE_CHECKING:
    from hf_posbias.evaluation.evaluation_settings import RemediesSettings


RUN_MARKER = "remedy-run.json"
"""Written in a run folder once its evaluation finished: the settings it ran with (a rerun of
``posbias analyze remedies`` with the same settings reuses the folder instead of encoding again)."""


def encoded_tokens(summary: Any) -> int | None:
    """Tokens a bi-encoder run fed through the model, from its summary: the queries (the
    encoder's count) plus, under a remedy, every passage (the remedy's count); ``None`` when
    the run has no encoder counts (BM25).

    Example:
        >>> from types import SimpleNamespace
        >>> encoded_tokens(SimpleNamespace(encode_stats={"tokens_encoded": 40},
        ...                                search_stats={"document_tokens": 900}))
        940
    """
    if not summary.encode_stats:
        return None
    tokens = int(summary.encode_stats.get("tokens_encoded", 0))
    return tokens + int((summary.search_stats or {}).get("document_tokens", 0))


def remedy_row(
    remedy: str, summary: Any, encoded_tokens: int | None, comparison: Any = None
) -> dict[str, Any]:
    """One row of ``remedies.json``: quality, bias, Δ against no remedy, and cost.

    Example:
        >>> from hf_posbias.evaluation.summary import EvaluationSummary
        >>> s = EvaluationSummary.from_scores("m", "T", ["a", "b"], {"a": .5, "b": 1.0},
        ...                                   n_queries={"a": 1, "b": 1})
        >>> row = remedy_row("none", s, 100)
        >>> row["remedy"], round(row["harmonic_mean"], 4), row["delta_mean"]
        ('none', 0.6667, None)
    """
    from hf_posbias.statistics.psi import harmonic_mean

    harmonic = summary.harmonic_mean
    values = list(summary.ndcg_at_10.values())
    if harmonic is None and values and None not in values:
        harmonic = harmonic_mean(values)
    return {
        "remedy": remedy,
        "mean": summary.mean,
        "psi": summary.psi,
        "harmonic_mean": harmonic,
        "delta_mean": None if comparison is None else comparison.mean.delta,
        "p_value": None if comparison is None else comparison.mean.p_value,
        "encoded_tokens": encoded_tokens,
        "seconds": summary.evaluation_time_s,
    }


def plot_psi_against_cost(
    rows: list[dict[str, Any]],
    path: str | Path,
    title: str,
    *,
    cost: str = "encoded_tokens",
    cost_label: str = "encoded tokens (documents + queries)",
) -> Path:
    """A PNG of PSI (y) against the ``cost`` column (x), one labelled point per remedy
    (``posbias analyze remedies``: encoded tokens; ``posbias listwise reranker-remedies``:
    windows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for row in rows:
        if row["psi"] is None or row[cost] is None:
            continue
        ax.scatter(row[cost], row["psi"])
        ax.annotate(row["remedy"], (row[cost], row["psi"]), fontsize=8)
    ax.set_xlabel(cost_label)
    ax.set_ylabel("PSI (lower = less position bias)")
    ax.set_title(title, fontsize=9)
    return save_figure(fig, path, tight_layout=True, dpi=120)


def run_settings(settings: RemediesSettings, remedy: str, model: Any, task: Any) -> dict[str, Any]:
    """What one remedy run's results depend on (kept in its :data:`RUN_MARKER`): the model and
    task (with their revisions), the evaluation settings, and the settings the remedy reads.

    Example:
        >>> from types import SimpleNamespace
        >>> from hf_posbias.evaluation.evaluation_settings import RemediesSettings
        >>> s = RemediesSettings(model="m", task=("t",), out="o", stride=32)
        >>> model = SimpleNamespace(name="m", revision="r1")
        >>> task = SimpleNamespace(metadata=SimpleNamespace(name="T", revision="t1"))
        >>> "stride" in run_settings(s, "none", model, task), run_settings(s, "maxp", model,
        ...     task)["stride"]
        (False, 32)
    """
    record = {
        "model": settings.model,
        "model_name": model.name,
        "model_revision": model.revision,
        "task": task.metadata.name,
        "task_revision": task.metadata.revision,
        "scoring": settings.scoring,
        "top_k": settings.top_k,
        "bootstrap": settings.bootstrap,
        "seed": settings.seed,
        "remedy": remedy,
    }
    return record | settings.remedy_settings(remedy).read_settings


def _finished_run(folder: Path, record: dict[str, Any]) -> Any:
    """The summary of a run folder that finished with exactly these settings, else ``None``."""
    from hf_posbias.evaluation.summary import EvaluationSummary
    from hf_posbias.rows.readers import read_json

    marker, summary = folder / RUN_MARKER, folder / "summary.json"
    if not (marker.exists() and summary.exists()) or read_json(marker) != record:
        return None
    return EvaluationSummary.from_dict(read_json(summary))


def compare_remedies(
    settings: RemediesSettings, echo: Any = None
) -> dict[str, list[dict[str, Any]]]:
    """``posbias analyze remedies``: the plain model and every remedy on each task, with their cost.

    The model is loaded once; every remedy is checked against it before anything is encoded.
    Each run goes to ``<out>/runs/<task>/<remedy>`` (a ``posbias evaluate`` folder). A rerun
    reuses every run that finished with the same settings (:func:`run_settings`, kept in its
    :data:`RUN_MARKER`) and its measured cost, and re-evaluates the others (``echo`` says
    which); so a killed comparison resumes at the run it was in, and adding a remedy costs
    that remedy only. Per task,
    ``<out>/<task>/remedies.json`` (rows of :func:`remedy_row`), ``remedies.md`` and (with
    ``plot``) ``remedies.png``. Δ and the p-value are paired against ``none`` on the same
    queries (:func:`hf_posbias.evaluation.compare.compare_runs`).

    Returns:
        ``{task name: rows}``.
    """
    from dataclasses import replace

    from hf_posbias.evaluation.compare import compare_runs
    from hf_posbias.evaluation.runs.exports import safe_name
    from hf_posbias.evaluation.runs.mteb_models import load_mteb_model, with_remedy
    from hf_posbias.evaluation.runs.runner import evaluate_model, load_tasks
    from hf_posbias.progress import progress
    from hf_posbias.shards import write_json, write_text_atomic
    from hf_posbias.tables import as_table

    s = settings
    tasks = load_tasks(s.task, scoring=s.scoring, top_k=s.top_k)
    base = load_mteb_model(s.model, device=s.device)
    names = ["none", *s.remedies]
    # Every remedy's settings are checked against the model before the first encoding.
    for name in names:
        with_remedy(base, replace(s, remedy=name))
    out = Path(s.out)
    results: dict[str, list[dict[str, Any]]] = {}
    bar = progress(
        total=len(tasks) * len(names), desc="remedies", unit="run", disable=not s.progress
    )
    for task in tasks:
        task_name = task.metadata.name
        runs = out / "runs" / safe_name(task_name)
        rows = []
        for name in names:
            record = run_settings(s, name, base, task)
            summary = _finished_run(runs / name, record)
            if summary is None:
                if (runs / name).exists() and echo is not None:
                    echo(f"{task_name}/{name}: evaluating again (unfinished or other settings)")
                loaded = with_remedy(base, replace(s, remedy=name))
                (runs / name / RUN_MARKER).unlink(missing_ok=True)
                kwargs = dict(s.evaluate_kwargs(), out=runs / name)
                [summary] = evaluate_model(loaded, [task], **kwargs)
                write_json(runs / name / RUN_MARKER, record)
            elif echo is not None:
                echo(f"{task_name}/{name}: reusing the finished run in {runs / name}")
            comparison = None
            if name != "none":
                [paired] = compare_runs(runs / "none", runs / name, seed=s.seed)
                comparison = paired.comparison
            rows.append(remedy_row(name, summary, encoded_tokens(summary), comparison))
            bar.update(1)
        folder = out / safe_name(task_name)
        write_json(folder / "remedies.json", rows)
        write_text_atomic(folder / "remedies.md", as_table(rows).to_markdown() + "\n")
        if s.plot:
            plot_psi_against_cost(rows, folder / "remedies.png", f"{task_name}: {s.model}")
        results[task_name] = rows
    bar.close()
    return results
