"""pb.evaluate takes what mteb.evaluate takes (one task or several, task objects), keeps its run
in a claimed folder (the results cache when out is unset), prints nothing with progress=False,
and answers a folder it cannot write with one InputError naming it."""

from __future__ import annotations

import errno
import os
import warnings
from pathlib import Path

import pytest
from task_fixtures import wiki_task

import hf_posbias as pb
from hf_posbias.errors import InputError
from hf_posbias.evaluation.runs import results_cache
from hf_posbias.output_folders import read_run_record


@pytest.fixture(scope="module")
def task_folder(shared_data, tmp_path_factory) -> Path:
    return wiki_task(shared_data, tmp_path_factory.mktemp("wiki") / "task", n_docs=12)


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """A results cache of the test's own."""
    monkeypatch.setenv("POSBIAS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "results"


def test_one_task_a_list_or_a_task_object_are_the_same_run(task_folder, results, tmp_path):
    [one] = pb.evaluate("bm25", str(task_folder), out=tmp_path / "one", progress=False)
    [listed] = pb.evaluate("bm25", [task_folder], out=tmp_path / "list", progress=False)
    [obj] = pb.evaluate("bm25", pb.get_task(task_folder), out=tmp_path / "obj", progress=False)
    assert one.ndcg_at_10 == listed.ndcg_at_10 == obj.ndcg_at_10
    assert one.psi == listed.psi == obj.psi
    # The same parameters recorded, whichever way the task was given.
    records = [read_run_record(tmp_path / name) for name in ("one", "list", "obj")]
    assert records[0]["fingerprint"] == records[1]["fingerprint"] == records[2]["fingerprint"]
    assert records[0]["command"] == "posbias evaluate"


def test_without_out_the_run_is_kept_in_the_results_cache_one_folder_per_parameters(
    task_folder, results
):
    [first] = pb.evaluate("bm25", task_folder, progress=False, bootstrap=None)
    [folder] = list((results / "bm25").iterdir())
    assert (folder / "summary.json").is_file() and read_run_record(folder)["finished"]
    # The same call finds its run: read back, not run again (the same timing comes back).
    [again] = pb.evaluate("bm25", task_folder, progress=False, bootstrap=None)
    assert again.evaluation_time_s == first.evaluation_time_s
    assert again.ndcg_at_10 == first.ndcg_at_10
    # Other parameters: another folder, never the first one's results.
    [other] = pb.evaluate("bm25", task_folder, progress=False, bootstrap=None, top_k=20)
    assert other.top_k == 20 and len(list((results / "bm25").iterdir())) == 2


def test_a_task_object_keeps_its_own_top_k(task_folder, results):
    task = pb.get_task(task_folder, top_k=20)
    with pytest.raises(InputError, match="made with top_k=20, not 100"):
        pb.evaluate("bm25", task, progress=False, top_k=100)
    [summary] = pb.evaluate("bm25", task, progress=False, bootstrap=None)
    assert summary.top_k == 20


def test_an_unwritable_out_is_one_input_error_naming_the_folder(task_folder, tmp_path, monkeypatch):
    out = tmp_path / "locked"

    def refuse(model, tasks, *, out, **options):
        raise PermissionError(errno.EACCES, "Permission denied", str(Path(out) / "summary.json"))

    monkeypatch.setattr(results_cache, "evaluate_model", refuse)
    with pytest.raises(InputError, match=r"cannot write .*locked/summary.json: Permission denied"):
        pb.evaluate("bm25", task_folder, out=out, progress=False)
    with pytest.raises(InputError, match="choose another out="):
        pb.evaluate("bm25", task_folder, out=out, progress=False)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_out_is_one_input_error(task_folder, tmp_path):
    out = tmp_path / "read-only"
    out.mkdir()
    out.chmod(0o555)
    try:
        with pytest.raises(InputError, match="read-only"):
            pb.evaluate("bm25", task_folder, out=out, progress=False)
    finally:
        out.chmod(0o755)


@pytest.fixture
def library_bars_on():
    """The libraries' bars on, as in a fresh notebook; afterwards each switch as it was (the
    hub's group states exactly), so no later test of this worker draws a bar."""
    import sys

    import huggingface_hub.utils.tqdm  # noqa: F401  (the module, not its tqdm class)
    from datasets.utils.tqdm import (
        disable_progress_bars,
        enable_progress_bars,
        is_progress_bar_enabled,
    )
    from transformers.utils import logging as transformers_logging

    hub = sys.modules["huggingface_hub.utils.tqdm"]
    switches = [
        (transformers_logging.is_progress_bar_enabled(), transformers_logging.enable_progress_bar,
         transformers_logging.disable_progress_bar),
        (is_progress_bar_enabled(), enable_progress_bars, disable_progress_bars),
    ]  # fmt: skip
    hub_states = dict(hub.progress_bar_states)
    with warnings.catch_warnings():  # the Hub's bars stay off where the tests' env says so
        warnings.simplefilter("ignore")
        for _, turn_on, _ in switches:
            turn_on()
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for was_on, turn_on, turn_off in switches:
            (turn_on if was_on else turn_off)()
    hub.progress_bar_states.clear()
    hub.progress_bar_states.update(hub_states)


@pytest.mark.parametrize("model", ["bm25", "tiny"])
def test_progress_false_prints_no_bar_and_no_library_warning(
    model, task_folder, tiny_sentence_transformer, tmp_path, capfd, library_bars_on
):
    """The weights bar, datasets' corpus bar and mteb's FutureWarnings came back as stderr
    lines before (the libraries' bars on, as in a fresh notebook)."""
    from datasets.utils.tqdm import is_progress_bar_enabled
    from transformers.utils import logging as transformers_logging

    # As the caller left them (datasets keeps its bars off where its variable says so: an
    # in-process `posbias` run of an earlier test sets HF_DATASETS_DISABLE_PROGRESS_BARS).
    before = (transformers_logging.is_progress_bar_enabled(), is_progress_bar_enabled())
    assert before[0]
    capfd.readouterr()
    name = tiny_sentence_transformer if model == "tiny" else model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pb.evaluate(name, task_folder, out=tmp_path / "o", progress=False, bootstrap=None)
    captured = capfd.readouterr()
    assert captured.err == ""
    assert [str(w.message) for w in caught if not w.filename.startswith(pb.__path__[0])] == []
    # The libraries' own switches are as the caller left them.
    assert (transformers_logging.is_progress_bar_enabled(), is_progress_bar_enabled()) == before


def test_a_sentence_transformer_object_is_evaluated_under_its_weights_digest(
    task_folder, tiny_sentence_transformer, results
):
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(tiny_sentence_transformer)
    [by_name] = pb.evaluate(tiny_sentence_transformer, task_folder, progress=False, bootstrap=None)
    [in_memory] = pb.evaluate(model, task_folder, progress=False, bootstrap=None)
    assert in_memory.ndcg_at_10 == by_name.ndcg_at_10
    assert in_memory.model.startswith(f"{Path(tiny_sentence_transformer).parent.name}/")
    with torch.no_grad():  # changed in memory: another model, never the first one's results
        next(model.parameters()).mul_(-1.0)
    [changed] = pb.evaluate(model, task_folder, progress=False, bootstrap=None)
    assert changed.model != in_memory.model
    assert len({p.name for p in results.iterdir()}) == 3
