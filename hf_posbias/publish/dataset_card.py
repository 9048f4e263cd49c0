"""What the pool and training-set cards say, and the repo folders that carry them.

Cards are rendered from ``dataset_cards/pool.md.j2`` and ``dataset_cards/train.md.j2`` with
statistics that are *measured*: the bin × position count tables and the begin:middle:end
distributions are counted from the rows being written, the filtering table (YHP26 Table 6) is
:meth:`hf_posbias.verification.report.VerificationReport.filter_rows`; everything else (δ,
generator, panel, seeds, budget, corpus licence, stage reports) comes from
:class:`DatasetCardInfo`, which :mod:`hf_posbias.pipeline` fills from the stage manifests — so a
card cannot state a parameter the data was not made with. :func:`write_train_repo` and
:func:`write_pool_repo` show a card's facts and the rows going in and the dataset coming back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hf_posbias.citations import ICT, YHP26, Z25, bibtex
from hf_posbias.corpus.documents import bin_position_counts
from hf_posbias.errors import InputError
from hf_posbias.jsonable import JsonRecord
from hf_posbias.positions import POSITIONS
from hf_posbias.publish.repo import (
    check_config_names,
    front_matter_yaml,
    size_category,
    write_dataset_repo,
)
from hf_posbias.rows.arrow import ParquetRows
from hf_posbias.sampling.configs import config_label
from hf_posbias.tables import TableLike, as_table, flatten_report, format_cell
from hf_posbias.verification.report import VerificationReport

BASE_TAGS: tuple[str, ...] = (
    "position-bias",
    "dense-retrieval",
    "information-retrieval",
    "synthetic",
    "query-generation",
)


def _known_keys(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"{cls.__name__}: unknown field(s) {unknown}; expected {sorted(known)}")
    return dict(data)


_Part = TypeVar("_Part", bound="_FromDict")


class _FromDict:
    """A card part built from a plain dict by field name (unknown keys are an error)."""

    @classmethod
    def from_dict(cls: type[_Part], data: Mapping[str, Any]) -> _Part:
        """Build from a plain dict (unknown keys are an error, not silently dropped).

        Example:
            >>> GeneratorInfo.from_dict({"name": "ict", "params": {"seed": 0}}).params
            {'seed': 0}
        """
        return cls(**_known_keys(cls, data))


@dataclass(frozen=True)
class CorpusInfo(_FromDict):
    """Where the document text comes from and under which licence.

    Attributes:
        name: human-readable source, e.g. ``"English Wikipedia lead sections"``.
        license: Hub licence id of the *source text* (it becomes the card's ``license:``),
            e.g. ``"cc-by-sa-4.0"`` for Wikipedia, ``"gpl-3.0"`` for a packaged demo corpus.
        license_note: free text shown in the card (attribution, packaging licence …).
        url: where the source can be found (optional).
        report: ``CorpusReport.to_dict()`` (records read, kept, dropped by reason, per bin),
            rendered as a field/value table.
    """

    name: str
    license: str
    license_note: str = ""
    url: str = ""
    report: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GeneratorInfo(_FromDict):
    """The query generator: its name (backend + model) and the parameters it ran with.

    Attributes:
        name: e.g. ``"openai"`` or ``"ict"``.
        params: every parameter that changes the output (seed, temperature, prompt version …),
            as the generate stage's manifest records them.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PanelInfo:
    """The verification panel as the verify stage recorded it.

    Attributes:
        members: one description per member, in the order of ``panel_scores`` /
            ``member_margins``: what :meth:`hf_posbias.verification.members.PanelMember.describe`
            returns (``name``, ``kind``, ``normalization`` and the member's settings).
        aggregation: how member margins combine (YHP26: ``"min"``).
    """

    members: tuple[Mapping[str, Any], ...]
    aggregation: str = "min"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PanelInfo:
        """Accept ``{"members": ["a", {"name": "b", "normalization": "sigmoid", …}],
        "normalization": "sigmoid", "aggregation": "min"}`` (a member's own value wins).

        Example:
            >>> PanelInfo.from_dict({"members": ["bm25"], "normalization": "share"}).members
            ({'name': 'bm25', 'normalization': 'share'},)
        """
        unknown = sorted(set(data) - {"members", "normalization", "aggregation"})
        if unknown:
            raise InputError(f"PanelInfo: unknown field(s) {unknown}")
        default_norm = str(data.get("normalization", ""))
        members: list[dict[str, Any]] = []
        for member in data.get("members", []):
            if isinstance(member, str):
                members.append({"name": member, "normalization": default_norm})
            else:
                members.append({"normalization": default_norm, **dict(member)})
        if not members or any("name" not in m for m in members):
            raise InputError("panel info needs members with names; pass {'members': [...]}")
        return cls(members=tuple(members), aggregation=str(data.get("aggregation", "min")))

    def table_rows(self) -> list[dict[str, Any]]:
        """One row per member: name, kind, normalisation and the remaining settings."""
        rows = []
        for m in self.members:
            settings = {
                k: v
                for k, v in m.items()
                if k not in ("name", "kind", "normalization") and v is not None
            }
            rows.append(
                {
                    "member": m["name"],
                    "kind": m.get("kind", ""),
                    "normalisation": m.get("normalization", ""),
                    "settings": settings,
                }
            )
        return rows


@dataclass(frozen=True)
class DatasetCardInfo(JsonRecord):
    """Everything a pool or training-set card states that cannot be counted from its rows.

    Counts per (length bin, position) and the begin:middle:end distribution are measured from
    the rows being written; the fields below carry the rest, each as recorded by the stage that
    used it (see :func:`hf_posbias.pipeline.stages.dataset_card_info`).

    Attributes:
        pretty_name: the card title and ``pretty_name:`` in the YAML header.
        corpus: source text and its licence (the card's ``license:``).
        generator: query generator name + parameters.
        panel: verification panel members + normalisations.
        delta: the margin threshold δ the pool was filtered at.
        generation_seed: the seed of query generation (``None``: the generator has none).
        sampling_seed: the seed of controlled sampling (``None`` for a pool).
        budget: per (bin, position) sampling budget of the training sets (``None`` for a pool).
        filter_table: YHP26 Table 6 rows (``filter, retained, %, begin, middle, end``) from the
            verification report; ``None`` lets :func:`write_pool_repo` count it from the pool's
            margins (a training-set card then omits the section).
        strata: margin strata rows (e.g. the LLM audit of YHP26: ``stratum, audited,
            TargetYes %, …``); ``None`` when no audit was run.
        reports: stage reports by name (``{"generation": …, "verification": …}``), each
            rendered as a field/value table.
        repo_id: the Hub id the card's loading examples use (``"<user>/<name>"`` if unknown).
        language: ISO 639-1 codes of the text.
        tags: extra Hub tags on top of :data:`BASE_TAGS`.
    """

    pretty_name: str
    corpus: CorpusInfo
    generator: GeneratorInfo
    panel: PanelInfo
    delta: float
    generation_seed: int | None = None
    sampling_seed: int | None = None
    budget: int | None = None
    filter_table: TableLike | None = None
    strata: TableLike | None = None
    reports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    repo_id: str | None = None
    language: tuple[str, ...] = ("en",)
    tags: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetCardInfo:
        """Build from plain nested dicts, e.g. a JSON manifest (the inverse of ``to_dict``).

        Example:
            >>> info = DatasetCardInfo.from_dict({
            ...     "pretty_name": "x", "delta": 0.3,
            ...     "corpus": {"name": "wiki", "license": "cc-by-sa-4.0"},
            ...     "generator": {"name": "ict"}, "panel": {"members": ["bm25"]}})
            >>> info.panel.members[0]["name"]
            'bm25'
        """
        values = _known_keys(cls, data)
        for key, sub in (("corpus", CorpusInfo), ("generator", GeneratorInfo)):
            if isinstance(values.get(key), Mapping):
                values[key] = sub.from_dict(values[key])
        if isinstance(values.get("panel"), Mapping):
            values["panel"] = PanelInfo.from_dict(values["panel"])
        for key in ("language", "tags"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)

    @property
    def citation(self) -> str:
        """BibTeX the card asks users to cite: the construction and training protocol (YHP26
        §3–4), the position-bias study that motivates cross-encoder verification (Zeng et al.,
        2025), and ICT when used."""
        entries = [YHP26, Z25]
        if self.generator.name == "ict":
            entries.append(ICT)
        return bibtex(*entries)


def front_matter(
    info: DatasetCardInfo,
    config_names: Sequence[str],
    n_rows: int,
    *,
    split: str = "train",
    default_config: str | None = None,
    extra_tags: Sequence[str] = (),
) -> str:
    """The card's YAML header (without the ``---`` fences), deterministic key order.

    Example:
        >>> info = DatasetCardInfo.from_dict({
        ...     "pretty_name": "x", "delta": 0.3,
        ...     "corpus": {"name": "wiki", "license": "cc-by-sa-4.0"},
        ...     "generator": {"name": "ict"}, "panel": {"members": ["bm25"]}})
        >>> "config_name: default" in front_matter(info, ["default"], 10)
        True
    """
    return front_matter_yaml(
        config_names,
        split=split,
        default_config=default_config,
        pretty_name=info.pretty_name,
        license=info.corpus.license,
        language=list(info.language),
        task_categories=["text-retrieval"],
        task_ids=["document-retrieval"],
        tags=list(dict.fromkeys([*BASE_TAGS, *extra_tags, *info.tags])),
        size_categories=[size_category(n_rows)],
    )


# --------------------------------------------------------------------------- measured statistics

# The columns the card statistics read; everything else (document texts, scores) is left in
# the table so that counting a multi-million-row pool does not materialise its texts.
_STAT_COLUMNS = ("candidate_id", "length_bin", "target_position", "margin", "retained")


def _stat_rows(
    rows: Sequence[Mapping[str, Any]] | Any,
) -> tuple[Sequence[Mapping[str, Any]], list[str]]:
    """(rows restricted to the statistics columns, all column names in order)."""
    if hasattr(rows, "column_names"):
        columns = list(rows.column_names)
        stats = rows.select([c for c in columns if c in _STAT_COLUMNS])
        # Rows read lazily stay lazy (read again for each count); a table becomes a list.
        return (stats if isinstance(stats, ParquetRows) else stats.to_pylist()), columns
    rows = list(rows)
    return rows, list(rows[0]) if rows else []


def bin_position_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows per (``length_bin``, ``target_position``) as table rows, plus a total row.

    Example:
        >>> bin_position_table([{"length_bin": "256-512", "target_position": "end"}])
        [{'length bin': '256-512', 'begin': 0, 'middle': 0, 'end': 1, 'total': 1}, \
{'length bin': 'total', 'begin': 0, 'middle': 0, 'end': 1, 'total': 1}]
    """
    counts = bin_position_counts(rows)
    table = [
        {"length bin": label, **cell, "total": sum(cell.values())} for label, cell in counts.items()
    ]
    totals = {p: sum(cell[p] for cell in counts.values()) for p in POSITIONS}
    table.append({"length bin": "total", **totals, "total": sum(totals.values())})
    return table


def position_distribution(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Measured begin:middle:end counts and percentages of a set of rows.

    Example:
        >>> position_distribution([{"target_position": "begin"}, {"target_position": "end"}])
        {'rows': 2, 'begin': 1, 'middle': 0, 'end': 1, 'ratio': '50.0:0.0:50.0'}
    """
    counts = dict.fromkeys(POSITIONS, 0)
    for row in rows:
        position = row.get("target_position")
        if position not in counts:
            raise InputError(f"target_position {position!r} is not one of {list(POSITIONS)}")
        counts[position] += 1
    total = sum(counts.values())
    ratio = ":".join(f"{100 * counts[p] / total:.1f}" if total else "0.0" for p in POSITIONS)
    return {"rows": total, **counts, "ratio": ratio}


# --------------------------------------------------------------------------- the two repos


def _render(template: str, info: DatasetCardInfo, header: str, **stats: Any) -> str:
    from hf_posbias.cards.templates import render_card

    reports = {
        name: as_table(flatten_report(report)) for name, report in info.reports.items() if report
    }
    corpus_report = as_table(flatten_report(info.corpus.report)) if info.corpus.report else None
    return render_card(
        "dataset",
        template,
        front_matter=header,
        info=info,
        repo_id=info.repo_id or "<user>/<name>",
        generator_params=as_table(
            [{"parameter": k, "value": v} for k, v in info.generator.params.items()]
        ),
        panel=as_table(info.panel.table_rows()),
        strata=as_table(info.strata) if info.strata else None,
        corpus_report=corpus_report,
        reports=reports,
        positions=POSITIONS,
        citation=info.citation,
        fmt=format_cell,
        **stats,
    )


def _margin_kept(row: Mapping[str, Any], delta: float) -> bool:
    m = row.get("margin")
    return m is not None and not (isinstance(m, float) and math.isnan(m)) and m >= delta


def write_pool_repo(
    rows: Sequence[Mapping[str, Any]] | Any,
    folder: str | Path,
    info: DatasetCardInfo,
    *,
    config: str = "default",
    **kw: Any,
) -> Path:
    """Write the scored candidate pool (every candidate, retained or not) as a dataset repo.

    The card's filter table is ``info.filter_table`` if given, else counted from the rows'
    margins (:class:`~hf_posbias.verification.report.VerificationReport`); bin × position
    tables are counted from the rows. Extra keyword arguments go to
    :func:`~hf_posbias.publish.repo.write_dataset_repo`.

    Example:
        >>> import tempfile
        >>> from hf_posbias.rows.readers import read_dataset
        >>> info = DatasetCardInfo.from_dict({
        ...     "pretty_name": "pool", "delta": 0.3,
        ...     "corpus": {"name": "wiki", "license": "cc-by-sa-4.0"},
        ...     "generator": {"name": "ict"}, "panel": {"members": ["bm25"]}})
        >>> row = dict(candidate_id="d::end", doc_id="d", length_bin="256-512",
        ...            target_position="end", query="q", positive="p", margin=0.4, retained=True)
        >>> out = write_pool_repo([row], tempfile.mkdtemp() + "/pool", info)
        >>> read_dataset(out, "default")[0]["margin"]
        0.4
    """
    pool, columns = _stat_rows(rows)
    missing = {"target_position", "length_bin", "margin"} - set(columns)
    if pool and missing:
        raise InputError(
            f"pool rows lack column(s) {sorted(missing)} (see the scored-pool contract)"
        )
    # The pool may be read lazily (a scored pool of any size): each count below is a pass over
    # its statistics columns, and no list of its rows is made.
    n_retained = sum(1 for r in pool if _margin_kept(r, info.delta))
    # The contract defines retained = margin >= δ: a disagreement means the card's δ is not the
    # δ the pool was verified at, and the card would state wrong numbers.
    disagree = [
        r for r in pool if "retained" in r and bool(r["retained"]) != _margin_kept(r, info.delta)
    ]
    if disagree:
        raise InputError(
            f"{len(disagree)} pool rows have a 'retained' flag that disagrees with margin >= "
            f"{info.delta} (e.g. {disagree[0].get('candidate_id', '?')}); pass the δ the pool "
            "was verified at"
        )
    filter_table = (
        info.filter_table
        if info.filter_table is not None
        else VerificationReport.from_rows(pool, delta=info.delta).filter_rows()
    )
    header = front_matter(
        info, [config], len(pool), default_config=config, extra_tags=("reranker-verified",)
    )
    card = _render(
        "pool.md.j2",
        info,
        header,
        config=config,
        n_rows=len(pool),
        n_retained=n_retained,
        columns=columns,
        all_counts=as_table(bin_position_table(pool)),
        retained_counts=as_table(
            bin_position_table(r for r in pool if _margin_kept(r, info.delta))
        ),
        filter_table=as_table(filter_table),
        filter_counted=info.filter_table is None,
        example_bin=next(iter(bin_position_counts(pool)), ""),
    )
    return write_dataset_repo(folder, {config: rows}, card, **kw)


def write_train_repo(
    train_sets: Mapping[str, Sequence[Mapping[str, Any]] | Any],
    folder: str | Path,
    info: DatasetCardInfo,
    *,
    default_config: str | None = None,
    **kw: Any,
) -> Path:
    """Write the position-controlled training sets, one config per position configuration.

    ``default_config`` is marked ``default: true`` (``None``: ``"uniform"`` if present, else the
    first config). Each config's nominal b:m:e
    (:class:`hf_posbias.sampling.configs.PositionConfig`),
    measured begin:middle:end distribution and bin × position counts go into the card. Extra
    keyword arguments go to :func:`~hf_posbias.publish.repo.write_dataset_repo`.

    Example:
        >>> import tempfile
        >>> info = DatasetCardInfo.from_dict({
        ...     "pretty_name": "train", "delta": 0.3, "sampling_seed": 0, "budget": 1,
        ...     "corpus": {"name": "wiki", "license": "cc-by-sa-4.0"},
        ...     "generator": {"name": "ict"}, "panel": {"members": ["bm25"]}})
        >>> row = dict(query="q", positive="p", doc_id="d", length_bin="256-512",
        ...            target_position="end", candidate_id="d::end", margin=0.4)
        >>> out = write_train_repo({"end": [row]}, tempfile.mkdtemp() + "/train", info)
        >>> (out / "data" / "end" / "train-00000-of-00001.parquet").is_file()
        True
        >>> from hf_posbias.rows.readers import read_dataset
        >>> read_dataset(out, "end")[0]["query"]
        'q'
    """
    names = list(train_sets)
    check_config_names(names)
    if default_config is None:
        default_config = "uniform" if "uniform" in train_sets else names[0]
    elif default_config not in train_sets:
        raise InputError(f"default config {default_config!r} is not one of {names}")
    stat_rows = {name: _stat_rows(rows) for name, rows in train_sets.items()}
    sets = {name: rows for name, (rows, _) in stat_rows.items()}
    summary = []
    for name, rows in sets.items():
        dist = position_distribution(rows)
        dist["begin:middle:end (%)"] = dist.pop("ratio")
        summary.append({"config": f"`{name}`", "nominal b:m:e": config_label(name), **dist})
    per_config = {name: as_table(bin_position_table(rows)) for name, rows in sets.items()}
    n_rows = sum(len(rows) for rows in sets.values())
    header = front_matter(info, names, n_rows, default_config=default_config)
    card = _render(
        "train.md.j2",
        info,
        header,
        config_names=names,
        default_config=default_config,
        n_rows=n_rows,
        columns=next(iter(stat_rows.values()))[1],
        summary=as_table(summary),
        per_config=per_config,
        filter_table=as_table(info.filter_table) if info.filter_table is not None else None,
    )
    return write_dataset_repo(folder, train_sets, card, **kw)


__all__ = [
    "BASE_TAGS",
    "CorpusInfo",
    "DatasetCardInfo",
    "GeneratorInfo",
    "PanelInfo",
    "bin_position_table",
    "front_matter",
    "position_distribution",
    "write_pool_repo",
    "write_train_repo",
]
