"""Position-bias results on the Hub: a model repo's ``.eval_results``, written and read back.

**Written** (``posbias evaluate --push-results MODEL_REPO``, ``posbias study run`` with a
``hub_org``): for every task of a run that was downloaded from its Hub benchmark repo
(:attr:`~hf_posbias.evaluation.summary.EvaluationSummary.task_repo`) and scored under the
default protocol, :func:`write_results_folder` lays out what goes into the model repo —

- ``.eval_results/<Task>.yaml``: one entry per task id of the benchmark's ``eval.yaml``
  (:mod:`hf_posbias.tasks.hub_benchmark`: mteb's overall and per-subset nDCG@10, then per-bucket
  nDCG@10, their mean and 1 − PSI, each a percentage), built with mteb's own pydantic models
  (``HFEvalResult``) and serialised by mteb (``HFEvalResults.to_yaml``), each naming the
  benchmark's repo and the commit the run read, the date mteb recorded for the run, and as
  its source the command that made it; the notes give the bootstrap interval;
- ``posbias-results/<Task>/``: the run's summary (local paths left out) and per-query table,
  which the entries' source links: what a board needs for intervals and for the paired test
  that marks ties.

:func:`push_results` writes that folder and uploads it through :func:`hf_posbias.hub.upload_folder`
(a pull request unless the token's user owns the model repo); the folder stays beside the run.

**Read** (``posbias leaderboard --from-hub TASK_REPO [MODEL_REPO …]``): :func:`hub_summaries`
takes the benchmark's ``task.json`` and ``eval.yaml``, the models its Hub leaderboard lists
(``HfApi.get_dataset_leaderboard``) or the model repos given, and each model's
``.eval_results`` files parsed by huggingface_hub (``parse_eval_result_entries``), and turns
them into the :class:`~hf_posbias.evaluation.summary.EvaluationSummary` records the one board
builder (:mod:`hf_posbias.evaluation.reports.leaderboard`) ranks: the entries' values, and where
the model repo holds the run's ``posbias-results`` its intervals and per-query table (else no
interval and no tie test).

Example:
    >>> trace_folder("SciFact-Evidence")
    'posbias-results/SciFact-Evidence'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import BackendError, InputError, first_line
from hf_posbias.evaluation.summary import EvaluationSummary, read_summaries, write_summary_json

if TYPE_CHECKING:
    from mteb._hf_integration.eval_result_model import HFEvalResults

RESULTS_DIR = ".eval_results"
"""The model repo folder the Hub reads evaluation results from."""
TRACE_DIR = "posbias-results"
"""The model repo folder holding each pushed run's summary and per-query table."""
TRACE_SUMMARY = "summary.json"


def trace_folder(task: str) -> str:
    """A task's folder of the run trace inside a model repo."""
    from hf_posbias.evaluation.runs.exports import safe_name

    return f"{TRACE_DIR}/{safe_name(task)}"


def _base_name(summary: EvaluationSummary) -> str:
    """The task's name as its ``eval.yaml`` has it (a multilingual run labels each subset)."""
    suffix = f" ({summary.hf_subset})"
    return summary.task.removesuffix(suffix)


def check_pushable(summary: EvaluationSummary) -> None:
    """Refuse, in one line, a run whose results cannot name a Hub benchmark task id.

    Example:
        >>> s = EvaluationSummary.from_scores("m", "T", ["a"], {"a": .5}, n_queries={"a": 1})
        >>> check_pushable(s)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: T was read from a task folder built here, not from ...
    """
    if not summary.task_repo or not summary.task_repo_revision:
        raise InputError(
            f"{summary.task} was read from a task folder built here, not from its Hub "
            "benchmark repo: evaluate the published task (a registered name, or the folder "
            "`hf download --repo-type dataset OWNER/NAME` prints) so the results can name the "
            "benchmark and its revision"
        )
    if summary.scoring != "default":
        raise InputError(
            f"{summary.task}: the Hub board's task ids are scored under --scoring default; "
            f"this run used {summary.scoring}"
        )
    for what, path in (
        ("mteb's result file", summary.mteb_result_path),
        ("per-query table", summary.per_query_path),
    ):
        if not path or not Path(path).is_file():
            raise InputError(f"{summary.task}: {what} {path} is missing (rerun the evaluation)")


def split_pushable(
    summaries: Sequence[EvaluationSummary],
) -> tuple[list[EvaluationSummary], dict[str, str]]:
    """``(pushable, {task: why not})``: the summaries :func:`check_pushable` accepts, and the
    reason each other one is left out.

    Example:
        >>> s = EvaluationSummary.from_scores("m", "T", ["a"], {"a": .5}, n_queries={"a": 1})
        >>> split_pushable([s])[1]["T"][:40]
        'T was read from a task folder built here'
    """
    ok, skipped = [], {}
    for summary in summaries:
        try:
            check_pushable(summary)
        except InputError as err:
            skipped[summary.task] = str(err)
            continue
        ok.append(summary)
    return ok, skipped


def _interval_note(low: float | None, high: float | None, n: int) -> str:
    from hf_posbias.tasks.hub_benchmark import hub_value
    from hf_posbias.version import __version__

    where = f"{n} queries; hf-posbias {__version__}"
    if low is None or high is None:
        return where
    return f"95% bootstrap interval [{hub_value(low):.2f}, {hub_value(high):.2f}] over {where}"


def eval_results(
    summaries: Sequence[EvaluationSummary], *, command: str, model_repo: str
) -> HFEvalResults:
    """The ``.eval_results`` entries of one task (its subsets' summaries), as mteb's models.

    Args:
        summaries: one task's summaries (one per subset), each :func:`check_pushable`.
        command: the command that made them (each entry's source name).
        model_repo: the model repo they go to (the source links its ``posbias-results``).
    """
    from mteb._hf_integration.eval_result_model import (
        HFEvalResult,
        HFEvalResultDataset,
        HFEvalResults,
        HFEvalResultSource,
    )
    from mteb.results import TaskResult

    from hf_posbias.hub import repo_url
    from hf_posbias.tasks.hub_benchmark import EVAL_SPLIT, board_task_ids, hub_value

    first = summaries[0]
    name = _base_name(first)
    source = HFEvalResultSource(
        url=f"{repo_url(model_repo, 'model')}/tree/main/{trace_folder(name)}", name=command
    )
    mteb_result = TaskResult.from_disk(Path(str(first.mteb_result_path)))
    entries: list[HFEvalResult] = []

    def entry(summary: EvaluationSummary, task_id: str, value: float, notes: str) -> None:
        dataset = HFEvalResultDataset(
            id=str(summary.task_repo), task_id=task_id, revision=summary.task_repo_revision
        )
        entries.append(
            HFEvalResult(
                dataset=dataset,
                value=hub_value(value),
                date=mteb_result.date,
                notes=notes,
                source=source,
            )
        )

    total = sum(sum(s.n_queries.values()) for s in summaries)
    entry(first, name, mteb_result.get_score(), _interval_note(None, None, total))
    main = {s["hf_subset"]: s["main_score"] for s in mteb_result.scores.get(EVAL_SPLIT, [])}
    for s in summaries:
        n = sum(s.n_queries.values())
        entry(
            s,
            f"{name}_{s.hf_subset}_{EVAL_SPLIT}",
            main[s.hf_subset],
            _interval_note(None, None, n),
        )
        ids = board_task_ids(name, s.buckets, subset=s.hf_subset, subsets=len(summaries))
        for bucket in s.buckets:
            value = s.ndcg_at_10.get(bucket)
            if value is not None:  # an empty bucket has no score to show
                low, high = s.interval(bucket) or (None, None)
                entry(s, ids.bucket(bucket), value, _interval_note(low, high, s.n_queries[bucket]))
        low, high = s.interval(what="mean") or (None, None)
        entry(s, ids.mean, s.mean, _interval_note(low, high, n))
        if s.psi is not None:  # PSI is undefined when every bucket scores 0
            low, high = s.interval(what="psi") or (None, None)
            flipped = (None, None) if low is None or high is None else (1 - high, 1 - low)
            entry(s, ids.one_minus_psi, 1 - s.psi, _interval_note(*flipped, n))
    return HFEvalResults.model_validate(entries)


def _groups(summaries: Sequence[EvaluationSummary]) -> dict[str, list[EvaluationSummary]]:
    groups: dict[str, list[EvaluationSummary]] = {}
    for s in summaries:
        groups.setdefault(_base_name(s), []).append(s)
    return groups


def write_results_folder(
    summaries: Sequence[EvaluationSummary], folder: str | Path, *, command: str, model_repo: str
) -> Path:
    """Write what a model repo receives for ``summaries`` into ``folder``: the
    ``.eval_results`` files and the ``posbias-results`` traces (see the module docstring); a
    previous such folder is replaced, a folder holding anything else is refused."""
    import shutil

    from hf_posbias.evaluation.runs.exports import safe_name
    from hf_posbias.hub import check_repo_id

    check_repo_id(model_repo)
    if not summaries:
        raise InputError("no evaluation to push")
    for s in summaries:
        check_pushable(s)
    out = Path(folder)
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in (RESULTS_DIR, TRACE_DIR))
        if foreign:
            raise InputError(f"{out} holds other files ({', '.join(foreign[:3])}): not replaced")
        shutil.rmtree(out)
    for name, group in _groups(summaries).items():
        results = eval_results(group, command=command, model_repo=model_repo)
        target = out / RESULTS_DIR / f"{safe_name(name)}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(results.to_yaml(), encoding="utf-8")
        trace = out / trace_folder(name)
        trace.mkdir(parents=True, exist_ok=True)
        kept = []
        for s in group:
            table = Path(str(s.per_query_path))
            shutil.copyfile(table, trace / table.name)
            # What others can use: the repo as the model, no path of this machine.
            local = {"task_path": None, "run_path": None, "mteb_result_path": None}
            kept.append(
                dataclasses.replace(s, model=model_repo, per_query_path=table.name, **local)
            )
        write_summary_json(kept, trace)
    return out


def push_results(
    summaries: Sequence[EvaluationSummary],
    model_repo: str,
    *,
    command: str,
    folder: str | Path,
    token: str | None = None,
) -> str:
    """Write the results folder (kept at ``folder``) and upload it to ``model_repo``: a commit
    when the token's user owns the repo, else a pull request. Returns the repo's (or the pull
    request's) URL.

    Raises:
        InputError: a run that cannot be pushed (:func:`check_pushable`).
        BackendError: no token, or the Hub refused (a model repo must exist).
    """
    from hf_posbias.hub import resolve_token, upload_folder

    token = resolve_token(token, purpose=f"--push-results {model_repo}", flag="--hub-token")
    written = write_results_folder(summaries, folder, command=command, model_repo=model_repo)
    names = ", ".join(_groups(summaries))
    return upload_folder(
        written,
        model_repo,
        repo_type="model",
        token=token,
        commit_message=f"Add position-bias results on {names} (hf-posbias)",
        create_repo=False,
        create_pr=None,
    )


# ------------------------------------------------------------------------------------ reading


@dataclass
class HubBoardInput:
    """What :func:`hub_summaries` read: one summary per model and task, and what it left out."""

    summaries: list[EvaluationSummary] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _hub_call(what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    """A huggingface_hub call whose failure is one line naming what it fetched."""
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    try:
        return call(*args, **kwargs)
    except EntryNotFoundError as err:
        raise InputError(f"{what}: not found ({first_line(err)})") from None
    except (HfHubHTTPError, OSError) as err:
        raise BackendError(f"cannot read {what} from the Hub: {first_line(err)[:300]}") from None


def _download(repo: str, filename: str, *, repo_type: str, revision: str | None) -> Path | None:
    """A repo file, or ``None`` when the repo does not hold it."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return Path(hf_hub_download(repo, filename, repo_type=repo_type, revision=revision))
    except EntryNotFoundError:
        return None


def _benchmark(task_repo: str) -> tuple[str, list[str], list[str]]:
    """``(task name, buckets, subsets)`` of a position benchmark repo, its ``eval.yaml`` checked
    with mteb's model against the ids a position board needs."""
    import yaml
    from mteb._hf_integration.eval_model import HFEvalMeta

    from hf_posbias.rows.readers import read_json
    from hf_posbias.tasks.hub_benchmark import EVAL_FILE, board_task_ids

    where = f"dataset {task_repo}"
    info_path = _hub_call(
        f"{where} task.json", _download, task_repo, "task.json", repo_type="dataset", revision=None
    )
    eval_path = _hub_call(
        f"{where} {EVAL_FILE}", _download, task_repo, EVAL_FILE, repo_type="dataset", revision=None
    )
    if info_path is None or eval_path is None:
        raise InputError(f"{task_repo} is not a position benchmark (no task.json or {EVAL_FILE})")
    info = read_json(info_path)
    meta = HFEvalMeta.model_validate(yaml.safe_load(eval_path.read_text(encoding="utf-8")))
    name, buckets = str(info["name"]), [str(b) for b in info["buckets"]]
    ids = {t.id for t in meta.tasks}
    subsets = sorted({t.config for t in meta.tasks if t.config and t.id != name})
    subsets = [
        s
        for s in subsets
        if board_task_ids(name, buckets, subset=s, subsets=len(subsets)).mean in ids
    ]
    if not subsets:
        raise InputError(
            f"{task_repo}/{EVAL_FILE} declares no position task ids for {name} (publish the "
            "task with `posbias benchmark publish`)"
        )
    return name, buckets, subsets


def _board_models(task_repo: str, token: str | None) -> list[tuple[str, str | None, str | None]]:
    """``(model repo, revision, results file)`` of every model on the benchmark's Hub
    leaderboard, best first (a pull request's entry is read at ``refs/pr/<n>``)."""
    import huggingface_hub

    api = huggingface_hub.HfApi(token=token)
    try:
        board = _hub_call(
            f"the leaderboard of {task_repo}",
            api.get_dataset_leaderboard,
            task_repo,
            base_model_only=False,
        )
    except BackendError as err:
        # The Hub answers with a board only for the benchmarks its staff have listed.
        raise BackendError(
            f"{err} (a benchmark the Hub has not listed yet has no leaderboard: name the model "
            "repos after the task repo)"
        ) from None
    seen: dict[str, tuple[str, str | None, str | None]] = {}
    for row in sorted(board, key=lambda r: r.rank):
        revision = f"refs/pr/{row.pull_request}" if row.pull_request else None
        seen.setdefault(row.model_id, (row.model_id, revision, row.filename))
    return list(seen.values())


def _result_files(repo: str, revision: str | None, token: str | None) -> list[str]:
    import huggingface_hub

    api = huggingface_hub.HfApi(token=token)
    # An explicit revision: GET /api/models/<repo>/revision/<rev>, the route every Hub mirror
    # answers (olah refuses the bare /api/models/<repo>).
    info = _hub_call(f"model {repo}", api.model_info, repo, revision=revision or "main")
    return sorted(
        s.rfilename
        for s in info.siblings or []
        if s.rfilename.startswith(f"{RESULTS_DIR}/") and s.rfilename.endswith((".yaml", ".yml"))
    )


def model_entries(
    repo: str,
    task_repo: str,
    *,
    revision: str | None = None,
    files: Sequence[str] = (),
    token: str | None = None,
) -> list[Any]:
    """The ``.eval_results`` entries of ``repo`` (``files``, else every file of the folder) on
    the benchmark ``task_repo``, parsed by huggingface_hub's ``parse_eval_result_entries``."""
    import yaml
    from huggingface_hub import parse_eval_result_entries

    entries = []
    for name in files or _result_files(repo, revision, token):
        path = _hub_call(
            f"{repo}/{name}", _download, repo, name, repo_type="model", revision=revision
        )
        if path is None:
            raise InputError(f"{repo}/{name}: not found at {revision or 'main'}")
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        if not isinstance(data, list):
            raise InputError(f"{repo}/{name}: not a list of evaluation results")
        entries += [e for e in parse_eval_result_entries(data) if e.dataset_id == task_repo]
    return entries


def _trace(repo: str, name: str, revision: str | None) -> list[EvaluationSummary]:
    """The run summaries a model repo holds for task ``name`` (per-query tables downloaded),
    or ``[]``."""
    folder = trace_folder(name)
    path = _download(repo, f"{folder}/{TRACE_SUMMARY}", repo_type="model", revision=revision)
    if path is None:
        return []
    out = []
    for s in read_summaries(path):
        table = None
        if s.per_query_path:
            table = _download(
                repo, f"{folder}/{s.per_query_path}", repo_type="model", revision=revision
            )
        out.append(dataclasses.replace(s, per_query_path=None if table is None else str(table)))
    return out


def _summary(
    repo: str,
    task_repo: str,
    label: str,
    subset: str,
    ids: Any,
    values: dict[str, float],
    revision: str | None,
    trace: EvaluationSummary | None,
) -> EvaluationSummary:
    """One model's summary of one subset: the entries' values, the trace's everything else."""
    import warnings

    from hf_posbias.statistics.psi import harmonic_mean
    from hf_posbias.tasks.hub_benchmark import from_hub_value

    scores = {
        b: (from_hub_value(values[ids.bucket(b)]) if ids.bucket(b) in values else None)
        for b in ids.buckets
    }
    mean = from_hub_value(values[ids.mean])
    psi = 1 - from_hub_value(values[ids.one_minus_psi]) if ids.one_minus_psi in values else None
    identity = {
        "model_name": repo,
        "task_repo": task_repo,
        "task_repo_revision": revision,
        "reranker": None,
        "first_stage": None,
        "rerank_k": None,
        "remedy": None,
    }
    if trace is not None:
        return dataclasses.replace(trace, ndcg_at_10=scores, mean=mean, psi=psi, **identity)
    present = [v for v in scores.values() if v is not None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the notes are kept in the summary
        summary = EvaluationSummary.from_scores(
            repo,
            label,
            list(ids.buckets),
            scores,
            n_queries={},
            hf_subset=subset,
            harmonic_mean=harmonic_mean(present) if present else None,
            **identity,
        )
    return dataclasses.replace(summary, mean=mean, psi=psi)


def hub_summaries(
    task_repo: str, model_repos: Sequence[str] = (), *, token: str | None = None
) -> HubBoardInput:
    """The board input of a Hub benchmark: one summary per model (the ``model_repos`` given,
    else those on the benchmark's Hub leaderboard) and subset of the benchmark's task, from the
    models' ``.eval_results`` entries (see the module docstring).

    Raises:
        InputError: not a position benchmark, a results file that is not a list.
        BackendError: the Hub could not be reached or refused (no leaderboard for the dataset).
    """
    from hf_posbias.tasks.hub_benchmark import board_task_ids

    name, buckets, subsets = _benchmark(task_repo)
    models = (
        [(repo, None, None) for repo in model_repos]
        if model_repos
        else _board_models(task_repo, token)
    )
    read = HubBoardInput()
    for repo, revision, filename in models:
        entries = model_entries(
            repo, task_repo, revision=revision, files=[filename] if filename else (), token=token
        )
        traces = {s.hf_subset: s for s in _trace(repo, name, revision)}
        for subset in subsets:
            ids = board_task_ids(name, buckets, subset=subset, subsets=len(subsets))
            values = {e.task_id: float(e.value) for e in entries if e.task_id in set(ids.all())}
            label = name if len(subsets) == 1 else f"{name} ({subset})"
            if ids.mean not in values:
                read.notes.append(f"{repo}: no {ids.mean} entry for {task_repo}, left out")
                continue
            revs = {e.dataset_revision for e in entries if e.task_id in values}
            trace = traces.get(subset)
            read.summaries.append(
                _summary(
                    repo,
                    task_repo,
                    label,
                    subset,
                    ids,
                    values,
                    next(iter(revs)) if len(revs) == 1 else None,
                    trace,
                )
            )
            if trace is None:
                read.notes.append(
                    f"{repo}: no {trace_folder(name)} in the repo: no interval, no tie test"
                )
    return read


__all__ = [
    "RESULTS_DIR",
    "TRACE_DIR",
    "HubBoardInput",
    "check_pushable",
    "split_pushable",
    "eval_results",
    "hub_summaries",
    "model_entries",
    "push_results",
    "trace_folder",
    "write_results_folder",
]
