"""A CPU-sized Q26 study (``kind: listwise``): run, resume, report, dry run and bad specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hf_posbias.cli import main
from hf_posbias.rows import read_rows


def _spec(tmp_path: Path, task: Path, tiny_llm: str, **extra) -> Path:
    spec = {
        "kind": "listwise",
        "name": "q26-tiny",
        "datasets": {"tiny": str(task)},
        "rerankers": {"llm": tiny_llm, "bm25": "bm25", "debiasfirst": "variant:posaug-rank-ips+lm"},
        "variants": ["posaug-rank-ips+lm", "noaug-rank-ips+lm"],
        "training": {"base": tiny_llm, "k": 8, "max_steps": 1, "global_batch": 2, "lr": 1e-3,
                     "groups": 2, "propensity_shuffles": 2, "propensity_reranker": "bm25"},
        "k": 4, "window": 8, "step": 4, "shuffles": 2, "passage_tokens": 8,
        "dtype": "float32", "n_resamples": 20,
        **extra,
    }  # fmt: skip
    path = tmp_path / "q26.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_llm, make_beir) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("q26-study")
    task = make_beir(root / "beir", n_docs=12, n_queries=8)
    spec = _spec(root, task, tiny_llm, marks={"llm": "†", "bm25": "‡"})
    assert main(["study", "run", str(spec), "--out", str(root / "out")]) == 0
    return spec, root / "out"


def test_the_report_holds_tables_and_figures_recomputable_from_per_query_files(study):
    from scipy.stats import ttest_rel

    _, out = study
    report = json.loads((out / "report" / "report.json").read_text())
    assert report["test"] == "t-test" and report["ips_normalization"] == "paper"
    table1 = report["tables"]["table1"]
    assert [row[""] for row in table1["table"]] == ["llm", "bm25", "debiasfirst"]
    assert set(report["tables"]["table3"]["cells"]) == {"debiasfirst", "noaug-rank-ips+lm"}
    for by_task in table1["cells"].values():
        for task, cell in by_task.items():
            if task == "Average":
                continue
            rows = read_rows(Path(cell["folder"]) / "per_query.jsonl")
            o, s = [r["original"] for r in rows], [r["shuffled"] for r in rows]
            assert cell["original"] == pytest.approx(sum(o) / len(o))
            assert cell["p_value"] == pytest.approx(ttest_rel(s, o).pvalue, nan_ok=True)
    # Q26's marks: each number against First (here llm, †) and RankZephyr (bm25, ‡).
    (task,) = table1["tasks"]
    base = read_rows(Path(table1["cells"]["llm"][task]["folder"]) / "per_query.jsonl")
    ours = read_rows(Path(table1["cells"]["debiasfirst"][task]["folder"]) / "per_query.jsonl")
    against = table1["cells"]["debiasfirst"][task]["vs"]["llm"]
    assert against["mark"] == "†" and set(table1["cells"]["llm"][task]["vs"]) == {"bm25"}
    for side in ("original", "shuffled"):
        p = ttest_rel([r[side] for r in ours], [r[side] for r in base]).pvalue
        assert against[f"p_{side}"] == pytest.approx(p, nan_ok=True)
    assert (
        "†: differs from llm" in table1["caption"] and "‡: differs from bm25" in table1["caption"]
    )
    figures = report["figures"]
    for name in ("fig3", "fig4", "fig5"):
        assert Path(figures[name]).is_file(), name
    assert figures["fig6"]["a"]["group"] == "loss rank-ips+lm"  # PosAug vs NoAug
    assert Path(figures["fig6"]["a"]["path"]).is_file()
    assert (
        report["fig3"]["augmented"]["tv_from_uniform"]
        < report["fig3"]["original"]["tv_from_uniform"]
    )
    assert len(report["fig5"]["llm"]["permsc"]) == 2
    text = (out / "report" / "report.md").read_text()
    assert "Table 1" in text and "Table 3: ablations" in text and "t-test" in text


def test_a_rerun_redoes_nothing_finished_and_an_unfinished_step_resumes(study, capsys):
    spec, out = study
    capsys.readouterr()
    assert main(["study", "run", str(spec), "--out", str(out)]) == 0
    assert "0 step(s) run" in capsys.readouterr().out
    marker = out / "curves" / "bm25" / "step_done.json"
    marker.unlink()  # as if killed before this step finished
    assert main(["study", "run", str(spec), "--out", str(out), "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "[to run] curves bm25" in plan and plan.count("[to run]") == 1
    assert main(["study", "run", str(spec), "--out", str(out)]) == 0
    assert "1 step(s) run" in capsys.readouterr().out and marker.is_file()
    assert main(["study", "report", str(out)]) == 0


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    return err


def test_bad_specs_are_one_line(tmp_path, tiny_llm, make_beir, capsys):
    task = make_beir(tmp_path / "beir", n_docs=12, n_queries=4)
    spec = _spec(tmp_path, task, tiny_llm, rerankers={"x": "variant:randaug-rank"})
    assert main(["study", "run", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "a variant the spec does not train" in _one_line(capsys)
    (task / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    spec = _spec(tmp_path, task, tiny_llm, variants=[], training={},
                 rerankers={"bm25": "bm25"})  # fmt: skip
    assert main(["study", "run", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "dataset 'tiny'" in _one_line(capsys)


def test_q26_spec_dry_run_lists_its_twelve_datasets_three_stage_rrf_and_fig5_pair(capsys):
    # Q26 Table 1's datasets, MS MARCO on its dev qrels, the RRF of all three first stages
    # and Fig. 5 as DebiasFirst vs First (issue 43).
    spec = Path(__file__).parents[2] / "studies" / "q26.yaml"
    assert main(["study", "run", str(spec), "--dry-run"]) == 0
    plan = capsys.readouterr().out
    for name in ("dl19", "dl20", "fiqa", "hotpotqa", "nfcorpus", "nq", "scidocs", "scifact",
                 "dbpedia", "covid", "climate-fever"):  # fmt: skip
        assert (
            f"  {name}: " in plan and "(split test)" in plan.split(f"  {name}: ")[1].split("\n")[0]
        )
    assert "  msmarco-dev: data/beir/msmarco (split dev)" in plan
    assert "datasets (12):" in plan and "touche" not in plan and "robust04" not in plan
    stages = "facebook/contriever-msmarco, bm25, splade++, "
    assert f"first stages: {stages}RRF(facebook/contriever-msmarco + bm25 + splade++, k=60)" in plan
    assert "Fig. 5: debiasfirst vs first" in plan
    assert "train randaug-rank+lm" in plan


def test_the_q26_plan_fuses_three_stages_and_trains_rank_lm_without_ips():
    from hf_posbias.study.listwise_study import load_listwise_spec, parse_variant, plan

    spec = load_listwise_spec(Path(__file__).parents[2] / "studies" / "q26.yaml")
    steps = {step.name: step for step in plan(spec, "out")}
    rrf = steps["shuffle-eval msmarco-dev rrf-facebook__contriever-msmarco+bm25+splade++ first"]
    # Each step holds the settings object of the verb it runs, and its marker records them.
    assert rrf.settings.first_stage == ["facebook/contriever-msmarco", "bm25", "splade++"]
    assert rrf.settings.split == "dev" and rrf.params["split"] == "dev"
    assert rrf.settings.method == "t-test"
    assert parse_variant("randaug-rank+lm") == ("rand-aug", False, True)
    train = steps["train randaug-rank+lm"].settings
    assert train.propensity == "none" and train.lm_loss and train.augmentation == "rand-aug"
    assert not steps["train posaug-rank"].settings.lm_loss
    assert train.epochs == 3.0 and isinstance(train.epochs, float)  # the spec's 3, as --epochs 3
    propensity = steps["propensity"].settings  # Q26: 3,000 queries, no smoothing
    assert (propensity.max_queries, propensity.smoothing) == (3000, 0.0)


def test_a_step_folder_of_an_earlier_release_still_counts_as_done(tmp_path):
    # Before the steps took settings objects, a marker recorded the step's flags (the paired
    # test spelled --test): such a folder resumes, and other flags do not count as done.
    from hf_posbias.study.listwise_study import DONE_FILE, load_listwise_spec, plan

    spec = load_listwise_spec(Path(__file__).parents[2] / "studies" / "q26-cpu.yaml")
    step = next(s for s in plan(spec, tmp_path) if s.name.startswith("shuffle-eval"))
    s = step.settings
    argv = ["--reranker", s.reranker, "--task", s.task, "--k", str(s.k), "--window",
            str(s.window), "--step", str(s.step), "--seed", str(s.seed), "--dtype", s.dtype,
            "--no-progress", "--n-resamples", str(s.n_resamples), "--rrf-k", str(s.rrf_k),
            "--first-stage", s.first_stage, "--shuffles", str(s.shuffles), "--aggregate",
            str(s.aggregate), "--test", s.method, "--out", s.out]  # fmt: skip
    argv += ["--split", s.split] if s.split else []
    argv += ["--max-queries", str(s.max_queries)] if s.max_queries else []
    argv += ["--passage-tokens", str(s.passage_tokens)] if s.passage_tokens else []
    step.folder.mkdir(parents=True)
    (step.folder / DONE_FILE).write_text(json.dumps({"argv": argv}))
    assert step.done()
    (step.folder / DONE_FILE).write_text(json.dumps({"argv": [*argv, "--shuffles", "9"]}))
    assert not step.done()
    step.mark_done()
    assert step.done() and json.loads((step.folder / DONE_FILE).read_text())["shuffles"] == 3


def test_an_msmarco_dev_split_holding_trec_dl_queries_is_refused(tmp_path, make_beir, capsys):
    task = make_beir(tmp_path / "msmarco", n_docs=12, n_queries=8)
    (task / "qrels" / "dev.tsv").write_text((task / "qrels" / "test.tsv").read_text())
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({
        "kind": "listwise", "name": "s", "datasets": {"msmarco-dev": str(task)},
        "splits": {"msmarco-dev": "dev"}, "rerankers": {"bm25": "bm25"},
    }))  # fmt: skip
    assert main(["study", "run", str(spec), "--out", str(tmp_path / "o")]) == 2
    err = _one_line(capsys)
    assert "msmarco-dev" in err and "4 judged queries, not MS MARCO dev's 6,980" in err


@pytest.mark.parametrize("verb", ["shuffle-eval", "test"])
@pytest.mark.parametrize("split", ["dev", None])
def test_the_bare_verbs_refuse_an_msmarco_folder_split_of_trec_dl_queries(
    verb, split, tmp_path, capsys
):
    """BEIR's MS MARCO folder whose split holds TREC DL19's 43 queries (its qrels/test.tsv, the
    split a bare verb reads by default): `listwise shuffle-eval` and `listwise test` refuse it
    in one line, before any model loads, by the study's rule (issue 50); the same folder named
    for DL19 is read."""
    from hf_posbias.tasks.beir import write_beir_folder

    corpus = {f"d{i}": ("", f"passage {i} about topic {i}") for i in range(50)}
    queries = {f"q{i}": f"topic {i}?" for i in range(43)}
    qrels = {q: {f"d{i}": 1} for i, q in enumerate(queries)}
    folder = write_beir_folder(tmp_path / "msmarco", corpus, queries, qrels, split=split or "test")
    argv = ["listwise", verb, "--reranker", "bm25", "--k", "4", "--max-queries", "2"]
    argv += ["--no-progress"] + (["--split", split] if split else [])
    assert main([*argv, "--task", str(folder), "--out", str(tmp_path / "o")]) == 2
    err = _one_line(capsys)
    assert err.endswith(
        f"dataset 'msmarco': split {split or 'test'} has 43 judged queries, not MS MARCO dev's "
        "6,980 (43 and 54 are TREC DL19's and DL20's; BEIR's msmarco qrels/test.tsv is DL19): use "
        "split dev for MS MARCO dev, or name the set for TREC DL (a study dataset dl19, a folder "
        "trec-dl-2019) to read DL's queries"
    ), err
    assert not (tmp_path / "o").exists()  # refused before anything is written
    (tmp_path / "trec-dl-2019").symlink_to(folder)
    assert (
        main([*argv, "--task", str(tmp_path / "trec-dl-2019"), "--out", str(tmp_path / "o")]) == 0
    )


def test_a_training_step_of_an_earlier_release_resumes_under_the_trainers_former_window_flag(
    tmp_path, capsys
):
    # The listwise trainer's window was spelled --window before it became --max-window (the
    # sliding window keeps --window): its old marker still counts as done, without a warning.
    from hf_posbias.settings import settings_to_argv
    from hf_posbias.study.listwise_study import DONE_FILE, load_listwise_spec, plan

    spec = load_listwise_spec(Path(__file__).parents[2] / "studies" / "q26-cpu.yaml")
    step = next(s for s in plan(spec, tmp_path) if s.name.startswith("train "))
    argv = settings_to_argv(step.settings)
    assert "--max-window" in argv
    former = ["--window" if a == "--max-window" else a for a in argv]
    step.folder.mkdir(parents=True)
    (step.folder / DONE_FILE).write_text(json.dumps({"argv": former}))
    assert step.done()
    assert "warning" not in capsys.readouterr().err
