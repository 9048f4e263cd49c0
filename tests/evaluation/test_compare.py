"""`posbias compare` (paired tests between two runs) and the evaluate CLI's bad inputs."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from task_fixtures import wiki_task

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.evaluation.compare import compare_runs
from hf_posbias.evaluation.runs.runner import evaluate_model


@pytest.fixture(scope="module")
def runs(shared_data, tiny_sentence_transformer, tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    task = wiki_task(shared_data, root / "task", n_docs=12)
    evaluate_model("bm25", [task], out=root / "bm25", bootstrap=100)
    evaluate_model(tiny_sentence_transformer, [task], out=root / "tiny", bootstrap=100)
    return root


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


def test_compare_cli_prints_deltas_p_values_and_writes_files(runs, capsys):
    out = runs / "cmp"
    code = main(["compare", str(runs / "bm25"), str(runs / "tiny"), "--n-resamples", "300",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "B = " in text and "| begin |" in text and "| PSI |" in text
    data = json.loads((out / "compare.json").read_text())[0]
    assert list(data["buckets"]) == ["begin", "middle", "end"]
    assert data["n_shared"] == {"begin": 4, "middle": 4, "end": 4}
    a = json.loads((runs / "bm25" / "summary.json").read_text())
    b = json.loads((runs / "tiny" / "summary.json").read_text())
    for bucket in ("begin", "middle", "end"):
        delta = data["buckets"][bucket]["delta"]
        assert delta == pytest.approx(b["ndcg_at_10"][bucket] - a["ndcg_at_10"][bucket])
        assert 0 < data["buckets"][bucket]["p_value"] <= 1
    assert data["mean"]["delta"] == pytest.approx(b["mean"] - a["mean"])
    # A random tiny model against BM25 on verbatim sentences: the mean differs significantly.
    assert data["mean"]["p_value"] < 0.05 and "mean" in text.split("differs significantly")[1]


def test_comparing_a_run_with_itself_finds_nothing(runs):
    [result] = compare_runs(runs / "bm25", runs / "bm25", method="randomization", n_resamples=200)
    assert result.comparison.mean.delta == 0.0
    assert all(d.p_value == 1.0 for d in result.comparison.buckets.values())


def test_runs_of_different_tasks_are_refused_in_one_line(runs, shared_data, tmp_path, capsys):
    other = wiki_task(shared_data, tmp_path / "other", n_docs=6, name="OtherTask")
    evaluate_model("bm25", [other], out=tmp_path / "other-run", bootstrap=10, progress=False)
    assert main(["compare", str(runs / "bm25"), str(tmp_path / "other-run")]) == 2
    assert "are runs of different tasks (WikiSentences vs OtherTask)" in _one_error_line(capsys)
    # Same task name, different data: the task fingerprint tells them apart.
    copy = tmp_path / "copy"
    shutil.copytree(runs / "task", copy)
    from hf_posbias.tasks.taskdata import PositionTaskData

    data = PositionTaskData.load(copy)
    data.queries, data.qrels = data.queries[:-1], data.qrels[:-1]
    data.save(copy)
    evaluate_model("bm25", [copy], out=tmp_path / "copy-run", bootstrap=10, progress=False)
    with pytest.raises(InputError, match="differ in task data"):
        compare_runs(runs / "bm25", tmp_path / "copy-run")
    assert main(["compare", str(runs / "bm25"), str(tmp_path / "nowhere")]) == 2
    assert "nowhere: not found (is this a `posbias evaluate` run folder?)" in _one_error_line(
        capsys
    )
    # A summary.json that is not one: cut, a list of numbers, an object without the fields.
    for text, message in (("{", "not valid JSON"), ("[1]", "an entry is int"), ("{}", "missing")):
        bad = tmp_path / "bad-run"
        bad.mkdir(exist_ok=True)
        (bad / "summary.json").write_text(text)
        assert main(["compare", str(runs / "bm25"), str(bad)]) == 2
        assert message in _one_error_line(capsys)


def test_evaluate_cli_refuses_bootstrap_zero_and_takes_a_scoring(runs, tmp_path, capsys):
    args = ["evaluate", "--model", "bm25", "--task", str(runs / "task"), "--out", str(tmp_path)]
    assert main([*args, "--bootstrap", "0"]) == 2
    assert "--bootstrap must be >= 1, got 0" in _one_error_line(capsys)
    assert main([*args, "--scoring", "zeng2025", "--bootstrap", "50"]) == 0
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["scoring"] == "zeng2025" and data["intervals"]["n_resamples"] == 50
    assert "[" in capsys.readouterr().out  # intervals printed next to the scores


def test_a_model_returning_nan_scores_is_a_one_line_error(runs, tmp_path):
    from hf_posbias.evaluation.runs.mteb_models import MtebModel, unique_model_meta

    class NaNEncoder:
        mteb_model_meta = unique_model_meta(None, "test/nan", "nan")

        def encode(self, inputs, **kwargs):
            return np.full((len(inputs.dataset), 4), np.nan, dtype=np.float32)

        def similarity(self, a, b):
            return np.asarray(a) @ np.asarray(b).T

        def similarity_pairwise(self, a, b):
            return (np.asarray(a) * np.asarray(b)).sum(-1)

    loaded = MtebModel(spec="nan", model=NaNEncoder(), kind="bi-encoder", name="nan",
                         revision="nan")  # fmt: skip
    with pytest.raises(InputError) as err:
        evaluate_model(loaded, [runs / "task"], out=tmp_path, bootstrap=10, progress=False)
    message = str(err.value)
    assert "\n" not in message
    assert "NaN or infinite scores for 12 of 12 queries" in message


def test_t_test_p_values_are_scipys_on_the_per_query_files(runs, capsys):
    from scipy.stats import ttest_rel

    from hf_posbias.evaluation.runs.exports import read_per_query
    from hf_posbias.evaluation.summary import read_summaries

    out = runs / "cmp-t"
    code = main(["compare", str(runs / "bm25"), str(runs / "tiny"), "--method", "t-test",
                 "--out", str(out)])  # fmt: skip
    assert code == 0 and "(t-test, " in capsys.readouterr().out
    data = json.loads((out / "compare.json").read_text())[0]
    assert data["method"] == "t-test"

    def scores(run: str) -> dict[str, dict[str, float]]:
        [summary] = read_summaries(runs / run)
        by: dict[str, dict[str, float]] = {}
        for r in read_per_query(summary.per_query_path):
            by.setdefault(r["bucket"], {})[r["query_id"]] = r["ndcg_at_10"]
        return by

    a, b = scores("bm25"), scores("tiny")
    for bucket in ("begin", "middle", "end"):
        ids = sorted(a[bucket])
        expected = ttest_rel([b[bucket][q] for q in ids], [a[bucket][q] for q in ids]).pvalue
        got = data["buckets"][bucket]["p_value"]
        assert got == pytest.approx(expected, nan_ok=True)
