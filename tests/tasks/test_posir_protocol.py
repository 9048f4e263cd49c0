"""``--scoring posir`` against PosIR's ``ndcg_PSI_analysis.py`` transcribed here with pandas and
scipy, per-query statistics under ``zeng2025`` (each query once), and the TREC run export
re-scored the way trec_eval reads it.

The reference in this file is written independently of the module: the binning, clipping,
strata, headline and trend follow PosIR's script step by step (``pd.cut`` with
``np.linspace(0, 1, 21)``, ``include_lowest=True``; token strata ``pd.cut(..., [0, 512, 1024,
1536, inf])``; bin centres from the pandas intervals; ``scipy.stats`` for the statistics), and
each query's nDCG@10 is the closed form ``1 / log2(rank + 1)`` of its one relevant document.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_posbias.tasks.position_scoring import (
    BIN_TREND_KEYS,
    QueryPosition,
    scheme_buckets,
    score_positions,
    summarize_rows,
)

pd = pytest.importorskip("pandas")
stats = pytest.importorskip("scipy.stats")


def _ndcg_closed_form(rank: int | None) -> float:
    return 1.0 / math.log2(rank + 1) if rank is not None and rank <= 10 else 0.0


def _fixture(n: int = 400, seed: int = 7):
    """Queries with evidence spans, some starting at or past the document end, some ending past
    it; one relevant document each, placed at a seeded rank (or not retrieved)."""
    rng = np.random.default_rng(seed)
    positions, run, qrels, items = {}, {}, {}, []
    for i in range(n):
        qid = f"q{i:03d}"
        length = int(rng.integers(200, 5000))
        kind = rng.random()
        if kind < 0.06:  # evidence starts at or past the document end (PosIR clips to 1.0)
            start = length + int(rng.integers(0, 50))
        elif kind < 0.12:  # evidence ends past the document end
            start = length - int(rng.integers(1, 40))
        else:
            start = int(rng.integers(0, length))
        end = start + int(rng.integers(0, 120))
        tokens = int(rng.choice([0, 100, 512, 513, 900, 1024, 1300, 1536, 1537, 4000]))
        rank = int(rng.integers(1, 16))
        rank_or_none = None if rank == 15 else rank
        positions[qid] = QueryPosition(qid, "b", start, end, length, doc_tokens=tokens)
        docs = {f"n{j:02d}": 100.0 - j for j in range(1, 15)}
        qrels[qid] = {"rel": 1}
        if rank_or_none is not None:
            # the relevant document takes rank `rank`: every distractor from there on moves down
            docs = {f"n{j:02d}": 100.0 - j - (j >= rank) for j in range(1, 15)}
            docs["rel"] = 100.0 - rank
        run[qid] = docs
        items.append(
            {
                "query_id": qid,
                "position": float((start + end) / 2),
                "total_length": length,
                "token_length": tokens,
                "score": _ndcg_closed_form(rank_or_none),
            }
        )
    return positions, run, qrels, items


def _posir_reference(items):
    """PosIR's ndcg_PSI_analysis.py, step by step, on per-query scores."""
    df = pd.DataFrame(items)
    df = df[(df["total_length"] > 0) & (df["position"] >= 0)].copy()
    df["position"] = np.minimum(df["position"], df["total_length"])
    df["relpos"] = (df["position"] / df["total_length"]).clip(0, 1)
    df["len_quartile"] = pd.cut(
        df["token_length"], bins=[0, 512, 1024, 1536, np.inf], labels=["Q1", "Q2", "Q3", "Q4"]
    )
    df["relpos_bin"] = pd.cut(df["relpos"], bins=np.linspace(0, 1, 21), include_lowest=True)
    binned = df.groupby("relpos_bin", observed=True)["score"].agg(["mean", "count"])
    binned_q = (
        df.groupby(["len_quartile", "relpos_bin"], observed=True)["score"]
        .agg(["mean", "count"])
        .reset_index()
    )
    binned_q["bin_center"] = binned_q["relpos_bin"].apply(
        lambda iv: float(iv.left) + (float(iv.right) - float(iv.left)) / 2.0
    )
    strata = {}
    for q in ["Q1", "Q2", "Q3", "Q4"]:
        sub = binned_q[binned_q["len_quartile"] == q].sort_values("bin_center")
        x, y = sub["bin_center"].values, sub["mean"].values
        fit = stats.linregress(x, y)
        strata[q] = {
            "nDCG@10": float(np.mean(y)),
            "PSI": float(1 - min(y) / max(y)),
            "slope": fit.slope,
            "intercept": fit.intercept,
            "r_squared": fit.rvalue**2,
            "pearson_r": stats.pearsonr(x, y)[0],
            "pearson_p": stats.pearsonr(x, y)[1],
            "spearman_rho": stats.spearmanr(x, y)[0],
            "spearman_p": stats.spearmanr(x, y)[1],
            "kendall_tau": stats.kendalltau(x, y)[0],
            "kendall_p": stats.kendalltau(x, y)[1],
            "counts": sub["count"].tolist(),
        }
    y_b = binned["mean"].values
    return {
        "headline": float(np.mean([s["score"] for s in items])),
        "bin_counts": binned["count"].tolist(),
        "bin_means": y_b.tolist(),
        "PSI": float(1 - min(y_b) / max(y_b)),
        "strata": strata,
        "clipped": int((df["position"] >= df["total_length"]).sum()),
    }


STRATA = {"Q1": "0-512", "Q2": "512-1024", "Q3": "1024-1536", "Q4": "1536+"}


def test_posir_scoring_equals_posir_analysis_script_with_clipped_positions():
    positions, run, qrels, items = _fixture()
    ref = _posir_reference(items)
    rows, notes = score_positions(positions, run, qrels, buckets=["b"], scheme="posir")
    summary = summarize_rows(rows, scheme_buckets("posir", ["b"]), scoring="posir", notes=notes)

    # every query is scored, including those whose evidence starts past the document end
    assert len(rows) == len(items)
    by_id = {r.query_id: r.ndcg_at_10 for r in rows}
    assert [by_id[i["query_id"]] for i in items] == pytest.approx([i["score"] for i in items])
    past_end = sum(p.evidence_start >= p.doc_length for p in positions.values())
    assert past_end >= 10
    # one line saying how many positions were clipped; none "not scored"
    clipped = [n for n in summary.notes if "clipped" in n]
    assert len(clipped) == 1
    assert not [n for n in summary.notes if "not scored" in n]
    midpoint_past = sum(i["position"] > i["total_length"] for i in items)
    assert clipped[0].startswith(f"posir: {midpoint_past} evidence positions")

    present = [b for b in summary.buckets if summary.n_queries[b]]
    assert [summary.n_queries[b] for b in present] == ref["bin_counts"]
    # bit for bit: pandas' group means, so ties between bins are PosIR's ties
    assert [summary.ndcg_at_10[b] for b in present] == ref["bin_means"]
    assert summary.psi == ref["PSI"]
    # the headline (mean over queries) beside the bin mean, each named
    assert summary.query_mean == ref["headline"]
    assert summary.mean == pytest.approx(float(np.mean(ref["bin_means"])), abs=1e-12)
    assert summary.query_mean != pytest.approx(summary.mean, abs=1e-6)

    for q, label in STRATA.items():
        expected = ref["strata"][q]
        stratum = summary.strata[label]
        counts = [n for n in stratum["ndcg_at_10"].values() if n is not None]
        assert len(counts) == len(expected["counts"])
        assert stratum["mean"] == expected["nDCG@10"]
        assert stratum["psi"] == expected["PSI"]
        trend = summary.bin_trend[label]
        # PosIR's names (the module's list of them must hold all nine of the script's)
        assert set(BIN_TREND_KEYS) == set(expected) - {"nDCG@10", "PSI", "counts"}
        for key in BIN_TREND_KEYS:
            assert trend[key] == expected[key], (q, key)
    # token length 0 is in no stratum (PosIR's pd.cut has no include_lowest there)
    zero = sum(i["token_length"] == 0 for i in items)
    assert zero and sum(s["n_queries"] for s in summary.strata.values()) == len(items) - zero


def test_toolkit_trend_is_per_query_and_differs_from_posir_bin_trend():
    positions, run, qrels, items = _fixture()
    rows, notes = score_positions(positions, run, qrels, buckets=["b"], scheme="posir")
    summary = summarize_rows(rows, scheme_buckets("posir", ["b"]), scoring="posir")
    df = pd.DataFrame(items)
    relpos = (np.minimum(df["position"], df["total_length"]) / df["total_length"]).clip(0, 1)
    fit = stats.linregress(relpos.values, df["score"].values)
    assert summary.trend["n_queries"] == len(items)
    assert summary.trend["slope"] == pytest.approx(fit.slope, abs=1e-12)
    assert summary.trend["r2"] == pytest.approx(fit.rvalue**2, abs=1e-12)


def test_zeng2025_per_query_statistics_count_each_query_once():
    from hf_posbias.statistics.levels import psi_by_length
    from hf_posbias.tasks.bucketing import SQUAD_POSQ
    from hf_posbias.tasks.position_scoring import one_row_per_query

    rng = np.random.default_rng(3)
    positions, run, qrels = {}, {}, {}
    starts = [100, 200, 300, 400, 500] + [int(s) for s in rng.integers(0, 3000, 45)]
    expected = {}
    for i, start in enumerate(starts):
        qid = f"q{i:02d}"
        length = 3200 + 10 * i
        positions[qid] = QueryPosition(qid, SQUAD_POSQ.assign(start), start, start + 5, length)
        rank = int(rng.integers(1, 13))
        run[qid] = {f"n{j:02d}": 50.0 - j for j in range(1, 13) if j != rank} | {"rel": 50.0 - rank}
        qrels[qid] = {"rel": 1}
        expected[qid] = (start / length, _ndcg_closed_form(rank), SQUAD_POSQ.assign(start))
    rows, _ = score_positions(
        positions, run, qrels, buckets=SQUAD_POSQ.labels, scheme="zeng2025", rule=SQUAD_POSQ
    )
    assert len(rows) == len(starts) + 5  # the five boundary starts count in two buckets
    summary = summarize_rows(rows, SQUAD_POSQ.labels, scoring="zeng2025")
    x = [v[0] for v in expected.values()]
    y = [v[1] for v in expected.values()]
    fit = stats.linregress(x, y)
    assert summary.trend["n_queries"] == len(starts)
    assert summary.trend["slope"] == pytest.approx(fit.slope, abs=1e-9)
    assert summary.trend["spearman_rho"] == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    assert summary.query_mean == pytest.approx(float(np.mean(y)), abs=1e-12)
    # psi_by_length gets one row per query: its stored (half-open) bucket
    once = one_row_per_query([r.to_row() for r in rows])
    assert {r["query_id"]: r["bucket"] for r in once} == {q: v[2] for q, v in expected.items()}
    out = psi_by_length(once)
    assert sum(s["n_queries"] for s in out.values()) == len(starts)


def test_trec_export_rescored_like_trec_eval_gives_the_toolkit_ndcg():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from hf_posbias.evaluation.runs.exports import write_trec_run

    rng = np.random.default_rng(11)
    run, qrels, positions = {}, {}, {}
    for i in range(60):
        qid = f"q{i:02d}"
        base = float(rng.random())
        # scores that differ only past the 6th significant digit: a 6-digit export ties them
        run[qid] = {f"d{j:02d}": base + j * 1e-9 * float(rng.random()) for j in range(30)}
        qrels[qid] = {f"d{j:02d}": 1 for j in rng.choice(30, 3, replace=False)}
        positions[qid] = QueryPosition(qid, "b", 0, 1, 10)
    rows, _ = score_positions(positions, run, qrels, buckets=["b"])
    toolkit = {r.query_id: r.ndcg_at_10 for r in rows}

    def rescore(text: str) -> tuple[dict[str, float], dict[str, float]]:
        """(pytrec_eval on the parsed file, binary nDCG@10 of the file re-sorted by score
        descending then document id descending, as trec_eval orders a run: trec_eval holds
        a score as a C ``float``, so the sort key is the score in single precision)."""
        parsed: dict[str, dict[str, float]] = {}
        for line in text.splitlines():
            qid, _, doc, _, score, _ = line.split()
            parsed.setdefault(qid, {})[doc] = float(score)
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"})
        by_trec_eval = {q: v["ndcg_cut_10"] for q, v in ev.evaluate(parsed).items()}
        by_sort = {}
        for qid, docs in parsed.items():
            key = lambda kv: (np.float32(kv[1]), kv[0])  # noqa: E731
            order = sorted(docs.items(), key=key, reverse=True)[:10]
            dcg = sum(1 / math.log2(k + 2) for k, (d, _) in enumerate(order) if d in qrels[qid])
            ideal = sum(1 / math.log2(k + 2) for k in range(min(10, len(qrels[qid]))))
            by_sort[qid] = dcg / ideal
        return by_trec_eval, by_sort

    import tempfile
    from pathlib import Path

    path = write_trec_run(run, Path(tempfile.mkdtemp()) / "r.trec", "m", depth=30)
    by_trec_eval, by_sort = rescore(path.read_text())
    assert by_trec_eval == pytest.approx(toolkit, abs=1e-15)
    assert by_sort == pytest.approx(toolkit, abs=1e-12)
    # the fixture discriminates: 6 significant digits would reorder some pairs
    six = "\n".join(
        f"{qid} Q0 {d} 0 {s:.6g} m" for qid, docs in run.items() for d, s in docs.items()
    )
    assert rescore(six)[1] != pytest.approx(toolkit, abs=1e-6)


def _wiki_posir_snapshot(shared_data, root, n_docs: int = 80):
    """A PosIR-layout snapshot from real Wikipedia text: four-word queries from one sentence of
    each passage; every 12th query's ``pos_char_length`` ends before its evidence starts."""
    import random
    import re

    import pyarrow as pa
    import pyarrow.parquet as pq

    from hf_posbias.corpus.sources import read_wikiextractor

    sentence = re.compile(r"[^.!?\n]+[.!?]")
    rng = random.Random(0)
    corpus, queries, qrels = [], [], []
    for article in read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"):
        text = " ".join(article["text"].split())
        for offset in range(0, len(text) - 800, 2500):
            if len(corpus) >= n_docs:
                break
            chunk = text[offset : offset + rng.choice([1200, 2500, 4500, 7000])]
            found = [m for m in sentence.finditer(chunk) if 40 <= len(m.group().strip()) <= 300]
            if len(chunk) < 800 or not found:
                continue
            m = rng.choice(found)
            start = m.start() + len(m.group()) - len(m.group().lstrip())
            i = len(corpus)
            length = max(1, start - 3) if i % 12 == 5 else len(chunk)
            corpus.append({"_id": f"d{i}", "title": "", "text": chunk})
            queries.append(
                {
                    "_id": f"q{i}",
                    "text": " ".join(m.group().split()[2:6]),
                    "pos_char_span": [start, m.end()],
                    "pos_char_length": length,
                    "pos_token_length": len(chunk) // 4,
                }
            )
            qrels.append({"query-id": f"q{i}", "corpus-id": f"d{i}", "score": 1})
    folder = root / "eng-Latn" / "wikipedia"
    (folder / "qrels").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(corpus), folder / "corpus.parquet")
    pq.write_table(pa.Table.from_pylist(queries), folder / "queries.parquet")
    pq.write_table(pa.Table.from_pylist(qrels), folder / "qrels" / "test.parquet")
    return queries


def test_evaluate_posir_on_real_text_equals_posir_script(shared_data, tmp_path, capsys):
    """The configuration a user runs: `benchmark posir` then `evaluate --scoring posir`."""
    import json

    from hf_posbias.cli import main
    from hf_posbias.rows.readers import read_parquet_rows

    queries = _wiki_posir_snapshot(shared_data, tmp_path / "PosIR")
    task, out = tmp_path / "task", tmp_path / "ev"
    args = ["--input", str(tmp_path / "PosIR"), "--out", str(task), "--domains", "all"]
    assert main(["benchmark", "build", "posir", *args]) == 0
    args = ["--task", str(task), "--out", str(out), "--model", "bm25", "--scoring", "posir"]
    assert main(["evaluate", *args, "--bootstrap", "10"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    table = read_parquet_rows(next((out / "per_query").glob("*.parquet")))
    score = {r["query_id"].split("/")[-1]: r["ndcg_at_10"] for r in table}
    assert len(score) == len(queries)  # every query scored, those past the end included
    items = [
        {
            "position": float(sum(q["pos_char_span"]) / 2),
            "total_length": q["pos_char_length"],
            "token_length": q["pos_token_length"],
            "score": score[q["_id"]],
        }
        for q in queries
    ]
    ref = _posir_reference(items)
    present = [b for b in summary["buckets"] if summary["n_queries"][b]]
    assert [summary["n_queries"][b] for b in present] == ref["bin_counts"]
    assert [summary["ndcg_at_10"][b] for b in present] == ref["bin_means"]
    assert summary["psi"] == ref["PSI"]
    assert summary["query_mean"] == ref["headline"]
    for q, label in STRATA.items():
        if not ref["strata"][q]["counts"]:
            continue
        assert summary["strata"][label]["mean"] == ref["strata"][q]["nDCG@10"]
        tau = ref["strata"][q]["kendall_tau"]
        expected_tau = None if math.isnan(tau) else tau
        assert summary["bin_trend"][label]["kendall_tau"] == expected_tau
        assert summary["bin_trend"][label]["slope"] == ref["strata"][q]["slope"]
    past = sum(q["pos_char_span"][0] >= q["pos_char_length"] for q in queries)
    assert past and f"posir: {past} evidence positions past the document end" in printed
    assert "not scored" not in printed
    assert f"PosIR headline nDCG@10 (mean over queries) {ref['headline']:.4f}" in printed
