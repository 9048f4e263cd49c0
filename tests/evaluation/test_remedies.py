"""Inference-time remedies: the invariants against the plain model, bad input, the comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from task_fixtures import wiki_task

from hf_posbias.errors import InputError
from hf_posbias.evaluation.evaluation_settings import RemediesSettings
from hf_posbias.evaluation.runs.exports import read_trec_run
from hf_posbias.evaluation.runs.mteb_models import load_mteb_model, with_remedy
from hf_posbias.evaluation.runs.remedies import RemedySettings
from hf_posbias.evaluation.runs.runner import evaluate_model

N_DOCS = 9


@pytest.fixture(scope="module")
def task_folder(shared_data, tmp_path_factory) -> Path:
    # Short documents: one passage of the model's limit covers every one of them.
    return wiki_task(
        shared_data, tmp_path_factory.mktemp("wiki") / "task", n_docs=N_DOCS, max_chars=700
    )


@pytest.fixture(scope="module")
def base(tiny_sentence_transformer):
    return load_mteb_model(tiny_sentence_transformer, device="cpu")


def _run(loaded, task_folder: Path, out: Path) -> tuple[object, dict[str, dict[str, float]]]:
    [summary] = evaluate_model(loaded, [task_folder], out=out, bootstrap=None)
    return summary, read_trec_run(summary.run_path)


def _same_scores(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for qid in a:
        assert a[qid].keys() == b[qid].keys()
        for doc, score in a[qid].items():
            assert b[qid][doc] == pytest.approx(score, abs=1e-5)


def test_one_passage_covering_every_document_scores_as_the_plain_model(base, task_folder, tmp_path):
    plain, plain_run = _run(with_remedy(base, RemedySettings()), task_folder, tmp_path / "none")
    limit = base.sentence_transformer.max_seq_length
    for name in ("maxp", "firstp", "sump", "chunk-mean"):
        loaded = with_remedy(base, RemedySettings(remedy=name, passage_tokens=limit, stride=8))
        summary, run = _run(loaded, task_folder, tmp_path / name)
        assert loaded.search.stats.passages == loaded.search.stats.documents == N_DOCS
        _same_scores(plain_run, run)
        assert summary.ndcg_at_10 == pytest.approx(plain.ndcg_at_10)
        assert summary.remedy == name
    # One segment is plain mean pooling.
    one = with_remedy(base, RemedySettings(remedy="segment-balanced", segments=1))
    _same_scores(plain_run, _run(one, task_folder, tmp_path / "seg1")[1])


def test_firstp_at_n_is_the_plain_model_truncated_at_n(base, task_folder, tmp_path):
    from dataclasses import replace

    from hf_posbias.evaluation.runs.mteb_models import CountingEncoder

    n = 24
    st = base.sentence_transformer
    limit = st.max_seq_length

    class DocumentsTruncated(CountingEncoder):
        """The plain model with its documents (not its queries) truncated at ``n`` tokens."""

        def encode(self, inputs, *, prompt_type=None, **kwargs):
            st.max_seq_length = n if getattr(prompt_type, "value", None) == "document" else limit
            try:
                return super().encode(inputs, prompt_type=prompt_type, **kwargs)
            finally:
                st.max_seq_length = limit

    plain = DocumentsTruncated(base.encoder.model)
    _, plain_run = _run(replace(base, model=plain, encoder=plain), task_folder, tmp_path / "plain")
    firstp = with_remedy(base, RemedySettings(remedy="firstp", passage_tokens=n, stride=n - 2))
    _, run = _run(firstp, task_folder, tmp_path / "firstp")
    _same_scores(plain_run, run)
    assert firstp.search.stats.passages == N_DOCS
    # MaxP at the same length embeds more passages, costs more tokens, and scores differently.
    maxp = with_remedy(base, RemedySettings(remedy="maxp", passage_tokens=n, stride=n - 2))
    _, maxp_run = _run(maxp, task_folder, tmp_path / "maxp")
    assert maxp.search.stats.passages > N_DOCS
    assert maxp.encoded_tokens() > firstp.encoded_tokens()
    assert maxp_run != run


def test_segment_balanced_pooling_on_a_real_model(minilm_path, task_folder, tmp_path):
    real = load_mteb_model(minilm_path, device="cpu")
    _, plain_run = _run(real, task_folder, tmp_path / "none")
    one = with_remedy(real, RemedySettings(remedy="segment-balanced", segments=1))
    _same_scores(plain_run, _run(one, task_folder, tmp_path / "seg1")[1])  # Normalize kept
    four = with_remedy(real, RemedySettings(remedy="segment-balanced", segments=4))
    _, run = _run(four, task_folder, tmp_path / "seg4")
    assert four.search.stats.passages == N_DOCS  # one forward pass per document
    diffs = [abs(run[q][d] - plain_run[q][d]) for q in run for d in run[q] if d in plain_run[q]]
    assert max(diffs) > 1e-3


def test_score_documents_is_what_the_mteb_search_ranks_by(base, task_folder, tmp_path):
    """The mteb-independent entry point (evidence moving, the Space) and the mteb search path
    share one implementation: on the same corpus they give the same scores."""
    from hf_posbias.evaluation.runs.remedies import RemedyScorer
    from hf_posbias.tasks.taskdata import PositionTaskData

    data = PositionTaskData.load(task_folder)
    st = base.sentence_transformer
    doc_ids = [d["id"] for d in data.corpus]
    queries = st.encode([q["text"] for q in data.queries], convert_to_numpy=True)
    for name in ("sump", "chunk-mean"):  # both aggregation rules (sum; max of one vector)
        settings = RemedySettings(remedy=name, passage_tokens=24, stride=12)
        _, run = _run(with_remedy(base, settings), task_folder, tmp_path / name)
        scorer = RemedyScorer(st, settings)
        scores = scorer.score_documents(queries, [d["text"] for d in data.corpus])
        assert scorer.stats.passages > len(doc_ids) or name == "chunk-mean"
        assert scores.shape == (len(data.queries), len(doc_ids))
        for q, row in zip(data.queries, scores.tolist(), strict=True):
            direct = dict(zip(doc_ids, row, strict=True))
            ranked = run[q["id"]]  # the run file: mteb's ranking, scores to 6 digits
            assert list(ranked) == sorted(direct, key=direct.get, reverse=True)
            for doc, score in ranked.items():
                assert direct[doc] == pytest.approx(score, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"passage_tokens": 2}, "leaves no room for text"),
        ({"passage_tokens": 100_000, "stride": 8}, "above the model's limit"),
        ({"passage_tokens": 10, "stride": 9}, "stride 9 is above the passage's 8 text tokens"),
    ],
)
def test_passage_settings_the_model_cannot_take_are_one_line_before_encoding(base, kwargs, message):
    with pytest.raises(InputError, match=message) as err:
        with_remedy(base, RemedySettings(remedy="maxp", **{"stride": 1, **kwargs}))
    assert "\n" not in str(err.value)
    assert base.encoder.stats.calls == 0


def test_model_free_checks_and_bm25():
    with pytest.raises(InputError, match="^stride must be >= 1, got 0"):
        RemedySettings(remedy="maxp", stride=0)
    with pytest.raises(InputError, match="^stride must be at most passage_tokens"):
        RemedySettings(remedy="sump", passage_tokens=16, stride=17)
    # Segment-balanced cuts no passages: the passage flags it does not read are not checked.
    assert RemedySettings(remedy="segment-balanced", passage_tokens=16, stride=17).segments == 4
    with pytest.raises(InputError, match="needs a bi-encoder"):
        load_mteb_model("bm25", remedy=RemedySettings(remedy="maxp"))


def test_remedies_table_pairs_every_remedy_with_the_plain_model(
    tiny_sentence_transformer, task_folder, tmp_path
):
    from hf_posbias.evaluation.runs.remedy_table import compare_remedies

    s = RemediesSettings(
        model=tiny_sentence_transformer,
        task=(str(task_folder),),
        out=str(tmp_path / "out"),
        remedies=("maxp", "segment-balanced"),
        passage_tokens=32,
        stride=16,
        bootstrap=50,
        progress=False,
    )
    [(task, rows)] = compare_remedies(s).items()
    assert [r["remedy"] for r in rows] == ["none", "maxp", "segment-balanced"]
    on_disk = json.loads((tmp_path / "out" / task / "remedies.json").read_text())
    assert on_disk == rows
    assert set(rows[0]) == {
        "remedy", "mean", "psi", "harmonic_mean", "delta_mean", "p_value", "encoded_tokens",
        "seconds",
    }  # fmt: skip
    assert rows[0]["delta_mean"] is None and rows[0]["p_value"] is None
    for row in rows[1:]:
        assert row["delta_mean"] == pytest.approx(row["mean"] - rows[0]["mean"])
        assert 0.0 <= row["p_value"] <= 1.0
    assert rows[1]["encoded_tokens"] > rows[0]["encoded_tokens"] > 0
    assert all(row["harmonic_mean"] <= row["mean"] + 1e-12 for row in rows)
    assert (tmp_path / "out" / task / "remedies.png").stat().st_size > 0
    assert "| remedy |" in (tmp_path / "out" / task / "remedies.md").read_text()
    # Every remedy run is a `posbias evaluate` folder labelled "<model> +<remedy>": the
    # leaderboard takes them as rows, next to any other model's runs.
    from hf_posbias.evaluation.reports.leaderboard import LeaderboardSettings, build_leaderboard

    runs = sorted(str(p) for p in (tmp_path / "out" / "runs").glob("*/*"))
    board = build_leaderboard(LeaderboardSettings(runs=runs, out=str(tmp_path / "lb")))
    [(_, table)] = board.items()
    models = {row["model"].rsplit(" +", 1)[-1] if " +" in row["model"] else "none" for row in table}
    assert models == {"none", "maxp", "segment-balanced"}
    by_model = {row["model"]: row for row in table}
    for row in rows:
        label = next(
            m
            for m in by_model
            if m.endswith(f"+{row['remedy']}") or (row["remedy"] == "none" and " +" not in m)
        )
        assert by_model[label]["mean"] == pytest.approx(row["mean"])


def test_a_rerun_reuses_finished_runs_and_evaluates_changed_ones(
    tiny_sentence_transformer, task_folder, tmp_path, monkeypatch
):
    from dataclasses import replace

    from hf_posbias.evaluation.runs import remedy_table

    s = RemediesSettings(
        model=tiny_sentence_transformer,
        task=(str(task_folder),),
        out=str(tmp_path / "out"),
        remedies=("maxp",),
        passage_tokens=32,
        stride=16,
        bootstrap=20,
        progress=False,
    )
    [(_, first)] = remedy_table.compare_remedies(s).items()
    evaluated: list[str] = []
    import hf_posbias.evaluation.runs.runner as runner  # compare_remedies imports it per call

    original = runner.evaluate_model

    def counting(settings, *args, **kwargs):
        evaluated.append(settings.remedy)
        return original(settings, *args, **kwargs)

    monkeypatch.setattr(runner, "evaluate_model", counting)
    said: list[str] = []
    # Same settings plus one more remedy: only the new one is encoded; the rows reused are
    # those of the first run, cost included.
    [(_, second)] = remedy_table.compare_remedies(
        replace(s, remedies=("maxp", "firstp")), echo=said.append
    ).items()
    assert evaluated == ["firstp"]
    assert second[:2] == first
    assert sum("reusing" in line for line in said) == 2
    # A changed passage setting re-evaluates the runs that read it, not the plain model.
    evaluated.clear()
    remedy_table.compare_remedies(replace(s, stride=8), echo=said.append)
    assert evaluated == ["maxp"]
    assert any("evaluating again" in line for line in said)
