"""Candidate lists for the listwise experiments: query selection, first-stage top-k, placement.

Every experiment (the 1…k test, original vs shuffled, propensities) starts the same way: the
judged queries of a split (a seeded sample of ``max_queries`` of them), each with its
first-stage top-k. The lists are cached in the output folder (``first_stage.json``, pinned by
the run's parameters), so a resumed run does not redo the first stage.

:func:`controlled_list` builds the input of the controlled test: the relevant passage at input
position p, the other k−1 in first-stage order (a relevant document missing from the top-k
replaces the k-th).

Example:
    >>> base = ["d1", "d2", "d3", "d4"]
    >>> controlled_list(base, "d3", 1), controlled_list(base, "d3", 4)
    (['d3', 'd1', 'd2', 'd4'], ['d1', 'd2', 'd4', 'd3'])
    >>> controlled_list(base, "d9", 2)  # not retrieved: replaces the k-th
    ['d1', 'd9', 'd2', 'd3']
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.taskio import RerankTask
from hf_posbias.progress import progress
from hf_posbias.rows.readers import read_json
from hf_posbias.shards import fingerprint, write_json

if TYPE_CHECKING:
    from hf_posbias.generation.backends import EndpointSettings

FIRST_STAGE_FILE = "first_stage.json"


def select_queries(task: RerankTask, max_queries: int | None, seed: int) -> list[str]:
    """Judged query ids, sorted; a seeded sample of ``max_queries`` when fewer are wanted.

    ``max_queries`` >= 1 is checked by
    :class:`~hf_posbias.listwise.experiments.experiment_settings.ListSource`.

    Example:
        >>> from hf_posbias.rerankers.records import Passage
        >>> t = RerankTask("t", "test", {"d": Passage("d", "x")}, {"a": "?", "b": "?"},
        ...                {"a": {"d": 1}, "b": {"d": 1}})
        >>> select_queries(t, None, 0), len(select_queries(t, 1, 0))
        (['a', 'b'], 1)
    """
    judged = sorted(task.judged_queries())
    if max_queries is not None and max_queries < len(judged):
        judged = sorted(random.Random(seed).sample(judged, max_queries))
    return judged


def controlled_list(base: Sequence[str], relevant: str, position: int) -> list[str]:
    """``base`` (first-stage order) with ``relevant`` moved to 1-based ``position``."""
    k = len(base)
    if not 1 <= position <= k:
        raise InputError(f"input position {position} is outside 1..{k}")
    others = [d for d in base if d != relevant]
    if len(others) == k:  # the relevant document was not retrieved: it replaces the k-th
        others = others[: k - 1]
    return [*others[: position - 1], relevant, *others[position - 1 :]]


@dataclass
class QueryList:
    """One query's first-stage top-k and its relevant document for the controlled test."""

    query_id: str
    candidates: list[str]
    relevant: str
    injected: bool


def relevant_for(task: RerankTask, query_id: str, candidates: Sequence[str]) -> tuple[str, bool]:
    """The relevant document to move: the best-retrieved relevant one, else the most relevant
    (then ``injected`` is True: it was not in the top-k)."""
    relevant = task.relevant(query_id)
    rank = {d: i for i, d in enumerate(candidates)}
    retrieved = [d for d in relevant if d in rank]
    if retrieved:
        return min(retrieved, key=rank.__getitem__), False
    return relevant[0], True


def first_stage_lists(
    task: RerankTask,
    query_ids: Sequence[str],
    first_stage_name: str | Sequence[str],
    k: int,
    out_dir: str | Path,
    *,
    show_progress: bool = True,
    endpoint: EndpointSettings | None = None,
    rrf_k: int | None = None,
    similarity: str | None = None,
) -> list[QueryList]:
    """Each query's top-k from the first stage, cached in ``out_dir/first_stage.json``.

    Several first stages (``first_stage_name`` a list) are fused by reciprocal rank fusion
    with ``rrf_k`` (:class:`~hf_posbias.listwise.experiments.firststage.FusedFirstStage`): the
    file records the fused lists. ``similarity`` overrides a dense model's own similarity
    function. An ``openai:<model>`` first stage is served at ``endpoint``'s URL (the verb's
    ``--base-url``) with its key. The cache is keyed on the task, the first stage(s), k, the
    queries and each stage's encoding settings (a dense model's prompts, maximum length,
    similarity, folder content, registry revision or endpoint URL: the model is loaded, not
    run, to read them; the fusion's k and depth): a cache made with other ones is recomputed.
    """
    from hf_posbias.listwise.experiments.firststage import RRF_K, check_k, load_first_stage
    from hf_posbias.modeling.resolve import ModelSettings

    check_k(k, len(task.corpus))
    params: dict[str, Any] = {
        "task": task.source,
        "split": task.split,
        "first_stage": first_stage_name
        if isinstance(first_stage_name, str)
        else list(first_stage_name),
        "k": k,
        "queries": list(query_ids),
    }
    settings = None
    if endpoint is not None:
        settings = ModelSettings(base_url=endpoint.base_url, api_key_env=endpoint.api_key_env)
    # Loading indexes or encodes nothing yet; a dense model's settings join the key.
    first_stage = load_first_stage(
        first_stage_name,
        task.corpus,
        settings,
        rrf_k=RRF_K if rrf_k is None else rrf_k,
        similarity=similarity,
    )
    if first_stage.encoding is not None:
        params["encoding"] = first_stage.encoding
    path = Path(out_dir) / FIRST_STAGE_FILE
    if path.is_file():
        cached = read_json(path)
        if cached.get("fingerprint") == fingerprint(params):
            return [QueryList(**row) for row in cached["lists"]]
    lists = []
    for query_id in progress(
        query_ids, desc="first stage", unit="query", disable=not show_progress
    ):
        candidates = first_stage.top_k(task.queries[query_id], k)
        relevant, injected = relevant_for(task, query_id, candidates)
        lists.append(QueryList(query_id, candidates, relevant, injected))
    write_json(
        path,
        {"fingerprint": fingerprint(params), "params": params, "lists": [asdict(x) for x in lists]},
    )
    return lists


def shuffled(items: Sequence[str], seed: int, query_id: str, index: int) -> list[str]:
    """A Fisher–Yates shuffle of ``items`` seeded by (seed, query, index): reproducible and
    independent of which other queries or shuffles a run holds.

    Example:
        >>> shuffled(["a", "b", "c"], 0, "q", 0) == shuffled(["a", "b", "c"], 0, "q", 0)
        True
    """
    out = list(items)
    random.Random(f"{seed}:{query_id}:{index}").shuffle(out)  # random.shuffle is Fisher–Yates
    return out


def describe_lists(lists: Sequence[QueryList]) -> dict[str, Any]:
    """Counts for the result file: queries and relevant documents injected into the top-k."""
    return {"queries": len(lists), "relevant_injected": sum(x.injected for x in lists)}
