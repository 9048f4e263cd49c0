"""Personas for YHP26's Stage-1 prompt: a pool ranked by embedding similarity to a document.

YHP26 offer the LLM the 20 PersonaHub personas most similar to the document (BGE-M3
embeddings). :class:`PersonaPool` loads personas from a local file (``.jsonl`` with a
``persona`` field, or ``.txt`` one per line, ``#`` lines being comments) or from a Hub dataset
(e.g. ``proj-persona/PersonaHub``, config ``persona``, column ``persona``) and ranks them by
cosine similarity with a SentenceTransformer (default the packaged ``all-MiniLM-L6-v2``; pass
``model="BAAI/bge-m3"`` for YHP26 §3's choice). Persona embeddings are computed once per pool
(and cached on disk when ``cache_dir`` is given).

Offline, without ``--personas``, the pool is :meth:`PersonaPool.default`: 56 one-line personas
written for hf-posbias (``hf_posbias/generation/data/personas.txt``, shipped in the wheel). They
are the project's own, **not** PersonaHub's: a varied set of plausible searchers for
Wikipedia-style articles (historians, engineers, clinicians, fans, curators …). For YHP26 §3's
setting (the 20 PersonaHub personas nearest the document) pass
``--personas proj-persona/PersonaHub``.

Example:
    >>> from hf_posbias.generation.personas import PersonaPool
    >>> pool = PersonaPool(["a chemist", "a poet", "a chemist"])
    >>> pool.personas  # stripped, de-duplicated, order kept
    ['a chemist', 'a poet']
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError, first_line
from hf_posbias.rows.readers import iter_jsonl_objects, read_text

DEFAULT_PERSONA_DATASET = "proj-persona/PersonaHub"
DEFAULT_PERSONA_MODEL = "all-MiniLM-L6-v2"
DEFAULT_PERSONAS = "default"
"""``--personas`` value (and the meaning of no value) for the project's own packaged pool."""
DEFAULT_PERSONAS_SOURCE = "hf-posbias default personas"

# Embedding models by name, loaded once per process and shared by every pool.
_ENCODERS: dict[str, Any] = {}


def _text_personas(text: str) -> list[str]:
    """The personas of a ``.txt`` pool: one per non-blank line, ``#`` lines are comments."""
    return [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


@dataclass
class PersonaPool:
    """A list of persona descriptions with similarity search.

    Example:
        >>> PersonaPool([])
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: persona pool is empty
    """

    personas: list[str]
    model: str = DEFAULT_PERSONA_MODEL
    source: str = ""
    cache_dir: str | None = None
    _embeddings: Any = field(default=None, init=False, repr=False, compare=False)
    _encoder: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        cleaned = []
        for persona in self.personas:
            text = " ".join(str(persona).split())
            if text and text not in seen:
                seen.add(text)
                cleaned.append(text)
        if not cleaned:
            raise InputError(f"persona pool is empty{f' ({self.source})' if self.source else ''}")
        self.personas = cleaned

    # ------------------------------------------------------------------ loading

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        model: str = DEFAULT_PERSONA_MODEL,
        limit: int | None = None,
        field_name: str = "persona",
        cache_dir: str | None = None,
    ) -> PersonaPool:
        """Personas from a ``.jsonl`` (``persona`` field) or ``.txt`` (one per line) file.

        In a ``.txt`` file, lines starting with ``#`` are comments.

        Example:
            >>> PersonaPool.from_file("/nonexistent.txt")
            Traceback (most recent call last):
            ...
            hf_posbias.errors.InputError: persona file not found: /nonexistent.txt
        """
        path = Path(path)
        if not path.is_file():
            raise InputError(f"persona file not found: {path}")
        personas: list[str] = []
        if path.suffix in (".jsonl", ".json"):
            for where, record in iter_jsonl_objects(path):
                if limit is not None and len(personas) >= limit:
                    break
                if not isinstance(record.get(field_name), str):
                    raise InputError(f"{where}: no string field {field_name!r}")
                personas.append(record[field_name])
        else:
            personas = _text_personas(read_text(path))[:limit]
        return cls(personas, model=model, source=str(path), cache_dir=cache_dir)

    @classmethod
    def default(
        cls, model: str = DEFAULT_PERSONA_MODEL, cache_dir: str | None = None
    ) -> PersonaPool:
        """The project's own packaged pool (56 personas; not PersonaHub), available offline.

        Example:
            >>> pool = PersonaPool.default()
            >>> len(pool.personas), pool.source
            (56, 'hf-posbias default personas')
        """
        from importlib.resources import files

        text = files("hf_posbias.generation").joinpath("data", "personas.txt").read_text("utf-8")
        return cls(
            _text_personas(text), model=model, source=DEFAULT_PERSONAS_SOURCE, cache_dir=cache_dir
        )

    @classmethod
    def from_hub(
        cls,
        repo_id: str = DEFAULT_PERSONA_DATASET,
        config: str | None = "persona",
        split: str = "train",
        column: str = "persona",
        model: str = DEFAULT_PERSONA_MODEL,
        limit: int | None = None,
        cache_dir: str | None = None,
    ) -> PersonaPool:
        """Personas from a Hub dataset (default PersonaHub's ``persona`` config, 200k rows).

        ``limit`` keeps the first ``limit`` rows (a slice, so only what is needed is read).
        """
        from datasets import load_dataset

        split_spec = split if limit is None else f"{split}[:{int(limit)}]"
        try:
            dataset = load_dataset(repo_id, config, split=split_spec)
        except Exception as err:  # datasets raises many types; all mean "cannot load this"
            raise InputError(
                f"cannot load personas from {repo_id!r} ({type(err).__name__}: "
                f"{first_line(err, 200)})"
            ) from None
        if column not in dataset.column_names:
            raise InputError(
                f"persona dataset {repo_id!r} has no column {column!r}; has {dataset.column_names}"
            )
        return cls(
            list(dataset[column]),
            model=model,
            source=f"{repo_id}:{config or ''}:{split_spec}",
            cache_dir=cache_dir,
        )

    @classmethod
    def load(
        cls,
        spec: str | Path,
        model: str = DEFAULT_PERSONA_MODEL,
        limit: int | None = None,
        cache_dir: str | None = None,
    ) -> PersonaPool:
        """The default pool for ``"default"``; a local file when ``spec`` is an existing path (or
        ends in .jsonl/.txt); else a Hub dataset id.

        Example:
            >>> PersonaPool.load("missing.jsonl")
            Traceback (most recent call last):
            ...
            hf_posbias.errors.InputError: persona file not found: missing.jsonl
        """
        text = str(spec)
        if text == DEFAULT_PERSONAS and not Path(text).exists():
            return cls.default(model=model, cache_dir=cache_dir)
        if Path(text).exists() or Path(text).suffix in (".jsonl", ".json", ".txt"):
            return cls.from_file(text, model=model, limit=limit, cache_dir=cache_dir)
        return cls.from_hub(text, model=model, limit=limit, cache_dir=cache_dir)

    # ------------------------------------------------------------------ similarity

    @property
    def fingerprint(self) -> str:
        """A hash of the persona texts (part of the generator's manifest parameters)."""
        return hashlib.sha256("\n".join(self.personas).encode("utf-8")).hexdigest()[:16]

    def params(self) -> dict[str, Any]:
        """What identifies this pool's effect on the output."""
        return {
            "source": self.source,
            "count": len(self.personas),
            "fingerprint": self.fingerprint,
            "model": self.model,
        }

    def _encode(self, texts: Sequence[str]) -> Any:
        if self._encoder is None:
            if self.model not in _ENCODERS:
                from hf_posbias.modeling.loaders import load_sentence_transformer

                _ENCODERS[self.model] = load_sentence_transformer(self.model)
            self._encoder = _ENCODERS[self.model]
        return self._encoder.encode(
            list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )

    def embeddings(self) -> Any:
        """Unit-normalised persona embeddings, computed once (and cached on disk if asked)."""
        import numpy as np

        if self._embeddings is not None:
            return self._embeddings
        cache = None
        if self.cache_dir:
            tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.model)[-60:]
            cache = Path(self.cache_dir) / f"personas-{self.fingerprint}-{tag}.npy"
            if cache.exists():
                self._embeddings = np.load(cache)
                return self._embeddings
        self._embeddings = self._encode(self.personas)
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.save(cache, self._embeddings)
        return self._embeddings

    def top_k_many(self, texts: Sequence[str], k: int = 20) -> list[list[str]]:
        """The ``k`` most similar personas for each text (ties broken by pool order)."""
        import numpy as np

        if not texts:
            return []
        scores = self._encode(texts) @ self.embeddings().T
        k = min(int(k), len(self.personas))
        index = np.arange(len(self.personas))
        ranked = []
        for row in scores:
            order = np.lexsort((index, -row))[:k]  # last key is primary: score desc, then index
            ranked.append([self.personas[i] for i in order])
        return ranked

    def top_k(self, document_text: str, k: int = 20) -> list[str]:
        """The ``k`` personas most similar to ``document_text`` by cosine similarity.

        Example (needs the packaged all-MiniLM-L6-v2)::

            >>> pool = PersonaPool(["a marine biologist", "a tax lawyer"])
            >>> pool.top_k("Coral reefs host many fish species.", k=1)  # doctest: +SKIP
            ['a marine biologist']
        """
        return self.top_k_many([document_text], k)[0]
