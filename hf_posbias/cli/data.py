"""``posbias corpus|generate|verify|sample|publish|build``: the data pipeline verbs.

Every handler validates its options before any stage runs (a mistake is one ``error:`` line,
exit 2, nothing written); each stage records the parameters it used in its manifest, and
``publish`` reads them from there (it takes no seed, δ or budget of its own).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.generation.backends import CHAT_BACKENDS
from hf_posbias.generation.registry import GENERATORS


def _echo(line: str) -> None:
    print(line, flush=True)


def _add_corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--corpus",
        required=True,
        help="demo | a .jsonl/.json/.parquet file (id, title, text) | a WikiExtractor folder | "
        "a datasets folder | hf:<dataset id>[:<config>]",
    )
    parser.add_argument("--bins", help="length-bin edges in characters, e.g. 256,512,1024")
    parser.add_argument("--limit", type=int, help="read at most this many records")
    parser.add_argument(
        "--holdout",
        type=float,
        default=0.0,
        help="fraction of documents held out for evaluation (stable hash of the id)",
    )


def _add_generator_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("query generation")
    group.add_argument(
        "--generator",
        default="ict",
        choices=GENERATORS,
        help="ict = Inverse Cloze Task (offline default); openai = any OpenAI-compatible "
        "endpoint; local-lm = a local transformers causal LM",
    )
    group.add_argument("--llm-model", help="served model name (openai) or model path (local-lm)")
    group.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"
    )
    group.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env var holding the key")
    group.add_argument(
        "--personas",
        help="persona file (.jsonl/.txt) or Hub id, e.g. proj-persona/PersonaHub (LLM generators; "
        "default: the project's own packaged pool)",
    )
    group.add_argument(
        "--no-constrained",
        action="store_true",
        help="LLM generators: decode free-form instead of under each stage's JSON schema "
        "(reproduces the paper's parse-failure accounting)",
    )
    group.add_argument("--concurrency", type=int, default=8, help="parallel requests (openai)")
    group.add_argument("--min-words", type=int, help="ICT: minimum words of a query sentence")
    group.add_argument(
        "--keep-probability",
        type=float,
        help="ICT: probability of keeping the query sentence in the document (default 0)",
    )


def _generator_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {"seed": args.seed}
    if args.generator == "ict":
        if args.min_words is not None:
            options["min_words"] = args.min_words
        if args.keep_probability is not None:
            options["keep_probability"] = args.keep_probability
        return options
    if not args.llm_model:
        raise InputError(f"--generator {args.generator} needs --llm-model")
    if args.concurrency < 1:
        raise InputError(f"--concurrency must be >= 1, got {args.concurrency}")
    options.update(
        model=args.llm_model,
        personas=args.personas,
        constrained=not args.no_constrained,
        progress=not args.no_progress,
    )
    if args.generator == "openai":
        options.update(
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            max_concurrency=args.concurrency,
        )
    return options


def _add_panel_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("verification")
    group.add_argument(
        "--panel",
        default="bm25",
        help="comma-separated verifiers: bm25 and/or cross-encoder ids/paths; 'paper' = the "
        "three rerankers of YHP26 (member@normalisation to override one)",
    )
    group.add_argument(
        "--normalization", help="score normalisation for the members (default: per kind)"
    )
    group.add_argument(
        "--delta",
        type=float,
        default=None,
        help="consensus-margin threshold δ, within the panel's score range (default 0.3)",
    )


def _add_sample_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sampling")
    group.add_argument(
        "--config",
        dest="configs",
        action="append",
        help="training configuration: begin | middle | end | uniform | b:m:e "
        "(repeatable; default: the four of YHP26)",
    )
    group.add_argument(
        "--budget", type=int, help="per (bin, position) budget (default: smallest cell)"
    )
    group.add_argument(
        "--min-cell",
        type=int,
        default=1,
        help="exclude bins whose smallest (bin, position) cell is below this (reported)",
    )


def _add_publish_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("publishing")
    group.add_argument(
        "--repo-id", help="<org>/<name>: also upload <name>-pool and <name>-train to the Hub"
    )
    group.add_argument("--token", help="Hub token (default: HF_TOKEN or the stored login)")
    group.add_argument("--corpus-name", help="source description for the dataset cards")
    group.add_argument(
        "--corpus-license", help="Hub licence id of the source text, e.g. cc-by-sa-3.0"
    )


def _source(args: argparse.Namespace, corpus: str) -> Any:
    from hf_posbias.pipeline import CorpusSource, describe_source

    source = describe_source(corpus)
    if args.corpus_name or args.corpus_license:
        source = CorpusSource(
            name=args.corpus_name or source.name,
            license=args.corpus_license or source.license,
            license_note=source.license_note if corpus == "demo" else "",
        )
    return source


def _configs(args: argparse.Namespace) -> tuple[str, ...]:
    from hf_posbias.sampling import PAPER_CONFIG_NAMES

    return tuple(args.configs) if args.configs else PAPER_CONFIG_NAMES


def _work(args: argparse.Namespace) -> Path:
    from hf_posbias.pipeline import check_folder_target

    return check_folder_target(args.work, "--work")


def _cmd_corpus(args: argparse.Namespace) -> int:
    from hf_posbias.pipeline import run_corpus_stage

    run_corpus_stage(
        args.corpus,
        _work(args),
        args.bins,
        args.limit,
        args.holdout,
        _echo,
        overwrite=args.overwrite,
        progress=not args.no_progress,
    )
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from hf_posbias.pipeline import make_stage_generator, run_generate_stage

    work = _work(args)
    generator = make_stage_generator(args.generator, _generator_options(args))
    run_generate_stage(work, generator, None, not args.no_progress, _echo, overwrite=args.overwrite)
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from hf_posbias.pipeline import DEFAULT_DELTA, make_stage_panel, run_verify_stage
    from hf_posbias.verification.panel import check_delta

    work = _work(args)
    if args.audit_model:
        from hf_posbias.pipeline import check_audit_options

        check_audit_options(args.audit_per_stratum, args.audit_backend, not args.audit_free_form)
    panel = make_stage_panel(args.panel, args.normalization, load=False)
    delta = check_delta(DEFAULT_DELTA if args.delta is None else args.delta, panel)
    panel.load()
    run_verify_stage(
        work, panel, None, delta, not args.no_progress, _echo, overwrite=args.overwrite
    )
    if args.audit_model:
        from hf_posbias.pipeline import run_audit_stage

        run_audit_stage(
            work,
            args.audit_model,
            args.base_url,
            args.api_key_env,
            args.audit_per_stratum,
            args.seed,
            _echo,
            progress=not args.no_progress,
            backend=args.audit_backend,
            constrained=not args.audit_free_form,
        )
    return 0


def _cmd_sample(args: argparse.Namespace) -> int:
    from hf_posbias.pipeline import run_sample_stage

    run_sample_stage(
        _work(args),
        _configs(args),
        args.budget,
        args.seed,
        args.min_cell,
        _echo,
        overwrite=args.overwrite,
    )
    return 0


def _cmd_publish(args: argparse.Namespace) -> int:
    from hf_posbias.pipeline import run_publish_stage

    work = _work(args)
    source = None
    if args.corpus_name or args.corpus_license:
        from hf_posbias.pipeline import CORPUS
        from hf_posbias.shards import stage_parameters

        corpus = stage_parameters(work / CORPUS, "posbias corpus")["source"]
        source = _source(args, corpus)
    run_publish_stage(
        work,
        Path(args.out),
        source,
        args.repo_id,
        args.token,
        _echo,
        overwrite=args.overwrite,
    )
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from hf_posbias.pipeline import DEFAULT_DELTA, BuildConfig, build

    config = BuildConfig(
        corpus=args.corpus,
        out=Path(args.out),
        generator=args.generator,
        generator_options=_generator_options(args),
        panel=args.panel,
        normalization=args.normalization,
        delta=DEFAULT_DELTA if args.delta is None else args.delta,
        seed=args.seed,
        bins=args.bins,
        configs=_configs(args),
        budget=args.budget,
        min_cell=args.min_cell,
        limit=args.limit,
        holdout=args.holdout,
        source=_source(args, args.corpus),
        repo_prefix=args.repo_id,
        token=args.token,
        overwrite=args.overwrite,
        progress=not args.no_progress,
    )
    result = build(config, _echo)
    _echo(f"done: load_dataset('{result.train_dir}', 'uniform', split='train')")
    return 0


def _common(parser: argparse.ArgumentParser, *, work: bool = True, seed: str | None = None) -> None:
    if work:
        parser.add_argument("--work", required=True, help="the pipeline's work folder")
    if seed:
        parser.add_argument("--seed", type=int, default=42, help=f"seed of {seed} (default 42)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace outputs made with other parameters instead of refusing",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress reports")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the data-pipeline verbs to ``posbias``."""
    p = subparsers.add_parser(
        "build",
        help="run every data stage: corpus → pool + training sets (Hub repo folders)",
        description="Build the position-controlled training sets and the scored pool from a "
        "corpus. Leaves OUT/pool and OUT/train as Hub dataset repo folders (load_dataset reads "
        "them) and OUT/work with every stage's output; rerunning resumes.",
    )
    p.add_argument("--out", required=True, help="output folder")
    _add_corpus_options(p)
    _add_generator_options(p)
    _add_panel_options(p)
    _add_sample_options(p)
    _add_publish_options(p)
    _common(p, work=False, seed="generation and sampling")
    p.set_defaults(func=_cmd_build)

    p = subparsers.add_parser("corpus", help="read, bin and segment a corpus into WORK/corpus")
    _add_corpus_options(p)
    _common(p)
    p.set_defaults(func=_cmd_corpus)

    p = subparsers.add_parser("generate", help="position-targeted queries into WORK/candidates")
    _add_generator_options(p)
    _common(p, seed="query generation")
    p.set_defaults(func=_cmd_generate)

    p = subparsers.add_parser("verify", help="score candidates with a reranker panel")
    _add_panel_options(p)
    audit = p.add_argument_group("LLM segment audit (optional)")
    audit.add_argument(
        "--audit-model",
        help="run YHP26's segment audit (TargetYes / DistractorNo / Exclusive per margin "
        "stratum) with this model on an OpenAI-compatible endpoint",
    )
    audit.add_argument(
        "--audit-backend",
        choices=CHAT_BACKENDS,
        default="openai",
        help="openai: an OpenAI-compatible endpoint (--base-url); local-lm: a local causal LM "
        "(folder, Hub id, .gguf or smollm2-135m)",
    )
    audit.add_argument(
        "--audit-free-form",
        action="store_true",
        help="ask for one free-form word instead of decoding the judge's reply under its JSON "
        'schema ({"answer": "yes"|"no"})',
    )
    audit.add_argument("--base-url", help="the audit model's endpoint (default: OpenAI)")
    audit.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env var with the key")
    audit.add_argument("--audit-per-stratum", type=int, default=100, help="candidates per stratum")
    _common(p, seed="the audit's draw")
    p.set_defaults(func=_cmd_verify)

    p = subparsers.add_parser("sample", help="controlled sampling of training sets")
    _add_sample_options(p)
    _common(p, seed="sampling")
    p.set_defaults(func=_cmd_sample)

    p = subparsers.add_parser(
        "publish",
        help="write (and upload) the Hub dataset repos",
        description="Write OUT/pool and OUT/train from a work folder. Seeds, δ, panel, "
        "generator and budget on the cards come from the stage manifests.",
    )
    p.add_argument("--out", required=True, help="folder for pool/ and train/")
    _add_publish_options(p)
    _common(p)
    p.set_defaults(func=_cmd_publish)
