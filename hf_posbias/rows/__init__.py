"""Reading rows from any source: local files, dataset repo folders and Hub datasets.

The one reader behind the corpus stage, the evaluation builders and training:

- a local file: ``.jsonl`` (one JSON object per line), ``.json`` (a JSON array of objects, or
  JSON Lines), ``.parquet``;
- a local folder laid out like a Hub dataset repo (what :mod:`hf_posbias.publish` writes) or any
  folder ``datasets.load_dataset`` reads;
- a Hub dataset id (``HF_ENDPOINT`` decides which Hub).

Local folders are read through a **content-addressed** ``datasets`` cache
(:func:`~hf_posbias.rows.readers.local_cache_dir`): ``datasets`` 5.x keys the cache of a local
folder by its base name and YAML ``configs:`` only, so a rewritten folder would otherwise silently
yield the old rows.

Every problem is one :class:`~hf_posbias.errors.InputError` line naming the file and the place
(line number, row, or byte offset of text that is not UTF-8).

Two modules, one per job, each name imported from its module:
:mod:`hf_posbias.rows.readers` (files, folders, datasets) and :mod:`hf_posbias.rows.arrow` (lazy
arrow sequences of rows: ``ParquetRows``, ``TableRows``, ``RowsById``).

Example:
    >>> import pathlib, tempfile
    >>> from hf_posbias.rows.readers import iter_rows, read_rows
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl"
    >>> _ = path.write_text('{"id": 1}\\n\\n{"id": 2}\\n')
    >>> read_rows(path)
    [{'id': 1}, {'id': 2}]
    >>> [where for where, _ in iter_rows(path)]  # doctest: +ELLIPSIS
    ['...rows.jsonl:1', '...rows.jsonl:3']
"""
