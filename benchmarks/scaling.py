"""Scaling benchmark: how wall time, CPU time and peak memory grow with the number of documents.

Each stage runs as a user runs it (``python -m hf_posbias.cli …``), in its own process, at
every size of ``--sizes`` (default: the stage's own, :data:`STAGE_SIZES`) and at a small floor
size (``--floor``, twice, the faster run kept: the first also pays for cold file caches) that
measures the stage's fixed cost (interpreter, imports, model load) in the same run:

- ``build``: ``posbias data build`` with the offline defaults (ICT queries, the BM25 panel) on a
  JSONL corpus of N documents;
- ``evaluate-bm25`` and ``evaluate-minilm``: ``posbias evaluate`` (BM25; the packaged
  all-MiniLM-L6-v2) on a position task whose corpus holds N documents and whose queries are a
  fixed number (``--queries``) of sentences taken from the first documents, one per document:
  the corpus is what grows, so the work of an exact search grows linearly with N;
- ``listwise-bm25``: ``posbias listwise test --first-stage bm25 --reranker bm25`` (the pointwise
  BM25 control, so the listwise harness and first stage are measured, not an LLM) on the same
  task.

The text is real: Wikipedia lead sections shipped by the demo corpus package, and Wikipedia
paragraphs from the real-data folder ``$POSBIAS_SHARED_DATA`` where it exists. Past what they
hold, documents are deterministic variations of them: sentences shuffled by a seeded generator,
distinct ids, and never an exact duplicate text (a variation equal to a text already written is
drawn again, and a document with one sentence is not varied).

For each stage it prints wall time, CPU time (user + system of the process), peak resident
memory (that process's own high-water mark, ``VmHWM``: ``ru_maxrss`` would also count this
process's memory at the spawn), the load average, the fitted exponent ``b`` of ``work
time ∝ (N − N_floor)^b`` (least squares on log–log over the sizes; work time = wall time minus
the floor run's, the work of the documents above the floor's; ``b(cpu)`` the same on CPU time,
steadier on shared cores), the memory per
1,000 documents (least-squares slope of peak RSS on N) and the ratio of peak RSS between sizes
four times apart; ``--json`` writes it all.

``b(CLI call cpu)`` is the exponent of the stage's own work: each process imports the modules
the first floor run loaded (torch, transformers, mteb …), then times ``hf_posbias.cli.main``
itself, and the fit is on that CPU time above the (second) floor run's. The imports cost
10–15 s of CPU whose run-to-run noise under shared cores is larger than the work of a few
thousand documents, so the whole-process fits are noise at small sizes; the same modules are
imported either way, so the peak memory is the plain run's. It is the headline ``b`` of each
stage, judged against ``B_LIMIT`` (1.1) in the same line; a last line says whether every stage
is within it.

Run:
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/scaling.py --json scaling.json
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/scaling.py --sizes 200,800 --stages build
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("POSBIAS_SHARED_DATA", REPO.parent / "shared" / "data"))
STAGES = ("build", "evaluate-bm25", "evaluate-minilm", "listwise-bm25")
STAGE_SIZES: dict[str, tuple[int, ...]] = {
    "build": (4_000, 16_000, 64_000),
    "evaluate-bm25": (16_000, 64_000, 256_000),
    "evaluate-minilm": (1_000, 4_000, 16_000),
    "listwise-bm25": (4_000, 16_000, 64_000),
}
"""Each stage's sizes without ``--sizes``: from where its work is several times its fixed cost
(BM25 indexes 16,000 documents in about a second, MiniLM encodes 1,000 in about a minute), so
the exponent measures the work and not the noise of the fixed cost."""
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")
_MIN_CHARS = 200
B_LIMIT = 1.1
"""The exponent a stage's time may reach: time that grows with the documents, not faster."""


# --- the corpus -------------------------------------------------------------------------------


def real_documents() -> Iterator[dict[str, str]]:
    """Real text: Wikipedia paragraphs of the real-data folder (if present), then the demo
    corpus's lead sections; each at least ``_MIN_CHARS`` characters."""
    wiki = SHARED / "wikipedia_enwiki_wikiextractor"
    if wiki.is_dir():
        from hf_posbias.corpus.sources import read_wikiextractor

        for record in read_wikiextractor(wiki):
            paragraphs = [p.strip() for p in str(record["text"]).split("\n") if p.strip()]
            for i, paragraph in enumerate(paragraphs):
                if len(paragraph) >= _MIN_CHARS:
                    yield {
                        "id": f"{record['id']}-p{i}",
                        "title": record["title"],
                        "text": paragraph,
                    }
    from hf_posbias.corpus.sources import read_demo_corpus

    for record in read_demo_corpus():
        if len(str(record["text"])) >= _MIN_CHARS:
            yield {"id": str(record["id"]), "title": record["title"], "text": record["text"]}


def corpus_of(n: int, seed: int = 0) -> list[dict[str, str]]:
    """``n`` documents with distinct ids and distinct texts: the real ones first, then seeded
    sentence shuffles of them (round after round), never an exact duplicate.

    Example:
        >>> docs = corpus_of(30)
        >>> len(docs), len({d["id"] for d in docs}), len({d["text"] for d in docs})
        (30, 30, 30)
    """
    base: list[dict[str, str]] = []
    seen: set[str] = set()
    for doc in real_documents():
        digest = hashlib.sha1(doc["text"].encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        base.append(doc)
        if len(base) >= n:
            return base
    rng = random.Random(seed)
    docs = list(base)
    variable = [d for d in base if len(_SENTENCE.findall(d["text"])) >= 2]
    round_ = 0
    while len(docs) < n:
        round_ += 1
        for doc in variable:
            sentences = [s.strip() for s in _SENTENCE.findall(doc["text"])]
            for _ in range(8):  # a few draws; a short document may have few orders left
                rng.shuffle(sentences)
                text = " ".join(sentences)
                digest = hashlib.sha1(text.encode()).hexdigest()
                if digest not in seen:
                    seen.add(digest)
                    docs.append(
                        {"id": f"{doc['id']}~v{round_}", "title": doc["title"], "text": text}
                    )
                    break
            if len(docs) >= n:
                break
        if round_ > 10_000:
            raise RuntimeError(f"cannot vary the corpus to {n} distinct documents")
    return docs


def write_corpus(docs: list[dict[str, str]], path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return path


def write_task(docs: list[dict[str, str]], folder: Path, n_queries: int, seed: int = 0) -> Path:
    """A position task over ``docs``: one query for each of the first ``n_queries`` documents,
    a sentence of it (kept in the document) whose start decides its third."""
    from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

    rng = random.Random(seed)
    queries, qrels = [], []
    for doc in docs:
        if len(queries) >= n_queries:
            break
        text = doc["text"]
        spans = [m.span() for m in _SENTENCE.finditer(text)]
        if len(spans) < 2:
            continue
        start, end = spans[rng.randrange(len(spans))]
        bucket = ("begin", "middle", "end")[min(2, 3 * start // max(1, len(text)))]
        qid = f"q{len(queries)}"
        queries.append(
            {
                "id": qid,
                "text": text[start:end].strip(),
                "bucket": bucket,
                "evidence_start": start,
                "evidence_end": end,
                "doc_length": len(text),
            }
        )
        qrels.append({"query_id": qid, "doc_id": doc["id"], "score": 1})
    info = TaskInfo(
        name=f"Scaling{len(docs)}",
        description="scaling benchmark: sentence queries over Wikipedia text",
        buckets=["begin", "middle", "end"],
    )
    return PositionTaskData(info=info, corpus=docs, queries=queries, qrels=qrels).save(folder)


# --- measuring one process ---------------------------------------------------------------------


@dataclass
class Measurement:
    stage: str
    documents: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    load_average: float
    main_wall_s: float | None = None
    main_cpu_s: float | None = None


# The stage's own work, timed inside its process: ``hf_posbias.cli.main(argv)`` after the
# modules a floor run loaded (torch, transformers, mteb …: seconds of fixed cost whose noise
# under shared cores exceeds the work of a few thousand documents) are imported first. The
# same modules are imported either way, so peak memory is the same as a plain run's.
_DRIVER = """
import importlib, json, os, sys, time
preload = os.environ.get("POSBIAS_SCALING_PRELOAD")
for name in json.load(open(preload)) if preload else []:
    try:
        importlib.import_module(name)
    except Exception:
        pass
wall, cpu = time.perf_counter(), time.process_time()
from hf_posbias.cli import main
code = 1
try:
    code = main(sys.argv[1:])
finally:
    peak_kb = None
    if os.path.exists("/proc/self/status"):
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                peak_kb = int(line.split()[1])
    with open(os.environ["POSBIAS_SCALING_REPORT"], "w") as f:
        json.dump({"main_wall_s": time.perf_counter() - wall,
                   "main_cpu_s": time.process_time() - cpu,
                   "peak_kb": peak_kb,
                   "modules": [m for m, v in list(sys.modules.items()) if v is not None]}, f)
sys.exit(code)
"""


def measure(
    stage: str, documents: int, argv: list[str], log: Path, preload: list[str] | None = None
) -> tuple[Measurement, list[str]]:
    """Run ``argv`` in its own process; its wall time, CPU time and peak RSS (``wait4``), the
    time of the CLI call itself (after importing ``preload``), and the modules it loaded."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    report = log.with_suffix(".main.json")
    env = {**os.environ, "PYTHONPATH": path, "POSBIAS_SCALING_REPORT": str(report)}
    if preload:
        modules = log.with_suffix(".preload.json")
        modules.write_text(json.dumps(preload))
        env["POSBIAS_SCALING_PRELOAD"] = str(modules)
    if argv[1:3] == ["-m", "hf_posbias.cli"]:
        argv = [argv[0], "-c", _DRIVER, *argv[3:]]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise SystemExit(
            f"error: {stage} at {documents} documents exited {proc.returncode}:\n{tail}"
        )
    load = max(load, os.getloadavg()[0])
    inner = json.loads(report.read_text()) if report.is_file() else {}
    # The process's own high-water mark (VmHWM, Linux): wait4's ru_maxrss also counts the
    # memory of this process at the spawn (the kernel carries it over the exec), so a stage
    # smaller than this process, which holds the largest corpus, would read as this process.
    peak_kb = inner.get("peak_kb") or usage.ru_maxrss  # ru_maxrss: kilobytes on Linux
    measurement = Measurement(
        stage=stage,
        documents=documents,
        wall_s=round(wall, 2),
        cpu_s=round(usage.ru_utime + usage.ru_stime, 2),
        peak_rss_mb=round(peak_kb / 1024, 1),
        load_average=round(load, 2),
        main_wall_s=round(inner["main_wall_s"], 2) if inner else None,
        main_cpu_s=round(inner["main_cpu_s"], 2) if inner else None,
    )
    modules = [m for m in inner.get("modules", []) if not m.endswith("__main__")]
    return measurement, modules


def stage_argv(stage: str, work: Path, corpus: Path, task: Path) -> list[str]:
    cli = [sys.executable, "-m", "hf_posbias.cli"]
    if stage == "build":
        return [*cli, "data", "build", "--corpus", str(corpus), "--out", str(work / "build"),
                "--no-progress"]  # fmt: skip
    if stage == "evaluate-bm25":
        return [*cli, "evaluate", "--task", str(task), "--model", "bm25", "--out",
                str(work / "eval-bm25"), "--no-progress", "--no-plot"]  # fmt: skip
    if stage == "evaluate-minilm":
        return [*cli, "evaluate", "--task", str(task), "--model", "all-MiniLM-L6-v2", "--out",
                str(work / "eval-minilm"), "--no-progress", "--no-plot"]  # fmt: skip
    if stage == "listwise-bm25":
        return [*cli, "listwise", "test", "--task", str(task), "--reranker", "bm25",
                "--first-stage", "bm25", "--out", str(work / "listwise"), "--no-progress",
                "--n-resamples", "10"]  # fmt: skip
    raise ValueError(stage)


# --- fits --------------------------------------------------------------------------------------


def fit_exponent(sizes: list[int], times: list[float]) -> float | None:
    """Least-squares slope of log(time) on log(size); ``None`` with fewer than two usable points.

    Example:
        >>> round(fit_exponent([1000, 4000, 16000], [1.0, 4.0, 16.0]), 3)
        1.0
    """
    points = [(math.log(n), math.log(t)) for n, t in zip(sizes, times) if t > 0]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else None


def slope_per_1k(sizes: list[int], values: list[float]) -> float | None:
    """Least-squares slope of ``values`` on ``sizes``, per 1,000 documents.

    Example:
        >>> slope_per_1k([1000, 2000], [100.0, 150.0])
        50.0
    """
    if len(sizes) < 2:
        return None
    mx, my = sum(sizes) / len(sizes), sum(values) / len(values)
    sxx = sum((x - mx) ** 2 for x in sizes)
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(sizes, values)) / sxx if sxx else None


def summarise(
    stage: str, floor: Measurement, rows: list[Measurement], main_floor: Measurement | None = None
) -> dict[str, Any]:
    """The fits of one stage: ``b_main_cpu`` (the CLI call's CPU time above the floor's, both
    after the imports: ``main_floor``, default ``floor``), ``b_work``/``b_cpu`` (the whole
    process's wall/CPU time above the floor run's), ``b_wall`` (raw), memory per 1k documents.
    """
    sizes = [r.documents for r in rows]
    # The time above the floor run's is the work of the documents above the floor's: fitted
    # against N alone, the floor's own documents' work would be taken for fixed cost and bend
    # b upwards (by about 0.1 over 1k-16k with a floor of 300).
    extra = [n - floor.documents for n in sizes]
    work = [max(r.wall_s - floor.wall_s, 1e-3) for r in rows]
    main_floor = main_floor or floor
    inner = [r.main_cpu_s for r in rows]
    b_main = None
    if main_floor.main_cpu_s is not None and None not in inner:
        b_main = fit_exponent(extra, [max(t - main_floor.main_cpu_s, 1e-3) for t in inner])
    ratios = {
        f"{a.documents}->{b.documents}": round(b.peak_rss_mb / a.peak_rss_mb, 3)
        for a in rows
        for b in rows
        if b.documents == 4 * a.documents
    }
    b_work = fit_exponent(extra, work)
    # CPU time is less disturbed than wall time when other jobs share the cores.
    b_cpu = fit_exponent(extra, [max(r.cpu_s - floor.cpu_s, 1e-3) for r in rows])
    b_wall = fit_exponent(sizes, [r.wall_s for r in rows])
    mem = slope_per_1k(sizes, [r.peak_rss_mb for r in rows])
    # The headline exponent: the stage's own work where the CLI call was timed, else the
    # whole process's CPU time above the floor's.
    b, b_of = (b_main, "CLI call cpu") if b_main is not None else (b_cpu, "process cpu")
    return {
        "stage": stage,
        "b": None if b is None else round(b, 3),
        "b_of": b_of,
        "b_within_limit": None if b is None else round(b, 3) <= B_LIMIT,
        "floor": asdict(floor),
        "main_floor": asdict(main_floor),
        "runs": [asdict(r) for r in rows],
        "b_main_cpu": None if b_main is None else round(b_main, 3),
        "b_work": None if b_work is None else round(b_work, 3),
        "b_wall": None if b_wall is None else round(b_wall, 3),
        "b_cpu": None if b_cpu is None else round(b_cpu, 3),
        "mb_per_1k_docs": None if mem is None else round(mem, 2),
        "peak_rss_ratio_4x": ratios,
    }


def held_bytes_per_document(docs: list[dict[str, str]]) -> dict[str, float]:
    """What an exact search must hold per document, measured on ``docs``: the BM25 index's
    arrays (the evaluation's analyzer over ``title text``), and one float32 embedding row of
    all-MiniLM-L6-v2 (384 dimensions) for the dense search's current chunk."""
    from hf_posbias.bm25.index import BM25Index

    index = BM25Index([f"{d['title']} {d['text']}".strip() for d in docs])
    return {"bm25_index": round(index.index_bytes / len(docs), 1), "minilm_embedding": 384 * 4}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        help="document counts, comma-separated, for every stage (default: each stage's own, "
        + "; ".join(f"{k} {','.join(map(str, v))}" for k, v in STAGE_SIZES.items())
        + ")",
    )
    parser.add_argument(
        "--floor", type=int, default=300, help="the fixed-cost run's size (at least --queries)"
    )
    parser.add_argument("--queries", type=int, default=300, help="queries of the evaluation task")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"any of {', '.join(STAGES)}")
    parser.add_argument("--work", help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"stages from {STAGES}, got {', '.join(unknown)}")
    try:
        given = sorted({int(s) for s in args.sizes.split(",") if s.strip()}) if args.sizes else []
    except ValueError:
        parser.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    stage_sizes = {s: given or sorted(STAGE_SIZES[s]) for s in stages}
    if (args.sizes and not given) or min(min(v) for v in stage_sizes.values()) <= args.floor:
        parser.error(f"every size above --floor ({args.floor})")

    work_root = Path(args.work or tempfile.mkdtemp(prefix="posbias-scaling-"))
    work_root.mkdir(parents=True, exist_ok=True)
    all_docs = corpus_of(max(max(v) for v in stage_sizes.values()))
    results = []
    print(f"cores {os.cpu_count()}; load average at start {os.getloadavg()[0]:.2f}", flush=True)
    for stage in stages:
        rows = []
        preload: list[str] = []
        # The floor runs twice: the first run of a stage also pays for cold file caches, and
        # names the modules the later runs import before the CLI call is timed.
        for run, n in enumerate([args.floor, args.floor, *stage_sizes[stage]]):
            folder = work_root / f"{stage}-{run}-{n}"  # a fresh folder: nothing resumed
            folder.mkdir(parents=True, exist_ok=True)
            docs = all_docs[:n]
            corpus = write_corpus(docs, folder / "corpus.jsonl")
            task = write_task(docs, folder / "task", min(args.queries, n))
            argv = stage_argv(stage, folder, corpus, task)
            m, modules = measure(stage, n, argv, folder / "log.txt", preload)
            preload = preload or modules
            print(
                f"{stage:16s} {n:>7d} docs  wall {m.wall_s:8.1f} s  cpu {m.cpu_s:8.1f} s  "
                f"peak {m.peak_rss_mb:8.1f} MB  load {m.load_average:.2f}  "
                f"(CLI call: wall {m.main_wall_s} s, cpu {m.main_cpu_s} s)",
                flush=True,
            )
            rows.append(m)
        floor = min(rows[:2], key=lambda r: r.wall_s)
        summary = summarise(stage, floor, rows[2:], main_floor=rows[1])
        results.append(summary)
        verdict = {True: f"<= {B_LIMIT}", False: f"ABOVE {B_LIMIT}", None: "n/a"}
        print(
            f"{stage:16s} b = {summary['b']} ({summary['b_of']}; "
            f"{verdict[summary['b_within_limit']]})  "
            f"memory {summary['mb_per_1k_docs']} MB per 1k docs  "
            f"peak ratio at 4x {summary['peak_rss_ratio_4x'] or 'n/a'}",
            flush=True,
        )
        print(
            f"{stage:16s} b(work) = {summary['b_work']}  b(cpu) = {summary['b_cpu']}  "
            f"b(CLI call cpu) = {summary['b_main_cpu']}  b(wall) = {summary['b_wall']}",
            flush=True,
        )
    held = held_bytes_per_document(all_docs)
    print(
        f"held per document at {len(all_docs)} documents: BM25 index {held['bm25_index']:.0f} "
        f"bytes; dense search {held['minilm_embedding']} bytes per embedding row of the chunk "
        f"being scored (--corpus-chunk-size rows at most)",
        flush=True,
    )
    above = [s["stage"] for s in results if not s["b_within_limit"]]
    print(
        f"every stage b <= {B_LIMIT}: " + ("yes" if not above else f"no ({', '.join(above)})"),
        flush=True,
    )
    if args.json:
        figures = {"sizes": stage_sizes, "stages": results, "held_bytes_per_document": held}
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
