"""A position task as a Hub benchmark: the task ids of its ``eval.yaml``, the values they rank.

The Hub turns a dataset repo that carries an ``eval.yaml`` into a benchmark once its staff have
allow-listed it, and ranks the models whose ``.eval_results/*.yaml`` entries name one of its task
ids (docs: huggingface.co/docs/hub/eval-results). mteb 2.26 builds that file for its own tasks
(``AbsTask._create_task_hf_config``: the task's name, then one id per subset and split, all
scored with mteb's main score, ``evaluation_framework: mteb``); a position task adds, for each
subset (one, ``default``, unless the task is multilingual):

- ``<Task>_ndcg_at_10_<bucket>``: nDCG@10 of the queries whose evidence lies in that bucket;
- ``<Task>_position_mean``: the mean of those (every bucket weighs the same);
- ``<Task>_one_minus_psi``: 1 − PSI, the worst bucket's nDCG@10 over the best one's.

Why 1 − PSI and not PSI: a board on the Hub ranks every task id one way, higher first. The
``eval.yaml`` format has no field for a metric's direction (mteb's ``HFEvalMeta`` refuses keys it
does not know; a proposal to add ``lower_is_better`` metrics to the format, hub-docs pull request
2221, was closed unmerged), and huggingface_hub's ``get_dataset_leaderboard`` returns a rank and
a value per model, nothing more. 1 − PSI is 100 % when position does not matter and falls as
one bucket lags, so "higher first" puts the least position-sensitive model on top, as a PSI
board sorted ascending would.

Values on the Hub are percentages rounded as mteb rounds its own entries (``round(100 * x,
5)``): :func:`hub_value` writes them, :func:`from_hub_value` reads them back.

Example:
    >>> ids = board_task_ids("SciFact-Evidence", ["begin", "middle", "end"])
    >>> ids.bucket("end"), ids.mean, ids.one_minus_psi
    ('SciFact-Evidence_ndcg_at_10_end', 'SciFact-Evidence_position_mean', \
'SciFact-Evidence_one_minus_psi')
    >>> hub_value(0.8316), from_hub_value(83.16)
    (83.16, 0.8316)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mteb._hf_integration.eval_model import HFEvalMeta

EVAL_FILE = "eval.yaml"
"""The file at a benchmark dataset repo's root that makes it a benchmark."""
EVAL_SPLIT = "test"
"""The split every position task evaluates (:data:`hf_posbias.tasks.benchmark_registry.SPLIT`)."""
NDCG = "ndcg_at_10"
POSITION_MEAN = "position_mean"
ONE_MINUS_PSI = "one_minus_psi"

_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class BoardTaskIds:
    """The task ids one subset of a position task adds to its ``eval.yaml``.

    Example:
        >>> board_task_ids("T", ["a"], subset="deu-Latn", subsets=2).mean
        'T_deu-Latn_position_mean'
    """

    task: str
    subset: str
    buckets: tuple[str, ...]
    prefix: str

    def bucket(self, bucket: str) -> str:
        """The id of one bucket's nDCG@10."""
        return f"{self.prefix}_{NDCG}_{bucket}"

    @property
    def mean(self) -> str:
        """The id of the mean over the buckets."""
        return f"{self.prefix}_{POSITION_MEAN}"

    @property
    def one_minus_psi(self) -> str:
        """The id of 1 − PSI."""
        return f"{self.prefix}_{ONE_MINUS_PSI}"

    def all(self) -> list[str]:
        """Every id, in board order: the buckets in order, the mean, 1 − PSI."""
        return [*(self.bucket(b) for b in self.buckets), self.mean, self.one_minus_psi]


def board_task_ids(
    task: str, buckets: Sequence[str], *, subset: str = "default", subsets: int = 1
) -> BoardTaskIds:
    """The position ids of ``task``'s ``subset`` (named with the subset only when the task has
    several, as mteb names its own per-subset ids)."""
    prefix = task if subsets <= 1 else f"{task}_{subset}"
    return BoardTaskIds(task, subset, tuple(buckets), prefix)


def hub_value(value: float) -> float:
    """A score in [0, 1] as the Hub shows it: a percentage, rounded as mteb rounds its own."""
    return round(float(value) * 100, 5)


def from_hub_value(value: Any) -> float:
    """A Hub percentage back in [0, 1] (to the 7 decimals :func:`hub_value` keeps)."""
    return round(float(value) / 100, 7)


def with_position_ids(
    config: HFEvalMeta,
    name: str,
    subsets: Sequence[str],
    buckets: Sequence[str],
    existing: HFEvalMeta | None = None,
) -> HFEvalMeta:
    """mteb's ``eval.yaml`` of a task (``config``) with the position ids of every subset added
    after mteb's own, then merged with the repo's ``existing`` file as mteb merges (ids of other
    tasks kept, sorted). Validated again by mteb's model."""
    from mteb._hf_integration.eval_model import HFEvalMeta, HFEvalTaskConfig

    tasks = list(config.tasks)
    for subset in subsets:
        ids = board_task_ids(name, buckets, subset=subset, subsets=len(subsets))
        tasks += [HFEvalTaskConfig(id=i, config=subset, split=EVAL_SPLIT) for i in ids.all()]
    merged = HFEvalMeta.model_validate({**config.model_dump(), "tasks": tasks})
    return merged.merge(existing) if existing is not None else merged


def write_eval_yaml(task: Any, folder: str | Path) -> Path:
    """Write ``task``'s ``eval.yaml`` into a repo folder: mteb's own content and serialisation
    (``task._create_task_hf_config()``, ``HFEvalMeta.to_yaml``), the upload left to the folder's
    (mteb's ``push_eval_to_hub`` uploads it alone, and in mteb 2.26 looks the repo up under a
    ``dataset["name"]`` key its ``TaskMetadata`` does not hold).

    Example:
        >>> # write_eval_yaml(get_task("tasks/scifact"), "hub/scifact")  → hub/scifact/eval.yaml
    """
    path = Path(folder) / EVAL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(task._create_task_hf_config().to_yaml(), encoding="utf-8")
    return path


def snapshot_origin(folder: str | Path) -> tuple[str, str] | None:
    """``(repo id, commit)`` of a dataset repo folder in huggingface_hub's cache
    (``…/datasets--<owner>--<name>/snapshots/<commit>``, what ``snapshot_download`` and ``hf
    download`` return), read as huggingface_hub reads its cache folder names; ``None`` for any
    other folder.

    Example:
        >>> snapshot_origin("/c/hub/datasets--hf-posbias--SciFact-Evidence/snapshots/" + "a" * 40)
        ('hf-posbias/SciFact-Evidence', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')
        >>> snapshot_origin("tasks/scifact") is None
        True
    """
    path = Path(folder).expanduser().resolve()
    repo_folder = path.parent.parent.name
    if path.parent.name != "snapshots" or not _COMMIT.fullmatch(path.name):
        return None
    if not repo_folder.startswith("datasets--"):
        return None
    return repo_folder.removeprefix("datasets--").replace("--", "/"), path.name


def describe_task_ids(config: HFEvalMeta, buckets: Sequence[str]) -> list[dict[str, str]]:
    """``[{"id", "what"}]``: every task id of a position task's ``eval.yaml`` (``config``) and
    what its value is, for the dataset card.

    Example:
        >>> from mteb._hf_integration.eval_model import HFEvalMeta
        >>> meta = with_position_ids(HFEvalMeta(name="T", description="d", tasks=[{"id": "T"}]),
        ...                          "T", ["default"], ["a", "b"])
        >>> [row["what"] for row in describe_task_ids(meta, ["a", "b"])][:2]
        ["nDCG@10 over every query (mteb's main score)", 'nDCG@10 of the queries in bucket a']
    """
    subsets = sorted({t.config for t in config.tasks if t.config is not None})
    described: dict[str, str] = {}
    for subset in subsets:
        ids = board_task_ids(config.name, buckets, subset=subset, subsets=len(subsets))
        where = f" ({subset})" if len(subsets) > 1 else ""
        for bucket in buckets:
            described[ids.bucket(bucket)] = f"nDCG@10 of the queries in bucket {bucket}{where}"
        described[ids.mean] = f"mean of the per-bucket nDCG@10{where}"
        described[ids.one_minus_psi] = f"1 − PSI: worst bucket's nDCG@10 over the best's{where}"
    rows = []
    for task in config.tasks:
        what = described.get(task.id)
        if what is None:
            what = (
                "nDCG@10 over every query (mteb's main score)"
                if task.config is None
                else f"nDCG@10 over config {task.config}, split {task.split} (mteb's main score)"
            )
        rows.append({"id": task.id, "what": what})
    return rows
