"""The training progress of both trainers: step/total, loss and an ETA from measured step times.

:class:`TrainingProgressCallback` is a ``transformers.TrainerCallback`` that reports through the
package's one progress convention (:func:`hf_posbias.progress.progress`): a ``tqdm`` bar on a
terminal, plain ``train: 40/400 (10%) [1.9 step/s, eta 3m09s] loss=1.234`` lines in a log (one
each 10 % of the steps or 30 s, and a ``train: step 40 loss=1.234`` line for each logged loss),
silent with ``--no-progress``. Only the main process reports.
:func:`hf_posbias.trainer_base.scaffold.fit` installs it in place of transformers' own bar and its
printer of raw log dicts.

This module imports transformers at import time: import it inside the trainer functions only.

Example:
    >>> import io
    >>> from types import SimpleNamespace
    >>> out = io.StringIO()
    >>> cb = TrainingProgressCallback(file=out, interval=3600)
    >>> state = SimpleNamespace(max_steps=2, global_step=0, is_world_process_zero=True)
    >>> cb.on_train_begin(None, state, None)
    >>> state.global_step = 1
    >>> cb.on_step_end(None, state, None)
    >>> cb.on_log(None, state, None, logs={"loss": 0.75, "learning_rate": 1e-5})
    >>> state.global_step = 2
    >>> cb.on_step_end(None, state, None)
    >>> cb.on_train_end(None, state, None)
    >>> print(out.getvalue().splitlines()[-1].split(" [")[0])
    train: 2/2 (100%)
    >>> out.getvalue().splitlines()[-1].endswith("loss=0.75")
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transformers import TrainerCallback

from hf_posbias.progress import LineProgress, ProgressReporter


@dataclass(eq=False)
class TrainingProgressCallback(TrainerCallback, ProgressReporter):
    """Progress of ``trainer.train()``: optimiser steps done / total, the last logged loss, ETA.

    Args:
        desc: the label of each line (``train``).
        disable, file, interval: :class:`~hf_posbias.progress.ProgressReporter`'s options
            (``--no-progress``; default stderr, where a terminal gets a bar; seconds between two
            plain lines in a log).
    """

    desc: str = "train"

    def __post_init__(self) -> None:
        self.bar: Any = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Open the bar over ``state.max_steps`` steps (main process only)."""
        if self.bar is None and state.is_world_process_zero:
            self.bar = self.counter(total=int(state.max_steps) or None, unit="step")

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Move the bar to ``state.global_step``."""
        if self.bar is not None and state.global_step > self.bar.n:
            self.bar.update(int(state.global_step) - int(self.bar.n))

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """Show the last logged loss (``loss``, or the run's mean ``train_loss`` at the end)."""
        if self.bar is None or not logs:
            return
        loss = logs.get("loss", logs.get("train_loss"))
        if isinstance(loss, (int, float)):
            self.bar.set_postfix_str(f"loss={loss:.4g}")
        logged = isinstance(logs.get("loss"), (int, float))
        if logged and not self.disable and isinstance(self.bar, LineProgress):
            # A log keeps every logged loss, one line each, as transformers' printer did.
            self.print_line(f"step {state.global_step} loss={logs['loss']:.4g}")

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """The last line (steps done, elapsed time, last loss)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
