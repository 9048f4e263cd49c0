"""How a listwise reranker is loaded and slid over a list: :class:`RerankerOptions`.

The one declaration of the reranker flags (``--mode``, ``--dtype``, ``--window`` …), read by the
listwise verbs, by ``posbias evaluate --reranker`` and by :func:`~hf_posbias.rerankers.loading.
load_reranker`.

Example:
    >>> RerankerOptions(window=10).step is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hf_posbias.devices import INFERENCE_DTYPES, check_device
from hf_posbias.errors import InputError
from hf_posbias.generation.backends import EndpointSettings
from hf_posbias.rerankers.window import DEFAULT_WINDOW
from hf_posbias.setting_values import at_least
from hf_posbias.settings import check_choice, setting, setting_label, shared_setting

MODES: tuple[str, ...] = ("first", "generate")
"""first: identifier logits of the first answer token; generate: the model writes a permutation."""


@dataclass(kw_only=True)
class RerankerOptions(EndpointSettings):
    """How a listwise reranker is loaded and slid over a list (the window lives here, once)."""

    mode: Literal["first", "generate"] = setting(
        "first: identifier logits of the first answer token; generate: the model writes the "
        "permutation, missing identifiers appended in input order and counted",
        default="first",
    )
    dtype: str = setting(
        "auto: bf16 on GPUs and on CPUs with native bf16 kernels, else float32",
        default="auto",
        choices=INFERENCE_DTYPES,
    )
    device: str | None = shared_setting("device", default=None)
    batch_size: int = shared_setting("batch_size", default=8)
    passage_tokens: int | None = shared_setting("passage_tokens", default=None)
    identifiers: Literal["letters", "numbers"] = shared_setting("identifiers", default="letters")
    window: int = shared_setting("window", default=DEFAULT_WINDOW)
    step: int | None = setting(
        "sliding-window step (default: window/2)", default=None, range=at_least(1)
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("mode", self.mode, MODES)
        check_choice("dtype", self.dtype, INFERENCE_DTYPES)
        check_choice("identifiers", self.identifiers, ("letters", "numbers"))
        check_device(self.device)
        if self.step is not None and self.step > self.window:
            raise InputError(
                f"{setting_label('step')} must lie in 1..{setting_label('window')} "
                f"({self.window}), got {self.step}"
            )
