"""What a study needs, found before it starts: every base, reranker, task folder, training set
and analysis source, checked once by the real run and by its dry run (issue 49).

:func:`input_problems` lists every input of a bi-encoder study this machine cannot give the
run, one line each (a listwise study's:
:func:`hf_posbias.study.listwise_study.listwise_input_problems`), without loading a model or
reading a dataset: a name resolves to a local folder, a packaged model or a registered base, and
a Hub id is asked of the local HF cache and, only when online, once of the Hub
(:func:`hf_posbias.modeling.hub_probe.missing_from_hub`). Offline, a Hub id with no cached copy
is not available. ``posbias study run`` raises :class:`StudyInputError` with them before its
first unit (:func:`check_inputs`); ``--dry-run`` prints its plan, lists the same lines and exits
with the same error, so a plan that exits 0 is a run that starts.

Example:
    >>> from hf_posbias.study.spec import StudySpec
    >>> spec = StudySpec(bases=["all-MiniLM-L6-v2"], train=False, tasks=["/no/such/task"])
    >>> input_problems(spec)  # doctest: +ELLIPSIS
    ['tasks: task folder /no/such/task does not exist (or give a task name: ...)']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hf_posbias.errors import InputError, PosbiasError

if TYPE_CHECKING:
    from hf_posbias.study.spec import StudySpec


class StudyInputError(InputError):
    """The inputs a study cannot start without, each named on the one line.

    Example:
        >>> print(StudyInputError(["data: x", "tasks: y"]))
        the study cannot start here: 2 inputs are missing: data: x; tasks: y
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        n = len(self.problems)
        lead = f"{n} inputs are missing: " if n > 1 else ""
        super().__init__(f"the study cannot start here: {lead}{'; '.join(self.problems)}")


def input_problem(what: str, check: Callable[[], object]) -> list[str]:
    """``[]`` when ``check()`` passes, else its one-line error under ``what``.

    Example:
        >>> def not_here():
        ...     raise InputError("no such folder")
        >>> input_problem("data", lambda: None), input_problem("data", not_here)
        ([], ['data: no such folder'])
    """
    try:
        check()
    except PosbiasError as err:
        return [f"{what}: {err}"]
    return []


def base_problems(spec: StudySpec) -> list[str]:
    """The bases that cannot load here: a base the study trains must be a registered base (its
    checkpoint cached or on the Hub), a local folder or a packaged model; a base evaluated as
    published (evaluation only, ``off_the_shelf``) whatever ``posbias evaluate`` loads."""
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.modeling.hub_probe import missing_from_hub
    from hf_posbias.modeling.resolve import check_model_name, is_local_model
    from hf_posbias.study.layout import published_model

    problems: list[str] = []
    for base in spec.bases:
        if spec.train:
            try:
                checkpoint = get_model_spec(base).checkpoint
            except PosbiasError as err:
                problems.append(f"bases: {err}")
                continue
            missing = None if is_local_model(checkpoint) else missing_from_hub(base, checkpoint)
            problems += [f"bases: {missing}"] if missing else []
        if not spec.train or spec.off_the_shelf:
            problems += input_problem("bases", lambda b=base: check_model_name(published_model(b)))
    return problems


def task_problems(spec: StudySpec) -> list[str]:
    """The evaluation tasks (``tasks`` and ``standard``) that are not here: a folder that does
    not exist or is no task folder, an unknown task name, a registered task neither built under
    ``$POSBIAS_TASKS_DIR`` nor cached from (or, online, on) the Hub."""
    from hf_posbias.modeling.hub_probe import missing_from_hub
    from hf_posbias.study.protocol import expand_domains, task_entries
    from hf_posbias.tasks.benchmark_registry import (
        TASKS_DIR_ENV,
        named_task_folder,
        named_task_repo,
        resolve_task_reference,
    )

    problems: list[str] = []
    for entry in task_entries(spec.evaluation_tasks, spec.bases):
        for part in expand_domains(entry):
            try:
                folder, card = resolve_task_reference(part.task)
            except PosbiasError as err:
                problems.append(f"tasks: {err}")
                continue
            if folder is None and card is not None and named_task_folder(card.name) is None:
                what = f"{card.name} (not built under ${TASKS_DIR_ENV})"
                missing = missing_from_hub(what, named_task_repo(card.name), "dataset")
                problems += [f"tasks: {missing}"] if missing else []
    return problems


def data_problems(spec: StudySpec) -> list[str]:
    """The training configurations the training data does not hold (or the data itself, not
    here), as the trainer checks them (:func:`hf_posbias.training.train.resolve_repo_config`)."""
    if not spec.train:
        return []
    from hf_posbias.training.train import resolve_repo_config

    problems: list[str] = []
    for config in spec.configs:
        problems += input_problem("data", lambda c=config: resolve_repo_config(spec.data, c))
        if problems and not Path(spec.data).expanduser().is_dir():
            break  # the data is not here at all: once is enough
    return problems


def analysis_problems(spec: StudySpec) -> list[str]:
    """The sources of the spec's analyses that are not here: the evidence-moving pairs
    (``msmarco``: MS MARCO on the Hub; a file or folder) and the segment-profile samples'
    corpora (``analysis_corpus``; a sample without one reads the first task's, checked with the
    tasks)."""
    from hf_posbias.modeling.hub_probe import missing_from_hub

    problems: list[str] = []
    if "evidence-moving" in spec.analyses:
        from hf_posbias.analysis.msmarco_pairs import MSMARCO_REPO, is_msmarco_source

        pairs = spec.analysis_pairs
        if is_msmarco_source(pairs):
            repo = pairs.partition(":")[2] or MSMARCO_REPO
            missing = None if Path(repo).expanduser().exists() else missing_from_hub(
                f"analysis_pairs {pairs}", repo, "dataset"
            )  # fmt: skip
            problems += [missing] if missing else []
        elif not Path(pairs).expanduser().exists():
            problems.append(f"analysis_pairs: pair source not found: {pairs}")
    samples = spec.profile_samples if "segment-profile" in spec.analyses else []
    for corpus in (s.corpus for s in samples if s.corpus is not None):
        if corpus.startswith("hf:"):
            repo = corpus[3:].partition(":")[0]
            missing = missing_from_hub(f"analysis_corpus {corpus}", repo, "dataset")
            problems += [missing] if missing else []
        else:
            from hf_posbias.corpus.sources import read_corpus

            problems += input_problem("analysis_corpus", lambda c=corpus: read_corpus(c))
    return problems


def input_problems(spec: StudySpec, hub_token: str | None = None) -> list[str]:
    """Every input of ``spec`` this machine cannot give its run, one line each (see the module
    docstring), in the order the run needs them: bases, tasks, training data, analysis sources,
    the Hub token of ``hub_org``."""
    problems = base_problems(spec) + task_problems(spec) + data_problems(spec)
    problems += analysis_problems(spec)
    if spec.hub_org:
        from hf_posbias.hub import resolve_token

        problems += input_problem(
            "hub_org",
            lambda: resolve_token(hub_token, purpose=f"hub_org {spec.hub_org}", flag="--hub-token"),
        )
    return problems


def check_inputs(spec: StudySpec, out: str | Path | None, hub_token: str | None = None) -> None:
    """Every check that needs no model, before anything trains or evaluates: the inputs
    (:func:`input_problems`, one :class:`StudyInputError` naming them all) and an output folder
    holding another study."""
    problems = input_problems(spec, hub_token)
    if problems:
        raise StudyInputError(problems)
    if out is not None:
        from hf_posbias.study.spec import check_out_folder

        check_out_folder(spec, out)
