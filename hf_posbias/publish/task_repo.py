"""A position task as a Hub dataset repo folder: its task files, a card and ``eval.yaml``.

:func:`write_task_repo` lays a task folder (``posbias benchmark …``) out as the Hub repo every
published position task has (the released ``hf-posbias/<name>`` repos, a benchmark built by
``posbias benchmark from-corpus``, ``posbias benchmark publish``):

- ``task.json``, ``corpus.parquet``, ``queries.parquet``, ``qrels.parquet``: the task folder's
  files, byte for byte — what ``posbias evaluate`` downloads for a named task, and so a folder
  whose content fingerprint (mteb's dataset revision) is the local folder's;
- ``README.md``: the card, whose YAML configs follow mteb's layout of a retrieval dataset
  (``default``: the relevance judgements, ``corpus``, ``queries``; split ``test``), so
  ``load_dataset(repo, "queries", split="test")`` reads it;
- ``eval.yaml``: the benchmark's task ids (:mod:`hf_posbias.tasks.hub_benchmark`: mteb's, then
  per-bucket nDCG@10, their mean and 1 − PSI), written with mteb's own model and serialisation;
- ``.gitattributes``.

Uploading it is :func:`hf_posbias.hub.upload_folder`.

Example:
    >>> import tempfile
    >>> from hf_posbias.tasks.builders.jsonl import build_from_records
    >>> data = build_from_records(
    ...     [{"query": "alpha", "document": "alpha beta", "evidence_start": 0}], name="Toy")
    >>> folder = data.save(tempfile.mkdtemp())
    >>> repo = write_task_repo(folder, tempfile.mkdtemp() + "/hub", repo_id="me/Toy")
    >>> sorted(p.name for p in repo.iterdir())  # doctest: +NORMALIZE_WHITESPACE
    ['.gitattributes', 'README.md', 'corpus.parquet', 'eval.yaml', 'qrels.parquet',
     'queries.parquet', 'task.json']
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.publish.repo import (
    GITATTRIBUTES,
    dataset_info_entry,
    front_matter_yaml,
    prepare_repo_folder,
    size_category,
    with_dataset_info,
)
from hf_posbias.rows.readers import CARD_FILE
from hf_posbias.settings import Settings, setting, shared_setting

TASK_FILES: tuple[str, ...] = ("task.json", "corpus.parquet", "queries.parquet", "qrels.parquet")
"""The task folder's files (:mod:`hf_posbias.tasks.taskdata`), copied to the repo's root."""
CONFIG_FILES: dict[str, str] = {
    "default": "qrels.parquet",
    "corpus": "corpus.parquet",
    "queries": "queries.parquet",
}
"""The card's configs and their files: mteb's layout of a retrieval dataset on the Hub (the
``default`` config holds the relevance judgements), the one ``eval.yaml``'s ``config: default``
names."""


def write_task_repo(
    task_folder: str | Path,
    out: str | Path,
    *,
    repo_id: str | None = None,
    notes: str = "",
    extra_configs: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the Hub repo folder of the position task in ``task_folder`` into ``out``.

    Args:
        task_folder: a built task folder (``task.json`` and its three parquet files).
        out: the repo folder (created; a folder holding other files needs ``overwrite``).
        repo_id: the Hub id the card's loading examples name (``<user>/<name>`` if unknown).
        notes: markdown the card ends with (a build's construction table).
        extra_configs: more configs, ``{name: rows}``, each written as ``<name>.parquet``.
        overwrite: replace a folder that holds files this writer did not write.

    Raises:
        InputError: not a task folder, ``out`` is the task folder, a bad config name, or a
            foreign non-empty ``out`` without ``overwrite``.
    """
    import pyarrow.parquet as pq

    from hf_posbias.cards.templates import render_card
    from hf_posbias.publish.repo import check_config_names
    from hf_posbias.shards import write_parquet
    from hf_posbias.tasks.hub_benchmark import (
        EVAL_FILE,
        EVAL_SPLIT,
        describe_task_ids,
        write_eval_yaml,
    )
    from hf_posbias.tasks.mteb_tasks import get_task
    from hf_posbias.tasks.taskdata import read_task_info

    source, target = Path(task_folder), Path(out)
    info = read_task_info(source)
    if target.expanduser().resolve() == source.expanduser().resolve():
        raise InputError(f"{target}: write the repo folder beside the task folder, not into it")
    extras = dict(extra_configs or {})
    check_config_names([*CONFIG_FILES, *extras])
    files = {**CONFIG_FILES, **{name: f"{name}.parquet" for name in extras}}
    own = frozenset({*TASK_FILES, *files.values(), CARD_FILE, EVAL_FILE, ".gitattributes"})
    prepare_repo_folder(target, overwrite, own=own)
    for name in TASK_FILES:
        shutil.copyfile(source / name, target / name)
    for name, rows in extras.items():
        if not rows:
            raise InputError(f"config {name!r} has no rows; refusing to publish an empty config")
        write_parquet(list(rows), target / files[name])
    (target / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")

    task = get_task(source)
    write_eval_yaml(task, target)
    buckets = pq.read_table(target / "queries.parquet", columns=["bucket"])["bucket"]
    counts = Counter(buckets.to_pylist())
    n_queries = sum(counts.values())
    license_ = str(task.metadata.license)
    # The Hub's licence field takes an identifier; a task without one says so in the card only.
    licence_field = {} if license_ == "not specified" else {"license": license_}
    header = front_matter_yaml(
        list(files),
        split=EVAL_SPLIT,
        default_config="default",
        paths=files,
        **licence_field,
        task_categories=["text-retrieval"],
        size_categories=[size_category(n_queries)],
        pretty_name=info.name,
        tags=["position-bias", "retrieval", "mteb"],
    )
    card = render_card(
        "dataset",
        "position_task.md.j2",
        front_matter=header,
        info=info,
        repo_id=repo_id or "<user>/<name>",
        license=license_,
        counts={b: counts.get(b, 0) for b in info.buckets},
        n_queries=n_queries,
        n_documents=pq.read_metadata(target / "corpus.parquet").num_rows,
        task_ids=describe_task_ids(task._create_task_hf_config(), info.buckets),
        extra_configs=list(extras),
        notes=notes.strip(),
    )
    infos = []
    for name, file in files.items():
        table = pq.read_table(target / file)
        size = (target / file).stat().st_size
        infos.append(dataset_info_entry(name, EVAL_SPLIT, table.num_rows, table.nbytes, size))
    (target / CARD_FILE).write_text(with_dataset_info(card, infos), encoding="utf-8")
    return target


@dataclass(kw_only=True)
class TaskPublishSettings(Settings):
    """``posbias benchmark publish``: a task folder as a Hub benchmark repo folder (``--out``),
    uploaded with ``--hub-repo``.

    Example:
        >>> TaskPublishSettings(task="t", out="o", hub_repo="no-owner")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: repo id 'no-owner' must be <owner>/<name>
    """

    task: str = setting("built position task folder (task.json and its parquet files)")
    out: str = shared_setting("out")
    hub_repo: str | None = setting(
        "upload the folder to this Hub dataset repo (<owner>/<name>); a pull request unless the "
        "token's user owns it",
        default=None,
        metavar="OWNER/NAME",
    )
    hub_token: str | None = shared_setting("hub_token", default=None)
    private: bool = setting("create the repo private", default=False)
    overwrite: bool = shared_setting("overwrite", default=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hub_repo:
            from hf_posbias.hub import check_repo_id

            check_repo_id(self.hub_repo)
