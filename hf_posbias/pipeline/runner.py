"""``posbias data build``: every option validated first (:func:`prepare_build`), then each stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.corpus.sources import BUILD_WORK, read_corpus
from hf_posbias.pipeline.checks import (
    Echo,
    _silent,
    check_folder_target,
    check_publish_targets,
    check_stage_executor,
    make_stage_generator,
)
from hf_posbias.pipeline.stages import (
    only_the_pool_changed,
    run_corpus_stage,
    run_generate_stage,
    run_publish_stage,
    run_sample_stage,
    run_verify_stage,
)
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    from hf_posbias.generation.base import QueryGenerator
    from hf_posbias.pipeline.stage_settings import BuildSettings
    from hf_posbias.verification.panel import RerankerPanel


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
        >>> from hf_posbias.pipeline.stage_settings import BuildSettings
        >>> prepare_build(BuildSettings(corpus="demo", out=Path("/tmp/x"), configs=["1:2"]))
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: position configuration '1:2' is not begin, middle, end, \
uniform (B/M/E/U) or three numbers b:m:e such as 50:25:25
    """
    out = check_folder_target(config.out, flag_name("out"))
    check_folder_target(out / BUILD_WORK, flag_name("out"))
    read_corpus(config.corpus, limit=config.limit)  # checks the source exists; reads nothing
    check_publish_targets(out, overwrite=config.overwrite)
    generator = make_stage_generator(config.generator, config.generator_options())
    token = None
    if config.repo_id:
        from hf_posbias.hub import resolve_token

        token = resolve_token(config.token, purpose=f"{flag_name('repo_id')} {config.repo_id}")
    check_stage_executor(config)
    panel = config.make_panel()  # the cross-encoders: a bad id fails here, before the corpus
    return BuildPlan(config, out, out / BUILD_WORK, generator, panel, token)


@dataclass
class BuildResult:
    """Where :func:`build` put its outputs, with the stage reports."""

    pool_dir: Path
    train_dir: Path
    work_dir: Path
    reports: dict[str, Any]
    uploaded: dict[str, str] = field(default_factory=dict)


def build(config: BuildSettings, echo: Echo = _silent) -> BuildResult:
    """Run every stage of the data pipeline (``posbias data build``); resumable and deterministic.

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
