"""``posbias data build|corpus|generate|verify|sample|publish``: the training-data pipeline.

Each verb's flags are generated from one settings dataclass of
:mod:`hf_posbias.pipeline.stage_settings` (``BuildSettings`` and the stage verbs' settings),
combined from the option groups that the verbs share; every check runs once, when the settings
are made, before any stage runs (a mistake is one ``error:`` line, exit 2, nothing written).
Each stage records the parameters it used in its manifest, and ``publish`` reads them from there
(it takes no seed, δ or budget of its own).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hf_posbias.cli.common import Verb, add_group, echo
from hf_posbias.output_folders import OutputFolder
from hf_posbias.pipeline.stage_settings import (
    BuildSettings,
    CorpusStageSettings,
    GenerateSettings,
    PublishStageSettings,
    SampleStageSettings,
    VerifySettings,
)


def _cmd_corpus(s: CorpusStageSettings) -> None:
    from hf_posbias.pipeline.stages import run_corpus_stage

    run_corpus_stage(s, Path(s.work), echo, overwrite=s.overwrite, progress=s.progress)


def _cmd_generate(s: GenerateSettings) -> None:
    from hf_posbias.pipeline.stages import run_generate_stage

    run_generate_stage(
        Path(s.work),
        s.generator,
        s.generator_options(),
        s.progress,
        echo,
        overwrite=s.overwrite,
        executor=s,
    )


def _cmd_verify(s: VerifySettings) -> None:
    from hf_posbias.pipeline.stages import run_verify_stage

    run_verify_stage(Path(s.work), s, None, s.progress, echo, overwrite=s.overwrite, executor=s)
    if s.audit_model:
        from hf_posbias.pipeline.stages import run_audit_stage

        run_audit_stage(
            Path(s.work),
            s.audit_model,
            s.base_url,
            s.api_key_env,
            s.audit_per_stratum,
            s.seed,
            echo,
            progress=s.progress,
            backend=s.audit_backend,
            constrained=not s.audit_free_form,
            prompt_file=s.audit_prompt_file,
        )


def _cmd_sample(s: SampleStageSettings) -> None:
    from hf_posbias.pipeline.stages import run_sample_stage

    run_sample_stage(Path(s.work), s, echo, overwrite=s.overwrite)


def _cmd_publish(s: PublishStageSettings) -> None:
    from hf_posbias.pipeline.stages import run_publish_stage

    work = Path(s.work)
    source = None
    if s.corpus_name or s.corpus_license:
        from hf_posbias.corpus.sources import CORPUS
        from hf_posbias.shards import stage_parameters

        source = s.source(stage_parameters(work / CORPUS, "posbias data corpus")["source"])
    run_publish_stage(work, Path(s.out), source, s.repo_id, s.token, echo, overwrite=s.overwrite)


def _cmd_build(s: BuildSettings) -> None:
    from hf_posbias.pipeline.runner import build

    result = build(s, echo)
    echo(f"done: load_dataset('{result.train_dir}', 'uniform', split='train')")


STAGES_KEPT = "its finished stages and shards"
"""What an interrupted data run keeps (each stage pins its parameters and skips finished
shards: :func:`hf_posbias.shards.run_sharded`)."""
IN_WORK = OutputFolder(field="work", claim=False, keeps=STAGES_KEPT)
"""A stage verb writes its stage of a work folder the stage verbs and ``data build`` share."""


VERBS: tuple[Verb, ...] = (
    Verb(
        "build",
        BuildSettings,
        _cmd_build,
        "run every data stage: corpus → pool + training sets (Hub repo folders)",
        description="Build the position-controlled training sets and the scored pool "
        "from a corpus. Leaves OUT/pool and OUT/train as Hub dataset repo folders "
        "(load_dataset reads them) and OUT/work with every stage's output; rerunning "
        "resumes.",
        output=OutputFolder(stages=True, keeps=f"{STAGES_KEPT} (work/)"),
    ),
    Verb(
        "corpus",
        CorpusStageSettings,
        _cmd_corpus,
        "read, bin and segment a corpus into WORK/corpus",
        description="The first stage of `posbias data build` alone: read the corpus, keep "
        "the documents of each length bin and split each into begin, middle and end segments, "
        "as WORK/corpus/documents.parquet. The later stages read it from the same work folder.",
        output=IN_WORK,
    ),
    Verb(
        "generate",
        GenerateSettings,
        _cmd_generate,
        "position-targeted queries into WORK/candidates",
        description="The second stage of `posbias data build` alone: one query per document "
        "and target position (begin, middle, end) from the chosen generator, as sharded "
        "WORK/candidates; finished shards are kept on a rerun.",
        output=IN_WORK,
    ),
    Verb(
        "verify",
        VerifySettings,
        _cmd_verify,
        "score candidates with a reranker panel",
        description="The third stage of `posbias data build` alone: score every candidate "
        "query against its document's segments with the reranker panel and keep those whose "
        "consensus margin reaches δ, as WORK/verified; a rerun at another δ only re-filters.",
        output=IN_WORK,
    ),
    Verb(
        "sample",
        SampleStageSettings,
        _cmd_sample,
        "controlled sampling of training sets",
        description="The fourth stage of `posbias data build` alone: draw each training-set "
        "configuration from the verified pool with the same budget per (length bin, "
        "position) cell, as WORK/sampled.",
        output=IN_WORK,
    ),
    Verb(
        "publish",
        PublishStageSettings,
        _cmd_publish,
        "write (and upload) the Hub dataset repos",
        description="Write OUT/pool and OUT/train from a work folder. Seeds, δ, panel, "
        "generator and budget on the cards come from the stage manifests.",
        # OUT/pool and OUT/train are checked as repo folders (--overwrite replaces them); OUT
        # may be the folder of the `data build` whose work folder this publishes again.
        output=OutputFolder(claim=False),
    ),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias data`` and its verbs."""
    verbs = add_group(
        subparsers,
        "data",
        help="training data: corpus → queries → verified → sampled sets",
        description="Build the position-controlled training sets (`data build` runs every "
        "stage; the stage verbs rerun one stage of a work folder).",
    )
    for verb in VERBS:
        verb.add_to(verbs)
