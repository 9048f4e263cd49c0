"""Reading rows from files, repo folders and Hub datasets, with one error line per problem.

What :mod:`hf_posbias.rows` re-exports for files, folders and datasets lives here; the lazy arrow
sequences live in :mod:`hf_posbias.rows.arrow`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hf_posbias.errors import BackendError, InputError, PosbiasError, first_line

CARD_FILE = "README.md"
"""The dataset card of a repo folder; its YAML header declares the configs."""

FILE_SUFFIXES: tuple[str, ...] = (".jsonl", ".json", ".parquet")
"""Local file types :func:`iter_rows` reads."""


# --------------------------------------------------------------------------- text and files


def _not_utf8(path: Path, offset: int, err: UnicodeDecodeError) -> InputError:
    bad = err.object[err.start : err.start + 4]
    return InputError(
        f"{path}: not UTF-8 text at byte offset {offset} ({err.reason}, bytes {bad!r}); "
        "convert the file to UTF-8"
    )


def read_text(path: str | Path) -> str:
    """A file's text, decoded as UTF-8; text that is not UTF-8 names the file and byte offset.

    Example:
        >>> import pathlib, tempfile
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "latin1.txt"
        >>> _ = bad.write_bytes("caf\\xe9".encode("latin-1"))
        >>> read_text(bad)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...latin1.txt: not UTF-8 text at byte offset 3 ...
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _not_utf8(path, err.start, err) from None


def read_json(path: str | Path) -> Any:
    """A JSON file's content; a missing file, text that is not UTF-8 or malformed JSON is one
    :class:`InputError` line naming the file.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cut.json"
        >>> _ = path.write_text('{"k": 2,')
        >>> read_json(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...cut.json: not valid JSON (Expecting property name ...)
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise InputError(
            f"{path}: not valid JSON ({err.msg}, line {err.lineno} column {err.colno})"
        ) from None


def iter_jsonl_objects(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, object)`` for each non-blank line of a JSONL file.

    ``where`` is ``"<path>:<line>"``. A missing file, a line that is not UTF-8 (reported with
    its byte offset), malformed JSON or a line that is not a JSON object raises
    :class:`InputError` naming the file and line.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.jsonl"
        >>> _ = path.write_text('{"a": 1}\\n[1]\\n')
        >>> list(iter_jsonl_objects(path))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...x.jsonl:2: expected a JSON object, got list
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    offset = 0
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise _not_utf8(path, start + err.start, err) from None
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(f"{where}: malformed JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
            yield where, record


def _iter_json_file(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    # A ``.json`` file is a JSON array of objects, or JSON Lines (as datasets' json loader).
    text = read_text(path)
    if not text.lstrip().startswith("["):
        yield from iter_jsonl_objects(path)
        return
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None
    for i, record in enumerate(payload):
        if not isinstance(record, dict):
            kind = type(record).__name__
            raise InputError(f"{path}: item {i}: expected a JSON object, got {kind}")
        yield f"{path}: item {i}", record


def read_parquet(path: str | Path, columns: list[str] | None = None) -> Any:
    """A parquet file as a ``pyarrow.Table``; a missing, truncated or foreign file is one
    :class:`InputError` line naming the file.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cut.parquet"
        >>> _ = path.write_bytes(b"PAR1 not really")
        >>> read_parquet(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...cut.parquet: not a readable parquet file (...)
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    with readable_parquet(path) as path:
        table = pq.read_table(path, columns=columns)
    # The read's scratch memory (compressed and decoded pages, the reader threads' pages) is
    # free now, but arrow's allocator (mimalloc) keeps it from the OS: at 64,000 documents of
    # text about 90 MB, 2.4 times the table itself, which the process's peak would carry.
    pa.default_memory_pool().release_unused()
    return table


def parquet_num_rows(path: str | Path) -> int:
    """A parquet file's row count from its footer, without reading its rows; an unreadable file
    is one error line, as in :func:`read_parquet`.

    Example:
        >>> import pathlib, tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "ids.parquet"
        >>> pq.write_table(pa.table({"id": ["d1", "d2", "d3"]}), path)
        >>> parquet_num_rows(path)
        3
    """
    import pyarrow.parquet as pq

    with readable_parquet(path) as path:
        return int(pq.ParquetFile(path).metadata.num_rows)


@contextmanager
def readable_parquet(path: str | Path) -> Iterator[Path]:
    """Turn a missing file or pyarrow's many error types for an unreadable one into one
    :class:`InputError` line naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        yield path
    except Exception as err:  # pyarrow raises several types for unreadable files
        raise InputError(f"{path}: not a readable parquet file ({first_line(err)})") from None


def read_parquet_rows(path: str | Path) -> list[dict[str, Any]]:
    """A parquet file's rows as dicts (through :func:`read_parquet`)."""
    return read_parquet(path).to_pylist()


def _iter_parquet_file(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, row in enumerate(read_parquet_rows(path)):
        yield f"{path}: row {i}", row


# --------------------------------------------------------------------------- repo folders


def split_front_matter(card: str) -> tuple[dict[str, Any], str]:
    """A card's YAML header (``{}`` if none) and its body.

    Example:
        >>> split_front_matter("---\\npretty_name: x\\n---\\n# Title\\n")
        ({'pretty_name': 'x'}, '# Title\\n')
    """
    import yaml

    match = re.match(r"^---\n(.*?)\n---\n?(.*)$", card, flags=re.S)
    if not match:
        return {}, card
    return yaml.safe_load(match.group(1)) or {}, match.group(2)


def declared_configs(card: str) -> list[str]:
    """Config names a card's YAML ``configs:`` declares, in order.

    Example:
        >>> declared_configs("---\\nconfigs:\\n- config_name: uniform\\n---\\n")
        ['uniform']
    """
    header, _ = split_front_matter(card)
    return [str(c.get("config_name")) for c in header.get("configs") or []]


def available_configs(folder: str | Path) -> list[str]:
    """Config names declared in a local repo folder's card (``[]`` without a card).

    Example:
        >>> available_configs("/nonexistent")
        []
    """
    card = Path(folder) / CARD_FILE
    if not card.is_file():
        return []
    return declared_configs(read_text(card))


def local_cache_dir(folder: str | Path, root: str | Path | None = None) -> Path:
    """A ``datasets`` cache folder addressed by the content of a local folder.

    Why: ``datasets`` 5.x keys the cache of a local folder by the folder's *base name* and its
    YAML ``configs:`` only — not by the data. Two ``<out>/train`` folders with the same configs
    share one cache entry, so ``load_dataset`` silently returns the rows of whichever was read
    first. Hashing the folder's files gives each content its own entry (identical content still
    shares one).

    Example:
        >>> import tempfile
        >>> a, b = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> local_cache_dir(a, "/c") == local_cache_dir(b, "/c")  # both empty: same content
        True
    """
    from hf_posbias.hashing import folder_digest

    if root is None:
        import datasets

        root = datasets.config.HF_DATASETS_CACHE
    return Path(root) / "posbias-local" / folder_digest(folder)[:20]


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


def _looks_local(source: str) -> bool:
    # A Hub id is "name" or "org/name"; anything else that does not exist is a missing path.
    return source.startswith(("/", ".", "~")) or source.count("/") > 1


def read_dataset(
    repo_or_folder: str | Path,
    config: str | None,
    split: str = "train",
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
) -> Any:
    """One config of a dataset repo folder or Hub dataset, as a ``datasets.Dataset``.

    ``repo_or_folder`` is a local folder (a repo folder written by
    :func:`hf_posbias.publish.repo.write_dataset_repo`, or any folder ``load_dataset`` reads) or a
    Hub id (``HF_ENDPOINT`` decides which Hub); ``revision`` applies to Hub ids. A folder whose
    card declares configs must hold ``config`` (a one-line error names the real ones). Local
    folders go through the content-addressed cache, so a rewritten folder never yields stale
    rows — prefer this over a bare ``load_dataset(folder, …)``.

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
        if names and config is not None and config not in names:
            raise InputError(
                f"{local} has no config {config!r}; available configs: {', '.join(names)}"
            )
        try:
            return load_dataset_fresh(local, config, split=split, cache_dir=cache_dir)
        except PosbiasError:
            raise
        except Exception as err:  # datasets raises many types; all mean "cannot read this"
            raise InputError(
                f"cannot read {local} ({config or 'default'}, split {split}): {first_line(err)}"
            ) from None
    if _looks_local(str(repo_or_folder)):
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
        if config and config in message and "vailable" in message:
            raise InputError(f"{repo_or_folder} has no config {config!r}: {message}") from exc
        raise InputError(_cannot_load(repo_or_folder, config, exc)) from exc
    except (ConnectionError, OSError) as exc:
        raise BackendError(_cannot_load(repo_or_folder, config, exc)) from exc
    except Exception as exc:  # e.g. DatasetNotFoundError: a missing repo is the user's input
        raise InputError(_cannot_load(repo_or_folder, config, exc)) from exc


def _cannot_load(source: object, config: str | None, exc: BaseException) -> str:
    """One line for a Hub dataset that did not load: the config only when one was asked for, and
    why the Hub was not asked when offline mode is on.

    Example:
        >>> _cannot_load("rajpurkar/squad_v2", None, OSError("no network")).split(" (HF_HUB")[0]
        'cannot load rajpurkar/squad_v2: no network'
    """
    import os

    where = f"{source} (config {config})" if config else str(source)
    reason = first_line(exc) or type(exc).__name__
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}:
        reason += " (HF_HUB_OFFLINE is set: the Hub is not contacted)"
    return f"cannot load {where}: {reason}"


# --------------------------------------------------------------------------- any source


def iter_rows(
    source: str | Path, *, split: str = "train", config: str | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, row)`` from any source (see the module docstring), in order.

    ``where`` locates the row for error messages (``"c.jsonl:3"``, ``"t.parquet: row 7"``,
    ``"org/name: row 7"``). A local file is one split; ``split`` and ``config`` select the
    split and config of a folder or Hub id.
    """
    text = str(source)
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix == ".jsonl":
            yield from iter_jsonl_objects(path)
        elif path.suffix == ".json":
            yield from _iter_json_file(path)
        elif path.suffix == ".parquet":
            yield from _iter_parquet_file(path)
        else:
            raise InputError(
                f"{path}: unsupported file type (use {', '.join(FILE_SUFFIXES)}, a dataset "
                "folder or a Hub dataset id)"
            )
        return
    if not path.exists() and _looks_local(text):
        raise InputError(f"{path}: no such file or folder")
    dataset = read_dataset(path if path.exists() else text, config, split=split)
    for i, row in enumerate(dataset):
        yield f"{text}: row {i}", row


def read_rows(
    source: str | Path, *, split: str = "train", config: str | None = None
) -> list[dict[str, Any]]:
    """Every row of a source as a list of dicts (see :func:`iter_rows`).

    Example:
        >>> read_rows("/no/such/file.jsonl")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /no/such/file.jsonl: no such file or folder
    """
    return [row for _, row in iter_rows(source, split=split, config=config)]
