"""docs/papers.md: every command it names parses, every repository file it names exists, in
every section (YHP26, Zeng et al., and any paper added later)."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAPERS = REPO / "docs" / "papers.md"
CODE = re.compile(r"`([^`]+)`")
FILE_SUFFIXES = (".yaml", ".yml", ".md", ".py", ".json", ".toml")


def sections() -> dict[str, str]:
    """``## `` heading → its text."""
    parts = re.split(r"^## (.+)$", PAPERS.read_text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def spans() -> list[tuple[str, str]]:
    """``(section, code span)`` of every code span of every section, and every line of its
    fenced blocks (without its ``#`` comment)."""
    found = []
    for name, text in sections().items():
        for block in FENCE.findall(text):
            found += [(name, line.split(" #")[0].strip()) for line in block.splitlines()]
        found += [(name, span) for span in CODE.findall(FENCE.sub("", text))]
    return [(name, span) for name, span in found if span]


def commands() -> list[tuple[str, str]]:
    return [(name, span) for name, span in spans() if span.startswith("posbias ")]


def files() -> list[tuple[str, str]]:
    """Spans naming a repository file: no blank, no placeholder, under a top-level folder or
    a top-level file of the repository."""
    top = {p.name for p in REPO.iterdir()}
    return [
        (name, span)
        for name, span in spans()
        if " " not in span
        and "<" not in span
        # A bare `report.md` is an output file a command writes, not one of the repository.
        and ("/" in span and span.split("/")[0] in top or span in top)
    ]


def verbs_of(tokens: list[str]) -> tuple[list[str], argparse.ArgumentParser]:
    """The sub-command names at the head of ``tokens`` and the parser of the last one."""
    from hf_posbias.cli import build_parser

    parser, verbs = build_parser(), []
    for token in tokens:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions or token not in actions[0].choices:
            break
        parser = actions[0].choices[token]
        verbs.append(token)
    return verbs, parser


def test_both_papers_have_a_section_with_rows():
    found = sections()
    for heading in ("YHP26", "Zeng et al. (2025)"):
        assert heading in found
        rows = [line for line in found[heading].splitlines() if line.startswith("| ")]
        assert len(rows) > 3, heading  # the header and at least two tables or figures
    assert {name for name, _ in commands()} == set(found)  # every section names commands


@pytest.mark.parametrize(("section", "command"), commands())
def test_every_command_parses(section, command, capsys):
    tokens = shlex.split(command)[1:]
    verbs, parser = verbs_of(tokens)
    assert verbs, f"{section}: {command!r} names no posbias verb"
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert not nested, f"{section}: {command!r} stops at a group ({' '.join(verbs)})"
    with pytest.raises(SystemExit) as help_exit:
        parser.parse_args(["--help"])
    assert help_exit.value.code == 0
    args = tokens[len(verbs) :]
    flags = [a.split("=")[0] for a in args if a.startswith("--")]
    unknown = [flag for flag in flags if flag not in parser._option_string_actions]
    assert not unknown, f"{section}: {command!r} names flags {parser.prog} lacks: {unknown}"
    if any(token in ("…", "...") for token in args):
        return  # elided arguments: the flags' names are what can go stale
    try:
        parser.parse_args(args)
    except SystemExit:
        err = capsys.readouterr().err.strip()
        # A command shown in part (the flag a row is about) may leave out required arguments.
        if "the following arguments are required" not in err or "deprecated" in err:
            pytest.fail(f"{section}: {command!r} does not parse: {err}")


@pytest.mark.parametrize(("section", "path"), files())
def test_every_named_file_exists(section, path):
    assert (REPO / path).exists(), f"{section}: {path} does not exist"


def test_the_checks_can_fail(monkeypatch, tmp_path):
    """A page naming an unknown verb or a missing file is caught."""
    page = tmp_path / "papers.md"
    page.write_text("## X\n\n| a | `posbias studdy run s.yaml` | `studies/none.yaml` |\n")
    monkeypatch.setattr(sys.modules[__name__], "PAPERS", page)
    assert verbs_of(shlex.split("posbias studdy run s.yaml")[1:])[0] == []
    assert files() == [("X", "studies/none.yaml")] and not (REPO / "studies/none.yaml").exists()
