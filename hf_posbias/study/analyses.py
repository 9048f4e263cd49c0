"""YHP26's representation analyses inside the study: run on every model, reported as its tables.

The spec's ``analyses`` names any of:

- ``reversal``: the mirror-reversal diagnostic
  (:func:`hf_posbias.evaluation.runs.reversal.mirror_reversal`) on every task with character
  evidence spans that the model's base is evaluated on (a task entry's ``bases``: YHP26 §4.3
  runs FineWeb-PosQ and PosIR on three bases only; :func:`model_tasks`) (YHP26 Table 12:
  Δrev = nDCG@10(B→F) − nDCG@10(F→B));
- ``evidence-moving``: the evidence moved to ``analysis_slots`` insertion points
  (:mod:`hf_posbias.analysis.evidence_moving`) on ``analysis_pairs`` (default ``msmarco``, the
  source YHP26 names; any pair file), peak, lowest and Δ×10³ (Tables 5 and 13);
- ``segment-profile``: cosine(document, segment i) (:mod:`hf_posbias.analysis.segment_profile`)
  on each sample of ``analysis_corpus`` (:class:`~hf_posbias.study.spec.ProfileSample`; default
  one sample of the study's first task's corpus), with App. C's range statistic, ``max − min``
  of the mean curve, and its change against the untrained base (YHP26 Figs. 3 and 7; with three
  segments and Zeng et al.'s two samples, SQuAD v2 and FineWeb-Edu, their App. A.4 Table 4).

Each runs on every checkpoint and every untrained base (and off-the-shelf row), never on remedy
rows. One result file per model × analysis, ``<out>/analyses/<model>/<analysis>.json``, records
the model's fingerprint and the settings it read (:func:`analysis_key`); a rerun skips a file
that matches and redoes one that does not. Evidence-moving curves are compared on the pairs
every model could use (:func:`~hf_posbias.analysis.evidence_moving.common_pairs`).

The report (``report.json`` key ``analyses``, a section of ``report.md``, and figures drawn a
panel per configuration with a line per base as YHP26 draws its curves, plus the transpose)
comes from :func:`analyses_report`.

Example:
    >>> from hf_posbias.study.spec import StudySpec
    >>> spec = StudySpec(bases=["bert-base"], data="d", tasks=["t"], analyses=["reversal"])
    >>> analysis_key(spec, "evidence-moving")
    'msmarco/200/10/42'
    >>> analysis_file("out", "posbias-bert-base-base", "segment-profile").as_posix()
    'out/analyses/posbias-bert-base-base/segment-profile.json'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_json
from hf_posbias.study.layout import (
    BASE_CONFIG,
    StudyModel,
    StudyTask,
    base_label,
    evaluation_fingerprint,
    study_models,
)
from hf_posbias.study.spec import ProfileSample, StudySpec

ANALYSES_DIRNAME = "analyses"


def analysis_file(out: str | Path, model_name: str, analysis: str) -> Path:
    """``<out>/analyses/<model>/<analysis>.json``: one model's result of one analysis."""
    return Path(out) / ANALYSES_DIRNAME / model_name / f"{analysis}.json"


def analysis_key(spec: StudySpec, analysis: str, tasks: Sequence[StudyTask] = ()) -> str:
    """What an analysis result depends on besides the model: its inputs and settings."""
    if analysis == "reversal":
        return "/".join(f"{t.name}@{t.fingerprint}" for t in tasks)
    key = f"{spec.analysis_limit}/{spec.analysis_slots}/{spec.seed}"
    if analysis == "evidence-moving":
        return f"{spec.analysis_pairs}/{key}"
    return "|".join(sample.key for sample in spec.profile_samples) + f"/{key}"


def model_tasks(model: StudyModel, tasks: Sequence[StudyTask]) -> list[StudyTask]:
    """The tasks ``model`` is analysed on: those its base is evaluated on (a task entry's
    ``bases``), as the evaluations choose them.

    Example:
        >>> tasks = [StudyTask("A", "A", "a", "f"), StudyTask("B", "B", "b", "g", bases=("y",))]
        >>> [t.name for t in model_tasks(StudyModel("x", "base", None, "m"), tasks)]
        ['A']
    """
    return [t for t in tasks if t.runs_on(model.base)]


def analysis_models(spec: StudySpec, out: str | Path) -> list[StudyModel]:
    """The models the analyses run on: every checkpoint and untrained base (no remedy rows)."""
    return [m for m in study_models(spec, out) if m.remedy is None]


def _done(path: Path, fingerprint: str, key: str) -> bool:
    if not path.is_file():
        return False
    marker = read_json(path).get("marker", {})
    return marker.get("model_fingerprint") == fingerprint and marker.get("key") == key


def analyses_complete(spec: StudySpec, out: str | Path) -> bool:
    """Whether every model of the study (all shards) has every analysis of the spec."""
    return all(
        analysis_file(out, m.name, a).is_file()
        for m in analysis_models(spec, out)
        for a in spec.analyses
    )


# --------------------------------------------------------------------------- inputs


class AnalysisInputs:
    """The pairs and documents of a study's analyses, read once (on first use)."""

    def __init__(self, spec: StudySpec, tasks: Sequence[StudyTask]) -> None:
        self.spec, self.tasks = spec, list(tasks)
        self._pairs: tuple[list[Any], str] | None = None
        self._documents: dict[str, list[tuple[str, str]]] = {}

    @property
    def pairs(self) -> tuple[list[Any], str]:
        """The sampled evidence-moving pairs and the line saying where they came from."""
        if self._pairs is None:
            from hf_posbias.analysis.evidence_moving import sample_pairs
            from hf_posbias.analysis.msmarco_pairs import resolve_pairs

            cases, report = resolve_pairs(self.spec.analysis_pairs)
            chosen = sample_pairs(cases, self.spec.analysis_limit or None, seed=self.spec.seed)
            self._pairs = (chosen, f"{report.summary_line()}; {len(chosen)} sampled")
        return self._pairs

    def documents(self, sample: ProfileSample) -> list[tuple[str, str]]:
        """The segment-profile documents of one sample, drawn once."""
        if sample.name not in self._documents:
            from hf_posbias.analysis.segment_profile import sample_profile_documents

            corpus = sample.corpus or default_corpus(self.tasks)
            self._documents[sample.name] = sample_profile_documents(
                corpus, self.spec.analysis_limit, self.spec.seed, words=sample.words
            )[0]
        return self._documents[sample.name]


def default_corpus(tasks: Sequence[StudyTask]) -> str:
    """The corpus file of the study's first task (the segment profile's default documents)."""
    for task in tasks:
        for name in ("corpus.parquet", "corpus.jsonl"):
            if (Path(task.folder) / name).is_file():
                return str(Path(task.folder) / name)
    raise InputError("analysis_corpus: no task folder holds a corpus; name one")


# --------------------------------------------------------------------------- running


def _run_reversal(
    loaded: Any, inputs: AnalysisInputs, folder: Path, model: StudyModel, progress: bool
) -> dict[str, Any]:
    from hf_posbias.evaluation.runs.exports import safe_name
    from hf_posbias.evaluation.runs.reversal import mirror_reversal

    results, skipped = [], {}
    for task in model_tasks(model, inputs.tasks):
        try:
            outcome = mirror_reversal(
                loaded,
                task.folder,
                folder / "reversal" / safe_name(task.name),
                progress=progress,
            )
        except InputError as err:  # no spans, nothing front or back: said in the report
            skipped[task.name] = str(err)
            continue
        results.append(outcome.to_dict())
    return {"results": results, "skipped": skipped}


def _run_evidence_moving(
    loaded: Any, inputs: AnalysisInputs, folder: Path, model: StudyModel, progress: bool
) -> dict[str, Any]:
    from hf_posbias.analysis.evidence_moving import run_evidence_moving

    cases, source = inputs.pairs
    summary = run_evidence_moving(
        loaded.sentence_transformer,
        cases,
        inputs.spec.analysis_slots,
        label=model.name,
        progress=progress,
    )
    return {
        "source": source,
        "n_input": summary.n_input,
        "skipped": summary.skipped,
        "curves": [
            {"index": c.index, "pair_id": c.pair_id, "unit": c.unit, "cosines": list(c.cosines)}
            for c in summary.curves
        ],
    }


def _run_segment_profile(
    loaded: Any, inputs: AnalysisInputs, folder: Path, model: StudyModel, progress: bool
) -> dict[str, Any]:
    from hf_posbias.analysis.segment_profile import segment_profile

    profiles = []
    for sample in inputs.spec.profile_samples:
        profile = segment_profile(
            loaded.sentence_transformer,
            inputs.documents(sample),
            inputs.spec.analysis_slots,
            label=model.name,
            progress=progress,
        )
        profiles.append(
            {
                "sample": sample.name,
                "mean": list(profile.mean),
                "stderr": list(profile.stderr),
                "n_docs": profile.n_docs,
                "n_input": profile.n_input,
                "skipped": profile.skipped,
            }
        )
    return {"profiles": profiles}


RUNNERS: dict[str, Callable[[Any, AnalysisInputs, Path, StudyModel, bool], dict[str, Any]]] = {
    "reversal": _run_reversal,
    "evidence-moving": _run_evidence_moving,
    "segment-profile": _run_segment_profile,
}
"""Each analysis of the spec: ``runner(loaded model, inputs, model's analyses folder, model,
progress)``; ``progress``: its counted progress lines with an ETA (texts encoded and queries
scored, pairs moved, documents profiled), as an evaluation unit shows them."""
EMBEDDING_ANALYSES = ("evidence-moving", "segment-profile")
"""The analyses that read a bi-encoder's embeddings: BM25 and rerankers are listed as not run."""


def run_model_analyses(
    model: StudyModel,
    spec: StudySpec,
    out: str | Path,
    inputs: AnalysisInputs,
    progress: bool = True,
) -> tuple[int, int]:
    """Run every analysis of the spec on ``model`` that is not done; returns (run, skipped).
    ``progress``: each analysis reports within itself (``--no-progress``: off)."""
    from hf_posbias.shards import write_json

    fingerprint = evaluation_fingerprint(model, spec)
    keys = {a: analysis_key(spec, a, model_tasks(model, inputs.tasks)) for a in spec.analyses}
    todo = [
        a
        for a in spec.analyses
        if not _done(analysis_file(out, model.name, a), fingerprint, keys[a])
    ]
    loaded = None
    for analysis in todo:
        if loaded is None:
            from hf_posbias.evaluation.runs.mteb_models import load_mteb_model

            loaded = load_mteb_model(model.folder, settings=spec.model_settings)
        path = analysis_file(out, model.name, analysis)
        if analysis in EMBEDDING_ANALYSES and loaded.sentence_transformer is None:
            result = {"not_run": f"{loaded.spec} is a {loaded.kind}, not a bi-encoder"}
        else:
            result = RUNNERS[analysis](loaded, inputs, path.parent, model, progress)
        marker = {"model_fingerprint": fingerprint, "key": keys[analysis]}
        write_json(
            path,
            {
                "marker": marker,
                "base": model.base,
                "config": model.config,
                "pooling": model.pooling,
                "analysis": analysis,
                **result,
            },
        )
    return len(todo), len(spec.analyses) - len(todo)


def model_analyses_done(
    model: StudyModel, spec: StudySpec, out: str | Path, tasks: Sequence[StudyTask]
) -> bool:
    """Whether every analysis of the spec on ``model`` is there, for this model and inputs."""
    fingerprint = evaluation_fingerprint(model, spec)
    return all(
        _done(
            analysis_file(out, model.name, a),
            fingerprint,
            analysis_key(spec, a, model_tasks(model, tasks)),
        )
        for a in spec.analyses
    )


_INPUTS: dict[str, AnalysisInputs] = {}
"""The inputs of each study this process analyses, read once for all its models (the analysis
units of one study share them under the local executor)."""


def analyse_study_model(
    model: StudyModel,
    spec: StudySpec,
    out: str | Path,
    tasks: Sequence[StudyTask],
    progress: bool = True,
) -> tuple[int, int]:
    """:func:`run_model_analyses` with the study's inputs (one analysis unit of the study)."""
    key = f"{Path(out).resolve()}|{','.join(t.name for t in tasks)}"
    if key not in _INPUTS or _INPUTS[key].spec != spec:
        _INPUTS[key] = AnalysisInputs(spec, tasks)
    return run_model_analyses(model, spec, out, _INPUTS[key], progress)


# --------------------------------------------------------------------------- the report


def _results(
    spec: StudySpec, out: str | Path, analysis: str
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The results of ``analysis`` per model, and the models it could not run on (with why)."""
    rows, not_run = [], {}
    for model in analysis_models(spec, out):
        path = analysis_file(out, model.name, analysis)
        if not path.is_file():
            raise InputError(f"{out}: {path} is missing: rerun `posbias study run`")
        result = {**read_json(path), "model": base_label(model.base)}
        if "not_run" in result:
            not_run[f"{_label(result)} ({result['config']})"] = result["not_run"]
        else:
            rows.append(result)
    return rows, not_run


def _row_keys(result: Mapping[str, Any]) -> dict[str, Any]:
    return {"model": result["model"], "config": result["config"], "pooling": result["pooling"]}


def reversal_rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Table 12: per model × configuration × task, each origin group before and after mirror
    reversal and Δrev."""
    return [
        {**_row_keys(r), **{k: v for k, v in one.items() if k != "model"}}
        for r in results
        for one in r["results"]
    ]


def evidence_moving_rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tables 5 and 13: per model × configuration the mean curve over the pairs every model
    could use, its standard error, peak, lowest and Δ×10³."""
    from hf_posbias.analysis.evidence_moving import (
        EvidenceCurve,
        EvidenceMovingSummary,
        common_pairs,
        mean_and_stderr,
    )

    summaries = []
    for r in results:
        curves = [
            EvidenceCurve(
                tuple(c["cosines"]), pair_id=c["pair_id"], unit=c["unit"], index=c["index"]
            )
            for c in r["curves"]
        ]
        mean, stderr = mean_and_stderr([c.cosines for c in curves])
        summaries.append(
            EvidenceMovingSummary(
                r["model"], mean, stderr, len(curves), r["n_input"], dict(r["skipped"]), curves
            )
        )
    rows = []
    for r, s in zip(results, common_pairs(summaries)):
        rows.append(
            {
                **_row_keys(r),
                "n_pairs": s.n_pairs,
                "reliable": s.reliable,
                "curve": list(s.mean),
                "stderr": list(s.stderr),
                "peak": s.peak_position,
                "lowest": s.lowest_position,
                "delta_e3": s.delta,
                "skipped": s.skipped,
            }
        )
    return rows


def segment_profile_rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Figs. 3 and 7: per sample × model × configuration the mean profile, its peak and lowest
    segment, its range (max − min of the mean curve), App. C's range over segments 1–9
    (``app_c_range``, over ``app_c_segments``) and each range's change against the untrained
    base of the same model on the same sample (``range_vs_base``, ``app_c_range_vs_base``)."""
    from hf_posbias.analysis.segment_profile import SegmentProfile

    rows = []
    for r in results:
        for one in r["profiles"]:
            p = SegmentProfile(r["model"], tuple(one["mean"]), tuple(one["stderr"]), one["n_docs"])
            rows.append(
                {
                    "sample": one["sample"],
                    **_row_keys(r),
                    "n_docs": p.n_docs,
                    "curve": list(p.mean),
                    "stderr": list(p.stderr),
                    "peak": p.peak_position,
                    "lowest": p.lowest_position,
                    "range": p.range,
                    "app_c_range": p.app_c_range,
                    "app_c_segments": list(p.app_c_segments),
                    "skipped": one["skipped"],
                }
            )
    base = {(r["sample"], r["model"], r["pooling"]): r for r in rows if r["config"] == BASE_CONFIG}
    for r in rows:
        ref = base.get((r["sample"], r["model"], r["pooling"]))
        for key in ("range", "app_c_range"):
            r[f"{key}_vs_base"] = None if ref is None else r[key] - ref[key]
    return rows


def analyses_report(spec: StudySpec, out: str | Path) -> dict[str, Any]:
    """``report.json``'s ``analyses``: ``reversal`` (rows and the tasks skipped, with why),
    ``evidence_moving`` (rows and the pair source), ``segment_profile`` (rows)."""
    report: dict[str, Any] = {}
    if "reversal" in spec.analyses:
        results = _results(spec, out, "reversal")[0]
        skipped = {t: why for r in results for t, why in r["skipped"].items()}
        report["reversal"] = {"rows": reversal_rows(results), "skipped": skipped}
    if "evidence-moving" in spec.analyses:
        results, not_run = _results(spec, out, "evidence-moving")
        report["evidence_moving"] = {
            "source": results[0]["source"] if results else spec.analysis_pairs,
            "rows": evidence_moving_rows(results) if results else [],
            "not_run": not_run,
        }
    if "segment-profile" in spec.analyses:
        results, not_run = _results(spec, out, "segment-profile")
        report["segment_profile"] = {
            "samples": [
                {"name": s.name, "corpus": s.corpus, "words": list(s.words),
                 "limit": spec.analysis_limit, "described": s.describe(spec.analysis_limit)}
                for s in spec.profile_samples
            ],
            "rows": segment_profile_rows(results),
            "not_run": not_run,
        }  # fmt: skip
    return report


def _label(row: Mapping[str, Any]) -> str:
    return row["model"] if not row["pooling"] else f"{row['model']} · {row['pooling']}"


def plot_curve_panels(
    rows: Sequence[Mapping[str, Any]], path: Path, *, by: str, title: str, ylabel: str
) -> Path:
    """Curves of ``rows`` (each with ``curve`` and ``stderr``): ``by="config"`` draws a panel per
    configuration with a line per base (YHP26's orientation), ``by="base"`` the transpose."""
    from matplotlib.figure import Figure

    from hf_posbias.figures import save_figure

    def panel_of(r: Mapping[str, Any]) -> str:
        return str(r["config"]) if by == "config" else _label(r)

    def line_of(r: Mapping[str, Any]) -> str:
        return _label(r) if by == "config" else str(r["config"])

    panels = list(dict.fromkeys(panel_of(r) for r in rows))
    ncols = min(len(panels), 4)
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(4.6 * ncols, 3.4 * nrows), dpi=100)
    for index, panel in enumerate(panels):
        ax = fig.add_subplot(nrows, ncols, index + 1)
        for r in (r for r in rows if panel_of(r) == panel):
            xs = list(range(1, len(r["curve"]) + 1))
            (line,) = ax.plot(xs, r["curve"], marker="o", markersize=3, label=line_of(r))
            low = [m - e for m, e in zip(r["curve"], r["stderr"])]
            high = [m + e for m, e in zip(r["curve"], r["stderr"])]
            ax.fill_between(xs, low, high, alpha=0.2, color=line.get_color())
            ax.set_xticks(xs, [f"p{i}" for i in xs], fontsize=7)
        ax.set_title(panel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle(title)
    return save_figure(fig, path, tight_layout=True)


ORIENTATIONS = {"config": "a panel per configuration, a line per base (YHP26's)",
                "base": "a panel per base, a line per configuration"}  # fmt: skip


def _figure_groups(analyses: Mapping[str, Any]) -> list[tuple[str, str, list[Any]]]:
    """``(figure name, y label, rows)`` of each figure: evidence moving, and the segment profile
    once per sample (the first sample's figure keeps the plain name, another's adds the
    sample's name)."""
    from hf_posbias.evaluation.runs.exports import safe_name

    groups = []
    if analyses.get("evidence_moving", {}).get("rows"):
        rows = analyses["evidence_moving"]["rows"]
        groups.append(("evidence-moving", "cosine(query, document)", rows))
    if analyses.get("segment_profile", {}).get("rows"):
        rows = analyses["segment_profile"]["rows"]
        samples = list(dict.fromkeys(r["sample"] for r in rows))
        for index, sample in enumerate(samples):
            name = "segment-profile" + ("" if index == 0 else f"-{safe_name(sample)}")
            mine = [r for r in rows if r["sample"] == sample]
            groups.append((name, "cosine(document, segment)", mine))
    return groups


def write_analysis_figures(analyses: Mapping[str, Any], out_dir: Path) -> list[tuple[str, Path]]:
    """The evidence-moving and segment-profile figures in both orientations."""
    figures = []
    for name, ylabel, rows in _figure_groups(analyses):
        for by, what in ORIENTATIONS.items():
            suffix = "" if by == "config" else "-by-base"
            path = plot_curve_panels(
                rows,
                out_dir / f"{name}{suffix}.png",
                by=by,
                title=f"{name} ({what}; mean ± s.e.)",
                ylabel=ylabel,
            )
            figures.append((f"{name}: {what}", path))
    return figures


def _fmt(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def analyses_markdown(analyses: Mapping[str, Any], figures: Sequence[tuple[str, Path]]) -> str:
    """The analyses' section of ``report.md`` (Table 12, Tables 5/13, the segment profile)."""
    from hf_posbias.tables import as_table

    parts: list[str] = []
    if "reversal" in analyses:
        from dataclasses import fields

        from hf_posbias.evaluation.runs.reversal import ReversalResult

        names = [f.name for f in fields(ReversalResult)]
        rows = [
            {
                "model": _label(r),
                "config": r["config"],
                **ReversalResult(**{k: r[k] for k in names}).table_row(),
            }
            for r in analyses["reversal"]["rows"]
        ]
        parts += ["", "## Mirror reversal (YHP26 Table 12): Δrev = nDCG@10(B→F) − nDCG@10(F→B)"]
        if rows:
            parts += ["", as_table(rows).to_markdown()]
        for task, why in analyses["reversal"]["skipped"].items():
            parts += ["", f"{task}: not run — {why}"]
    if "evidence_moving" in analyses:
        rows = [
            {
                "model": _label(r),
                "config": r["config"],
                "pairs": r["n_pairs"] if r["reliable"] else f"{r['n_pairs']} (unreliable)",
                "peak": r["peak"],
                "lowest": r["lowest"],
                "Δ×10³": f"{r['delta_e3']:.1f}",
            }
            for r in analyses["evidence_moving"]["rows"]
        ]
        parts += ["", "## Evidence moving (YHP26 Tables 5 and 13): peak, lowest, Δ×10³", ""]
        parts.append(analyses["evidence_moving"]["source"])
        parts += ["", as_table(rows).to_markdown()] if rows else []
    if "segment_profile" in analyses:
        parts += ["", "## Segment profile (YHP26 Figs. 3 and 7, App. C's range statistic)"]
        for sample in analyses["segment_profile"]["samples"]:
            rows = [
                {
                    "model": _label(r),
                    "config": r["config"],
                    "documents": r["n_docs"],
                    **{f"p{i}": _fmt(v) for i, v in enumerate(r["curve"], start=1)},
                    "peak": r["peak"],
                    "lowest": r["lowest"],
                    "range (max − min)": _fmt(r["range"]),
                    "range − base's": _fmt(r["range_vs_base"]),
                    "App. C range (p{}–p{})".format(*r["app_c_segments"]): _fmt(r["app_c_range"]),
                    "App. C range − base's": _fmt(r["app_c_range_vs_base"]),
                }
                for r in analyses["segment_profile"]["rows"]
                if r["sample"] == sample["name"]
            ]
            parts += ["", f"documents: {sample['described']}", ""]
            parts += [as_table(rows).to_markdown()] if rows else []
    for key in ("evidence_moving", "segment_profile"):
        for model, why in analyses.get(key, {}).get("not_run", {}).items():
            parts += ["", f"{key.replace('_', ' ')} of {model}: not run — {why}"]
    for what, path in figures:
        parts += ["", f"![{what}]({path.name})"]
    return "\n".join(parts) + "\n" if parts else ""


def add_analyses_to_report(spec: StudySpec, out: str | Path, report_dir: Path) -> dict[str, Any]:
    """Add the analyses to a written study report: ``report.json``'s ``analyses``, their
    section of ``report.md`` and their figures."""
    from hf_posbias.shards import write_json, write_text_atomic

    analyses = analyses_report(spec, out)
    figures = write_analysis_figures(analyses, report_dir)
    target = report_dir / "report.json"
    write_json(target, {**read_json(target), "analyses": analyses})
    markdown = report_dir / "report.md"
    write_text_atomic(markdown, markdown.read_text() + analyses_markdown(analyses, figures))
    return analyses
