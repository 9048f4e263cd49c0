"""The listwise demo: a reranker's input-position curve before and after a short DebiasFirst run.

``posbias listwise demo --task VAL --train-task TRAIN --out OUT`` (``make demo-listwise`` builds
SciFact's two task folders first) calls the library function behind each public verb,
in-process and each in its own folder under OUT, with that verb's settings object
(:func:`demo_settings`); the command a user would type for a step is generated from the same
object (:func:`demo_commands`, printed and kept in ``results.md``):

1. ``listwise test`` of the base model on ``--task`` → ``OUT/before``;
2. ``listwise propensity`` of the base model on ``--train-task`` (with ``--smoothing``) →
   ``OUT/propensity``;
3. ``listwise build-train`` on ``--train-task`` → ``OUT/train``;
4. ``listwise train`` (L_Rank-IPS with that propensity, Pos-Aug on the fly) → ``OUT/checkpoint``;
5. ``listwise test`` of the checkpoint → ``OUT/after``;
6. ``listwise compare-tests`` of the two tests (paired, per query) → ``OUT/comparison.json``.

``results.md`` gets the before/after table in the README's table style
(:func:`hf_posbias.tables.as_table`). A rerun resumes: the tests and the propensity keep their
finished queries, the build and the training are skipped when their output is complete.

The defaults are smoke-sized (5 queries at 5 positions, 8 training steps of 2 windows): about
15 minutes on a shared 2-core CPU, most of it the training (docs/listwise.md has the measured
breakdown), so it is opt-in rather than part of ``make demo``; the closing measurement in
docs/listwise.md runs the same verbs at full size.

Example:
    >>> s = ListwiseDemoSettings(task="val", train_task="train", out="o")
    >>> [name for name, _ in demo_commands(s)]
    ['before', 'propensity', 'build-train', 'train', 'after', 'compare']
    >>> " ".join(dict(demo_commands(s))["build-train"])
    'listwise build-train --task train --out o/train --max-queries 4'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.listwise.training.finetune_settings import LAMBDA_FLAG
from hf_posbias.setting_values import at_least
from hf_posbias.settings import ProgressSettings, setting, shared_setting
from hf_posbias.shards import write_text_atomic

RESULTS_FILE = "results.md"
LABELS = ("base", "DebiasFirst")
"""The two runs' names in the comparison table."""


@dataclass(kw_only=True)
class ListwiseDemoSettings(ProgressSettings):
    """Sizes of the demo (the flags of ``posbias listwise demo``)."""

    task: str = setting(
        "evaluation task folder (SciFact validation: posbias benchmark build scifact)"
    )
    train_task: str = setting("training task folder (SciFact train): ω and training windows")
    out: str = shared_setting("out")
    model: str = setting("base causal LM", default="smollm2-135m")
    k: int = shared_setting("k", default=20)
    queries: int = setting("test queries", default=5, range=at_least(1))
    positions: str = shared_setting("positions", default="1,5,10,15,20")
    propensity_queries: int = setting("ω queries", default=4, range=at_least(1))
    shuffles: int = shared_setting("shuffles", default=2)
    smoothing: float = shared_setting("smoothing", default=0.5)
    train_queries: int = setting("training windows", default=4, range=at_least(1))
    pos_aug: int = shared_setting("pos_aug", default=4)
    steps: int = setting("training steps", default=8, range=at_least(1))
    global_batch: int = shared_setting("global_batch", default=2)
    lr: float = shared_setting("lr", default=5e-5)
    lam: float = shared_setting("lambda", default=0.1, flag=LAMBDA_FLAG)
    passage_tokens: int = shared_setting("passage_tokens", default=48)
    seed: int = shared_setting("seed")
    n_resamples: int = shared_setting("n_resamples", default=1000)


def demo_settings(s: ListwiseDemoSettings) -> list[tuple[str, str, Any]]:
    """``(step, listwise verb, the verb's settings)`` for every step, in order."""
    from hf_posbias.listwise.experiments.experiment_settings import (
        BuildTrainSettings,
        ListwiseCompareSettings,
        ListwiseTestSettings,
        PropensitySettings,
    )
    from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings

    out = Path(s.out)
    common = {"k": s.k, "passage_tokens": s.passage_tokens, "seed": s.seed, "progress": s.progress}
    test = {"max_queries": s.queries, "positions": s.positions, "n_resamples": s.n_resamples}

    def controlled(reranker: str, folder: str) -> ListwiseTestSettings:
        return ListwiseTestSettings(
            reranker=reranker, task=s.task, out=str(out / folder), **test, **common
        )

    before = controlled(s.model, "before")
    propensity = PropensitySettings(
        reranker=s.model,
        task=s.train_task,
        max_queries=s.propensity_queries,
        shuffles=s.shuffles,
        smoothing=s.smoothing,
        out=str(out / "propensity"),
        **common,
    )
    build = BuildTrainSettings(
        task=s.train_task,
        k=s.k,
        max_queries=s.train_queries,
        seed=s.seed,
        out=str(out / "train"),
        progress=s.progress,
    )
    train = ListwiseTrainingSettings(
        model=s.model,
        data=str(out / "train"),
        out=str(out / "checkpoint"),
        propensity=str(out / "propensity" / "propensity.json"),
        pos_aug=s.pos_aug,
        max_steps=s.steps,
        global_batch=s.global_batch,
        lr=s.lr,
        lam=s.lam,
        passage_tokens=s.passage_tokens,
        seed=s.seed,
        logging_steps=1,
        progress=s.progress,
    )
    after = controlled(str(out / "checkpoint"), "after")
    compare = ListwiseCompareSettings(
        run_a=str(out / "before"),
        run_b=str(out / "after"),
        label_a=LABELS[0],
        label_b=LABELS[1],
        out=str(out),
        n_resamples=s.n_resamples,
        seed=s.seed,
    )
    return [
        ("before", "test", before),
        ("propensity", "propensity", propensity),
        ("build-train", "build-train", build),
        ("train", "train", train),
        ("after", "test", after),
        ("compare", "compare-tests", compare),
    ]


def demo_commands(s: ListwiseDemoSettings) -> list[tuple[str, list[str]]]:
    """``(step, argv of hf_posbias.cli.main)`` for every step: its settings as flags."""
    from hf_posbias.settings import settings_to_argv

    return [
        (step, ["listwise", verb, *settings_to_argv(settings)])
        for step, verb, settings in demo_settings(s)
    ]


def _run_step(verb: str, settings: Any) -> None:
    """The library call behind ``posbias listwise <verb>`` (what its CLI handler calls)."""
    from hf_posbias.listwise.experiments.compare import compare_from_settings
    from hf_posbias.listwise.experiments.controlled import run_controlled_test
    from hf_posbias.listwise.experiments.propensity import run_propensity
    from hf_posbias.listwise.experiments.runs import load_task_and_reranker
    from hf_posbias.listwise.training.train import train_listwise
    from hf_posbias.listwise.training.trainset import build_train_set

    if verb in ("test", "propensity"):
        task, reranker, out = load_task_and_reranker(settings)
        run = run_controlled_test if verb == "test" else run_propensity
        run(reranker, task, out, settings, show_progress=settings.progress)
    elif verb == "build-train":
        build_train_set(settings)
    elif verb == "train":
        train_listwise(settings)
    else:
        compare_from_settings(settings)


def _done(step: str, out: Path) -> bool:
    """Whether a step that cannot resume by itself already finished."""
    from hf_posbias.listwise.training.card import TRAINING_INFO
    from hf_posbias.listwise.training.trainset import INFO_FILE

    if step == "build-train":
        return (out / "train" / INFO_FILE).is_file()
    if step == "train":
        return (out / "checkpoint" / TRAINING_INFO).is_file()
    return False


def run_listwise_demo(
    settings: ListwiseDemoSettings, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run every step (see the module docstring); return the comparison payload.

    Each step's wall time is printed and kept in ``results.md``.
    """
    from hf_posbias.rows.readers import read_json
    from hf_posbias.tables import as_table

    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    commands = dict(demo_commands(settings))
    for step, verb, step_settings in demo_settings(settings):
        command = "posbias " + " ".join(commands[step])
        if _done(step, out):
            echo(f"[{step}] done before, skipped: {command}")
            continue
        echo(f"[{step}] {command}")
        started = time.perf_counter()
        _run_step(verb, step_settings)
        seconds[step] = time.perf_counter() - started
    payload = read_json(out / "comparison.json")
    # The JSON file sorts keys: put the columns back in the order the compare verb prints.
    columns = ["input position", *LABELS, f"Δ ({LABELS[1]} − {LABELS[0]})", "p"]
    table = as_table([{c: row[c] for c in columns} for row in payload["table"]]).to_markdown()
    timing = ", ".join(f"{step} {s:.0f} s" for step, s in seconds.items()) or "all resumed"
    text = (
        f"# {settings.model}: input-position curve before and after DebiasFirst\n\n"
        f"nDCG@10 on {payload['task']} ({payload['queries']} queries, k={payload['k']}) with "
        "the relevant passage at each input position; 95% intervals; Δ with a paired "
        "randomization test over queries.\n\n"
        f"{table}\n\nWall time: {timing}.\n\nCommands:\n\n"
        + "\n".join(f"    posbias {' '.join(argv)}" for _, argv in demo_commands(settings))
        + "\n"
    )
    write_text_atomic(out / RESULTS_FILE, text)
    echo(f"wrote {out / RESULTS_FILE}")
    return payload
