"""Plugins: a package of its own adds a benchmark, a remedy, a reranker kind and a base model.

The package is docs/extending.md's: its files are the page's blocks whose first line names them,
so the documented code is the code tested. It is installed by ``pip install --no-deps
--no-build-isolation --target`` into a temporary folder put first on ``sys.path`` (a real
installed distribution with its ``entry_points.txt``, found by ``importlib.metadata``, while the
shared environment is left untouched), and removed from the path afterwards. The broken
plugins of the last test are ``*.dist-info`` folders written by hand (no build needed to say
that a module is missing).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import REPO, blocks

from hf_posbias.cli import main

DOC = REPO / "docs" / "extending.md"
DIST = "posbias-example-plugins"
PACKAGE = "posbias_example_plugins"
FILES = (
    "pyproject.toml",
    *(f"{PACKAGE}/{m}.py" for m in ("sentences", "meanp", "overlap", "bases")),
)


def _registries() -> list:
    from hf_posbias.evaluation.runs.remedies import REMEDY_REGISTRY
    from hf_posbias.listwise.experiments.remedies import LISTWISE_REMEDY_REGISTRY
    from hf_posbias.modeling.bases import BASE_REGISTRY
    from hf_posbias.rerankers.loading import RERANKER_REGISTRY
    from hf_posbias.tasks.benchmark_registry import BENCHMARK_REGISTRY

    return [
        BENCHMARK_REGISTRY,
        REMEDY_REGISTRY,
        LISTWISE_REMEDY_REGISTRY,
        RERANKER_REGISTRY,
        BASE_REGISTRY,
    ]


def _on_path(folder: Path) -> None:
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    for registry in _registries():
        registry.clear_plugins()


def _off_path(folder: Path, *modules: str) -> None:
    sys.path.remove(str(folder))
    for name in [m for m in sys.modules if m.split(".")[0] in modules]:
        del sys.modules[name]
    importlib.invalidate_caches()
    for registry in _registries():
        registry.clear_plugins()


def documented_files() -> dict[str, str]:
    """The package's files: the blocks of docs/extending.md whose first line is ``# <file>``."""
    out = {}
    for _, _, body, _ in blocks(DOC):
        first, _, rest = body.partition("\n")
        if first.startswith("# ") and first[2:] in FILES:
            out[first[2:]] = body
    return out


@pytest.fixture(scope="module")
def example_plugins(tmp_path_factory: pytest.TempPathFactory):
    """The documented package, installed; yields its site folder."""
    # The task classes of the cards known at import are taken before the plugin exists, so the
    # other tests' view of NAMED_TASKS never includes it.
    import hf_posbias.tasks.mteb_tasks  # noqa: F401

    root = tmp_path_factory.mktemp("plugins")
    source = root / DIST
    files = documented_files()
    assert sorted(files) == sorted(FILES), "docs/extending.md lost a file of the package"
    for name, text in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text, encoding="utf-8")
    (source / PACKAGE / "__init__.py").write_text("", encoding="utf-8")
    site = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
    pip += ["--no-index", "--quiet", "--target", str(site), str(source)]
    done = subprocess.run(pip, capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (site / PACKAGE / "meanp.py").is_file()
    _on_path(site)
    yield site
    _off_path(site, PACKAGE)


def _listing(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines of a listing verb's table."""
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines()


def test_every_plugin_is_listed_with_its_distribution(example_plugins, capsys):
    rows = _listing(["list", "benchmarks"], capsys)
    assert rows[2].startswith("| squad-posq | SQuAD-PosQ, SQuAD-PosQ-tiny | built-in |")
    assert rows[-2].startswith(f"| sentences | Sentences-Evidence | {DIST} | a text file")
    assert rows[-1].startswith("| from-corpus | — | built-in | recipe, ")

    rows = _listing(["list", "remedies"], capsys)
    assert rows[2] == "| none | bi-encoder | — | built-in | the plain model |"
    kinds = [row.split(" | ")[1] for row in rows[2:]]
    assert kinds == ["bi-encoder"] * 7 + ["listwise"] * 3  # both kinds, each its plugins last
    assert rows[8] == (
        f"| meanp | bi-encoder | passage_tokens, stride | {DIST} | score = the mean over the "
        "document's passages |"
    )
    assert rows[-1].startswith("| debiasfirst | listwise | checkpoints | built-in |")

    rows = _listing(["list", "rerankers"], capsys)
    kinds = [row.split(" | ")[1] for row in rows[2:]]
    assert kinds == [
        "bm25",
        "listwise-endpoint",
        "overlap",
        "listt5",
        "listwise",
        "cross-encoder",
        "registry",
    ]
    assert rows[4].startswith(f"| 25 | overlap | {DIST} | overlap: the share")

    rows = _listing(["list", "bases"], capsys)
    assert rows[2].startswith("| bert-base | google-bert/bert-base-uncased |")
    assert rows[-1] == (
        f"| e5-small | intfloat/e5-small-v2 | encoder | APE | mean | 33 | 512 | 4e-05 | {DIST} |"
    )


def test_a_plugin_base_resolves_by_name(example_plugins):
    from hf_posbias.modeling.bases import get_model_spec, model_names

    spec = get_model_spec("e5-small")
    assert (spec.checkpoint, spec.pooling, spec.max_length) == ("intfloat/e5-small-v2", "mean", 512)
    assert (spec.lr, spec.query_prefix) == (4e-5, "query: ")  # the paper's rules fill them
    assert model_names()[:1] == ["bert-base"] and model_names()[-1] == "e5-small"


@pytest.fixture(scope="module")
def sentences_task(example_plugins, shared_data, tmp_path_factory) -> Path:
    """A task folder built by the plugin's verb from real Wikipedia text."""
    from hf_posbias.corpus.sources import read_wikiextractor

    root = tmp_path_factory.mktemp("sentences")
    lines = []
    for article in read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"):
        text = " ".join(article["text"].split())[:700]
        if len(text) >= 500:
            lines.append(text[: text.rfind(".") + 1])
        if len(lines) == 12:
            break
    (root / "docs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["benchmark", "build", "sentences", "--input", str(root / "docs.txt"), "--every", "2"]
    assert main([*argv, "--out", str(root / "task")]) == 0
    return root / "task"


def test_a_plugin_benchmark_builds_a_task_that_evaluates(sentences_task, tmp_path):
    from hf_posbias.tasks.mteb_tasks import get_task, named_task_class

    task = get_task(sentences_task)
    assert type(task) is named_task_class("Sentences-Evidence")
    assert type(task).__name__ == "SentencesEvidence" and task.card.name == "Sentences-Evidence"
    assert task.metadata.license == "cc-by-sa-4.0" and task.metadata.domains == ["Written"]
    counts = task.bucket_counts
    assert list(counts) == ["begin", "middle", "end"] and min(counts.values()) > 0
    argv = ["evaluate", "--model", "bm25", "--task", str(sentences_task), "--out", str(tmp_path)]
    assert main([*argv, "--bootstrap", "20", "--no-progress"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["task"] == "Sentences-Evidence"
    assert sum(summary["n_queries"].values()) == sum(counts.values())
    assert summary["mean"] > 0.9  # every query is a verbatim sentence of its document


def _trec(path: Path) -> dict[tuple[str, str], float]:
    rows = (line.split() for line in path.read_text().splitlines())
    return {(r[0], r[2]): float(r[4]) for r in rows}


def _evaluate(argv: list[str], out: Path) -> dict:
    assert main([*argv, "--out", str(out), "--bootstrap", "20", "--no-progress"]) == 0
    return json.loads((out / "summary.json").read_text())


def test_a_plugin_remedy_scores_by_the_mean_of_the_passages(
    sentences_task, tiny_sentence_transformer, tmp_path
):
    model = ["evaluate", "--model", tiny_sentence_transformer, "--task", str(sentences_task)]
    passages = ["--passage-tokens", "40", "--stride", "20", "--device", "cpu"]
    meanp = _evaluate([*model, *passages, "--remedy", "meanp"], tmp_path / "meanp")
    maxp = _evaluate([*model, *passages, "--remedy", "maxp"], tmp_path / "maxp")
    assert meanp["remedy"] == "meanp" and meanp["search_stats"]["passages"] > 12
    assert meanp["search_stats"]["passages"] == maxp["search_stats"]["passages"]
    mean_scores = _trec(tmp_path / "meanp" / "runs" / "Sentences-Evidence.trec")
    max_scores = _trec(tmp_path / "maxp" / "runs" / "Sentences-Evidence.trec")
    assert mean_scores.keys() == max_scores.keys()
    assert all(mean_scores[k] <= max_scores[k] + 1e-6 for k in mean_scores)
    assert sum(mean_scores[k] < max_scores[k] - 1e-4 for k in mean_scores) > len(mean_scores) / 2


def test_a_plugin_reranker_kind_reranks_in_evaluate_and_the_listwise_verbs(
    sentences_task, tmp_path
):
    from posbias_example_plugins.overlap import overlap_score

    from hf_posbias.rerankers.loading import load_reranker, reranker_kind
    from hf_posbias.rerankers.records import Passage
    from hf_posbias.tasks.taskdata import PositionTaskData

    assert reranker_kind("overlap") == "overlap"
    argv = ["evaluate", "--model", "bm25", "--reranker", "overlap", "--rerank-k", "5"]
    summary = _evaluate([*argv, "--task", str(sentences_task)], tmp_path / "evaluate")
    assert summary["model_name"] == "local/overlap-reranker" and summary["rerank_k"] == 5
    assert summary["search_stats"]["reranker"]["name"] == "overlap"
    data = PositionTaskData.load(sentences_task)
    docs = {d["id"]: d["text"] for d in data.corpus}
    run: dict[str, list[tuple[int, str]]] = {}
    for line in (
        (tmp_path / "evaluate" / "runs" / "Sentences-Evidence.trec").read_text().split("\n")[:-1]
    ):
        qid, _, doc, rank, *_ = line.split()
        run.setdefault(qid, []).append((int(rank), doc))
    for q in data.queries:
        head = [doc for _, doc in sorted(run[q["id"]])[:5]]
        scores = overlap_score(q["text"], [Passage(d, docs[d]) for d in head])
        assert scores == sorted(scores, reverse=True)  # the plugin's order

    # The listwise verbs resolve through the same table.
    assert load_reranker("overlap").describe()["name"] == "overlap"
    out = tmp_path / "listwise"
    argv = ["listwise", "test", "--reranker", "overlap", "--task", str(sentences_task)]
    assert main([*argv, "--k", "5", "--positions", "1,3,5", "--out", str(out)]) == 0
    curve = json.loads((out / "positions.json").read_text())
    by_position = [row["ndcg_at_10"] for row in curve["positions"]]
    assert len(by_position) == 3 and max(by_position) - min(by_position) < 1e-9  # pointwise


def _dist_info(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.mark.parametrize(
    ("entry_points", "argv", "message"),
    [
        (
            "[hf_posbias.remedies]\nmaxp = json:loads\n",
            ["list", "remedies"],
            "clashes with the built-in remedy 'maxp'",
        ),
        (
            "[hf_posbias.listwise_remedies]\npermsc = json:loads\n",
            ["list", "remedies"],
            "clashes with the built-in listwise remedy 'permsc'",
        ),
        (
            "[hf_posbias.benchmarks]\nfever = json:loads\n",
            ["list", "benchmarks"],
            "clashes with the built-in benchmark 'fever'",
        ),
        (
            "[hf_posbias.rerankers]\nbroken = no_such_module_here:KIND\n",
            ["list", "rerankers"],
            "does not load: ModuleNotFoundError: No module named 'no_such_module_here'",
        ),
        (
            "[hf_posbias.bases]\nnot-a-spec = json:loads\n",
            ["list", "bases"],
            "is a function, not a hf_posbias.modeling.bases.ModelSpec",
        ),
    ],
)
def test_a_broken_plugin_is_one_line_naming_its_distribution(
    entry_points, argv, message, tmp_path, capsys
):
    site = tmp_path / "site"
    _dist_info(site, "broken-plugin", entry_points)
    _on_path(site)
    try:
        assert main(argv) == 2
    finally:
        _off_path(site)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: plugin '")
    assert "of distribution broken-plugin (entry point hf_posbias." in err[0]
    assert message in err[0]
