"""Never lose a user's work (issue 49): every verb that writes, through the same steps.

One row per writing verb, each on a tiny input, through :func:`hf_posbias.cli.main`:

1. run A into OUT;
2. a run with other parameters into OUT is refused: one ``error:`` line, exit 2, OUT unchanged
   byte for byte (a digest of every file, the run record included);
3. A again: "already there" and nothing touched (a verb that keeps no state), or resumed (one
   that does), exit 0;
4. the other run with ``--overwrite``, interrupted (Ctrl-C raised from inside the verb): OUT
   holds A again, byte for byte (a verb whose stages pin their own parameters keeps the stages
   replaced so far instead, and says so);
5. the other run with ``--overwrite``: exit 0, only files it wrote remain;
6. A into a new folder, interrupted: the stop line says what it kept (resumable state, the
   folder kept) or that nothing was kept (no folder left); the same command then finishes it.

The interrupt comes from inside the verb's own writing: the ``n``-th file it writes through
:func:`hf_posbias.shards.atomic_path` (every atomic writer of the package) raises
``KeyboardInterrupt`` instead, or a row names the function to interrupt.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hf_posbias.cli import main
from hf_posbias.output_folders import RUN_RECORD, read_run_record

WORDS = re.findall(
    r"[a-z]+",
    "lantern orchard harbor glacier meadow canyon violin tractor pepper saddle comet marble "
    "falcon quarry velvet anchor thistle beacon cobalt ferry walnut prairie ember summit",
)


def _sentence(seed: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 5) % len(WORDS)] for i in range(6)).capitalize() + "."


def _records(n: int, offset: int = 0) -> list[dict]:
    """``n`` documents of nine sentences; each query is a sentence of one third of its own."""
    rows = []
    for d in range(offset, offset + n):
        sentences = [_sentence(d * 11 + k) for k in range(9)]
        text = " ".join(sentences)
        query = sentences[3 * (d % 3) + 1]
        rows.append({"query": query, "document": text, "evidence_start": text.index(query)})
    return rows


def _corpus(n: int) -> list[dict]:
    """``n`` documents as corpus records (``id``, ``title``, ``text``)."""
    return [{"id": f"c{d}", "title": "", "text": r["document"]} for d, r in enumerate(_records(n))]


def _write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _write_beir(folder: Path, n_docs: int = 12, n_queries: int = 8) -> str:
    """A BEIR folder: one document per word, query ``what is a <word>`` (even test, odd train)."""
    folder.mkdir(parents=True)
    corpus = [
        {"_id": f"d{i:02d}", "title": w, "text": f"A {w} is the subject here. See {w} again."}
        for i, w in enumerate(WORDS[:n_docs])
    ]
    _write_jsonl(folder / "corpus.jsonl", corpus)
    queries = [{"_id": f"q{i}", "text": f"what is a {WORDS[i]}"} for i in range(n_queries)]
    _write_jsonl(folder / "queries.jsonl", queries)
    (folder / "qrels").mkdir()
    for split, parity in (("test", 0), ("train", 1)):
        lines = ["query-id\tcorpus-id\tscore"]
        lines += [f"q{i}\td{i:02d}\t1" for i in range(n_queries) if i % 2 == parity]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return str(folder)


def _write_train_data(folder: Path) -> str:
    """A ``data build``-like training folder with the configurations begin and end."""
    from hf_posbias.publish.repo import front_matter_yaml, write_dataset_repo

    configs: dict[str, list[dict]] = {"begin": [], "end": []}
    for d in range(8):
        sentences = [_sentence(d * 5 + k) for k in range(9)]
        for position, k in (("begin", 1), ("end", 7)):
            configs[position].append(
                {
                    "query": sentences[k],
                    "positive": " ".join(sentences),
                    "doc_id": f"doc{d}",
                    "length_bin": "0-1k",
                    "target_position": position,
                }
            )
    card = f"---\n{front_matter_yaml(list(configs))}---\n\ntiny training data\n"
    return str(write_dataset_repo(folder, configs, card))


def _write_pairs(path: Path) -> str:
    """Evidence-moving pairs: a fixed sentence placed at three depths of a report."""
    lines = [f"Line {i} of the report mentions harbour {i} and its cranes." for i in range(12)]
    evidence = "The lighthouse was painted red in 1902."
    rows = [
        {
            "id": f"p{i}",
            "query": "When was the lighthouse painted?",
            "document": " ".join(lines[: 5 + i] + [evidence] + lines[5 + i :]),
            "evidence": evidence,
        }
        for i in range(3)
    ]
    return _write_jsonl(path, rows)


def _write_requests(path: Path) -> str:
    """Two rank_llm requests of five candidates each."""
    rows = [
        {
            "query": {"text": f"what is a {WORDS[q]}", "qid": q},
            "candidates": [
                {"docid": f"d{i}", "score": float(5 - i), "doc": {"contents": _sentence(i)}}
                for i in range(5)
            ],
        }
        for q in range(2)
    ]
    return _write_jsonl(path, rows)


LISTWISE = ["--k", "4", "--positions", "1,4", "--n-resamples", "20", "--no-progress"]
"""The listwise runs the table's comparing verbs read."""


@pytest.fixture(scope="module")
def made(tmp_path_factory, tiny_sentence_transformer, tiny_llm) -> dict[str, str]:
    """Every input of the table, made once (the runs other verbs read among them)."""
    from hf_posbias.tasks.builders.jsonl import build_from_records

    root = tmp_path_factory.mktemp("inputs")
    made = {
        "st": tiny_sentence_transformer,
        "llm": tiny_llm,
        "mine": _write_jsonl(root / "mine.jsonl", _records(12)),
        "other": _write_jsonl(root / "other.jsonl", _records(9, offset=40)),
        "task": str(build_from_records(_records(12), name="Mine").save(root / "task")),
        "task2": str(build_from_records(_records(9, 40), name="Other").save(root / "task2")),
        "beir": _write_beir(root / "beir"),
        "train": _write_train_data(root / "train"),
        "pairs": _write_pairs(root / "pairs.jsonl"),
        "corpus": _write_jsonl(
            root / "corpus.jsonl",
            [
                {"id": f"c{d}", "title": "", "text": r["document"]}
                for d, r in enumerate(_records(6))
            ],
        ),
        "requests": _write_requests(root / "requests.jsonl"),
    }
    spec = {"bases": ["bm25"], "train": False, "tasks": [made["task"]], "bootstrap": 20}
    made["spec"] = str(root / "study.yaml")
    Path(made["spec"]).write_text(json.dumps(spec))  # JSON is YAML
    for name, model in (("bm25-run", "bm25"), ("st-run", made["st"])):
        argv = ["evaluate", "--model", model, "--task", made["task"], "--bootstrap", "20"]
        assert main([*argv, "--no-progress", "--out", str(root / name)]) == 0
        made[name] = str(root / name)
    for name, verb in (("test-a", "test"), ("test-b", "test"), ("shuffled", "shuffle-eval")):
        argv = ["listwise", verb, "--reranker", "bm25", "--task", made["beir"], *LISTWISE]
        if verb == "shuffle-eval":
            argv = [a for a in argv if a not in ("--positions", "1,4")] + ["--shuffles", "2"]
        assert main([*argv, "--out", str(root / name)]) == 0
        made[name] = str(root / name)
    argv = ["listwise", "build-train", "--task", made["beir"], "--split", "train", "--k", "4"]
    assert main([*argv, "--no-progress", "--out", str(root / "lw-train")]) == 0
    made["lw-train"] = str(root / "lw-train")
    return made


Argv = Callable[[dict[str, str]], list[str]]


@dataclass(frozen=True)
class Row:
    """One writing verb: run A, a run with other parameters (B), and how it is interrupted."""

    verb: str
    a: Argv
    b: Argv
    keeps: bool = False
    """Whether the verb keeps resumable state when interrupted."""
    interrupt_at: int = 1
    """The atomic write (0 = the first) that raises ``KeyboardInterrupt`` instead."""
    interrupt: tuple[str, str] | None = None
    """A function to raise ``KeyboardInterrupt`` from instead (``module``, ``attribute``)."""
    stages: bool = False
    """Its stages pin their own parameters: an interrupted replacement keeps the stages it
    replaced (resumable), instead of bringing the old run back."""
    file: str | None = None
    """The verb writes one file, this one inside OUT's place (OUT is then its folder)."""


def argv(*words: str) -> Argv:
    """A command line; ``{name}`` in a word stands for the table's input ``name``."""
    return lambda made: [word.format(**made) for word in words]


SAVEFIG = ("matplotlib.figure", "Figure.savefig")
"""Where every figure of the package is written (:func:`hf_posbias.figures.save_figure`)."""
CARD_FACTS = ("hf_posbias.cards.checkpoint", "save_card_facts")
"""What both trainers write last, after the weights."""
EVAL_YAML = ("hf_posbias.tasks.hub_benchmark", "write_eval_yaml")
"""What a task's repo folder gets after its task files (benchmark publish)."""

BUILD = ("data", "build", "--corpus", "demo", "--no-progress", "--limit")
EVALUATE = ("evaluate", "--model", "bm25", "--bootstrap", "20", "--no-progress", "--task")
TRAIN = ("train", "--model", "{st}", "--data", "{train}", "--max-steps", "1")
TRAIN += ("--global-batch", "4", "--no-progress", "--no-card", "--config")
AUDIT = ("analyze", "audit", "bm25", "--no-progress", "--task")
ANALYZE = ("--model", "{st}", "--corpus", "{corpus}", "--no-progress", "--n", "3")
PROFILE = ("analyze", "segment-profile", *ANALYZE, "--sample-size")
POOLING = ("analyze", "pooling", *ANALYZE, "--sample-size", "4", "--modes")
MOVING = ("analyze", "evidence-moving", "--pairs", "{pairs}", "--no-progress", "--model")
REMEDIES = ("analyze", "remedies", "--model", "{st}", "--task", "{task}", "--remedies", "maxp")
REMEDIES += ("--no-progress", "--no-plot", "--bootstrap")
STUDY = ("study", "run", "{spec}", "--in-process", "--no-progress")
REPORT = ("study", "report", "{bm25-run}", "{st-run}", "--bootstrap")
BOARD = ("leaderboard", "{bm25-run}", "{st-run}", "--n-resamples", "50")
ON_BEIR = ("--reranker", "bm25", "--task", "{beir}", "--k", "4", "--no-progress")
TESTED = (*ON_BEIR, "--positions", "1,4", "--n-resamples", "20")
LW_REMEDIES = ("listwise", "reranker-remedies", *TESTED, "--no-calibrate", "--no-plot")
PROPENSITY = ("listwise", "propensity", *ON_BEIR, "--shuffles")
SHUFFLED = ("listwise", "shuffle-eval", *ON_BEIR, "--n-resamples", "20", "--shuffles")
LW_BUILD = ("listwise", "build-train", "--task", "{beir}", "--split", "train", "--no-progress")
LW_TRAIN = ("listwise", "train", "--model", "{llm}", "--data", "{lw-train}", "--max-steps", "1")
LW_TRAIN += ("--global-batch", "1", "--passage-tokens", "8", "--no-progress", "--no-card")
RERANK = ("listwise", "rerank", "--reranker", "bm25", "--requests", "{requests}")

ROWS: list[Row] = [
    Row("data build", argv(*BUILD, "60"), argv(*BUILD, "70"), keeps=True, stages=True,
        interrupt_at=6),  # a shard of the generate stage
    Row("benchmark build jsonl", argv("benchmark", "build", "jsonl", "--input", "{mine}"),
        argv("benchmark", "build", "jsonl", "--input", "{other}")),
    Row("benchmark build scifact (real data)",
        argv("benchmark", "build", "scifact", "--input", "{scifact}"),
        argv("benchmark", "build", "scifact", "--input", "{scifact}", "--anchor", "center")),
    Row("benchmark subsample",
        argv("benchmark", "subsample", "--task", "{task}", "--per-bucket", "2"),
        argv("benchmark", "subsample", "--task", "{task}", "--per-bucket", "3")),
    Row("benchmark plot-evidence", argv("benchmark", "plot-evidence", "--task", "{task}"),
        argv("benchmark", "plot-evidence", "--task", "{task2}"), interrupt=SAVEFIG,
        file="evidence.png"),
    Row("benchmark publish", argv("benchmark", "publish", "--task", "{task}"),
        argv("benchmark", "publish", "--task", "{task2}"), interrupt=EVAL_YAML),
    Row("evaluate", argv(*EVALUATE, "{task}"), argv(*EVALUATE, "{task2}"), interrupt_at=2),
    Row("compare", argv("compare", "{bm25-run}", "{st-run}", "--n-resamples", "50"),
        argv("compare", "{st-run}", "{bm25-run}", "--n-resamples", "50"), interrupt_at=0),
    Row("leaderboard", argv(*BOARD), argv(*BOARD, "--sort-by", "psi")),
    Row("train", argv(*TRAIN, "begin"), argv(*TRAIN, "end"), interrupt=CARD_FACTS),
    Row("analyze evidence-moving", argv(*MOVING, "A={st}"), argv(*MOVING, "B={st}"),
        interrupt=SAVEFIG),
    Row("analyze segment-profile", argv(*PROFILE, "4"), argv(*PROFILE, "5"), interrupt=SAVEFIG),
    Row("analyze pooling", argv(*POOLING, "cls,mean"), argv(*POOLING, "mean,max"),
        interrupt=SAVEFIG),
    Row("analyze audit", argv(*AUDIT, "{task}"), argv(*AUDIT, "{task2}"), interrupt_at=2),
    Row("analyze remedies", argv(*REMEDIES, "20"), argv(*REMEDIES, "30"), keeps=True,
        interrupt_at=4),
    Row("study run", argv(*STUDY), argv(*STUDY, "--seed", "4"), keeps=True, interrupt_at=3),
    Row("study report (runs)", argv(*REPORT, "20"), argv(*REPORT, "30")),
    Row("listwise test", argv("listwise", "test", *TESTED),
        argv("listwise", "test", *TESTED, "--seed", "1"), keeps=True, interrupt_at=3),
    Row("listwise shuffle-eval", argv(*SHUFFLED, "2"), argv(*SHUFFLED, "3"), keeps=True,
        interrupt_at=3),
    Row("listwise propensity", argv(*PROPENSITY, "2"), argv(*PROPENSITY, "3"), keeps=True,
        interrupt_at=3),
    Row("listwise reranker-remedies", argv(*LW_REMEDIES), argv(*LW_REMEDIES, "--seed", "1"),
        keeps=True, interrupt_at=3),
    Row("listwise build-train", argv(*LW_BUILD, "--k", "4"), argv(*LW_BUILD, "--k", "3")),
    Row("listwise augment", argv("listwise", "augment", "--data", "{lw-train}", "--groups", "2"),
        argv("listwise", "augment", "--data", "{lw-train}", "--groups", "4"), interrupt_at=0),
    Row("listwise transitions",
        argv("listwise", "transitions", "--data", "{lw-train}", "--groups", "2"),
        argv("listwise", "transitions", "--data", "{lw-train}", "--groups", "4"),
        interrupt_at=0),
    Row("listwise table",
        argv("listwise", "table", "--runs", "{shuffled}", "--n-resamples", "50"),
        argv("listwise", "table", "--runs", "{shuffled}", "--n-resamples", "60"),
        interrupt_at=0),
    Row("listwise curves", argv("listwise", "curves", "--runs", "{test-a}"),
        argv("listwise", "curves", "--runs", "{test-a}", "{test-b}"), interrupt=SAVEFIG),
    Row("listwise compare-tests",
        argv("listwise", "compare-tests", "{test-a}", "{test-b}", "--n-resamples", "50"),
        argv("listwise", "compare-tests", "{test-b}", "{test-a}", "--n-resamples", "50"),
        interrupt_at=0),
    Row("listwise rerank", argv(*RERANK), argv(*RERANK, "--k", "3"), interrupt_at=0,
        file="results.jsonl"),
    Row("listwise train", argv(*LW_TRAIN), argv(*LW_TRAIN, "--seed", "1"),
        interrupt=CARD_FACTS),
]  # fmt: skip


def _digest(folder: Path) -> str:
    """Every file below ``folder`` (hidden ones too, locks apart): paths and bytes."""
    from hf_posbias.locks import is_lock_file

    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not is_lock_file(p.name)):
        digest.update(f"{path.relative_to(folder)}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def _run(argv: list[str], out: Path, capsys, *extra: str) -> tuple[int, str, str]:
    code = main([*argv, "--out", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("row", ROWS, ids=[r.verb for r in ROWS])
def test_every_writing_verb_keeps_what_its_folder_holds(
    row, made, tmp_path, capsys, monkeypatch, request
):
    def out_of(folder: Path) -> Path:
        return folder / row.file if row.file else folder

    if row.verb.endswith("(real data)"):
        made = {**made, "scifact": str(request.getfixturevalue("shared_data") / "scifact_allenai")}
    folder = tmp_path / "out"
    out = out_of(folder)
    a, b = row.a(made), row.b(made)

    # 1. A
    code, printed, err = _run(a, out, capsys)
    assert code == 0, err
    before = _digest(folder)

    # 2. other parameters: refused in one line, A untouched
    code, _, err = _run(b, out, capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "holds a run with other parameters" in err and "--overwrite" in err
    assert _digest(folder) == before

    # 3. the same parameters: already there (nothing touched), or resumed
    code, printed, err = _run(a, out, capsys)
    assert code == 0, err
    if not row.keeps:
        assert "already holds this run" in printed
        assert _digest(folder) == before
    before = _digest(folder)

    # 4. the replacement, interrupted: A back as it was (stage-pinned verbs: resumable state)
    started = time.time_ns()
    with monkeypatch.context() as patch:
        interrupting_row(patch, row)
        code, _, err = _run(b, out, capsys, "--overwrite")
    assert code == 130
    stop = err.strip().splitlines()[-1]
    assert stop.startswith("interrupted: ") and str(out) in stop
    if row.stages:
        assert "keeps" in stop and "the same command resumes from there" in stop
    else:
        assert "holds its previous run again" in stop
        assert _digest(folder) == before

    # 5. the replacement: only its own files (the stages an interrupted replacement made are
    # its own too)
    code, _, err = _run(b, out, capsys, "--overwrite")
    assert code == 0, err
    left = [p for p in folder.rglob("*") if p.is_file()]
    assert left and all(p.stat().st_mtime_ns >= started for p in left), [
        str(p.relative_to(folder)) for p in left if p.stat().st_mtime_ns < started
    ]
    assert not any(".posbias-replaced" in p.name for p in folder.rglob("*"))

    # 6. A into a new folder, interrupted, then finished by the same command
    fresh = tmp_path / "fresh"
    with monkeypatch.context() as patch:
        interrupting_row(patch, row)
        code, _, err = _run(a, out_of(fresh), capsys)
    assert code == 130
    stop = err.strip().splitlines()[-1]
    if row.keeps:
        assert stop.startswith(f"interrupted: {out_of(fresh)} keeps "), stop
        assert "the same command resumes from there" in stop
        assert read_run_record(fresh)["finished"] is False
    else:
        assert stop == f"interrupted: nothing was kept in {out_of(fresh)}"
        assert not out_of(fresh).exists() and not (row.file is None and fresh.exists())
    code, _, err = _run(a, out_of(fresh), capsys)
    assert code == 0, err


def interrupting_row(patch: pytest.MonkeyPatch, row: Row) -> None:
    """Make ``row``'s verb raise ``KeyboardInterrupt`` from inside (undone with ``patch``)."""
    import importlib

    import hf_posbias.shards

    if row.interrupt is not None:
        module, name = row.interrupt
        owner = importlib.import_module(module)
        *path, name = name.split(".")
        for part in path:
            owner = getattr(owner, part)

        def stop(*args, **kwargs):
            raise KeyboardInterrupt

        patch.setattr(owner, name, stop)
        return
    original = hf_posbias.shards.atomic_path
    written: list[Path] = []

    def counting(path):
        if not Path(path).name.endswith(RUN_RECORD):  # the claim's own record is no output
            if len(written) == row.interrupt_at:
                raise KeyboardInterrupt
            written.append(Path(path))
        return original(path)

    patch.setattr(hf_posbias.shards, "atomic_path", counting)


NOT_IN_THE_TABLE: dict[str, str] = {
    "posbias demo": "minutes of training (13 min on 2 busy cores with --max-steps 1)",
    "posbias listwise demo": "six verbs chained (tests/listwise/test_listwise_demo.py resumes it)",
    "posbias listwise convert": "reads RankZephyr / FIRST conversations (a Hub dataset)",
    "posbias benchmark from-corpus": "an LLM per stage (its stages: tests/construction)",
    "posbias benchmark build squad-posq": "the builders' one handler, as jsonl's",
    "posbias benchmark build fineweb-posq": "the builders' one handler, as jsonl's",
    "posbias benchmark build posir": "the builders' one handler, as jsonl's",
    "posbias benchmark build climate-fever": "the builders' one handler, as jsonl's",
    "posbias benchmark build fever": "the builders' one handler, as jsonl's",
    "posbias benchmark build hotpotqa": "the builders' one handler, as jsonl's",
    "posbias benchmark build beir": "the builders' one handler, as jsonl's",
    "posbias benchmark build msmarco": "the builders' one handler, as jsonl's",
    "posbias benchmark build trec-dl": "the builders' one handler, as jsonl's",
    "posbias benchmark build heldout": "the builders' one handler, as jsonl's",
}
"""Writing verbs without a row, and why (each claims its folder all the same: the next test)."""

SHARED_WORK = {f"posbias data {verb}" for verb in ("corpus", "generate", "verify", "sample")}
"""The stage verbs write their stage of a work folder they share with `data build` (each stage
pins its own parameters: hf_posbias.shards.pin_parameters); `data publish` writes the repo
folders of a build (checked as such: hf_posbias.publish.repo.check_repo_folder)."""


def _leaf_verbs() -> dict[str, object]:
    """``prog`` → the :class:`hf_posbias.cli.common.Verb` of every command of ``posbias`` (of
    each source, for a command that takes one)."""
    from hf_posbias.cli import build_parser
    from hf_posbias.cli.common import walk_commands

    found: dict[str, object] = {}
    for command in walk_commands(build_parser()):
        for parser in command.flag_parsers:
            verb = getattr(parser.get_default("func"), "args", [None])[0]
            if verb is not None and hasattr(verb, "output_folder"):
                found[parser.prog] = (verb, parser)
    return found


def test_every_verb_that_writes_claims_its_output_folder():
    """Walking the parser: a verb whose settings name an output claims it (and takes
    --overwrite), but the data stage verbs, which share a work folder; every claiming verb has a
    row in the table above or a reason it has none."""
    from dataclasses import fields

    claimed, shared = set(), set()
    for prog, (verb, parser) in _leaf_verbs().items():
        output = verb.output_folder()
        names = {f.name for f in fields(verb.settings)}
        if output is None:
            assert "out" not in names and "work" not in names, prog
            continue
        if not output.claim:
            shared.add(prog)
            continue
        claimed.add(prog)
        assert "--overwrite" in parser._option_string_actions, prog
    assert shared == SHARED_WORK | {"posbias data publish"}
    rows = {f"posbias {row.verb.split(' (')[0]}" for row in ROWS}
    assert claimed - rows == set(NOT_IN_THE_TABLE)


def test_a_failed_run_names_what_it_kept_on_its_one_error_line(made, tmp_path, capsys):
    """A listwise test whose third write fails (a full disk, here an error raised there) keeps
    its finished queries, and its one error line says so."""
    import hf_posbias.shards
    from hf_posbias.errors import InputError

    original, written = hf_posbias.shards.atomic_path, []

    def failing(path):
        if not Path(path).name.endswith(RUN_RECORD):
            if len(written) == 3:
                raise InputError("no space left for the next query")
            written.append(path)
        return original(path)

    out = tmp_path / "test"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hf_posbias.shards, "atomic_path", failing)
        code, _, err = _run(argv("listwise", "test", *TESTED)(made), out, capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.rstrip().endswith(
        f"({out} keeps its finished queries (shards/); the same command resumes from there)"
    )
    assert list((out / "shards").glob("*.parquet"))


def test_a_verb_that_writes_nothing_says_so_when_stopped(capsys, monkeypatch):
    from hf_posbias.cli import listing

    def stopped():
        raise KeyboardInterrupt

    monkeypatch.setitem(listing.LISTINGS, "benchmarks", stopped)
    assert main(["list", "benchmarks"]) == 130
    assert capsys.readouterr().err == "interrupted: nothing was written\n"
