"""``pb.evaluate``: an evaluation whose output folder is claimed like any run, kept in the
results cache when the caller names none (as ``mteb.evaluate`` keeps its ``ResultCache``).

:func:`evaluate` is :func:`~hf_posbias.evaluation.runs.runner.evaluate_model` with what the
command line does around it (:class:`hf_posbias.cli.common.Verb`): the output folder is claimed
under the one rule of :mod:`hf_posbias.output_folders` with the parameters ``posbias evaluate``
would record for the same run, so a folder holds one run, a finished run is read back instead of
run again, and a run with other parameters is refused unless ``overwrite=True``. A folder that
cannot be written is one :class:`~hf_posbias.errors.InputError` naming it.

Without ``out``, the run goes to ``<cache>/results/<model>/<parameters digest>/``
(:func:`default_results_folder`; ``<cache>``: :func:`hf_posbias.modeling.cache.cache_root`,
``$POSBIAS_CACHE`` or ``~/.cache/hf_posbias``): one folder per model and parameters, tasks'
contents included, so two different calls never share a folder and the same call finds its
results.

Example:
    >>> default_results_folder("bm25", {"task": ["t"]}).parent.name
    'bm25'
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import DISK_ERRNOS, InputError, disk_error_line
from hf_posbias.evaluation.runs.exports import safe_name
from hf_posbias.evaluation.runs.mteb_models import MtebModel
from hf_posbias.evaluation.runs.runner import TaskReference, evaluate_model, task_list
from hf_posbias.modeling.cache import cache_root
from hf_posbias.modeling.loaders import (
    LoadedModel,
    is_sentence_transformers_model,
    loaded_instance,
)
from hf_posbias.modeling.resolve import model_display_name

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from hf_posbias.evaluation.evaluation_settings import EvaluateSettings
    from hf_posbias.evaluation.summary import EvaluationSummary

RESULTS_DIRNAME = "results"
"""The results cache's folder inside hf-posbias's cache folder."""
COMMAND = "posbias evaluate"
"""The run a folder records: the same as the command line's, so either finds the other's run."""
SETTING_GROUPS = ("model_options", "remedy", "reranker_options")
"""Keywords of :func:`evaluate_model` that are groups of the verb's settings (dataclasses whose
fields :class:`~hf_posbias.evaluation.evaluation_settings.EvaluateSettings` has)."""
NOT_SETTINGS = frozenset({"show_progress"})
"""Keywords that change only what a call prints (no setting of the verb)."""


def results_root() -> Path:
    """The results cache: ``<hf-posbias cache>/results``.

    Example:
        >>> results_root().name
        'results'
    """
    return cache_root() / RESULTS_DIRNAME


def model_label(model: Any) -> str:
    """The name of a model argument as the results cache and the run's record write it.

    Example:
        >>> model_label("bm25"), model_label(Path("models/mine"))
        ('bm25', 'models/mine')
    """
    if isinstance(model, LoadedModel):
        return model.name
    if isinstance(model, MtebModel):
        return model.spec
    return os.fspath(model)


def default_results_folder(model: str, params: dict[str, Any]) -> Path:
    """``<results cache>/<model>/<digest of params>``: the folder of one run without ``out``.

    Example:
        >>> a = default_results_folder("bm25", {"top_k": 100})
        >>> a == default_results_folder("bm25", {"top_k": 100}), a == default_results_folder(
        ...     "bm25", {"top_k": 20})
        (True, False)
    """
    from hf_posbias.shards import fingerprint

    return results_root() / safe_name(model_display_name(model)) / fingerprint(params)


def run_settings(
    model: Any, tasks: Sequence[TaskReference], out: str | Path, options: dict[str, Any]
) -> EvaluateSettings:
    """The ``posbias evaluate`` settings of a library call (what its run records).

    Example:
        >>> s = run_settings("bm25", ["t"], "o", {"top_k": 20, "bootstrap": None})
        >>> s.model, s.task, s.top_k, s.bootstrap
        ('bm25', ('t',), 20, None)
    """
    from hf_posbias.evaluation.evaluation_settings import EvaluateSettings

    names = {f.name for f in dataclasses.fields(EvaluateSettings)}
    values: dict[str, Any] = {}
    for key, value in options.items():
        if key in SETTING_GROUPS:
            if value is not None:
                values.update({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
        elif key in names:
            values[key] = value
        elif key not in NOT_SETTINGS:
            raise TypeError(f"evaluate() got an unexpected keyword argument {key!r}")
    values.update(_task_objects_settings(tasks, options))
    # A task object is recorded as its folder (its data's digest goes into the parameters).
    refs = tuple(str(t.folder) if hasattr(t, "load_data") else os.fspath(t) for t in tasks)
    return EvaluateSettings(
        **values,
        model=model_label(model),
        task=refs,
        out=str(out),
    )


TASK_OWN = {"scoring": "scoring", "top_k": "_top_k"}
"""The keywords a task object was made with (``pb.get_task(…, scoring=, top_k=)``) and the
attribute holding each: they hold for the task, a call's keyword does not change them."""


def _task_objects_settings(
    tasks: Sequence[TaskReference], options: dict[str, Any]
) -> dict[str, Any]:
    """The scoring and top-k the task objects among ``tasks`` were made with (what their run
    records), refusing a call whose keyword says otherwise."""
    found: dict[str, Any] = {}
    for task in (t for t in tasks if hasattr(t, "load_data")):
        for key, attribute in TASK_OWN.items():
            own = getattr(task, attribute)
            wanted = options.get(key, found.get(key, own))
            if own != wanted:
                raise InputError(
                    f"task {task.metadata.name} was made with {key}={own!r}, not {wanted!r}: "
                    f"give {key} to pb.get_task, or the task as its folder"
                )
            found[key] = own
    return found


def evaluate(
    model: str | os.PathLike[str] | LoadedModel | MtebModel | SentenceTransformer,
    tasks: TaskReference | Sequence[TaskReference],
    *,
    out: str | Path | None = None,
    overwrite: bool = False,
    **options: Any,
) -> list[EvaluationSummary]:
    """Evaluate ``model`` on one task or several, into a claimed output folder.

    Args:
        model: a model name (``bm25``, a folder, a packaged model, an mteb registry name, a Hub
            id, ``openai:<model>``), a model loaded by ``pb.load_model``, or a
            sentence-transformers model object (named after where it was loaded from and a
            digest of its weights as they are: :func:`~hf_posbias.modeling.loaders.
            loaded_instance`).
        tasks: one task or a list of them: task folders, registered task names
            (``pb.list_benchmarks()``) or task objects (``pb.get_task``).
        out: the output folder; unset: ``<cache>/results/<model>/<parameters digest>/``
            (module docstring), where a call made before with the same parameters is found.
        overwrite: replace a run with other parameters that ``out`` holds (otherwise refused).
        options: the keywords of
            :func:`~hf_posbias.evaluation.runs.runner.evaluate_model` (``scoring``, ``top_k``,
            ``bootstrap``, ``progress``, ``remedy``, ``reranker``, …).

    Returns:
        One summary per task; a run already in the folder is read back, not run again.

    Raises:
        InputError: a folder that cannot be written, or that holds another run.

    Example:
        >>> import hf_posbias as pb
        >>> from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo
        >>> words = ["apple", "river", "violin"]
        >>> docs = [{"id": w, "title": "", "text": f"All about the {w}."} for w in words]
        >>> queries = [{"id": w, "text": w, "bucket": b, "evidence_start": 0, "evidence_end": 5,
        ...             "doc_length": 20} for w, b in zip(words, pb.POSITIONS)]
        >>> qrels = [{"query_id": w, "doc_id": w, "score": 1} for w in words]
        >>> info = TaskInfo(name="Words", description="three words", buckets=list(pb.POSITIONS))
        >>> task = PositionTaskData(info, docs, queries, qrels).save("words")
        >>> [first] = pb.evaluate("bm25", task, out="runs/words", bootstrap=None, progress=False)
        >>> first.psi, sorted(p.name for p in Path("runs/words").iterdir())[:3]
        (0.0, ['.posbias-run.json', 'mteb-results', 'per_query'])
        >>> [again] = pb.evaluate("bm25", [task], out="runs/words", bootstrap=None, progress=False)
        >>> again == first  # the finished run, read back
        True
    """
    tasks = task_list(tasks)
    if is_sentence_transformers_model(model):  # its weights' digest named once, here
        model = loaded_instance(model)
    root = Path(out) if out is not None else results_root()
    settings = run_settings(model, tasks, root, options)
    from hf_posbias.output_folders import claim_output_folder, run_parameters

    params = run_parameters(settings)
    folder = root if out is not None else default_results_folder(settings.model, params)
    try:
        with claim_output_folder(folder, params, command=COMMAND, overwrite=overwrite) as claim:
            if claim.state == "finished":
                from hf_posbias.evaluation.summary import read_summaries

                return read_summaries(folder)
            return evaluate_model(model, tasks, out=folder, **options)
    except OSError as err:
        if err.errno not in DISK_ERRNOS:
            raise
        raise InputError(disk_error_line(err, str(folder), option="out=")) from None
