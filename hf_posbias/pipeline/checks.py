"""The work folder's stage names and the option checks the stages and their
settings share (each raises one :class:`~hf_posbias.errors.InputError` line before any work)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.corpus.documents import LengthBins, load_documents
from hf_posbias.corpus.sources import CORPUS
from hf_posbias.errors import InputError
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.generation.backends import CHAT_BACKENDS
from hf_posbias.rows.readers import read_json
from hf_posbias.sampling.configs import PositionConfig
from hf_posbias.setting_values import SHARED_RANGES, at_least, between
from hf_posbias.settings import check_number, flag_name, setting_label
from hf_posbias.shards import (
    stage_fingerprint,
    stage_parameters,
)

if TYPE_CHECKING:
    from hf_posbias.generation.base import QueryGenerator
    from hf_posbias.verification.panel import RerankerPanel


# Stage folders inside the work directory and the verbs that make them.
CANDIDATES, SCORED, TRAIN = "candidates", "scored", "train"


_MADE_BY = {
    CORPUS: "posbias data corpus",
    CANDIDATES: "posbias data generate",
    SCORED: "posbias data verify",
    TRAIN: "posbias data sample",
}


Echo = Callable[[str], None]


CONFIG_FLAG = "--config"
"""The spelling of the ``configs`` setting (one configuration per use, repeatable)."""


def _silent(_: str) -> None:
    return None


def check_folder_target(path: str | Path, what: str) -> Path:
    """Refuse a path that exists and is not a folder (``--out``, ``--work``); writes nothing.

    Example:
        >>> import tempfile
        >>> check_folder_target(tempfile.mkstemp()[1], "--out")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --out ... exists and is a file, not a folder
    """
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} {path} exists and is a file, not a folder")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"{what} {path}: {parent} is a file, not a folder")
            break
    return path


HOLDOUT = between(0, 1, high_open=True)
"""The share of documents ``--holdout`` may hold out for evaluation."""
AUDIT_PER_STRATUM = at_least(1)
"""Candidates the segment audit draws per margin stratum."""


def check_corpus_options(
    bins: str | Sequence[int] | None, limit: int | None, holdout: float
) -> LengthBins:
    """Validate the corpus stage's options; returns the parsed length bins.

    Example:
        >>> check_corpus_options("256,512", None, 0.0).labels
        ('256-512',)
        >>> check_corpus_options(None, 0, 0.0)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: limit must be >= 1, got 0
    """
    if limit is not None and (isinstance(limit, bool) or int(limit) != limit):
        raise InputError(f"{setting_label('limit')} must be a whole number, got {limit!r}")
    if isinstance(holdout, bool) or not isinstance(holdout, int | float):
        raise InputError(f"{setting_label('holdout')} must be a number, got {holdout!r}")
    check_number("limit", limit, SHARED_RANGES["limit"])
    check_number("holdout", holdout, HOLDOUT)
    return LengthBins.parse(bins)


def parse_configs(configs: Sequence[str | PositionConfig]) -> list[PositionConfig]:
    """The position configurations to sample, validated and deduplicated by canonical name.

    Example:
        >>> [c.name for c in parse_configs(["begin", "B", "50:25:25"])]
        ['begin', 'r50-25-25']
    """
    if not configs:
        raise InputError(f"no position configuration to sample: give {CONFIG_FLAG} at least once")
    parsed: dict[str, PositionConfig] = {}
    for text in configs:
        config = PositionConfig.parse(text)
        parsed.setdefault(config.name, config)
    return list(parsed.values())


def is_heldout(doc_id: str, fraction: float) -> bool:
    """Stable split: a document is held out when its id hashes below ``fraction``.

    Example:
        >>> is_heldout("doc-1", 0.0), is_heldout("doc-1", 1.0)
        (False, True)
    """
    if fraction <= 0:
        return False
    digest = hashlib.sha256(doc_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def make_stage_generator(
    generator: str | QueryGenerator, options: dict[str, Any] | None = None
) -> QueryGenerator:
    """The query generator of the generate stage: built (and its options checked) by name."""
    if not isinstance(generator, str):
        return generator
    from hf_posbias.generation.generator_registry import make_generator

    return make_generator(generator, **(options or {}))


def check_stage_executor(executor: ExecutorSettings | None) -> None:
    """One :class:`InputError` line, before any work, when ``--executor`` cannot start."""
    if executor is not None and executor.executor != "local":
        from hf_posbias.executors import check_executor

        check_executor(executor)


def make_stage_panel(
    panel: str | RerankerPanel,
    normalization: str | None = None,
    *,
    load: bool = True,
    trust_remote_code: bool = False,
) -> RerankerPanel:
    """The verification panel: parsed from its spec (cross-encoders loaded unless ``load``;
    remote code only with ``trust_remote_code``)."""
    if not isinstance(panel, str):
        return panel
    from hf_posbias.verification.panel import parse_panel

    return parse_panel(panel, normalization, load=load, trust_remote_code=trust_remote_code)


def check_audit_options(per_stratum: int, backend: str, constrained: bool) -> None:
    """Validate the audit's options before any stage runs (one-line :class:`InputError`).

    A constrained local judge needs llguidance and a schema it compiles: checked here too.

    Example:
        >>> check_audit_options(0, "openai", True)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: audit_per_stratum must be >= 1, got 0
    """
    check_number("audit_per_stratum", per_stratum, AUDIT_PER_STRATUM)

    if backend not in CHAT_BACKENDS:
        raise InputError(
            f"unknown audit backend {backend!r}; choose from {', '.join(CHAT_BACKENDS)}"
        )
    if backend == "local-lm" and constrained:
        from hf_posbias.generation.constrained import compile_json_schema
        from hf_posbias.verification.audit import AUDIT_SCHEMA

        compile_json_schema(AUDIT_SCHEMA)


def _read_json(path: Path) -> dict[str, Any]:
    return read_json(path) if path.exists() else {}


def check_stage_chain(work: Path) -> None:
    """Refuse a work folder whose stages were made from different upstream outputs.

    Each stage pins a fingerprint of its input; after an upstream stage was rerun with
    ``--overwrite``, the stages after it still hold outputs of the old input. Publishing them
    would describe data that no longer matches, so this names the stage to rerun instead.
    """
    from hf_posbias.generation.stage import candidate_rows, documents_fingerprint
    from hf_posbias.verification.stage import candidates_fingerprint

    work = Path(work)
    overwrite = flag_name("overwrite")
    # (stage, what its manifest pinned, the input as it is now, how it was made from what,
    #  the verb to rerun): each input is read only when the stage before it held.
    chain: list[tuple[Path, Callable[[], Any], Callable[[], Any], str, str]] = [
        (
            work / CANDIDATES,
            lambda: stage_parameters(work / CANDIDATES, _MADE_BY[CANDIDATES]).get(
                "documents_fingerprint"
            ),
            lambda: documents_fingerprint(load_documents(work / CORPUS)),
            f"was generated from other documents than {work / CORPUS}",
            f"generate {overwrite}` (and the stages after it)",
        ),
        (
            work / SCORED,
            lambda: stage_parameters(work / SCORED, _MADE_BY[SCORED]).get("candidates_fingerprint"),
            lambda: candidates_fingerprint(candidate_rows(work / CANDIDATES)),
            f"scored other candidates than {work / CANDIDATES}",
            f"verify {overwrite}` (and the stages after it)",
        ),
        (
            work / TRAIN,
            lambda: stage_parameters(work / TRAIN, _MADE_BY[TRAIN]).get("pool"),
            lambda: stage_fingerprint(work / SCORED, _MADE_BY[SCORED]),
            f"was sampled from another scored pool than {work / SCORED}",
            f"sample {overwrite}`",
        ),
    ]
    for stage, pinned, current, made_from, rerun in chain:
        if pinned() != current():
            raise InputError(f"{stage} {made_from} holds now: rerun `posbias data {rerun}")


def check_publish_targets(out: Path, *, overwrite: bool = False) -> None:
    """Refuse ``--out`` (or its ``pool``/``train`` folders) that publishing would clobber."""
    from hf_posbias.publish.repo import check_repo_folder

    check_folder_target(out, "--out")
    for name in ("pool", "train"):
        check_repo_folder(Path(out) / name, overwrite)
