"""The layout of a Hub dataset repo folder: ``README.md`` card, ``.gitattributes``, parquet shards.

:func:`write_dataset_repo` writes a folder laid out exactly like the Hub repo will be —
``README.md`` (card with YAML ``configs:`` and the Hub's ``dataset_info`` sizes),
``.gitattributes`` and deterministic parquet shards under ``data/<config>/`` — so that
``datasets.load_dataset(folder, config)`` reads it exactly as it would read the repo, and the same
rows always give byte-identical files (no timestamps anywhere). Uploading it is
:func:`hf_posbias.hub.upload_folder`; what the card says is :mod:`hf_posbias.publish.dataset_card`.

Example:
    >>> import tempfile
    >>> from hf_posbias.rows.readers import read_dataset
    >>> card = "---\\n" + front_matter_yaml(["a"], default_config="a") + "---\\n# a\\n"
    >>> out = write_dataset_repo(tempfile.mkdtemp() + "/r", {"a": [{"x": 1}]}, card)
    >>> read_dataset(out, "a")[0]["x"]
    1
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.hub import stays_home
from hf_posbias.rows.arrow import ParquetRows
from hf_posbias.rows.readers import CARD_FILE, declared_configs, split_front_matter
from hf_posbias.settings import flag_name

DATA_DIR = "data"

# Entries a folder written by this module may hold. Besides, what stays home (hub.stays_home:
# ``.git`` of a clone, huggingface_hub's ``.cache``, the lock and record of the run that
# claimed the folder) is neither foreign nor removed: upload_folder skips it.
_OWN_ENTRIES = frozenset({CARD_FILE, ".gitattributes", DATA_DIR})

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


def front_matter_yaml(
    config_names: Sequence[str],
    *,
    split: str = "train",
    default_config: str | None = None,
    paths: Mapping[str, str] | None = None,
    **fields: Any,
) -> str:
    """A card's YAML header (without the ``---`` fences): ``fields`` then ``configs:``.

    Every config's ``data_files`` point at ``data/<config>/<split>-*.parquet``, the layout
    :func:`write_dataset_repo` writes, unless ``paths`` names its file (a task repo's
    ``qrels.parquet`` at the root). Key order is deterministic.

    Example:
        >>> print(front_matter_yaml(["uniform"], default_config="uniform", pretty_name="x"))
        pretty_name: x
        configs:
        - config_name: uniform
          data_files:
          - split: train
            path: data/uniform/train-*.parquet
          default: true
        <BLANKLINE>
    """
    import yaml

    configs = []
    for name in config_names:
        path = (paths or {}).get(name, f"{DATA_DIR}/{name}/{split}-*.parquet")
        entry: dict[str, Any] = {
            "config_name": name,
            "data_files": [{"split": split, "path": path}],
        }
        if name == default_config:
            entry["default"] = True
        configs.append(entry)
    header = {**fields, "configs": configs}
    return yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)


def check_config_names(names: Sequence[str]) -> None:
    """Refuse an empty list or a config name unusable as a Hub config / folder name."""
    if not names:
        raise InputError("nothing to publish: no configs given")
    for name in names:
        if not _CONFIG_NAME.match(name):
            raise InputError(
                f"config name {name!r} is not usable as a Hub config / folder name "
                "(letters, digits, '_', '.', '-'; starting with a letter or digit)"
            )


def check_repo_folder(
    folder: str | Path, overwrite: bool = False, *, own: frozenset[str] = _OWN_ENTRIES
) -> Path:
    """Refuse a target that is a file, or a non-empty folder this module did not write.

    Called before any stage runs (``posbias data build`` checks ``OUT/pool`` and ``OUT/train``
    first), and again right before writing. A folder holding only what this module writes
    (``own``: the entries of the layout being written; plus what stays home on upload,
    :func:`hf_posbias.hub.stays_home`) is ours and may be rewritten.

    Example:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "notes.txt").write_text("mine")
        >>> check_repo_folder(folder)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ... is not empty and does not look like a dataset repo ...
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} exists and is not a folder")
    if folder.is_dir() and not overwrite:
        foreign = sorted(
            p.name for p in folder.iterdir() if p.name not in own and not stays_home(p.name)
        )
        if foreign:
            shown = ", ".join(foreign[:5]) + (" …" if len(foreign) > 5 else "")
            raise InputError(
                f"{folder} is not empty and does not look like a dataset repo written by "
                f"posbias (found {shown}); choose another folder or pass {flag_name('overwrite')}"
            )
    return folder


def prepare_repo_folder(
    folder: Path, overwrite: bool, *, own: frozenset[str] = _OWN_ENTRIES
) -> None:
    """Empty ``folder`` of a previous publish (see :func:`check_repo_folder`).

    Stale ``data/<config>/`` folders are removed so the upload cannot carry configs the new
    card does not declare.
    """
    check_repo_folder(folder, overwrite, own=own)
    if not folder.exists():
        folder.mkdir(parents=True)
        return
    for path in folder.iterdir():
        if stays_home(path.name):  # a claim's record and set-aside run stay (output_folders)
            continue
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
    import pyarrow as pa

    from hf_posbias.shards import ParquetRowWriter, write_parquet

    folder = Path(folder)
    names = list(configs)
    check_config_names(names)
    declared = declared_configs(card)
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

    prepare_repo_folder(folder, overwrite)
    (folder / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
    infos: list[dict[str, Any]] = []
    for name, rows in tables.items():
        n_rows = n_bytes = download_size = 0
        for index, count, part in _shards(rows, max_rows_per_shard):
            path = folder / DATA_DIR / name / f"{split}-{index:05d}-of-{count:05d}.parquet"
            if isinstance(part, ParquetRows):
                # Rows read lazily (a scored pool of any size): copied a row group at a time.
                schema = part.schema()
                with ParquetRowWriter(path, schema=schema) as writer:
                    for group in part.tables():
                        # Rebuilt from its rows, as a list of rows would be: the arrays (no
                        # validity bitmap where nothing is null) and so the bytes and sizes
                        # are those the same rows given as a list make.
                        table = pa.Table.from_pylist(group.to_pylist(), schema=schema)
                        writer.write_table(table)
                        n_bytes += table.nbytes
                n_rows += part.num_rows
            else:
                write_parquet(part, path)
                n_rows, n_bytes = n_rows + part.num_rows, n_bytes + part.nbytes
            download_size += path.stat().st_size
        infos.append(dataset_info_entry(name, split, n_rows, n_bytes, download_size))
    # Written last: a folder with a README is a complete one.
    (folder / CARD_FILE).write_text(with_dataset_info(card, infos), encoding="utf-8")
    return folder


def dataset_info_entry(
    config: str, split: str, n_rows: int, n_bytes: int, download_size: int
) -> dict[str, Any]:
    """One config's entry of the card's ``dataset_info`` (as ``push_to_hub`` writes it).

    Example:
        >>> dataset_info_entry("a", "test", 3, 24, 512)["splits"]
        [{'name': 'test', 'num_bytes': 24, 'num_examples': 3}]
    """
    return {
        "config_name": config,
        "splits": [{"name": split, "num_bytes": n_bytes, "num_examples": n_rows}],
        "download_size": download_size,
        "dataset_size": n_bytes,
    }


def with_dataset_info(card: str, infos: list[dict[str, Any]]) -> str:
    """Add the Hub's ``dataset_info`` block (split sizes, as ``push_to_hub`` writes it).

    Besides documenting sizes, it fixes a silent failure: ``datasets`` keys its cache for a
    local folder by the folder name, the YAML configs and ``dataset_info`` only, so without it a
    rebuilt ``train/`` folder would load the rows of an older one.
    """
    import yaml

    header, body = split_front_matter(card)
    if not header:
        return card
    header["dataset_info"] = infos
    text = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{text}---\n{body}"


def _shards(rows: Any, max_rows: int | None) -> list[tuple[int, int, Any]]:
    import pyarrow as pa

    if isinstance(rows, ParquetRows) and (max_rows is None or rows.num_rows <= max_rows):
        return [(0, 1, rows)]  # one file, streamed
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(_rows_of(rows))
    if max_rows is None or table.num_rows <= max_rows:
        return [(0, 1, table)]
    count = math.ceil(table.num_rows / max_rows)
    return [(i, count, table.slice(i * max_rows, max_rows)) for i in range(count)]


def _rows_of(rows: Sequence[Mapping[str, Any]] | Any) -> list[dict[str, Any]]:
    """Rows as a list of dicts, whether given as a list or a pyarrow Table."""
    if hasattr(rows, "to_pylist"):
        return rows.to_pylist()
    return [dict(r) for r in rows]


__all__ = [
    "DATA_DIR",
    "GITATTRIBUTES",
    "check_config_names",
    "check_repo_folder",
    "dataset_info_entry",
    "front_matter_yaml",
    "prepare_repo_folder",
    "size_category",
    "with_dataset_info",
    "write_dataset_repo",
]
