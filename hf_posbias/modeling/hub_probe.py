"""What the local HF cache and, only when online, ONE Hub request say about a Hub id of a model
or a dataset (:func:`hub_state`), and the one-line error for a model name found nowhere
(:class:`UnknownModelError`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hf_posbias.errors import ModelLoadError, first_line
from hf_posbias.suggestions import suggest

if TYPE_CHECKING:
    pass


def needs_remote_code(resolved: str) -> bool:
    """Whether a model folder (or a Hub id whose config is cached) ships its own code
    (``auto_map`` in ``config.json``).

    Example:
        >>> needs_remote_code("/tmp")
        False
    """
    import json

    path = Path(resolved) / "config.json"
    if Path(resolved).exists():
        if not path.is_file():
            return False
    else:
        from huggingface_hub import try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(resolved, "config.json")
        except ValueError:  # not a valid repo id: nothing cached under it
            return False
        if not isinstance(cached, str):
            return False
        path = Path(cached)
    try:
        return bool(json.loads(path.read_text()).get("auto_map"))
    except (OSError, ValueError):
        return False


HUB_TIMEOUT_S = 10.0
"""Seconds the one Hub question about an unknown name may take (never retried)."""


OFFLINE_HINT = "the Hub is offline (HF_HUB_OFFLINE is set)"


def hub_offline() -> bool:
    """Whether the Hub must not be asked: ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set.

    Example:
        >>> import os
        >>> os.environ["HF_HUB_OFFLINE"] = "1"; hub_offline()
        True
    """
    from huggingface_hub import constants

    flags = (os.environ.get("HF_HUB_OFFLINE"), os.environ.get("TRANSFORMERS_OFFLINE"))
    set_here = any(str(f).strip().upper() in {"1", "ON", "YES", "TRUE"} for f in flags if f)
    return set_here or bool(constants.HF_HUB_OFFLINE)


@dataclass(frozen=True)
class HubState:
    """What the local HF cache and (when online) one Hub request say about a Hub id.

    Attributes:
        repo_id: the id asked about (sentence-transformers' own ``sentence-transformers/``
            prefix added to a bare name, as it does).
        cached: its ``config.json`` is in the local HF cache.
        exists: the Hub answered that it exists (``True``), that it does not (``False``), or was
            not asked or did not answer (``None``).
        note: why the Hub gave no answer (offline, unreachable), ``""`` when it answered.
    """

    repo_id: str
    cached: bool
    exists: bool | None
    note: str = ""

    @property
    def known(self) -> bool:
        """Whether the id can load: cached, or on the Hub."""
        return self.cached or bool(self.exists)

    @property
    def local_only(self) -> bool:
        """Load from the cache without asking the Hub (it is offline, unreachable or silent)."""
        return self.cached and not self.exists


RepoType = Literal["model", "dataset"]


def _hub_ids(name: str, repo_type: RepoType = "model") -> list[str]:
    """The Hub ids a name stands for: itself, and for a bare model name
    ``sentence-transformers/<name>`` (sentence-transformers' own rule)."""
    if "/" in name or repo_type == "dataset":
        return [name]
    return [name, f"sentence-transformers/{name}"]


def _is_cached(repo_id: str, repo_type: RepoType = "model") -> bool:
    """A model whose ``config.json`` is in the HF cache; a dataset with a snapshot in the HF
    cache (what ``snapshot_download`` reuses offline) or a folder in ``datasets``' own cache
    (what ``load_dataset`` reuses offline)."""
    if repo_type == "dataset":
        from huggingface_hub import constants

        snapshots = Path(constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}"
        if any((snapshots / "snapshots").glob("*/*")):
            return True
        # datasets' cache: $HF_DATASETS_CACHE, by default <HF_HOME>/datasets (datasets.config).
        root = os.environ.get("HF_DATASETS_CACHE") or str(Path(constants.HF_HOME) / "datasets")
        return (Path(root) / repo_id.replace("/", "___")).is_dir()
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a valid repo id
        return False


@functools.lru_cache(maxsize=256)
def _ask_hub(repo_id: str, repo_type: RepoType = "model") -> tuple[bool | None, str]:
    """``(exists, note)`` from ONE request to the Hub (a short timeout, no retries; asked once
    per process and id)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        if repo_type == "dataset":
            HfApi().dataset_info(repo_id, timeout=HUB_TIMEOUT_S)
        else:
            HfApi().model_info(repo_id, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:  # it exists; loading says what access it needs
        return True, ""
    except RepositoryNotFoundError:
        return False, ""
    except ValueError:  # not a valid repo id: nothing of that name on the Hub
        return False, ""
    except Exception as err:  # connection refused, DNS, timeout, proxy: the Hub is unreachable
        return None, f"the Hub is unreachable ({first_line(err, 120)})"
    return True, ""


def hub_state(name: str, repo_type: RepoType = "model") -> HubState:
    """What the cache and the Hub (once, only if online) know of the Hub id ``name``, a model or
    (``repo_type="dataset"``) a dataset.

    Example:
        >>> import os
        >>> os.environ["HF_HUB_OFFLINE"] = "1"
        >>> hub_state("acme/no-such-model")
        HubState(repo_id='acme/no-such-model', cached=False, exists=None, note='the Hub is offline (HF_HUB_OFFLINE is set)')
        >>> hub_state("acme/no-such-data", "dataset").known
        False
    """  # noqa: E501
    ids = _hub_ids(name, repo_type)
    cached = next((i for i in ids if _is_cached(i, repo_type)), None)
    if hub_offline():
        return HubState(cached or ids[0], cached is not None, None, OFFLINE_HINT)
    for repo_id in [cached] if cached else ids:
        exists, note = _ask_hub(repo_id, repo_type)
        if exists is not False or repo_id == ids[-1] or cached:
            return HubState(repo_id, cached is not None, exists, note)
    raise AssertionError("unreachable")  # the loop returns on its last id


class UnknownModelError(ModelLoadError):
    """A model name that resolves nowhere (its message already names the closest names)."""


def unknown_model_error(
    kind: str, name: str, state: HubState, known: list[str]
) -> UnknownModelError:
    """The one line for a name that resolves nowhere: what was looked at, why the Hub could not
    say, and the closest known names.

    Example:
        >>> state = HubState("x/all-MiniLM-L6-v3", False, None, OFFLINE_HINT)
        >>> print(unknown_model_error("model", "all-MiniLM-L6-v3", state, ["all-MiniLM-L6-v2"]))
        unknown model 'all-MiniLM-L6-v3': no local folder, packaged model, mteb registry entry or cached Hub model of that name, and the Hub is offline (HF_HUB_OFFLINE is set) (did you mean 'all-MiniLM-L6-v2'?)
    """  # noqa: E501
    where = "no local folder, packaged model, mteb registry entry or cached Hub model of that name"
    where += f", and {state.note}" if state.note else ", nor a Hub model"
    return UnknownModelError(f"unknown {kind} {name!r}: {where}{suggest(name, known, n=3)}")


def missing_from_hub(what: str, name: str, repo_type: RepoType = "model") -> str | None:
    """``None`` when the Hub id ``name`` can load here (cached, or on the Hub), else the line
    saying where it was looked for: ``what`` names the input (``bases: bert-base``).

    Example:
        >>> import os
        >>> os.environ["HF_HUB_OFFLINE"] = "1"
        >>> print(missing_from_hub("data", "acme/train", "dataset"))
        data: the Hub dataset acme/train is not in the local HF cache, and the Hub is offline (HF_HUB_OFFLINE is set)
    """  # noqa: E501
    state = hub_state(name, repo_type)
    if state.known:
        return None
    where = f", and {state.note}" if state.note else ", nor on the Hub"
    return f"{what}: the Hub {repo_type} {state.repo_id} is not in the local HF cache{where}"


def check_hub_model(kind: str, name: str, known: Callable[[], list[str]]) -> HubState:
    """The :class:`HubState` of a Hub id about to load; a one-line :class:`ModelLoadError` with
    the closest ``known()`` names when neither the cache nor the Hub has it."""
    state = hub_state(name)
    if not state.known:
        raise unknown_model_error(kind, name, state, known())
    return state
