"""DebiasFirst fine-tuning (Q26 Eq. 2, 4, 6): ``accelerate launch -m hf_posbias.listwise.train``.

The former home of the listwise trainer, kept so that ``python -m hf_posbias.listwise.train``
and ``accelerate launch -m hf_posbias.listwise.train`` (same flags) keep working: the trainer
lives in :mod:`hf_posbias.listwise.training.train` now, beside its trainer class, mirroring
:mod:`hf_posbias.training.train`. Its names are served from here with a ``DeprecationWarning``.

Example:
    >>> import warnings
    >>> from hf_posbias.listwise.training.train import train_listwise
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     from hf_posbias.listwise.train import train_listwise as former
    >>> former is train_listwise
    True
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

NEW_HOME = "hf_posbias.listwise.training.train"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hf_posbias.listwise.train``: the trainer's entry point under its former name."""
    from hf_posbias.listwise.training.settings import ListwiseTrainingSettings
    from hf_posbias.listwise.training.train import listwise_train_report, train_listwise
    from hf_posbias.trainer_base.scaffold import trainer_main

    return trainer_main(
        argv, sys.modules[__name__], ListwiseTrainingSettings, train_listwise, listwise_train_report
    )


def __getattr__(name: str) -> Any:
    """The names of the moved module, each with a warning naming its new home."""
    import importlib

    new = importlib.import_module(NEW_HOME)
    if name.startswith("__") or not hasattr(new, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"{__name__}.{name} moved to {NEW_HOME}: import it from there (the old path goes in "
        "the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(new, name)


if __name__ == "__main__":
    sys.exit(main())
