"""docs/papers.md: the map of every paper has a row for every table and figure the paper's text
numbers, in the map's structure; every command it names parses, every repository file it names
exists, in every section (YHP26, Zeng et al. 2025, Q26, and any paper added later)."""

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
    """The command names at the head of ``tokens`` (verbs, a benchmark of ``benchmark build``)
    and the parser that holds the command's flags."""
    from hf_posbias.cli import build_parser
    from hf_posbias.cli.common import command_of

    return command_of(tokens, build_parser())


MAP_HEADER = "| item | paper section | command · spec key | verdict |"
VERDICTS = ("as printed", "the project's", "out of reach")
"""How a map row's verdict begins (docs/papers.md's introduction says what each means): as
printed, the project's choice (or reading, where the paper's text is ambiguous), out of reach."""
MAPPED_PAPERS = {"YHP26": "000", "Zeng et al. 2025": "001", "Q26": "003"}
"""Each mapped paper's section heading → the number its text file begins with in the folder of
the papers' texts (the `paper_texts` fixture)."""
AWAITING: dict[str, str] = {}
"""Sections another change writes, by heading, with why their check is skipped until then (an
entry whose section is mapped fails: drop it)."""
NUMBERED = re.compile(r"\b(Table|Figure|Fig\.)\s?(\d+)\b")


def numbered_items(text: str) -> set[str]:
    """Every ``Table N`` and ``Figure N`` a paper's text names, in a caption or in a mention
    (``Fig. N`` read as ``Figure N``).

    Example:
        >>> sorted(numbered_items("see Fig. 9 and Table 14; Figure 2: curves. Table 1"))
        ['Figure 2', 'Figure 9', 'Table 1', 'Table 14']
    """
    return {
        f"{'Table' if kind == 'Table' else 'Figure'} {number}"
        for kind, number in NUMBERED.findall(text)
    }


def map_rows(section: str) -> list[list[str]]:
    """The cells of each row of a section's map table (the header's table; empty without it)."""
    lines = section.splitlines()
    if MAP_HEADER not in lines:
        return []
    rows = []
    for line in lines[lines.index(MAP_HEADER) + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def row_names(rows: list[list[str]]) -> set[str]:
    """The ``Table N`` / ``Figure N`` each row's item cell starts with."""
    found = set()
    for cells in rows:
        match = re.match(r"(Table|Figure) (\d+)\b", cells[0])
        if match:
            found.add(f"{match[1]} {match[2]}")
    return found


def test_both_papers_have_a_section_with_rows():
    found = sections()
    for heading in ("YHP26", "Zeng et al. 2025"):
        assert heading in found
        assert len(map_rows(found[heading])) > 3, heading  # a map, not a stub
    assert {name for name, _ in commands()} == set(found)  # every section names commands


@pytest.mark.parametrize("paper", sorted(MAPPED_PAPERS))
def test_every_numbered_table_and_figure_of_a_paper_has_its_row(paper, paper_texts):
    found = sections()
    if paper in AWAITING:
        assert not map_rows(found.get(paper, "")), f"{paper} is mapped now: drop it from AWAITING"
        pytest.skip(AWAITING[paper])
    [text] = paper_texts.glob(f"{MAPPED_PAPERS[paper]}_*.txt")
    wanted = numbered_items(text.read_text())
    assert wanted, f"{text.name} names no table or figure: is it the right text?"
    assert paper in found, f"docs/papers.md has no `## {paper}` section"
    rows = map_rows(found[paper])
    assert rows, f"`## {paper}` holds no table headed {MAP_HEADER}"
    missing = sorted(wanted - row_names(rows), key=lambda n: (n.split()[0], int(n.split()[1])))
    assert not missing, f"`## {paper}`: no row for {', '.join(missing)}"
    for cells in rows:
        assert len(cells) == 4 and all(cells), f"`## {paper}`: a row needs 4 cells: {cells}"
        assert cells[3].startswith(VERDICTS), f"`## {paper}`: {cells[0]}: verdict {cells[3]!r}"


def test_the_map_check_fails_on_a_missing_row(monkeypatch, tmp_path):
    page = tmp_path / "papers.md"
    row = "| Table 1 (x) | §1 | `posbias list bases` | as printed |"
    page.write_text(f"## P\n\n{MAP_HEADER}\n|---|---|---|---|\n{row}\n\nafter\n")
    monkeypatch.setattr(sys.modules[__name__], "PAPERS", page)
    rows = map_rows(sections()["P"])
    assert rows == [["Table 1 (x)", "§1", "`posbias list bases`", "as printed"]]
    assert numbered_items("Table 1: a. See Fig. 2.") - row_names(rows) == {"Figure 2"}


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
