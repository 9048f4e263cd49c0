"""mteb's model registry without importing mteb: its names, cached per mteb version in
:func:`~hf_posbias.modeling.cache.cache_root`, and the entries (``mteb.get_model_meta``) asked
for only when a name is in that list."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.modeling.cache import cache_root

if TYPE_CHECKING:
    from mteb.models.model_meta import ModelMeta


def registry_meta(name: str) -> ModelMeta | None:
    """mteb's registry entry of ``name`` (exact name), or ``None``.

    Example:
        >>> registry_meta("intfloat/e5-small-v2").loader_kwargs["model_prompts"]["query"]
        'query: '
    """
    if "/" not in name or name not in registry_names().lookup:
        return None  # decided from the cached name list: mteb is not imported
    import mteb

    try:
        return mteb.get_model_meta(name)
    except (KeyError, ValueError):
        return None


REGISTRY_NAMES_FILE = "mteb_registry_names.json"
"""File in :func:`cache_root` listing mteb's registry names, keyed by the installed mteb version."""


@dataclass(frozen=True)
class RegistryNames:
    """The names in mteb's model registry (:func:`registry_names`), without importing mteb.

    Attributes:
        mteb_version: the installed mteb version they were read from.
        models: every registry model name.
        rerankers: the registry names that are rerankers (cross-encoders).
        lookup: every name ``mteb.get_model_meta`` accepts (the models and renamed names).
    """

    mteb_version: str
    models: tuple[str, ...]
    rerankers: tuple[str, ...]
    lookup: frozenset[str]


def _mteb_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mteb")
    except PackageNotFoundError:
        return ""


def _read_registry_names(path: Path, mteb_version: str) -> RegistryNames | None:
    import json

    try:
        data = json.loads(path.read_text())
        if data.get("mteb_version") != mteb_version:
            return None  # written for another mteb: rebuilt
        models, rerankers = tuple(data["models"]), tuple(data["rerankers"])
        lookup = frozenset([*models, *data["renamed"]])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return RegistryNames(mteb_version, models, rerankers, lookup)


def _write_registry_names(path: Path, mteb_version: str) -> RegistryNames:
    """Read mteb's registry (imports mteb: seconds) and keep its names in ``path``."""
    import json
    import tempfile

    import mteb

    metas = [m for m in mteb.get_model_metas() if m.name]
    renamed = getattr(importlib.import_module("mteb.models.get_model_meta"), "_MODEL_RENAMES", {})
    names = RegistryNames(
        mteb_version,
        tuple(str(m.name) for m in metas),
        tuple(str(m.name) for m in metas if _is_reranker_meta(m)),
        frozenset([*(str(m.name) for m in metas), *map(str, renamed)]),
    )
    data = {
        "mteb_version": mteb_version,
        "models": list(names.models),
        "rerankers": list(names.rerankers),
        "renamed": sorted(map(str, renamed)),
    }
    try:  # beside the target, then renamed: a concurrent reader never sees half a file
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as tmp:
            json.dump(data, tmp)
        Path(tmp.name).replace(path)
    except OSError:  # a read-only cache: the names still answer this process
        pass
    return names


def registry_names() -> RegistryNames:
    """mteb's registry names from :data:`REGISTRY_NAMES_FILE` in :func:`cache_root`; the first
    call after mteb is installed or upgraded reads the registry (imports mteb) and writes the
    file, later processes read the file only (milliseconds).

    Example:
        >>> names = registry_names()
        >>> "intfloat/e5-small-v2" in names.lookup, "intfloat/e5-smal-v2" in names.lookup
        (True, False)
    """
    version = _mteb_version()
    path = cache_root() / REGISTRY_NAMES_FILE
    return _read_registry_names(path, version) or _write_registry_names(path, version)


def registry_needs_remote_code(meta: ModelMeta) -> bool:
    """Whether mteb's loader of a registry entry runs the repository's own code: a
    ``trust_remote_code`` set in its loader arguments (at any depth: ``model_kwargs`` …).

    Example:
        >>> registry_needs_remote_code(registry_meta("intfloat/e5-small-v2"))
        False
    """

    def anywhere(value: Any) -> bool:
        if isinstance(value, dict):
            if value.get("trust_remote_code") is True:
                return True
            return any(anywhere(v) for v in value.values())
        return False

    return bool(getattr(meta, "trust_remote_code", False)) or anywhere(meta.loader_kwargs or {})


def registry_reranker(name: str) -> ModelMeta | None:
    """mteb's registry entry of ``name`` when it is a reranker (a cross-encoder), else ``None``.

    Example:
        >>> registry_reranker("cross-encoder/ms-marco-MiniLM-L6-v2").name
        'cross-encoder/ms-marco-MiniLM-L6-v2'
    """
    meta = registry_meta(name)
    return meta if meta is not None and _is_reranker_meta(meta) else None


def _is_reranker_meta(meta: ModelMeta) -> bool:
    return "cross-encoder" in (meta.model_type or [])
