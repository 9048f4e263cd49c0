"""A CPU-sized Q26 study (``kind: listwise``): run, resume, report, dry run and bad specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hf_posbias.cli import main
from hf_posbias.rows.readers import read_rows


def _spec(tmp_path: Path, task: Path, tiny_llm: str, **extra) -> Path:
    spec = {
        "kind": "listwise",
        "name": "q26-tiny",
        "datasets": {"tiny": str(task)},
        "rerankers": {"llm": tiny_llm, "bm25": "bm25", "debiasfirst": "variant:posaug-rank-ips+lm"},
        "variants": ["posaug-rank-ips+lm", "noaug-rank-ips+lm"],
        "training": {"base": tiny_llm, "k": 8, "max_steps": 1, "global_batch": 2, "lr": 1e-3,
                     "groups": 2, "propensity_shuffles": 2, "propensity_reranker": "bm25",
                     "smoothing": 0.5},
        "k": 4, "window": 8, "step": 4, "shuffles": 2, "passage_tokens": 8,
        "dtype": "float32", "n_resamples": 20,
        **extra,
    }  # fmt: skip
    path = tmp_path / "q26.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


TABLES = {
    "table1": {"rerankers": ["llm", "bm25", "debiasfirst", "listt5"],
               "marks": {"llm": "†", "bm25": "‡"}},
    "table3": {"rerankers": ["noaug-rank-ips+lm", "debiasfirst"],
               "marks": {"noaug-rank-ips+lm": "†"}},
}  # fmt: skip


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_llm, tiny_listt5, make_beir) -> tuple[Path, Path]:
    from hf_posbias.testing import build_tiny_sparse_encoder

    root = tmp_path_factory.mktemp("q26-study")
    task = make_beir(root / "beir", n_docs=12, n_queries=8)
    splade = f"sparse:{build_tiny_sparse_encoder(root / 'splade')}"  # SPLADE++'s stand-in
    rerankers = {"llm": tiny_llm, "bm25": "bm25", "debiasfirst": "variant:posaug-rank-ips+lm",
                 "listt5": {"model": f"listt5:{tiny_listt5}", "dtype": "float32"}}  # fmt: skip
    stages = ["bm25", splade, ["bm25", splade]]
    tables = {**TABLES, "table2": {"rerankers": ["llm"], "first_stages": stages,
                                   "first_stage_rows": True}}  # fmt: skip
    spec = _spec(root, task, tiny_llm, rerankers=rerankers, tables=tables, first_stages=stages)
    assert main(["study", "run", str(spec), "--out", str(root / "out")]) == 0
    return spec, root / "out"


def test_the_report_holds_tables_and_figures_recomputable_from_per_query_files(study):
    from scipy.stats import ttest_rel

    _, out = study
    report = json.loads((out / "report" / "report.json").read_text())
    assert report["test"] == "t-test" and report["ips_normalization"] == "paper"
    (table1,) = report["tables"]["table1"]["blocks"].values()
    assert [row[""] for row in table1["table"]] == ["llm", "bm25", "debiasfirst", "listt5"]
    (table3,) = report["tables"]["table3"]["blocks"].values()
    assert set(table3["cells"]) == {"debiasfirst", "noaug-rank-ips+lm"}
    for by_task in table1["cells"].values():
        for task, cell in by_task.items():
            if task == "Average":
                continue
            rows = read_rows(Path(cell["folder"]) / "per_query.jsonl")
            o, s = [r["original"] for r in rows], [r["shuffled"] for r in rows]
            assert cell["original"] == pytest.approx(sum(o) / len(o))
            assert cell["p_value"] == pytest.approx(ttest_rel(s, o).pvalue, nan_ok=True)
    # Q26 Table 1's marks: each number against First (here llm, †) and RankZephyr (bm25, ‡).
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
    # Each table its own marks: Table 3's † is against NoAug, Table 1's against llm only.
    assert set(table3["cells"]["debiasfirst"][task]["vs"]) == {"noaug-rank-ips+lm"}
    assert "†: differs from noaug-rank-ips+lm" in table3["caption"]
    assert "noaug-rank-ips+lm" not in table1["caption"]
    figures = report["figures"]
    for name in ("fig2", "fig3", "fig4", "fig5"):
        assert Path(figures[name]).is_file(), name
    assert figures["fig6"]["a"]["rerankers"] == ["debiasfirst", "noaug-rank-ips+lm"]
    assert Path(figures["fig6"]["a"]["path"]).is_file()
    assert (
        report["fig3"]["augmented"]["tv_from_uniform"]
        < report["fig3"]["original"]["tv_from_uniform"]
    )
    assert len(report["fig5"]["tiny"]["llm"]["permsc"]) == 2
    text = (out / "report" / "report.md").read_text()
    assert "Table 1" in text and "Table 3" in text and "t-test" in text


def test_table_2_opens_with_the_first_stages_own_ndcg_on_the_lists_every_reranker_reorders(study):
    _, out = study
    report = json.loads((out / "report" / "report.json").read_text())
    rows = report["tables"]["table2"]["first_stages"]
    (task,) = rows["tasks"]
    # BM25, a SPLADE-style sparse encoder and their reciprocal rank fusion, each on its own,
    # then a block per first stage holding Table 2's rerankers only.
    labels = [row[""] for row in rows["table"]]
    assert labels[0] == "bm25" and labels[1].startswith("sparse:") and labels[2].startswith("RRF(")
    blocks = report["tables"]["table2"]["blocks"]
    assert len(blocks) == 3 and all(set(b["cells"]) == {"llm"} for b in blocks.values())
    cell = rows["cells"]["bm25"][task]
    scores = [r["ndcg_at_10"] for r in read_rows(Path(cell["folder"]) / "per_query.jsonl")]
    assert cell["ndcg_at_10"] == pytest.approx(sum(scores) / len(scores))
    assert rows["table"][0][task] == f"{100 * cell['ndcg_at_10']:.1f}"
    # The first-stage step's lists are the ones each reranker reordered (copied in, kept): the
    # first stage's own order scores the same in every shuffle-eval folder.
    lists = (Path(cell["folder"]) / "first_stage.json").read_text()
    for label in ("llm", "bm25", "debiasfirst", "listt5"):
        folder = out / "shuffle" / "tiny" / "bm25" / label
        assert (folder / "first_stage.json").read_text() == lists, label
        first = [r["first_stage"] for r in read_rows(folder / "per_query.jsonl")]
        assert sum(first) / len(first) == pytest.approx(cell["ndcg_at_10"])
    assert "the first stages on their own" in (out / "report" / "report.md").read_text()


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


def test_q26_spec_dry_run_lists_the_papers_datasets_tables_marks_and_training(
    capsys, monkeypatch, tmp_path
):
    # Q26 Table 1's datasets (DL19 as BEIR msmarco's test qrels, MS MARCO on its dev qrels),
    # the RRF of all three first stages, each table's rows and marks, Fig. 5 on DL19/DL20 with
    # 20 shuffles, and §5's training and propensity values (issues 43, 50). Here (offline,
    # nothing cached, the BEIR folders not fetched) the run could not start: the plan lists
    # what it lacks and exits 2 with the real run's error (issue 49).
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.chdir(tmp_path)  # the spec's data/beir/… folders are relative
    spec = Path(__file__).parents[2] / "studies" / "q26.yaml"
    assert main(["study", "run", str(spec), "--dry-run"]) == 2
    plan, err = capsys.readouterr()
    missing = [line for line in plan.splitlines() if line.startswith("missing: ")]
    assert any(m.startswith("missing: datasets: dl20: folder data/beir/") for m in missing)
    assert any(m.startswith("missing: rerankers: first: unknown reranker") for m in missing)
    assert err.startswith(f"error: the study cannot start here: {len(missing)} inputs are missing")
    for name in ("dl20", "fiqa", "hotpotqa", "nfcorpus", "nq", "scidocs", "scifact", "dbpedia",
                 "covid", "climate-fever"):  # fmt: skip
        assert (
            f"  {name}: " in plan and "(split test)" in plan.split(f"  {name}: ")[1].split("\n")[0]
        )
    assert "  dl19: data/beir/msmarco (split test)" in plan
    assert "  msmarco-dev: data/beir/msmarco (split dev)" in plan
    assert "datasets (12):" in plan and "touche" not in plan and "robust04" not in plan
    stages = "facebook/contriever-msmarco, bm25, splade++, "
    assert f"first stages: {stages}RRF(facebook/contriever-msmarco + bm25 + splade++, k=60)" in plan
    assert "splade++ is sparse:naver/splade-cocondenser-ensembledistil" in plan
    assert (
        "Table 1: listt5, rankzephyr, first, debiasfirst on facebook/contriever-msmarco; marks: "
        "† vs first, ‡ vs rankzephyr" in plan
    )
    assert "Table 2: the first stages' own nDCG@10, then first, debiasfirst on bm25," in plan
    assert (
        "Table 3: noaug-rank+lm, randaug-rank+lm, posaug-rank+lm, randaug-rank-ips+lm, "
        "debiasfirst on facebook/contriever-msmarco; marks: † vs randaug-rank+lm" in plan
    )
    assert "Fig. 5: debiasfirst vs first on dl19, dl20, 20 shuffled inputs per query" in plan
    assert (
        "propensity (Eq. 5): reranker rryisthebest/First_Model, first_stage bm25, task "
        "data/beir/msmarco, split train, max_queries 3000, k 20, shuffles 10, smoothing 0.0" in plan
    )
    assert "trainer: lam 0.1, lr 5e-06, epochs 3.0, global_batch 8, mini_batch_size 2, " in plan
    assert "precision bf16, neftune_alpha 5.0" in plan
    assert "training: base HuggingFaceH4/zephyr-7b-beta; convert castorini/" in plan
    assert "IPS normalisation: paper" in plan
    assert "train posaug-rank+lm" in plan and "train randaug-rank+lm" in plan
    assert "first-stage climate-fever rrf-facebook__contriever-msmarco+bm25+splade++" in plan
    # Table 2 reranks with First and DebiasFirst only, as Q26 does
    assert "shuffle-eval nq bm25 rankzephyr" not in plan and "shuffle-eval nq bm25 first" in plan


def test_the_q26_spec_marks_every_value_the_paper_does_not_print_as_the_projects():
    """Each key of studies/q26.yaml cites Q26 or says "# project's choice: <why>"; the
    CPU copy marks every value that differs from Q26's."""
    for name in ("q26.yaml", "q26-cpu.yaml"):
        text = (Path(__file__).parents[2] / "studies" / name).read_text()
        choices = [line for line in text.splitlines() if "# project's choice:" in line]
        assert choices and all(line.split("# project's choice:")[1].strip() for line in choices)
    q26 = (Path(__file__).parents[2] / "studies" / "q26.yaml").read_text()
    for key in ("rrf_k:", "shuffles:", "groups:", "neftune_alpha:", "  - splade++"):
        (line,) = [ln for ln in q26.splitlines() if ln.lstrip().startswith(key.strip())]
        assert "# project's choice:" in line, key
    for key in ("lr:", "epochs:", "global_batch:", "lambda:", "propensity_queries:",
                "propensity_shuffles:", "window:", "step:", "alpha:"):  # fmt: skip
        (line,) = [ln for ln in q26.splitlines() if ln.lstrip().startswith(key)]
        assert "# Q26" in line, key


def test_the_q26_plan_holds_the_papers_settings_per_step():
    from hf_posbias.study.listwise_spec import load_listwise_spec, parse_variant
    from hf_posbias.study.listwise_study import plan

    spec = load_listwise_spec(Path(__file__).parents[2] / "studies" / "q26.yaml")
    steps = {step.name: step for step in plan(spec, "out")}
    rrf = steps["shuffle-eval msmarco-dev rrf-facebook__contriever-msmarco+bm25+splade++ first"]
    # Each step holds the settings object of the verb it runs, and its marker records them.
    assert rrf.settings.first_stage == ["facebook/contriever-msmarco", "bm25", "splade++"]
    assert rrf.settings.split == "dev" and rrf.params["split"] == "dev"
    assert rrf.settings.method == "t-test"
    assert rrf.lists_from == Path("out/first-stage/msmarco-dev") / rrf.folder.parent.name
    assert parse_variant("randaug-rank+lm") == ("rand-aug", False, True)
    train = steps["train randaug-rank+lm"].settings
    assert train.propensity == "none" and train.lm_loss and train.augmentation == "rand-aug"
    assert not steps["train randaug-rank"].settings.lm_loss
    assert steps["train posaug-rank+lm"].settings.augmentation == "pos-aug"
    assert train.epochs == 3.0 and isinstance(train.epochs, float)  # the spec's 3, as --epochs 3
    assert (train.precision, train.mini_batch_size, train.neftune_alpha) == ("bf16", "2", 5.0)
    propensity = steps["propensity"].settings  # Q26: 3,000 queries of BM25, no smoothing
    assert (propensity.max_queries, propensity.smoothing) == (3000, 0.0)
    assert propensity.first_stage == "bm25" and propensity.shuffles == 10
    assert steps["convert"].settings.data == "castorini/rank_zephyr_training_data"
    zephyr = steps["shuffle-eval dl19 facebook__contriever-msmarco rankzephyr"].settings
    assert (zephyr.mode, zephyr.identifiers, zephyr.dtype) == ("generate", "numbers", "bfloat16")
    listt5 = steps["shuffle-eval dl19 facebook__contriever-msmarco listt5"].settings
    assert (listt5.reranker, listt5.dtype) == ("listt5:Soyoung97/ListT5-base", "float32")
    fig5 = steps["fig5 shuffle-eval dl20 facebook__contriever-msmarco first"].settings
    assert fig5.shuffles == 20 and fig5.out == "out/fig5/dl20/facebook__contriever-msmarco/first"


def test_a_training_setting_the_spec_leaves_out_is_the_verbs_own_default(tmp_path):
    """No second default in the study: no smoothing is Eq. 5's none, as on the command line."""
    from hf_posbias.listwise.experiments.experiment_settings import PropensitySettings
    from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings
    from hf_posbias.study.listwise_spec import ListwiseStudySpec
    from hf_posbias.study.listwise_study import plan

    spec = ListwiseStudySpec(
        name="s", datasets={"d": "f"}, rerankers={"x": "bm25"},
        variants=["noaug-rank-ips+lm"], training={"base": "m"},
    )  # fmt: skip
    steps = {step.name: step for step in plan(spec, tmp_path)}
    verb = PropensitySettings(reranker="r", task="t", out="o")
    assert steps["propensity"].settings.smoothing == verb.smoothing == 0.0
    assert steps["propensity"].settings.shuffles == verb.shuffles
    train = steps["train noaug-rank-ips+lm"].settings
    trainer = ListwiseTrainingSettings(model="m", data="d", out="o")
    assert (train.lam, train.lr, train.global_batch, train.ips_normalization) == (
        trainer.lam, trainer.lr, trainer.global_batch, None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"marks": {"llm": "†"}}, "unknown key(s) marks"),
        ({"tables": {"table1": {"marks": {"nope": "†"}}}}, "marks: 'nope' is not one of its"),
        ({"tables": {"table4": {}}}, "unknown table 'table4'"),
        ({"tables": {"table2": {"rerankers": ["zz"]}}}, "'zz' not among the rerankers"),
        ({"training": {"base": "m", "lerning_rate": 1}}, "unknown key(s) lerning_rate"),
        ({"training": {"base": "m", "data": "d", "convert": "c"}}, "data (a training set) or"),
        ({"fig5_datasets": ["nope"]}, "'nope' (splits, fig5_datasets) is not one of"),
        ({"rerankers": {"x": {"model": "bm25", "temperature": 1}}}, "a mapping holds model"),
    ],
)
def test_bad_study_keys_are_one_line(extra, message, tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    body = {"kind": "listwise", "name": "s", "datasets": {"d": "f"}, "rerankers": {"llm": "bm25"}}
    spec.write_text(yaml.safe_dump({**body, **extra}))
    assert main(["study", "run", str(spec), "--dry-run"]) == 2
    assert message in _one_line(capsys)


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


def test_a_listwise_dry_run_names_every_reranker_and_dataset_it_lacks(
    tmp_path, tiny_llm, make_beir, capsys
):
    # The dry run and the real run call one check (listwise_input_problems), no
    # weights loaded: a reranker that resolves nowhere and a dataset folder that is not there
    # stop both with the same error, before anything is written (issue 49).
    task = make_beir(tmp_path / "beir", n_docs=4, n_queries=2)
    gone = tmp_path / "gone"
    spec = _spec(tmp_path, task, tiny_llm, variants=[], training={},
                 rerankers={"llm": tiny_llm, "ghost": "acme/no-such-reranker"},
                 datasets={"tiny": str(task), "gone": str(gone)})  # fmt: skip
    assert main(["study", "run", str(spec), "--dry-run"]) == 2
    plan, err = capsys.readouterr()
    missing = [line for line in plan.splitlines() if line.startswith("missing: ")]
    assert missing[0] == f"missing: datasets: gone: folder {gone} does not exist"
    assert missing[1].startswith("missing: rerankers: ghost: unknown reranker 'acme/no-such-")
    assert len(missing) == 2 and err.startswith("error: the study cannot start here: 2 inputs")
    out = tmp_path / "out"
    assert main(["study", "run", str(spec), "--out", str(out)]) == 2
    assert capsys.readouterr().err == err and not out.exists()
