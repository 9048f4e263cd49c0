"""Stage 5, *publish*: write the exact folder a Hub dataset repo will hold, then upload it.

Publishing is split in two so that everything except the network call is testable offline:

1. :func:`write_dataset_repo` (and the wrappers :func:`write_pool_repo`,
   :func:`write_train_repo`) write a folder laid out exactly like the Hub repo — ``README.md``
   (card with YAML ``configs:``), ``.gitattributes`` and deterministic parquet shards under
   ``data/<config>/``. ``datasets.load_dataset(folder, config)`` reads it exactly as it would read
   the repo, and the same rows always give byte-identical files (no timestamps anywhere).
2. :func:`upload_folder` pushes such a folder (or a model checkpoint folder) with
   ``HfApi.create_repo`` + ``HfApi.upload_folder``.

Cards are rendered from ``dataset_cards/pool.md.j2`` and ``dataset_cards/train.md.j2`` with
statistics that are *measured*: the bin × position count tables and the begin:middle:end
distributions are counted from the rows being written; everything else (δ, generator, panel,
filter table, strata, seed, budget, corpus licence, stage reports) comes from
:class:`DatasetCardInfo`.

Example:
    >>> import tempfile
    >>> from hf_posbias.hub import (
    ...     CorpusInfo, DatasetCardInfo, GeneratorInfo, PanelInfo, read_dataset, write_train_repo)
    >>> info = DatasetCardInfo(
    ...     pretty_name="Demo position-controlled training sets",
    ...     corpus=CorpusInfo(name="demo", license="cc-by-sa-4.0"),
    ...     generator=GeneratorInfo(name="template", params={"temperature": 1.0}),
    ...     panel=PanelInfo.from_dict({"members": ["bm25"], "normalisation": "minmax"}),
    ...     delta=0.3, seed=0)
    >>> row = dict(query="q", positive="p", doc_id="d1", length_bin="256-512",
    ...            target_position="begin", candidate_id="d1::begin", margin=0.5)
    >>> folder = write_train_repo({"begin": [row]}, tempfile.mkdtemp() + "/train", info)
    >>> read_dataset(folder, "begin")[0]["query"]
    'q'
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias import POSITIONS
from hf_posbias.corpus import bin_sort_key
from hf_posbias.errors import BackendError, InputError, PosbiasError

CARD_FILE = "README.md"
DATA_DIR = "data"

# Entries a folder written by this module may hold. ``.git`` (a clone of the Hub repo) and
# ``.cache`` (huggingface_hub's local-dir metadata) are tolerated because upload_folder skips them.
_OWN_ENTRIES = frozenset({CARD_FILE, ".gitattributes", DATA_DIR})
_TOLERATED_ENTRIES = frozenset({".git", ".cache"})

# The Hub's default .gitattributes for a new dataset repo (binary/data formats through LFS),
# restricted to formats this toolkit can produce; constant text keeps the folder deterministic.
GITATTRIBUTES = """\
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.gz filter=lfs diff=lfs merge=lfs -text
*.json.gz filter=lfs diff=lfs merge=lfs -text
*.lz4 filter=lfs diff=lfs merge=lfs -text
*.npy filter=lfs diff=lfs merge=lfs -text
*.npz filter=lfs diff=lfs merge=lfs -text
*.parquet filter=lfs diff=lfs merge=lfs -text
*.pickle filter=lfs diff=lfs merge=lfs -text
*.pkl filter=lfs diff=lfs merge=lfs -text
*.pt filter=lfs diff=lfs merge=lfs -text
*.pth filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.tar filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
*.zst filter=lfs diff=lfs merge=lfs -text
"""

# A config name becomes a folder name and a YAML value: keep it to a safe, portable alphabet.
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# Thresholds of the YHP26 Table 6 filter table (cumulative m ≥ t), δ is always added.
DEFAULT_FILTER_THRESHOLDS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3)

# What every card asks users to cite: the protocol (YHP26) and the position-bias study whose
# finding motivates verifying with cross-encoders (Zeng et al., 2025).
CITATION = """\
@misc{yu2026positionbias,
  title = {Is Position Bias in Dense Retrievers Built In -- or Learned from Data?},
  author = {Yu and Han and Park},
  year = {2026},
  eprint = {2605.26578},
  archivePrefix = {arXiv}
}

@inproceedings{zeng2025positionbias,
  title = {An Empirical Study of Position Bias in Modern Information Retrieval},
  author = {Zeng and others},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2025},
  year = {2025}
}"""

BASE_TAGS: tuple[str, ...] = (
    "position-bias",
    "dense-retrieval",
    "information-retrieval",
    "synthetic",
    "query-generation",
)

TableLike = Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]
"""A table as a list of row dicts (columns = keys, in first-seen order) or as a nested mapping
``{row_label: {column: value}}`` (e.g. ``{"256-512": {"begin": 10, "middle": 7, "end": 9}}``)."""


# --------------------------------------------------------------------------------------------
# Card data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarkdownTable:
    """A table with pre-formatted string cells, ready for the card templates."""

    columns: list[str]
    rows: list[list[str]]

    def to_markdown(self) -> str:
        """GitHub-flavoured markdown (what the templates emit).

        Example:
            >>> print(as_table([{"a": 1, "b": 0.25}]).to_markdown())
            | a | b |
            |---|---|
            | 1 | 0.25 |
        """
        head = "| " + " | ".join(self.columns) + " |"
        rule = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join([head, rule, *body])


def format_cell(value: Any) -> str:
    """Format one table cell: thousands separators, at most 4 decimals for floats.

    Example:
        >>> [format_cell(v) for v in (481236, 0.3, 16.3245678, 1.0, 2e-05, None, True)]
        ['481,236', '0.3', '16.3246', '1.0', '2e-05', '', 'yes']
        >>> format_cell("a|b"), format_cell([1, 2]), format_cell({"k": 0.5})
        ('a\\\\|b', '1, 2', 'k=0.5')
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer():
            return f"{value:,.1f}"
        if abs(value) < 1e-3:
            # 4 fixed decimals would print a small but non-zero value as 0.
            return f"{value:.3g}"
        return f"{value:,.4f}".rstrip("0").rstrip(".")
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={format_cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(format_cell(v) for v in value)
    # A pipe or newline would break the markdown row.
    return str(value).replace("|", "\\|").replace("\n", " ")


def as_table(table: TableLike, *, index_name: str = "") -> MarkdownTable:
    """Turn a list of row dicts or a nested ``{row: {col: value}}`` mapping into a table.

    Example:
        >>> as_table({"256-512": {"begin": 3, "end": 1}}, index_name="bin").columns
        ['bin', 'begin', 'end']
    """
    if isinstance(table, Mapping):
        rows: list[Mapping[str, Any]] = [
            {index_name or "": label, **dict(cells)} for label, cells in table.items()
        ]
    else:
        rows = list(table)
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    return MarkdownTable(
        columns=[str(c) for c in columns],
        rows=[[format_cell(row.get(c)) for c in columns] for row in rows],
    )


def flatten_report(report: Mapping[str, Any], prefix: str = "") -> list[dict[str, Any]]:
    """Flatten a stage report's ``to_dict()`` into ``{"field": …, "value": …}`` rows.

    Nested mappings get dotted keys; lists of scalars are joined. Lists of dicts are skipped
    (tables belong in their own card section) and so are empty values.

    Example:
        >>> flatten_report({"kept": 10, "per_bin": {"256-512": 4}, "examples": {}})
        [{'field': 'kept', 'value': 10}, {'field': 'per_bin.256-512', 'value': 4}]
    """
    rows: list[dict[str, Any]] = []
    for key, value in report.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows.extend(flatten_report(value, prefix=f"{name}."))
        elif isinstance(value, list | tuple):
            if value and not any(isinstance(v, Mapping | list | tuple) for v in value):
                rows.append({"field": name, "value": list(value)})
        elif value is not None and value != "":
            rows.append({"field": name, "value": value})
    return rows


@dataclass(frozen=True)
class CorpusInfo:
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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CorpusInfo:
        """Build from a plain dict (unknown keys are an error, not silently dropped)."""
        return cls(**_known_keys(cls, data))


@dataclass(frozen=True)
class GeneratorInfo:
    """The query generator: its name (backend + model) and the parameters it ran with.

    Attributes:
        name: e.g. ``"openai:gpt-4o-mini"`` or ``"ict"``.
        params: every parameter that changes the output (temperature, top_p, prompt version …).
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GeneratorInfo:
        """Build from ``{"name": …, "params": {…}}``."""
        return cls(**_known_keys(cls, data))


@dataclass(frozen=True)
class PanelMember:
    """One verifier of the panel and the normalisation applied to its scores."""

    name: str
    normalisation: str


@dataclass(frozen=True)
class PanelInfo:
    """The verification panel; the consensus margin is ``aggregation`` over member margins.

    Attributes:
        members: the verifiers in the order of ``panel_scores`` / ``member_margins``.
        aggregation: how member margins combine (YHP26: ``"min"``).
    """

    members: tuple[PanelMember, ...]
    aggregation: str = "min"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PanelInfo:
        """Accept ``{"members": ["a", {"name": "b", "normalisation": "sigmoid"}],
        "normalisation": "sigmoid", "aggregation": "min"}`` (a member's own normalisation wins).

        Example:
            >>> PanelInfo.from_dict({"members": ["bm25"], "normalisation": "minmax"}).members
            (PanelMember(name='bm25', normalisation='minmax'),)
        """
        default_norm = str(data.get("normalisation", data.get("normalization", "")))
        members = []
        for member in data.get("members", []):
            if isinstance(member, str):
                members.append(PanelMember(member, default_norm))
            else:
                norm = member.get("normalisation", member.get("normalization", default_norm))
                members.append(PanelMember(str(member["name"]), str(norm)))
        if not members:
            raise InputError("panel info lists no members; pass panel={'members': [...], ...}")
        return cls(members=tuple(members), aggregation=str(data.get("aggregation", "min")))


@dataclass(frozen=True)
class DatasetCardInfo:
    """Everything a pool or training-set card states that cannot be counted from its rows.

    Counts per (length bin, position) and the begin:middle:end distribution are measured from
    the rows being written; the fields below carry the rest, each as measured/used by the run.

    Attributes:
        pretty_name: the card title and ``pretty_name:`` in the YAML header.
        corpus: source text and its licence (the card's ``license:``).
        generator: query generator name + parameters.
        panel: verification panel members + normalisations.
        delta: the margin threshold δ the pool was filtered at.
        seed: the seed of the run (generation / sampling).
        budget: per (bin, position) sampling budget of the training sets (``None`` for a pool).
        filter_table: YHP26 Table 6 style rows (``filter, retained, %, begin, middle, end``)
            from the verification report; ``None`` lets :func:`write_pool_repo` count it from
            the pool's margins (a training-set card then omits the section).
        strata: margin strata rows (e.g. the LLM audit of YHP26: ``stratum, n, TargetYes, …``);
            ``None`` when no audit was run.
        reports: stage reports by name (``{"corpus": CorpusReport.to_dict(), "generation":
            …, "verification": …, "sample": …}``), each rendered as a field/value table.
        repo_id: the Hub id the card's loading examples use (``"<user>/<name>"`` if unknown).
        language: ISO 639-1 codes of the text.
        tags: extra Hub tags on top of :data:`BASE_TAGS`.
    """

    pretty_name: str
    corpus: CorpusInfo
    generator: GeneratorInfo
    panel: PanelInfo
    delta: float
    seed: int
    budget: int | None = None
    filter_table: TableLike | None = None
    strata: TableLike | None = None
    reports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    repo_id: str | None = None
    language: tuple[str, ...] = ("en",)
    tags: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetCardInfo:
        """Build from plain nested dicts, e.g. a JSON manifest.

        Example:
            >>> info = DatasetCardInfo.from_dict({
            ...     "pretty_name": "x", "delta": 0.3, "seed": 0,
            ...     "corpus": {"name": "wiki", "license": "cc-by-sa-4.0"},
            ...     "generator": {"name": "ict"}, "panel": {"members": ["bm25"]}})
            >>> info.panel.members[0].name
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (round-trips through :meth:`from_dict`)."""
        return asdict(self)


def _known_keys(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"{cls.__name__}: unknown field(s) {unknown}; expected {sorted(known)}")
    return dict(data)


# --------------------------------------------------------------------------------------------
# Measured statistics
# --------------------------------------------------------------------------------------------


def _rows_of(rows: Sequence[Mapping[str, Any]] | Any) -> list[dict[str, Any]]:
    """Rows as a list of dicts, whether given as a list or a pyarrow Table."""
    if hasattr(rows, "to_pylist"):
        return rows.to_pylist()
    return [dict(r) for r in rows]


# The columns the card statistics read; everything else (document texts, scores) is left in
# the table so that counting a multi-million-row pool does not materialise its texts.
_STAT_COLUMNS = ("candidate_id", "length_bin", "target_position", "margin", "retained")


def _stat_rows(
    rows: Sequence[Mapping[str, Any]] | Any,
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """(rows restricted to the statistics columns, all column names in order)."""
    if hasattr(rows, "column_names"):
        columns = list(rows.column_names)
        return rows.select([c for c in columns if c in _STAT_COLUMNS]).to_pylist(), columns
    rows = list(rows)
    return rows, list(rows[0]) if rows else []


def _bin_order(labels: set[str]) -> list[str]:
    # Cards list 256-512 before 1024-2048 (numeric lower edge); unparsable labels go last.
    return sorted(labels, key=bin_sort_key)


def bin_position_counts(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Count rows per (``length_bin``, ``target_position``): one row per bin plus a total row.

    Example:
        >>> bin_position_counts([{"length_bin": "256-512", "target_position": "end"}])
        [{'length bin': '256-512', 'begin': 0, 'middle': 0, 'end': 1, 'total': 1}, \
{'length bin': 'total', 'begin': 0, 'middle': 0, 'end': 1, 'total': 1}]
    """
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        position = row.get("target_position")
        if position not in POSITIONS:
            raise InputError(
                f"row {row.get('candidate_id', '?')} has target_position {position!r}; "
                f"expected one of {list(POSITIONS)}"
            )
        cell = counts.setdefault(str(row.get("length_bin")), dict.fromkeys(POSITIONS, 0))
        cell[position] += 1
    table = []
    for label in _bin_order(set(counts)):
        table.append({"length bin": label, **counts[label], "total": sum(counts[label].values())})
    totals = {p: sum(counts[b][p] for b in counts) for p in POSITIONS}
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


def filter_table_from_margins(
    rows: Sequence[Mapping[str, Any]],
    thresholds: Sequence[float] = DEFAULT_FILTER_THRESHOLDS,
) -> list[dict[str, Any]]:
    """YHP26 Table 6 from a scored pool: cumulative ``m ≥ t`` counts by target position.

    The first row counts candidates that fail the top-rank check (``m < 0``, removed); rows
    without a finite margin are counted on their own row instead of disappearing.

    Example:
        >>> pool = [{"margin": 0.35, "target_position": "begin"},
        ...         {"margin": -0.1, "target_position": "end"}]
        >>> filter_table_from_margins(pool, (0.0, 0.3))[1]
        {'filter': 'm ≥ 0', 'retained': 1, '%': 50.0, 'begin': 1, 'middle': 0, 'end': 0}
    """
    total = len(rows)
    margins = []
    unscored = 0
    for row in rows:
        m = row.get("margin")
        if m is None or (isinstance(m, float) and math.isnan(m)):
            unscored += 1
        else:
            margins.append((float(m), row["target_position"]))

    def pct(n: int) -> float:
        return round(100 * n / total, 2) if total else 0.0

    failed = sum(1 for m, _ in margins if m < 0)
    table: list[dict[str, Any]] = [
        {"filter": "fails top-rank check (m < 0, removed)", "retained": failed, "%": pct(failed)}
    ]
    if unscored:
        table.append(
            {"filter": "no margin (not scored, removed)", "retained": unscored, "%": pct(unscored)}
        )
    for t in sorted(set(float(x) for x in thresholds)):
        kept = [p for m, p in margins if m >= t]
        table.append(
            {
                "filter": f"m ≥ {t:g}",
                "retained": len(kept),
                "%": pct(len(kept)),
                **{p: kept.count(p) for p in POSITIONS},
            }
        )
    return table


def size_category(n_rows: int) -> str:
    """The Hub's ``size_categories`` bucket of a row count.

    Example:
        >>> [size_category(n) for n in (10, 40945, 2948006)]
        ['n<1K', '10K<n<100K', '1M<n<10M']
    """
    bounds = [
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
        (1_000_000_000, "100M<n<1B"),
    ]
    for bound, label in bounds:
        if n_rows < bound:
            return label
    return "n>1B"


# --------------------------------------------------------------------------------------------
# Writing the repo folder
# --------------------------------------------------------------------------------------------


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
        ...     "pretty_name": "x", "delta": 0.3, "seed": 0,
        ...     "corpus": {"name": "wiki", "license": "cc-by-sa-4.0"},
        ...     "generator": {"name": "ict"}, "panel": {"members": ["bm25"]}})
        >>> "config_name: default" in front_matter(info, ["default"], 10)
        True
    """
    import yaml

    configs = []
    for name in config_names:
        entry: dict[str, Any] = {
            "config_name": name,
            "data_files": [{"split": split, "path": f"{DATA_DIR}/{name}/{split}-*.parquet"}],
        }
        if name == default_config:
            entry["default"] = True
        configs.append(entry)
    tags = list(dict.fromkeys([*BASE_TAGS, *extra_tags, *info.tags]))
    header = {
        "pretty_name": info.pretty_name,
        "license": info.corpus.license,
        "language": list(info.language),
        "task_categories": ["text-retrieval"],
        "task_ids": ["document-retrieval"],
        "tags": tags,
        "size_categories": [size_category(n_rows)],
        "configs": configs,
    }
    return yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)


def _check_config_names(names: Sequence[str]) -> None:
    if not names:
        raise InputError("nothing to publish: no configs given")
    for name in names:
        if not _CONFIG_NAME.match(name):
            raise InputError(
                f"config name {name!r} is not usable as a Hub config / folder name "
                "(letters, digits, '_', '.', '-'; starting with a letter or digit)"
            )


def _prepare_folder(folder: Path, overwrite: bool) -> None:
    """Empty ``folder`` of a previous publish; refuse a foreign non-empty folder.

    A folder holding only what this module writes (plus ``.git`` / ``.cache``) is ours and is
    rewritten; stale ``data/<config>/`` folders are removed so the upload cannot carry configs
    the new card does not declare.
    """
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} exists and is not a folder")
    if not folder.exists():
        folder.mkdir(parents=True)
        return
    entries = {p.name for p in folder.iterdir()}
    foreign = sorted(entries - _OWN_ENTRIES - _TOLERATED_ENTRIES)
    if foreign and not overwrite:
        shown = ", ".join(foreign[:5]) + (" …" if len(foreign) > 5 else "")
        raise InputError(
            f"{folder} is not empty and does not look like a dataset repo written by posbias "
            f"(found {shown}); choose another folder or pass overwrite=True (--overwrite)"
        )
    for name in entries - _TOLERATED_ENTRIES:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def write_dataset_repo(
    folder: str | Path,
    configs: Mapping[str, Sequence[Mapping[str, Any]] | Any],
    card: str,
    *,
    split: str = "train",
    overwrite: bool = False,
    max_rows_per_shard: int | None = None,
) -> Path:
    """Write a Hub-identical dataset repo folder: ``README.md``, ``.gitattributes``, shards.

    Args:
        folder: target folder (created; see ``overwrite``).
        configs: ``{config_name: rows}``, rows as a list of dicts or a pyarrow Table, in the
            order the card's ``configs:`` lists them.
        card: the full ``README.md`` text; its YAML header must declare exactly these configs
            (use :func:`front_matter`).
        split: the split every config's rows go to.
        overwrite: replace a folder that holds files this module did not write.
        max_rows_per_shard: split a config into several ``<split>-0000i-of-0000n.parquet``
            files (keeps single files small for the Hub); ``None`` = one file per config.

    Returns:
        The folder.

    Raises:
        InputError: an empty config, a bad config name, a card that does not declare the
            configs, or a foreign non-empty folder without ``overwrite``.

    Example:
        >>> import tempfile, datasets
        >>> card = "---\\nconfigs:\\n- config_name: a\\n  data_files:\\n  - split: train\\n"
        >>> card += "    path: data/a/train-*.parquet\\n---\\n# a\\n"
        >>> out = write_dataset_repo(tempfile.mkdtemp() + "/r", {"a": [{"x": 1}]}, card)
        >>> sorted(p.name for p in (out / "data" / "a").iterdir())
        ['train-00000-of-00001.parquet']
    """
    from hf_posbias.shards import write_parquet

    folder = Path(folder)
    names = list(configs)
    _check_config_names(names)
    declared = _declared_configs(card)
    if declared != names:
        raise InputError(
            f"the card's YAML configs {declared} do not match the configs written {names}"
        )
    tables = {}
    for name in names:
        rows = configs[name]
        table = rows if hasattr(rows, "num_rows") else None
        n = table.num_rows if table is not None else len(rows)
        if n == 0:
            raise InputError(f"config {name!r} has no rows; refusing to publish an empty config")
        tables[name] = rows
    if max_rows_per_shard is not None and max_rows_per_shard < 1:
        raise InputError(f"max_rows_per_shard must be >= 1, got {max_rows_per_shard}")

    _prepare_folder(folder, overwrite)
    (folder / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
    infos: list[dict[str, Any]] = []
    for name, rows in tables.items():
        n_rows = n_bytes = download_size = 0
        for index, count, part in _shards(rows, max_rows_per_shard):
            path = folder / DATA_DIR / name / f"{split}-{index:05d}-of-{count:05d}.parquet"
            write_parquet(part, path)
            n_rows, n_bytes = n_rows + part.num_rows, n_bytes + part.nbytes
            download_size += path.stat().st_size
        infos.append(
            {
                "config_name": name,
                "splits": [{"name": split, "num_bytes": n_bytes, "num_examples": n_rows}],
                "download_size": download_size,
                "dataset_size": n_bytes,
            }
        )
    # Written last: a folder with a README is a complete one.
    (folder / CARD_FILE).write_text(_with_dataset_info(card, infos), encoding="utf-8")
    return folder


def _with_dataset_info(card: str, infos: list[dict[str, Any]]) -> str:
    """Add the Hub's ``dataset_info`` block (split sizes, as ``push_to_hub`` writes it).

    Besides documenting sizes, it fixes a silent failure: ``datasets`` keys its cache for a
    local folder by the folder name, the YAML configs and ``dataset_info`` only, so without it a
    rebuilt ``train/`` folder would load the rows of an older one.
    """
    import yaml

    header, body = _split_front_matter(card)
    if not header:
        return card
    header["dataset_info"] = infos
    text = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{text}---\n{body}"


def _shards(rows: Any, max_rows: int | None) -> list[tuple[int, int, Any]]:
    import pyarrow as pa

    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(_rows_of(rows))
    if max_rows is None or table.num_rows <= max_rows:
        return [(0, 1, table)]
    count = math.ceil(table.num_rows / max_rows)
    return [(i, count, table.slice(i * max_rows, max_rows)) for i in range(count)]


def _split_front_matter(card: str) -> tuple[dict[str, Any], str]:
    import yaml

    match = re.match(r"^---\n(.*?)\n---\n?(.*)$", card, flags=re.S)
    if not match:
        return {}, card
    return yaml.safe_load(match.group(1)) or {}, match.group(2)


def _declared_configs(card: str) -> list[str]:
    header, _ = _split_front_matter(card)
    return [str(c.get("config_name")) for c in header.get("configs") or []]


def _render(template: str, info: DatasetCardInfo, header: str, **stats: Any) -> str:
    from hf_posbias.cards import render_card

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
        panel=as_table(
            [{"member": m.name, "normalisation": m.normalisation} for m in info.panel.members]
        ),
        strata=as_table(info.strata) if info.strata else None,
        corpus_report=corpus_report,
        reports=reports,
        positions=POSITIONS,
        citation=CITATION,
        fmt=format_cell,
        **stats,
    )


def write_pool_repo(
    rows: Sequence[Mapping[str, Any]] | Any,
    folder: str | Path,
    info: DatasetCardInfo,
    *,
    config: str = "default",
    filter_thresholds: Sequence[float] = DEFAULT_FILTER_THRESHOLDS,
    **kw: Any,
) -> Path:
    """Write the scored candidate pool (every candidate, retained or not) as a dataset repo.

    The card's filter table is ``info.filter_table`` if given, else counted from the rows'
    margins at ``filter_thresholds`` ∪ {δ}; bin × position tables are counted from the rows.
    Extra keyword arguments go to :func:`write_dataset_repo`.

    Example:
        >>> import tempfile
        >>> info = DatasetCardInfo.from_dict({
        ...     "pretty_name": "pool", "delta": 0.3, "seed": 0,
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

    def kept(row: Mapping[str, Any]) -> bool:
        m = row.get("margin")
        return m is not None and not (isinstance(m, float) and math.isnan(m)) and m >= info.delta

    retained = [r for r in pool if kept(r)]
    # The contract defines retained = margin >= δ: a disagreement means the card's δ is not the
    # δ the pool was verified at, and the card would state wrong numbers.
    disagree = [r for r in pool if "retained" in r and bool(r["retained"]) != kept(r)]
    if disagree:
        raise InputError(
            f"{len(disagree)} pool rows have a 'retained' flag that disagrees with margin >= "
            f"{info.delta} (e.g. {disagree[0].get('candidate_id', '?')}); pass the δ the pool "
            "was verified at"
        )
    filter_table = (
        info.filter_table
        if info.filter_table is not None
        else filter_table_from_margins(pool, [*filter_thresholds, info.delta])
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
        n_retained=len(retained),
        columns=columns,
        all_counts=as_table(bin_position_counts(pool)),
        retained_counts=as_table(bin_position_counts(retained)),
        filter_table=as_table(filter_table),
        filter_counted=info.filter_table is None,
        example_bin=_bin_order({str(r["length_bin"]) for r in pool})[0] if pool else "",
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
    first config). Each config's measured begin:middle:end distribution and bin × position
    counts go into the card. Extra keyword arguments go to :func:`write_dataset_repo`.

    Example:
        >>> import tempfile
        >>> info = DatasetCardInfo.from_dict({
        ...     "pretty_name": "train", "delta": 0.3, "seed": 0, "budget": 1,
        ...     "corpus": {"name": "wiki", "license": "cc-by-sa-4.0"},
        ...     "generator": {"name": "ict"}, "panel": {"members": ["bm25"]}})
        >>> row = dict(query="q", positive="p", doc_id="d", length_bin="256-512",
        ...            target_position="end", candidate_id="d::end", margin=0.4)
        >>> out = write_train_repo({"end": [row]}, tempfile.mkdtemp() + "/train", info)
        >>> (out / "data" / "end" / "train-00000-of-00001.parquet").is_file()
        True
    """
    names = list(train_sets)
    _check_config_names(names)
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
        summary.append({"config": f"`{name}`", **dist})
    per_config = {name: as_table(bin_position_counts(rows)) for name, rows in sets.items()}
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


# --------------------------------------------------------------------------------------------
# Reading and uploading
# --------------------------------------------------------------------------------------------


def available_configs(folder: str | Path) -> list[str]:
    """Config names declared in a local repo folder's card.

    Example:
        >>> available_configs("/nonexistent")
        []
    """
    card = Path(folder) / CARD_FILE
    if not card.is_file():
        return []
    return _declared_configs(card.read_text(encoding="utf-8"))


def local_cache_dir(folder: str | Path, root: str | Path | None = None) -> Path:
    """A ``datasets`` cache folder addressed by the content of a local repo folder.

    Why: ``datasets`` 5.x keys the cache of a local folder by the folder's *base name* and
    its YAML ``configs:`` only — not by the data. Two ``<out>/train`` folders with the same
    configs share one cache entry, so ``load_dataset`` silently returns the rows of whichever
    was read first. Hashing README + data bytes gives each content its own entry (identical
    content still shares one).

    Example:
        >>> import tempfile
        >>> a, b = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> local_cache_dir(a, "/c") == local_cache_dir(b, "/c")  # both empty: same content
        True
    """
    import hashlib

    folder = Path(folder)
    digest = hashlib.sha256()
    # Every file but hidden ones (.git, .cache): also covers folders not laid out as data/<config>.
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    if root is None:
        import datasets

        root = datasets.config.HF_DATASETS_CACHE
    return Path(root) / "posbias-local" / digest.hexdigest()[:20]


def load_dataset_fresh(
    source: str | Path, config: str | None = None, split: str = "train", **kwargs: Any
) -> Any:
    """``datasets.load_dataset``, with local folders read through :func:`local_cache_dir`.

    Use it wherever a local folder may have been rewritten since it was last read (the
    pipeline's own outputs, user folders); Hub ids and files go to ``load_dataset`` unchanged.
    """
    import datasets

    cache_dir = kwargs.pop("cache_dir", None)
    if Path(source).is_dir():
        cache_dir = str(local_cache_dir(source, cache_dir))
    elif cache_dir is not None:
        cache_dir = str(cache_dir)
    return datasets.load_dataset(str(source), config, split=split, cache_dir=cache_dir, **kwargs)


def read_dataset(
    repo_or_folder: str | Path,
    config: str,
    split: str = "train",
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
) -> Any:
    """``datasets.load_dataset`` of one config, with a one-line error naming the real configs.

    ``repo_or_folder`` is a local folder written by :func:`write_dataset_repo` or a Hub id
    (``HF_ENDPOINT`` decides which Hub); ``revision`` applies to Hub ids. A local folder is
    read through a content-addressed cache (:func:`local_cache_dir`), so rewriting a folder
    never yields stale rows — prefer this over a bare ``load_dataset(folder, …)``.

    Example:
        >>> read_dataset("/nonexistent-folder", "uniform")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: no dataset repo folder or Hub dataset '/nonexistent-folder'
    """
    import datasets

    local = Path(repo_or_folder)
    if local.exists():
        names = available_configs(local)
        if config not in names:
            raise InputError(
                f"{local} has no config {config!r}; available configs: {', '.join(names) or 'none'}"
            )
        return load_dataset_fresh(local, config, split=split, cache_dir=cache_dir)
    if str(repo_or_folder).startswith(("/", ".", "~")) or str(repo_or_folder).count("/") > 1:
        raise InputError(f"no dataset repo folder or Hub dataset {str(repo_or_folder)!r}")
    try:
        return datasets.load_dataset(
            str(repo_or_folder),
            config,
            split=split,
            revision=revision,
            cache_dir=None if cache_dir is None else str(cache_dir),
        )
    except ValueError as exc:
        # datasets names the available configs in its message ("Available: [...]"); keep it
        # on one line and lead with what the user asked for.
        message = " ".join(str(exc).split())
        if config in message and "vailable" in message:
            raise InputError(f"{repo_or_folder} has no config {config!r}: {message}") from exc
        raise
    except (ConnectionError, OSError) as exc:
        raise BackendError(f"cannot load {repo_or_folder} ({config}): {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "…"


def resolve_token(token: str | None = None) -> str:
    """The Hub token: the argument, else ``HF_TOKEN``, else huggingface_hub's stored login.

    Raises:
        PosbiasError: no token anywhere.
    """
    if token:
        return token
    from huggingface_hub import get_token

    found = get_token()
    if not found:
        raise PosbiasError(
            "no Hugging Face token: pass --token, set HF_TOKEN, or run `hf auth login`"
        )
    return found


def upload_folder(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str = "dataset",
    token: str | None = None,
    private: bool = False,
    commit_message: str = "Upload with hf-posbias",
) -> str:
    """Create ``repo_id`` if needed and upload ``folder`` to it; returns the repo URL.

    Works for any repo type: a dataset folder from :func:`write_dataset_repo`, or a model
    checkpoint folder with ``repo_type="model"``.

    Raises:
        InputError: the folder is missing or empty.
        PosbiasError: no token.
        BackendError: the Hub refused the request or could not be reached.

    Example:
        >>> upload_folder("/nonexistent", "me/x", token="hf_x")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: nothing to upload: /nonexistent is not a folder
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"nothing to upload: {folder} is not a folder")
    if not any(p.name not in _TOLERATED_ENTRIES for p in folder.iterdir()):
        raise InputError(f"nothing to upload: {folder} is empty")
    if repo_type not in ("dataset", "model", "space"):
        raise InputError(f"repo_type must be 'dataset', 'model' or 'space', got {repo_type!r}")
    token = resolve_token(token)

    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.errors import HTTPError as HubTransportError

    api = huggingface_hub.HfApi()
    try:
        url = api.create_repo(
            repo_id, token=token, private=private, repo_type=repo_type, exist_ok=True
        )
        api.upload_folder(
            repo_id=repo_id,
            folder_path=str(folder),
            repo_type=repo_type,
            token=token,
            commit_message=commit_message,
        )
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        raise BackendError(
            f"the Hub refused the upload to {repo_id} (HTTP {status}): {_one_line(exc)}"
        ) from exc
    except (HubTransportError, OSError) as exc:
        # OSError covers ConnectionError and huggingface_hub's OfflineModeIsEnabled.
        raise BackendError(
            f"cannot reach the Hub to upload {repo_id} ({type(exc).__name__}): {_one_line(exc)}"
        ) from exc
    return str(url)


__all__ = [
    "BASE_TAGS",
    "CorpusInfo",
    "DatasetCardInfo",
    "GeneratorInfo",
    "MarkdownTable",
    "PanelInfo",
    "PanelMember",
    "as_table",
    "available_configs",
    "bin_position_counts",
    "filter_table_from_margins",
    "flatten_report",
    "front_matter",
    "local_cache_dir",
    "position_distribution",
    "read_dataset",
    "resolve_token",
    "size_category",
    "upload_folder",
    "write_dataset_repo",
    "write_pool_repo",
    "write_train_repo",
]
