"""``posbias leaderboard RUN ... --out DIR``: models ranked per task, with honest ties.

Each ``RUN`` is a ``posbias evaluate`` folder (``summary.json`` + per-query tables); a run
may cover some of the tasks, but one that shares no task with the others is refused. With
``--from-hub TASK_REPO`` the board is the Hub benchmark's instead: the ``RUN`` arguments are
model repos (none: the models on the benchmark's Hub leaderboard) whose ``.eval_results``
entries give the scores (:func:`hf_posbias.evaluation.reports.hub_results.hub_summaries`);
the same builder ranks both, and a row whose model repo holds no per-query table is not tested
against its neighbour (``tied`` is empty). Per task, one
row per model: mean nDCG@10, PSI, harmonic mean of the per-position nDCG@10 and the position
slope, each with its bootstrap interval (from the run's summary), sorted by ``sort_by``. Two
neighbours in that order are compared on their shared queries with
:func:`~hf_posbias.statistics.uncertainty.paired_comparison` (the test of ``posbias
compare``);
when it cannot separate them (p ≥ ``alpha``) they are marked tied and share a rank — most
adjacent pairs of a public leaderboard are not statistically separable (mteb issue 5208).

Written to ``DIR``: ``leaderboard.md``, ``leaderboard.csv``, ``leaderboard.parquet`` (one row per
task × model; ``model`` is the run's model id, ``name`` the model as a reader names it —
:func:`display_name`, the Space's name too —, ``curve`` holds the per-position nDCG@10 with
intervals as JSON, for plots), ``hub/``, a Hub dataset repo folder (one config per task, a card
with the tables under those names) ready for :func:`hf_posbias.hub.upload_folder`, and, with
``--names``, that file as ``models.json`` (the Space reads it next to the board).

Example:
    >>> rank_groups([True, False, False])  # model 1 ties model 2; 2 and 3 differ
    [1, 1, 3]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hf_posbias.errors import InputError
from hf_posbias.settings import ProgressSettings, setting, setting_label, shared_setting

SortKey = Literal["mean", "harmonic_mean", "psi", "slope"]
LOWER_IS_BETTER = {"psi"}
"""Sort keys where a smaller value ranks first (PSI: less position sensitivity)."""

TABLE_COLUMNS = ("rank", "model", "mean", "psi", "harmonic_mean", "slope", "n_queries", "tied")

BOARD_LABELS = "models.json"
"""Next to a board: ``{model id: {"name": …, "made_by": …}}``, how each row is named
(:func:`display_name`) and the command that made it."""

Labels = dict[str, dict[str, str]]


def display_name(model: str, labels: Labels | None = None) -> str:
    """The name a reader gives the model of a board row — the one the board's tables, its Hub
    card and the Space show: the board's ``models.json`` name, else the id without the folders
    and organisations a run records.

    Example:
        >>> display_name("mteb/baseline-bm25s")
        'BM25'
        >>> display_name("sentence-transformers/all-MiniLM-L6-v2")
        'all-MiniLM-L6-v2'
        >>> display_name("models/posbias-e5-small-begin"), display_name("bm25 → smollm2-135m@20")
        ('posbias-e5-small-begin', 'BM25 → smollm2-135m@20')
        >>> display_name("x", {"x": {"name": "Model X"}})
        'Model X'
    """
    label = (labels or {}).get(model, {}).get("name")
    if label:
        return label
    if model == "mteb/baseline-bm25s":
        return "BM25"
    if model.startswith("bm25 → "):
        return "BM25 → " + model.removeprefix("bm25 → ")
    for prefix in ("sentence-transformers/", "bases/", "models/"):
        if model.startswith(prefix):
            return model.removeprefix(prefix)
    return model


def read_board_labels(path: str | Path | None) -> Labels:
    """The labels of a board: ``path`` is a ``models.json``, or a board folder (one without a
    ``models.json`` gives ``{}``, as does ``None``). A ``_``-prefixed key is a comment.

    Example:
        >>> read_board_labels(None)
        {}
        >>> read_board_labels("/no/such/names.json")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /no/such/names.json: no such names file (a models.json)
    """
    if path is None:
        return {}
    file = Path(path)
    if file.is_dir():
        file = file / BOARD_LABELS
        if not file.is_file():
            return {}
    elif not file.is_file():
        raise InputError(f"{path}: no such names file (a models.json)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise InputError(f"{file}: not JSON ({err.msg}, line {err.lineno})") from None
    if not isinstance(data, dict):
        raise InputError(f'{file}: expected {{model id: {{"name": …}}}}')
    return {k: v for k, v in data.items() if not k.startswith("_") and isinstance(v, dict)}


@dataclass(kw_only=True)
class LeaderboardSettings(ProgressSettings):
    """Settings of ``posbias leaderboard``.

    Example:
        >>> LeaderboardSettings(runs=["a"], out="o", alpha=2)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: alpha must be > 0 and < 1, got 2
    """

    runs: list[str] = setting(
        "`posbias evaluate` run folders; with --from-hub, model repos whose .eval_results to "
        "read (none: the models on the benchmark's Hub leaderboard)",
        positional=True,
        metavar="RUN",
        default_factory=list,
    )
    from_hub: str | None = setting(
        "a Hub benchmark dataset repo (a position task published with `posbias benchmark "
        "publish`): rank the models' .eval_results on it instead of run folders",
        default=None,
        metavar="TASK_REPO",
    )
    out: str = shared_setting("out")
    sort_by: SortKey = setting("column that orders each task's table", default="mean")
    alpha: float = shared_setting("alpha", default=0.05)
    resamples: int = shared_setting(
        "n_resamples",
        default=1000,
        flag="--n-resamples",
    )
    seed: int = shared_setting("seed")
    title: str = shared_setting("title", default="Position-bias leaderboard")
    names: str | None = setting(
        'a models.json ({model id: {"name": …, "made_by": …}}) naming each row as the Space '
        "shows it; copied into OUT (unset: the ids without their folders and organisations)",
        default=None,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.from_hub:
            from hf_posbias.hub import check_repo_id

            for repo in (self.from_hub, *self.runs):
                check_repo_id(repo)
        elif not self.runs:
            raise InputError(f"give at least one run folder (or {setting_label('from_hub')} REPO)")


def rank_groups(tied_with_next: Sequence[bool]) -> list[int]:
    """Competition ranks where a model tied with the one above shares its rank."""
    ranks: list[int] = []
    for i in range(len(tied_with_next)):
        ranks.append(ranks[-1] if i and tied_with_next[i - 1] else i + 1)
    return ranks


def _interval(summary: Any, what: str) -> tuple[float | None, float | None]:
    bounds = summary.interval(what=what)
    return (None, None) if bounds is None else bounds


def _row(summary: Any) -> dict[str, Any]:
    mean_lo, mean_hi = _interval(summary, "mean")
    psi_lo, psi_hi = _interval(summary, "psi")
    hm_lo, hm_hi = _interval(summary, "harmonic_mean")
    slope_lo, slope_hi = _interval(summary, "slope")
    curve = [
        {
            "bucket": b,
            "ndcg_at_10": summary.ndcg_at_10.get(b),
            "low": (summary.interval(b) or (None, None))[0],
            "high": (summary.interval(b) or (None, None))[1],
            "n_queries": summary.n_queries.get(b, 0),
        }
        for b in summary.buckets
    ]
    return {
        "task": summary.task,
        "model": summary.label,
        "model_revision": summary.model_revision,
        "model_kind": summary.model_kind,
        "mean": summary.mean,
        "mean_low": mean_lo,
        "mean_high": mean_hi,
        "psi": summary.psi,
        "psi_low": psi_lo,
        "psi_high": psi_hi,
        "harmonic_mean": summary.harmonic_mean,
        "harmonic_mean_low": hm_lo,
        "harmonic_mean_high": hm_hi,
        "slope": (summary.trend or {}).get("slope"),
        "slope_low": slope_lo,
        "slope_high": slope_hi,
        "n_queries": sum(summary.n_queries.values()) or None,
        "curve": json.dumps(curve),
    }


def _by_task(runs: Sequence[str | Path]) -> dict[str, list[Any]]:
    from hf_posbias.evaluation.compare import _same_task
    from hf_posbias.evaluation.summary import read_summaries

    tasks_of: dict[str, list[str]] = {}
    grouped: dict[str, list[tuple[Any, str]]] = {}
    for run in runs:
        summaries = read_summaries(run)
        tasks_of[str(run)] = sorted(s.task for s in summaries)
        for s in summaries:
            grouped.setdefault(s.task, []).append((s, str(run)))
    # A run may cover a subset of the tasks (one run per task is common), but a run that shares
    # no task with any other run belongs to a different leaderboard.
    if len(tasks_of) > 1:
        for run, tasks in tasks_of.items():
            others = {t for r, ts in tasks_of.items() if r != run for t in ts}
            if not others & set(tasks):
                listing = "; ".join(f"{r}: {', '.join(t)}" for r, t in tasks_of.items())
                raise InputError(
                    f"the runs cover different tasks ({listing}): {run} shares no task with the "
                    "others"
                )
    out: dict[str, list[Any]] = {}
    for task, entries in grouped.items():
        first, where = entries[0]
        for other, other_where in entries[1:]:
            _same_task(first, other, where, other_where)
        labels = [s.label for s, _ in entries]
        if len(set(labels)) < len(labels):
            dup = next(x for x in labels if labels.count(x) > 1)
            raise InputError(f"task {task!r}: model {dup!r} appears in two runs; give it once")
        out[task] = [s for s, _ in entries]
    return out


def _sort_value(row: dict[str, Any], key: str) -> float:
    value = row[key]
    if value is None:
        return float("inf")
    return float(value) if key in LOWER_IS_BETTER else -float(value)


def task_table(summaries: Sequence[Any], settings: LeaderboardSettings) -> list[dict[str, Any]]:
    """Sorted rows of one task, neighbours compared on shared queries (``tied``, ``p_next``)."""
    from hf_posbias.evaluation.runs.exports import per_bucket_from_table, read_per_query
    from hf_posbias.progress import progress
    from hf_posbias.statistics.uncertainty import paired_comparison

    pairs = sorted(
        ((_row(s), s) for s in summaries), key=lambda rs: _sort_value(rs[0], settings.sort_by)
    )
    rows = [r for r, _ in pairs]
    labels = read_board_labels(settings.names)
    for row in rows:
        row["name"] = display_name(row["model"], labels)
    scores = []
    for _, s in pairs:
        if s.per_query_path and Path(s.per_query_path).is_file():
            scores.append(per_bucket_from_table(read_per_query(s.per_query_path)))
        elif settings.from_hub:  # a model repo without the run's table: no tie test
            scores.append(None)
        else:
            raise InputError(f"{s.task} / {s.label}: no per-query table (rerun the evaluation)")
    tied: list[bool | None] = []
    task = pairs[0][1].task if pairs else ""
    bar = progress(
        total=max(len(rows) - 1, 0),
        desc=f"leaderboard {task}: paired tests",
        unit="pair",
        disable=not settings.progress or len(rows) < 2,
    )
    for i, row in enumerate(rows):
        if i + 1 == len(rows):
            row["p_next"] = None
            tied.append(False)
            bar.close()
            continue
        bar.update(1)
        if scores[i] is None or scores[i + 1] is None:
            row["p_next"] = None
            tied.append(None)
            continue
        cmp = paired_comparison(
            scores[i], scores[i + 1], n_resamples=settings.resamples, seed=settings.seed
        )
        diff = cmp.psi if settings.sort_by == "psi" else cmp.mean
        p_value = None if diff is None else float(diff.p_value)
        row["p_next"] = p_value
        tied.append(p_value is None or p_value >= settings.alpha)
    for row, rank, is_tied in zip(rows, rank_groups(tied), tied, strict=True):
        row["rank"] = rank
        row["tied"] = is_tied
    return rows


def board_input(settings: LeaderboardSettings) -> tuple[dict[str, list[Any]], list[str]]:
    """``({task: summaries}, notes)``: the run folders', or with ``from_hub`` the Hub
    benchmark's (:func:`~hf_posbias.evaluation.reports.hub_results.hub_summaries`)."""
    if not settings.from_hub:
        return _by_task(settings.runs), []
    from hf_posbias.evaluation.compare import _same_task
    from hf_posbias.evaluation.reports.hub_results import hub_summaries

    read = hub_summaries(settings.from_hub, settings.runs)
    if not read.summaries:
        raise InputError(f"no model has position results on {settings.from_hub}")
    grouped: dict[str, list[Any]] = {}
    for s in read.summaries:
        grouped.setdefault(s.task, []).append(s)
    for entries in grouped.values():
        for other in entries[1:]:
            _same_task(entries[0], other, entries[0].model_name, other.model_name)
    return grouped, read.notes


def build_leaderboard(
    settings: LeaderboardSettings, notes: list[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """``{task: sorted rows}`` over the settings' runs or Hub benchmark (see the module
    docstring); what the Hub reading left out is added to ``notes``."""
    summaries, left_out = board_input(settings)
    if notes is not None:
        notes.extend(left_out)
    return {task: task_table(s, settings) for task, s in summaries.items()}


HUB_BENCHMARK_PREFIX = "hub-benchmark:"
"""A board source naming a Hub benchmark (``hub-benchmark:<task repo>``): its board is built from
the models' ``.eval_results`` (:func:`hub_board_rows`), not read from a written board."""


def hub_board_rows(task_repo: str, model_repos: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The rows ``posbias leaderboard --from-hub TASK_REPO [MODEL_REPO …]`` writes, built in
    memory (the Space's board of a Hub benchmark): every task's rows, each task's in order.

    Example:
        >>> hub_board_rows("no-owner")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: repo id 'no-owner' must be <owner>/<name>
    """
    settings = LeaderboardSettings(
        from_hub=task_repo, runs=list(model_repos), out="", progress=False
    )
    return [row for rows in build_leaderboard(settings).values() for row in rows]


def _cell(row: dict[str, Any], key: str) -> str:
    value = row[key]
    if value is None:
        return "n/a"
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    text = f"{value:+.3f}" if key == "slope" else f"{value:.3f}"
    return f"{text} [{low:.3f}, {high:.3f}]" if low is not None and high is not None else text


def markdown(tables: dict[str, list[dict[str, Any]]], settings: LeaderboardSettings) -> str:
    """The leaderboard as markdown: one table per task."""
    lines = [f"# {settings.title}", ""]
    lines.append(
        f"Sorted by {settings.sort_by}; `=` marks a model a paired bootstrap on the shared "
        f"queries cannot separate from the next one (p ≥ {settings.alpha}). Intervals: 95% "
        "bootstrap over queries."
    )
    for task, rows in tables.items():
        lines += ["", f"## {task}", ""]
        lines.append(
            "| rank | model | mean nDCG@10 | PSI | harmonic mean | slope | queries | p (next) |"
        )
        lines.append("|---:|---|---|---|---|---|---:|---:|")
        for r in rows:
            p = "" if r["p_next"] is None else f"{r['p_next']:.3f}"
            p = "not tested" if r["tied"] is None else p
            mark = " =" if r["tied"] else ""
            lines.append(
                f"| {r['rank']}{mark} | {r.get('name') or r['model']} | {_cell(r, 'mean')} | "
                f"{_cell(r, 'psi')} | "
                f"{_cell(r, 'harmonic_mean')} | {_cell(r, 'slope')} | "
                f"{r['n_queries'] or 'n/a'} | {p} |"
            )
    return "\n".join(lines) + "\n"


def _config_name(task: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in task)
    return safe if safe[:1].isalnum() else f"t{safe}"


def write_leaderboard(
    settings: LeaderboardSettings, notes: list[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Build the leaderboard and write every output into ``settings.out`` (``notes``: see
    :func:`build_leaderboard`)."""
    tables = build_leaderboard(settings, notes)
    write_board(tables, settings)
    return tables


def write_board(tables: dict[str, list[dict[str, Any]]], settings: LeaderboardSettings) -> None:
    """Write ``{task: sorted rows}`` into ``settings.out``: markdown, CSV, parquet, the Hub
    dataset folder and (with ``settings.names``) ``models.json``."""
    from hf_posbias.publish.repo import front_matter_yaml, write_dataset_repo
    from hf_posbias.shards import atomic_path, write_parquet, write_text_atomic

    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(tables, settings)
    write_text_atomic(out / "leaderboard.md", text)
    flat = [row for rows in tables.values() for row in rows]
    write_parquet(flat, out / "leaderboard.parquet")
    import csv

    with (
        atomic_path(out / "leaderboard.csv") as tmp,
        tmp.open("w", newline="", encoding="utf-8") as f,
    ):
        writer = csv.DictWriter(f, fieldnames=list(flat[0]))
        writer.writeheader()
        writer.writerows(flat)
    configs = {_config_name(t): rows for t, rows in tables.items()}
    names = list(configs)
    header = front_matter_yaml(
        names, default_config=names[0], pretty_name=settings.title, tags=["position-bias"]
    )
    card = f"---\n{header}---\n{text}\nWritten by `posbias leaderboard` (hf-posbias).\n"
    write_dataset_repo(out / "hub", configs, card, overwrite=True)
    if settings.names:
        source = Path(settings.names)
        source = source / BOARD_LABELS if source.is_dir() else source
        if source.resolve() != (out / BOARD_LABELS).resolve():
            write_text_atomic(out / BOARD_LABELS, source.read_text(encoding="utf-8"))


def read_leaderboard(folder: str | Path) -> list[dict[str, Any]]:
    """Rows of a leaderboard folder (``leaderboard.parquet``) or its Hub dataset folder
    (``data/<task>/*.parquet``), for the Space.

    Example:
        >>> read_leaderboard("/no/such/folder")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /no/such/folder holds no leaderboard ...
    """
    from hf_posbias.rows.readers import read_parquet_rows

    path = Path(folder)
    files = [path / "leaderboard.parquet"] if (path / "leaderboard.parquet").is_file() else []
    files = files or sorted(path.glob("data/*/*.parquet"))
    if not files:
        raise InputError(f"{path} holds no leaderboard (leaderboard.parquet or data/*/*.parquet)")
    return [row for f in files for row in read_parquet_rows(f)]
