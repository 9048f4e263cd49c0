"""The listwise demo: a reranker's input-position curve before and after a short DebiasFirst run.

``posbias listwise demo --task VAL --train-task TRAIN --out OUT`` (``make demo-listwise`` builds
SciFact's two task folders first) runs the library functions behind the public verbs, in-process
and each in its own folder under OUT, with the settings of the command a user would type
(:func:`demo_commands` lists those commands, and ``results.md`` repeats them):

1. ``listwise test`` of the base model on ``--task`` → ``OUT/before``;
2. ``listwise propensity`` of the base model on ``--train-task`` (with ``--smoothing``) →
   ``OUT/propensity``;
3. ``listwise build-train`` on ``--train-task`` → ``OUT/train``;
4. ``listwise train`` (L_Rank-IPS with that propensity, Pos-Aug on the fly) → ``OUT/checkpoint``;
5. ``listwise test`` of the checkpoint → ``OUT/after``;
6. ``listwise compare`` of the two tests (paired, per query) → ``OUT/comparison.json``.

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
    >>> " ".join(dict(demo_commands(s))["train"][:8])
    'listwise train --model smollm2-135m --data o/train --out o/checkpoint'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hf_posbias.listwise.settings import ListwiseTrainingSettings

RESULTS_FILE = "results.md"
LABELS = ("base", "DebiasFirst")
"""The two runs' names in the comparison table."""


@dataclass
class ListwiseDemoSettings:
    """Sizes of the demo (the flags of ``posbias listwise demo``)."""

    task: str
    """Evaluation task folder (SciFact validation: ``posbias benchmark scifact``)."""
    train_task: str
    """Training task folder (SciFact train), for the propensity and the training windows."""
    out: str | Path
    model: str = "smollm2-135m"
    k: int = 20
    queries: int = 5
    positions: str = "1,5,10,15,20"
    propensity_queries: int = 4
    shuffles: int = 2
    smoothing: float = 0.5
    train_queries: int = 4
    pos_aug: int = 4
    steps: int = 8
    global_batch: int = 2
    lr: float = 5e-5
    lam: float = 0.1
    passage_tokens: int = 48
    seed: int = 0
    n_resamples: int = 1000
    progress: bool = True


def demo_commands(s: ListwiseDemoSettings) -> list[tuple[str, list[str]]]:
    """``(step, argv of hf_posbias.cli.main)`` for every step, in order."""
    out = Path(s.out)
    quiet = [] if s.progress else ["--no-progress"]
    common = ["--k", str(s.k), "--passage-tokens", str(s.passage_tokens), "--seed", str(s.seed)]
    test = ["--max-queries", str(s.queries), "--positions", s.positions]
    test += ["--n-resamples", str(s.n_resamples), *common, *quiet]
    return [
        (
            "before",
            ["listwise", "test", "--reranker", s.model, "--task", s.task]
            + ["--out", str(out / "before"), *test],
        ),
        (
            "propensity",
            ["listwise", "propensity", "--reranker", s.model, "--task", s.train_task]
            + ["--max-queries", str(s.propensity_queries), "--shuffles", str(s.shuffles)]
            + ["--smoothing", str(s.smoothing), "--out", str(out / "propensity"), *common, *quiet],
        ),
        (
            "build-train",
            ["listwise", "build-train", "--task", s.train_task, "--k", str(s.k)]
            + ["--max-queries", str(s.train_queries), "--seed", str(s.seed)]
            + ["--out", str(out / "train"), *quiet],
        ),
        (
            "train",
            ["listwise", "train", "--model", s.model, "--data", str(out / "train")]
            + ["--out", str(out / "checkpoint")]
            + ["--propensity", str(out / "propensity" / "propensity.json")]
            + ["--pos-aug", str(s.pos_aug), "--max-steps", str(s.steps)]
            + ["--global-batch", str(s.global_batch), "--lr", str(s.lr), "--lambda", str(s.lam)]
            + ["--passage-tokens", str(s.passage_tokens), "--seed", str(s.seed)]
            + ["--logging-steps", "1", *quiet],
        ),
        (
            "after",
            ["listwise", "test", "--reranker", str(out / "checkpoint"), "--task", s.task]
            + ["--out", str(out / "after"), *test],
        ),
        (
            "compare",
            ["listwise", "compare", str(out / "before"), str(out / "after")]
            + ["--label-a", LABELS[0], "--label-b", LABELS[1], "--out", str(out)]
            + ["--n-resamples", str(s.n_resamples), "--seed", str(s.seed)],
        ),
    ]


def _done(step: str, out: Path) -> bool:
    """Whether a step that cannot resume by itself already finished."""
    from hf_posbias.listwise.card import TRAINING_INFO
    from hf_posbias.listwise.trainset import INFO_FILE

    if step == "build-train":
        return (out / "train" / INFO_FILE).is_file()
    if step == "train":
        return (out / "checkpoint" / TRAINING_INFO).is_file()
    return False


def _load(task_folder: str, reranker: str, s: ListwiseDemoSettings) -> tuple[Any, Any]:
    """The task (its own split) and the reranker, as ``listwise test``/``propensity`` load them."""
    from hf_posbias.listwise.firststage import check_k
    from hf_posbias.listwise.loading import RerankerOptions, load_reranker
    from hf_posbias.listwise.taskio import load_rerank_task

    task = load_rerank_task(task_folder, None)
    check_k(s.k, len(task.corpus))
    texts = (p.content() for p in task.corpus.values())
    options = RerankerOptions(passage_tokens=s.passage_tokens)
    return task, load_reranker(reranker, options, corpus_texts=texts)


def _controlled_test(s: ListwiseDemoSettings, reranker: str, out: Path) -> None:
    from hf_posbias.listwise.controlled import (
        ControlledTestConfig,
        parse_positions,
        run_controlled_test,
    )
    from hf_posbias.listwise.loading import RerankerOptions

    config = ControlledTestConfig(
        k=s.k,
        positions=parse_positions(s.positions, s.k),
        max_queries=s.queries,
        seed=s.seed,
        window=RerankerOptions().window,
        n_resamples=s.n_resamples,
    )
    task, model = _load(s.task, reranker, s)
    out.mkdir(parents=True, exist_ok=True)
    run_controlled_test(model, task, out, config, show_progress=s.progress)


def _propensity(s: ListwiseDemoSettings, out: Path) -> None:
    from hf_posbias.listwise.loading import RerankerOptions
    from hf_posbias.listwise.propensity import PropensityConfig, run_propensity

    config = PropensityConfig(
        k=s.k,
        shuffles=s.shuffles,
        max_queries=s.propensity_queries,
        seed=s.seed,
        smoothing=s.smoothing,
        window=RerankerOptions().window,
    )
    task, model = _load(s.train_task, s.model, s)
    out.mkdir(parents=True, exist_ok=True)
    run_propensity(model, task, out, config, show_progress=s.progress)


def _build_train(s: ListwiseDemoSettings, out: Path) -> None:
    from hf_posbias.listwise.firststage import check_k
    from hf_posbias.listwise.taskio import load_rerank_task
    from hf_posbias.listwise.trainset import build_train_rows, write_train_set

    task = load_rerank_task(s.train_task, None)
    check_k(s.k, len(task.corpus))
    out.mkdir(parents=True, exist_ok=True)
    rows, info = build_train_rows(
        task,
        k=s.k,
        max_queries=s.train_queries,
        seed=s.seed,
        out_dir=out,
        show_progress=s.progress,
    )
    write_train_set(out, rows, info)


def train_settings(s: ListwiseDemoSettings) -> ListwiseTrainingSettings:
    """The training step's settings (what ``listwise train`` parses from its command).

    Example:
        >>> train_settings(ListwiseDemoSettings(task="v", train_task="t", out="o")).data
        'o/train'
    """
    from hf_posbias.listwise.settings import ListwiseTrainingSettings

    out = Path(s.out)
    return ListwiseTrainingSettings(
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
        no_progress=not s.progress,
    )


def _compare(s: ListwiseDemoSettings, out: Path) -> None:
    from hf_posbias.listwise.compare import compare_runs, write_comparison

    payload = compare_runs(
        out / "before", out / "after", n_resamples=s.n_resamples, seed=s.seed, labels=LABELS
    )
    write_comparison(out, payload)


def demo_steps(s: ListwiseDemoSettings) -> dict[str, Callable[[], None]]:
    """The library call of every step, keyed as :func:`demo_commands` (same order)."""
    from hf_posbias.listwise.train import train_listwise

    out = Path(s.out)
    return {
        "before": lambda: _controlled_test(s, s.model, out / "before"),
        "propensity": lambda: _propensity(s, out / "propensity"),
        "build-train": lambda: _build_train(s, out / "train"),
        "train": lambda: train_listwise(train_settings(s)),
        "after": lambda: _controlled_test(s, str(out / "checkpoint"), out / "after"),
        "compare": lambda: _compare(s, out),
    }


def run_listwise_demo(
    settings: ListwiseDemoSettings, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run every step (see the module docstring); return the comparison payload.

    Each step's wall time is printed and kept in ``results.md``.
    """
    from hf_posbias.rows import read_json
    from hf_posbias.tables import as_table

    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    steps = demo_steps(settings)
    for step, argv in demo_commands(settings):
        if _done(step, out):
            echo(f"[{step}] done before, skipped: posbias {' '.join(argv)}")
            continue
        echo(f"[{step}] posbias {' '.join(argv)}")
        started = time.perf_counter()
        steps[step]()
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
    (out / RESULTS_FILE).write_text(text)
    echo(f"wrote {out / RESULTS_FILE}")
    return payload
