"""The stage runners over one work folder: corpus, generate, verify, audit, sample, publish."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.corpus.documents import (
    DOCUMENTS_FILE,
    CorpusReport,
    Document,
    LengthBins,
    document_schema,
    iter_documents,
    load_documents,
    new_corpus_report,
)
from hf_posbias.corpus.sources import CORPUS, HELDOUT, CorpusSource, describe_source, read_corpus
from hf_posbias.errors import InputError
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.pipeline.checks import (
    _MADE_BY,
    CANDIDATES,
    SCORED,
    TRAIN,
    Echo,
    _read_json,
    _silent,
    check_audit_options,
    check_publish_targets,
    check_stage_chain,
    check_stage_executor,
    is_heldout,
    make_stage_generator,
    parse_configs,
)
from hf_posbias.rows.readers import read_parquet_rows
from hf_posbias.settings import flag_name
from hf_posbias.shards import (
    ParquetRowWriter,
    check_parameters,
    pin_parameters,
    read_manifest,
    stage_fingerprint,
    stage_parameters,
    write_json,
)

if TYPE_CHECKING:
    from hf_posbias.generation.base import QueryGenerator
    from hf_posbias.publish.dataset_card import DatasetCardInfo
    from hf_posbias.verification.panel import RerankerPanel
from hf_posbias.pipeline.stage_settings import CorpusSettings, PanelSettings, SampleSettings

logger = logging.getLogger(__name__)


def run_corpus_stage(
    settings: CorpusSettings,
    work: Path,
    echo: Echo = _silent,
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> tuple[Sequence[Document], CorpusReport]:
    """Read, validate, bin and segment the corpus into ``work/corpus`` (and ``work/heldout``).

    The corpus is streamed: records are read, segmented and written a row group at a time.
    Nothing reaches the stage folders until the whole corpus has been read: a bad record
    (malformed JSON, text that is not UTF-8 — named with its byte offset) leaves the work
    folder untouched. Returns the kept documents, read lazily from ``work/corpus``.
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

    # The documents stream to files beside the stage folders and move in once the whole corpus
    # has been read: a bad record (malformed JSON, text that is not UTF-8) leaves the work
    # folder as it was, and what is held is one row group and the ids seen.
    report = new_corpus_report(length_bins, source=str(corpus))
    heldout_dir = Path(work) / HELDOUT
    created = _first_missing(Path(work))
    staging = Path(work) / f".corpus-staging-{os.getpid()}"
    n_heldout = 0
    try:
        with (
            ParquetRowWriter(staging / CORPUS, schema=document_schema()) as kept_out,
            ParquetRowWriter(staging / HELDOUT, schema=document_schema()) as heldout_out,
        ):
            for doc in iter_documents(counted(), report, length_bins):
                held = is_heldout(doc.id, holdout)
                (heldout_out if held else kept_out).write([doc.to_row()])
                n_heldout += held
        bar.close()  # only on success: a bad record's one-line error is the last word
        if not report.kept:
            raise InputError(
                f"no usable document in {corpus}: {report.records_read} read, none inside the "
                f"length bins {report.bin_edges}"
            )
        pin_parameters(folder, params, overwrite=overwrite)
        os.replace(staging / CORPUS, folder / DOCUMENTS_FILE)
        write_json(folder / "report.json", report.to_dict())
        if holdout > 0:
            heldout_dir.mkdir(parents=True, exist_ok=True)
            os.replace(staging / HELDOUT, heldout_dir / DOCUMENTS_FILE)
            write_json(heldout_dir / "report.json", report.to_dict())
        elif (heldout_dir / DOCUMENTS_FILE).exists():
            shutil.rmtree(heldout_dir)  # a previous run's split; this corpus holds nothing out
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)  # only what this call created
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for line in report.summary_lines():
        echo(line)
    if holdout > 0:
        echo(f"  held out for evaluation: {n_heldout} documents (work/heldout)")
    return load_documents(folder), report


def _first_missing(folder: Path) -> Path | None:
    """The outermost folder of ``folder``'s path that does not exist yet (``None``: it does)."""
    missing = None
    for path in [folder, *folder.parents]:
        if path.exists():
            break
        missing = path
    return missing


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
    from hf_posbias.generation.stage import candidate_rows
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
    candidates = candidate_rows(Path(work) / CANDIDATES)
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
    from hf_posbias.sampling.draw import draw_training_set
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


def sampled_configs(work: Path) -> list[str]:
    """The configurations ``posbias data sample`` wrote into ``work/train``, in the order
    sampled."""
    folder = Path(work) / TRAIN
    stage_parameters(folder, _MADE_BY[TRAIN])
    configs = list((read_manifest(folder) or {}).get("configs", []))
    if not configs:
        raise InputError(f"{folder} holds no training set: run `posbias data sample` first")
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
    from hf_posbias.publish.dataset_card import DatasetCardInfo

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
    from hf_posbias.publish.dataset_card import write_pool_repo, write_train_repo

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
