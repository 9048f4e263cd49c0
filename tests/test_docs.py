"""Every fenced code block of the README, ``docs/*.md`` and the Space README runs as written or
says what it needs.

- A ``bash`` or ``python`` block without a ``# needs: …`` line is run by :func:`test_docs_run`
  (``posbias`` commands in-process through :func:`hf_posbias.cli.main`, python blocks with
  ``exec``), the blocks of one file in order in one fresh folder, so a later block may use what
  an earlier one wrote.
- ``# needs: a, b`` names what the block needs. Marks in :data:`NOT_HERE` (the Hub, a GPU, an
  endpoint, …) skip the block; every other mark is an input whose source ``docs/data.md``
  documents. For the inputs in :data:`PREPARE` the test builds a small sample from the real data
  the test suite reads (``shared_data``) and runs the block (skipped without that data); a block
  needing any other input (a trained checkpoint, a built training set) is skipped.
- Every ``posbias`` command of every block, run or not, parses with the CLI's parser (a renamed
  or removed flag fails here even where the block cannot run).
- A ``python`` block the test runs (no mark, or only marks of :data:`PREPARE`) prints what a
  reader checks, and the next fenced block, a ``text`` block, shows it: the printed output must
  match it (doctest's ``...`` ellipsis and whitespace rules).
- Other blocks are ``text`` (output, layouts, synopses) or ``json`` (which must parse).
"""

from __future__ import annotations

import contextlib
import csv
import doctest
import io
import json
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "spaces").glob("*/README.md")),
]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.S | re.M)
NEEDS = re.compile(r"^\s*# needs: (.+)$", re.M)
CODE_LANGS = {"bash", "python"}
OTHER_LANGS = {"text", "json"}

NOT_HERE = {
    "hub": "the Hugging Face Hub (models or datasets downloaded)",
    "gpu": "a CUDA GPU",
    "endpoint": "an OpenAI-compatible server (vLLM, TGI, transformers serve)",
    "github": "GitHub credentials (a results pull request)",
    "minutes": "many minutes of CPU: the demo, training runs, LLM generation",
    "repo": "a clone of this repository (make, scripts/, benchmarks/)",
    "pypi": "network access to a package index (pip install)",
    "server": "a server that runs until stopped (the Gradio app)",
    "installed": "to be a module of an installed package (docs/extending.md's plugin files: "
    "tests/test_plugins.py installs the package and runs them)",
}
"""Marks for what a test run does not have; the block is skipped (its commands still parse)."""

SCIFACT_CLAIMS = 40
"""Claims of the SciFact sample the data marks are built from (with their evidence documents
and as many other abstracts): big enough for nDCG@10, small enough for seconds of encoding."""


def blocks(path: Path) -> Iterator[tuple[int, str, str, list[str]]]:
    """``(line, language, body, needs)`` of every fenced block of ``path``."""
    text = path.read_text(encoding="utf-8")
    for match in FENCE.finditer(text):
        needs = [m.strip() for line in NEEDS.findall(match.group(2)) for m in line.split(",")]
        yield text[: match.start()].count("\n") + 1, match.group(1), match.group(2), needs


def expected_outputs(path: Path) -> dict[int, str | None]:
    """For each python block the test runs (by line): the ``text`` block right after it, the
    output it must print (None when the next block is not ``text``)."""
    found = list(blocks(path))
    out: dict[int, str | None] = {}
    for i, (line, lang, _body, needs) in enumerate(found):
        if lang == "python" and set(needs) <= set(PREPARE):
            after = found[i + 1] if i + 1 < len(found) else None
            out[line] = after[2] if after and after[1] == "text" else None
    return out


def output_matches(expected: str, printed: str) -> bool:
    """Whether ``printed`` matches ``expected`` as a doctest would (``...``, whitespace)."""
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    return doctest.OutputChecker().check_output(expected, printed, flags)


def commands(body: str) -> list[list[str]]:
    """The shell commands of a bash block, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", body)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]  # VAR=value prefixes
        for i, word in enumerate(words):
            if word in {"&", "&&", "|", ";"} or word.startswith(("&", ">", "2>")):
                words = words[:i]  # redirections and the next command of the line
                break
        if words:
            out.append(words)
    return out


def documented_data_marks() -> set[str]:
    """Inputs with a documented source: the `` `name` `` headings of ``docs/data.md``."""
    text = (REPO / "docs" / "data.md").read_text(encoding="utf-8")
    return set(re.findall(r"^### `([^`]+)`", text, re.M))


# --------------------------------------------------------------------------- preparing inputs


def _scifact_sample(shared: Path, dest: Path) -> None:
    """The first :data:`SCIFACT_CLAIMS` claim rows with evidence of each split, their abstracts
    and as many other abstracts, in the CSV layout of ``docs/data.md`` (rows copied unchanged)."""
    src = shared / "scifact_allenai"
    csv.field_size_limit(1 << 24)

    def read(name: str) -> tuple[list[str], list[dict[str, str]]]:
        with (src / name).open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            return list(reader.fieldnames or []), list(reader)

    def write(name: str, head: list[str], rows: list[dict[str, str]]) -> None:
        with (dest / name).open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=head)
            writer.writeheader()
            writer.writerows(rows)

    dest.mkdir(parents=True, exist_ok=True)
    wanted: set[str] = set()
    for split in ("train", "validation"):
        head, rows = read(f"claims_{split}.csv")
        claims = [r for r in rows if r["evidence_doc_id"]][:SCIFACT_CLAIMS]
        wanted |= {r["evidence_doc_id"] for r in claims}
        write(f"claims_{split}.csv", head, claims)
    head, corpus = read("corpus_train.csv")
    others = [r for r in corpus if r["doc_id"] not in wanted][: len(wanted)]
    write("corpus_train.csv", head, [r for r in corpus if r["doc_id"] in wanted] + others)


def _prepare_scifact_csv(shared: Path, cwd: Path) -> None:
    if not (cwd / "scifact_csv").exists():
        _scifact_sample(shared, cwd / "scifact_csv")


def _prepare_scifact_task(shared: Path, cwd: Path) -> None:
    from hf_posbias.cli import main

    if not (cwd / "tasks" / "scifact").exists():
        _prepare_scifact_csv(shared, cwd)
        argv = ["benchmark", "build", "scifact", "--input", "scifact_csv", "--out", "tasks/scifact"]
        assert main(argv) == 0


def _prepare_mine_jsonl(shared: Path, cwd: Path) -> None:
    """``mine.jsonl`` in the from-jsonl layout, from the SciFact sample's evidence sentences."""
    import pyarrow.parquet as pq

    _prepare_scifact_task(shared, cwd)
    task = cwd / "tasks" / "scifact"
    docs = {r["id"]: r["text"] for r in pq.read_table(task / "corpus.parquet").to_pylist()}
    qrels = {r["query_id"]: r["doc_id"] for r in pq.read_table(task / "qrels.parquet").to_pylist()}
    with (cwd / "mine.jsonl").open("w", encoding="utf-8") as handle:
        for q in pq.read_table(task / "queries.parquet").to_pylist():
            record = {
                "query": q["text"],
                "document": docs[qrels[q["id"]]],
                "evidence_start": q["evidence_start"],
            }
            handle.write(json.dumps(record) + "\n")


PREPARE: dict[str, Callable[[Path, Path], None]] = {
    "scifact-csv": _prepare_scifact_csv,
    "tasks/scifact": _prepare_scifact_task,
    "mine.jsonl": _prepare_mine_jsonl,
}
"""Data marks a test run can satisfy: a small sample built from the real data."""


# --------------------------------------------------------------------------- tests


def _all_blocks() -> list[tuple[str, int, str, str, list[str]]]:
    return [
        (str(path.relative_to(REPO)), line, lang, body, needs)
        for path in DOC_FILES
        for line, lang, body, needs in blocks(path)
    ]


def test_every_block_is_run_or_says_what_it_needs() -> None:
    data_marks = documented_data_marks()
    problems = []
    for where, line, lang, body, needs in _all_blocks():
        at = f"{where}:{line}"
        if lang not in CODE_LANGS | OTHER_LANGS:
            problems.append(f"{at}: fence language {lang!r} (use bash, python, text or json)")
        for mark in needs:
            if mark not in NOT_HERE and mark not in data_marks:
                problems.append(f"{at}: unknown mark {mark!r} (not in NOT_HERE or docs/data.md)")
        if lang == "json":
            try:
                json.loads(body)
            except json.JSONDecodeError as err:
                problems.append(f"{at}: json block does not parse ({err})")
        if lang == "bash" and not needs:
            for words in commands(body):
                if words[0] != "posbias":
                    problems.append(f"{at}: runnable block runs {words[0]!r}; mark it")
    assert not problems, "\n".join(problems)


def test_every_run_python_block_shows_its_output() -> None:
    missing = [
        f"{path.relative_to(REPO)}:{line}"
        for path in DOC_FILES
        for line, expected in expected_outputs(path).items()
        if expected is None
    ]
    assert not missing, "python blocks without a text block of their output next:\n" + "\n".join(
        missing
    )


def test_output_matching_can_fail() -> None:
    assert output_matches("L_Rank 2...; ratio 160,000\n", "L_Rank 2.718; ratio 160,000\n")
    assert not output_matches("tensor(2.7183)\n", "tensor(1683192.)\n")


def test_prepared_marks_are_documented_inputs() -> None:
    assert set(PREPARE) <= documented_data_marks()
    assert not set(NOT_HERE) & documented_data_marks()


def test_documented_posbias_commands_parse() -> None:
    from hf_posbias.cli import build_parser

    parser = build_parser()
    problems = []
    for where, line, lang, body, _needs in _all_blocks():
        if lang != "bash":
            continue
        for words in commands(body):
            if words[0] != "posbias" or any("$" in w for w in words):
                continue  # shell variables have no value until a shell runs the loop
            try:
                parser.parse_args(words[1:])
            except SystemExit:
                problems.append(f"{where}:{line}: {shlex.join(words)}")
    assert not problems, "commands that do not parse:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_docs_run(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    from hf_posbias.cli import main

    runnable = [
        (line, lang, body, needs)
        for line, lang, body, needs in blocks(doc)
        if lang in CODE_LANGS and set(needs) <= set(PREPARE)
    ]
    if not runnable:
        pytest.skip(f"{doc.name}: every code block needs something a test run does not have")
    expected = expected_outputs(doc)
    monkeypatch.chdir(tmp_path)
    for line, lang, body, needs in runnable:
        if needs:
            shared = request.getfixturevalue("shared_data")  # skips when the data is absent
            for mark in needs:
                PREPARE[mark](shared, tmp_path)
        if lang == "python":
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(body, f"{doc.name}:{line}", "exec"), {"__name__": "__doc_example__"})
            shown = expected[line] or ""
            assert printed.getvalue() and output_matches(shown, printed.getvalue()), (
                f"{doc.name}:{line} printed {printed.getvalue()!r}, the doc shows {shown!r}"
            )
            continue
        for words in commands(body):
            assert main(words[1:]) == 0, f"{doc.name}:{line}: {shlex.join(words)} failed"


JOBS = {
    "build the position-controlled training data": ("data", "build"),
    "train": ("train",),
    "evaluate by evidence position": ("evaluate",),
    "look at the bias": ("analyze", "evidence-moving"),
}


def _first_screen() -> Any:
    """``benchmarks/first_screen.py``, which owns what the first screen is and times its
    commands."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "first_screen", REPO / "benchmarks" / "first_screen.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_first_screen_sets_up_and_runs_each_job() -> None:
    # Its commands run in test_docs_run (the README's blocks in order, in one folder) and are
    # timed by benchmarks/first_screen.py, which reads them the same way.
    first_screen = _first_screen()
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    screen = "\n".join(lines[: first_screen.FIRST_SCREEN_LINES]) + "\n"
    found = [(match.group(1), match.group(2)) for match in FENCE.finditer(screen)]
    setup = [body for lang, body in found if lang == "bash" and "make demo" in body]
    assert setup and "make test" in setup[0], "the first screen shows make demo and make test"
    runnable = [
        words
        for lang, body in found
        if lang == "bash" and not NEEDS.search(body)
        for words in commands(body)
    ]
    assert first_screen.first_screen_commands() == runnable
    missing = [
        job
        for job, verbs in JOBS.items()
        if not any(words[1 : 1 + len(verbs)] == list(verbs) for words in runnable)
    ]
    assert not missing, f"the README's first screen runs no command to {', '.join(missing)}"
