"""``posbias benchmark from-corpus``: a position benchmark from any corpus (Z25's recipe).

Example:
    >>> import argparse
    >>> from hf_posbias.settings import settings_from_args
    >>> parser = argparse.ArgumentParser(); verbs = parser.add_subparsers()
    >>> _ = FROM_CORPUS.add_to(verbs)
    >>> args = parser.parse_args(
    ...     ["from-corpus", "--corpus", "demo", "--out", "t", "--passages", "3"])
    >>> settings_from_args(BenchmarkBuildSettings, args).passages
    3
"""

from __future__ import annotations

from hf_posbias.cli.common import Verb
from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
from hf_posbias.output_folders import OutputFolder
from hf_posbias.tasks.benchmark_registry import RECIPE, RECIPE_HELP


def _run(settings: BenchmarkBuildSettings) -> None:
    from hf_posbias.construction.build import build_benchmark
    from hf_posbias.construction.outputs import construction_markdown

    report = build_benchmark(settings)
    print(construction_markdown(report["construction"]))
    for stage, reasons in report["dropped"].items():
        for reason, n in sorted(reasons.items()):
            print(f"dropped ({stage}): {reason}: {n}")
    for line in report["warnings"]:
        print(f"warning: {line}")
    requests = ", ".join(f"{k} {v}" for k, v in report["llm_requests"].items())
    print(f"requests: {requests}; {report['seconds']} s")
    print(f"wrote {settings.out} (task, tiny/) and {settings.hub_dir} (Hub dataset folder)")


FROM_CORPUS = Verb(
    RECIPE,
    BenchmarkBuildSettings,
    _run,
    RECIPE_HELP,
    description="Passages → summary → 256-word chunks → FAQ questions tagged begin/middle/"
    "end (Algorithm 1) → Stage 1 (rerankers, downsampling, 0-4 judge) → Stage 2 (false "
    "negatives) → task folder, tiny version and Hub dataset folder. Offline defaults are a "
    "smoke-scale stand-in (SmolLM2-135M, BM25, MiniLM).",
    # Each stage pins its parameters (a changed judge reruns only the stages after it).
    output=OutputFolder(stages=True, keeps="its finished stages and shards (stages/)"),
)
"""The verb ``posbias benchmark from-corpus`` (:mod:`hf_posbias.cli.benchmark`)."""
