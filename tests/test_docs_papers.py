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


def spans() -> list[tuple[str, str]]:
    """``(section, code span)`` of every code span of every section."""
    return [(name, span) for name, text in sections().items() for span in CODE.findall(text)]


def commands() -> list[tuple[str, str]]:
    return [(name, span) for name, span in spans() if span.startswith("posbias ")]


def files() -> list[tuple[str, str]]:
    """Spans naming a repository file: no blank, no placeholder, a known top-level folder or a
    file suffix."""
    top = {p.name for p in REPO.iterdir()}
    return [
        (name, span)
        for name, span in spans()
        if " " not in span
        and "<" not in span
        and ("/" in span and span.split("/")[0] in top or span.endswith(FILE_SUFFIXES))
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
    try:
        parser.parse_args(tokens[len(verbs) :])
    except SystemExit:
        pytest.fail(f"{section}: {command!r} does not parse: {capsys.readouterr().err.strip()}")


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
