"""Every ``posbias …`` command and every ``--flag`` the project's texts name exists (issue 51).

The texts are the ones a user reads or copies: runtime messages, docstrings and comments of the
package, the scripts and benchmarks, README, CONTRIBUTING, the docs, the study specs
(``studies/*.yaml``), the Makefile and the model and dataset card templates. CHANGELOG.md is
left out: it names the former commands on purpose.

Walking :func:`hf_posbias.cli.build_parser`, a mention ``posbias WORD …`` must name a command
that exists, and the flags after it on its line (up to a backtick, ``|``, ``;``, ``&&`` or a
closing parenthesis) must be flags of that command (of the benchmark it names, for ``posbias
benchmark build NAME``). A ``--flag`` anywhere else must be a flag of some command, of a module
entry point (the two trainers), of the repository's own scripts and benchmarks (the flags
their code spells), or of a third-party tool in :data:`THIRD_PARTY`; :data:`OWN_WORDS` are the
few flag-like words the texts use otherwise, each with its reason.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hf_posbias.cli import build_parser
from hf_posbias.cli.common import command_of, next_words, sources_of, walk_commands

REPO = Path(__file__).resolve().parents[2]

MENTION = re.compile(
    r"(?:(?<![\w.-])posbias|-m hf_posbias\.cli)((?:[ ]+[a-z][a-z0-9-]*)+)([^`\n|;&)$]*)"
)
"""``posbias`` (or ``python -m hf_posbias.cli``) and its words (group 1), then the rest of the
command up to where it ends."""
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*(?![\w-])")

THIRD_PARTY: dict[str, str] = {
    # pip (installs in README, CONTRIBUTING, docs/gpu.md, docs/extending.md, the Makefile)
    "--no-deps": "pip",
    "--no-index": "pip",
    "--no-build-isolation": "pip",
    "--only-binary": "pip",
    "--target": "pip",
    "--upgrade": "pip",
    # accelerate launch (docs/training.md, CONTRIBUTING, the study's launch lines)
    "--multi_gpu": "accelerate",
    "--num_processes": "accelerate",
    "--cpu": "accelerate",
    # Slurm's sbatch / srun (docs/scaling.md, docs/study.md, the Slurm executor)
    "--array": "sbatch",
    "--dependency": "sbatch",
    "--gpus": "sbatch",
    "--gres": "sbatch",
    "--job-name": "sbatch",
    "--time": "sbatch",
    # Ray (docs/scaling.md: starting a cluster)
    "--address": "ray start",
    "--head": "ray start",
    "--port": "ray start / vllm serve",
    # vLLM's server (docs/scaling.md, docs/benchmark_build.md)
    "--tensor-parallel-size": "vllm serve",
    # the Hugging Face CLI (docs/evaluation.md, docs/submitting_results.md, card templates)
    "--repo-type": "hf upload",
    "--create-pr": "hf upload",
    # mteb's CLI (docs/submitting_results.md: results in mteb's own layout)
    "--models": "mteb run",
    "--output-folder": "mteb run",
    # pytest (CONTRIBUTING, the GPU proof)
    "--junitxml": "pytest",
    # ruff (the Makefile's format check)
    "--check": "ruff format",
    # nvidia-smi / the device tool (docs/gpu.md)
    "--json": "the device tool's status",
    "--list": "nvidia-smi -L / pytest --collect-only",
    # the duplicates tool (CONTRIBUTING)
    "--change": "duplicates",
}
"""Flags of other tools that the texts name, each with its tool (no flag of ours)."""

OWN_WORDS: dict[str, str] = {
    "--tsak": "VerbParser's example of a misspelled flag and the closest-flag hint",
    "--x": "hf_posbias.settings: how a bool field is spelled (--x / --no-x)",
    "--no-x": "hf_posbias.settings: how a bool field's negation is spelled",
    "--q": "hf_posbias.settings' example of an unknown flag",
    "--fast": "a bool field of hf_posbias.settings' settings_to_argv example",
    "--every": "the example plugin's flag (docs/extending.md; tests/test_plugins.py installs it)",
    "--query_sampling": "the flag of Z25's own sampling script (tasks/builders/squad.py)",
}
"""Flag-like words the texts use about flags or other programs, not as flags of ours."""

NOT_BUILT_IN: dict[str, str] = {
    "posbias benchmark build sentences": "the example plugin of docs/extending.md",
}
"""Commands the texts name that exist once a plugin is installed (its flags unchecked)."""

PROSE = re.compile(r"\b(?:a|an|no)\s+$")
""""a posbias checkpoint", "no posbias run": the word as an adjective, no command."""


def texts() -> Iterator[Path]:
    """The files whose mentions are checked."""
    yield from (REPO / name for name in ("README.md", "CONTRIBUTING.md", "Makefile"))
    yield from sorted((REPO / "docs").glob("*.md"))
    yield from sorted((REPO / "studies").glob("*.yaml"))
    for folder in ("hf_posbias", "scripts", "benchmarks", "spaces", "model_cards", "dataset_cards"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".j2", ".md", ".yaml", ".txt"}:
                yield path


def lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(number, line)``, a line ending in a backslash joined with the next (a shell command
    written on several lines)."""
    text = path.read_text(encoding="utf-8")
    numbered = list(enumerate(text.splitlines(), start=1))
    joined, start = "", 0
    for number, line in numbered:
        if not joined:
            start = number
        if line.rstrip().endswith("\\"):
            joined += line.rstrip()[:-1] + " "
            continue
        yield start, joined + line
        joined = ""
    if joined:
        yield start, joined


def resolve(
    words: list[str], root: argparse.ArgumentParser
) -> tuple[str, argparse.ArgumentParser, str | None]:
    """The command the words after ``posbias`` name: ``(command, its parser, problem)``. The
    walk (:func:`~hf_posbias.cli.common.command_of`) stops at the first word that is not a verb
    (a positional value, prose); a word where a verb or a benchmark must come is the problem."""
    named, parser = command_of(words, root)
    path = " ".join(["posbias", *named])
    rest = words[len(named) :]
    if rest and next_words(parser):
        return path, parser, f"`{path} {rest[0]}`: no such command"
    return path, parser, None


def flags_of(parser: argparse.ArgumentParser) -> set[str]:
    """Every spelling a parser takes (a verb that takes a source: any source's too)."""
    parsers = [parser, *sources_of(parser).values()]
    return {
        option for sub in parsers for action in sub._actions for option in action.option_strings
    }


def mention_problems(line: str, root: argparse.ArgumentParser) -> list[str]:
    """What a line's ``posbias …`` mentions name that does not exist.

    Example (the check finds what it looks for):
        >>> root = build_parser()
        >>> mention_problems("run `posbias verify --work w` first", root)
        ['`posbias verify`: no such command']
        >>> mention_problems("posbias benchmark build scifact --wiki-pages p", root)
        ['`posbias benchmark build scifact` takes no --wiki-pages']
        >>> mention_problems("posbias evaluate --task t --model bm25 | head --lines 3", root)
        []
    """
    problems = []
    for match in MENTION.finditer(line):
        if PROSE.search(line[: match.start()]):
            continue
        if any(match.group(0).startswith(command) for command in NOT_BUILT_IN):
            continue
        command, parser, problem = resolve(match.group(1).split(), root)
        if problem is not None:
            problems.append(problem)
            continue
        known = flags_of(parser) | set(OWN_WORDS)
        problems += [
            f"`{command}` takes no {flag}"
            for flag in FLAG.findall(match.group(2))
            if flag not in known
        ]
    return problems


def known_flags(root: argparse.ArgumentParser) -> dict[str, str]:
    """Every flag the texts may name, with where it is one."""
    from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings
    from hf_posbias.settings import settings_parser
    from hf_posbias.training.training_settings import TrainingSettings

    known: dict[str, str] = {**THIRD_PARTY, **OWN_WORDS}
    known.update(dict.fromkeys(flags_of(root), "posbias"))
    for command in walk_commands(root):
        for parser in (command.parser, *command.flag_parsers):
            known.update(dict.fromkeys(flags_of(parser), command.name))
    for module, settings in (
        ("hf_posbias.training.train", TrainingSettings),
        ("hf_posbias.listwise.training.train", ListwiseTrainingSettings),
    ):
        known.update(dict.fromkeys(flags_of(settings_parser(settings)), f"-m {module}"))
    # A script's flags: its add_argument calls, or the flags it looks for in sys.argv.
    declared = re.compile(r"\"(--[a-z0-9_-]+)\"")
    for folder in ("scripts", "benchmarks"):
        for path in sorted((REPO / folder).glob("*.py")):
            for flag in declared.findall(path.read_text(encoding="utf-8")):
                known.setdefault(flag, str(path.relative_to(REPO)))
    return known


@pytest.fixture(scope="module")
def root() -> argparse.ArgumentParser:
    return build_parser()


def test_every_posbias_mention_names_a_command_and_flags_it_takes(root) -> None:
    found = [
        f"{path.relative_to(REPO)}:{number}: {problem}"
        for path in texts()
        for number, line in lines(path)
        for problem in mention_problems(line, root)
    ]
    assert found == []


def test_every_flag_named_is_a_flag_of_something(root) -> None:
    known = known_flags(root)
    unknown: dict[str, list[str]] = {}
    for path in texts():
        for number, line in lines(path):
            for flag in FLAG.findall(line):
                if flag not in known:
                    unknown.setdefault(flag, []).append(f"{path.relative_to(REPO)}:{number}")
    assert unknown == {}


def test_the_checker_reads_every_kind_of_text() -> None:
    kinds = {path.suffix or path.name for path in texts()}
    assert {"Makefile", ".md", ".yaml", ".py", ".j2"} <= kinds
    assert not any(path.name == "CHANGELOG.md" for path in texts())
