"""Registry, batch planning and matrix mechanics (pure Python, no training)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from guards import HANG_GUARD_S

from hf_posbias.errors import ModelLoadError
from hf_posbias.modeling.bases import PAPER_MODELS, ModelSpec, get_model_spec, register_model
from hf_posbias.training.batching import SingleBinBatchSamplerFactory, plan_batches
from hf_posbias.training.matrix import expand_runs, run_matrix, select_shard

REPO = Path(__file__).resolve().parents[2]


def _synthetic(n_docs: int = 60, seed: int = 0):
    rng = random.Random(seed)
    bins, docs = [], []
    for d in range(n_docs):
        b = rng.choice(["0-1k", "1k-2k", "2k-4k"])
        for _ in range(rng.choice([1, 2, 3])):
            bins.append(b)
            docs.append(f"doc{d}")
    order = list(range(len(bins)))
    rng.shuffle(order)  # rows of a document need not be adjacent
    return [bins[i] for i in order], [docs[i] for i in order]


def test_registry_has_the_eight_paper_bases():
    assert PAPER_MODELS == (
        "bert-base",
        "longformer-base",
        "modernbert-base",
        "modernbert-large",
        "gpt2-medium",
        "bloom-560m",
        "tinyllama-nope",
        "qwen3-0.6b",
    )
    pools = {n: get_model_spec(n).pooling for n in PAPER_MODELS}
    assert pools["bert-base"] == pools["modernbert-base"] == "cls"
    assert pools["longformer-base"] == "mean"
    assert {pools[n] for n in PAPER_MODELS[4:]} == {"lasttoken"}
    assert get_model_spec("bert-base").lr == 4e-5 and get_model_spec("bloom-560m").lr == 2e-5
    assert get_model_spec("modernbert-large").lr == 2e-5  # the paper's table value
    assert get_model_spec("qwen3-0.6b").query_prefix == "Retrieve a relevant passage: "
    assert get_model_spec("longformer-base").query_prefix == "query: "
    assert get_model_spec("answerdotai/ModernBERT-base").name == "modernbert-base"
    assert get_model_spec("tinyllama-nope").positional_encoding == "none"


def test_unknown_model_lists_names_and_register():
    with pytest.raises(ModelLoadError) as err:
        get_model_spec("bert-huge")
    assert "bert-base" in str(err.value) and "qwen3-0.6b" in str(err.value)
    assert "\n" not in str(err.value)
    spec = register_model(
        ModelSpec("test-e5", "intfloat/e5-small-v2", "encoder", "APE", "mean", 33, 512),
        overwrite=True,
    )
    assert get_model_spec("test-e5") is spec and spec.lr == 4e-5
    with pytest.raises(ModelLoadError):
        register_model(spec)


def test_inferred_specs_from_tiny_checkpoints(tiny_models, tiny_sentence_transformer):
    gpt2 = get_model_spec(tiny_models("gpt2", head="causal-lm"))
    assert (gpt2.kind, gpt2.pooling, gpt2.max_length) == ("decoder", "lasttoken", 512)
    assert 0 < gpt2.params_m < 1
    bert = get_model_spec(tiny_models("bert"))
    assert (bert.kind, bert.pooling, bert.query_prefix) == ("encoder", "cls", "query: ")
    assert get_model_spec(tiny_models("longformer")).max_length == 512
    st = get_model_spec(tiny_sentence_transformer)
    assert st.is_sentence_transformer and st.pooling == "mean"


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_plan_single_bin_no_duplicates_all_rows_once(world_size):
    bins, docs = _synthetic()
    lengths = [random.Random(i).randrange(10, 500) for i in range(len(bins))]
    plan = plan_batches(bins, docs, batch_size=8, seed=42, world_size=world_size, lengths=lengths)
    for batch in plan.batches:
        assert len({bins[i] for i in batch}) == 1
        assert len({docs[i] for i in batch}) == len(batch)
        assert 1 <= len(batch) <= 8 // world_size  # a per-rank share of the global batch
        # longest first, so the loss's consecutive mini-batches carry little padding
        assert [lengths[i] for i in batch] == sorted((lengths[i] for i in batch), reverse=True)
    used = sorted(i for b in plan.batches for i in b)
    assert len(used) == len(set(used)) and len(used) + plan.dropped_rows == len(bins)
    # only short tail batches lose rows (at most W - 1 each) so that ranks get equal shares
    assert plan.dropped_rows <= (world_size - 1) * len(set(bins)) * 3
    if world_size == 1:
        assert plan.dropped_rows == 0
    # DDP: runs of W same-bin batches, so the batches of one step (W consecutive) share a bin
    assert len(plan.batches) % world_size == 0
    assert sum(plan.bins.values()) * world_size == len(plan.batches)
    for start in range(0, len(plan.batches), world_size):
        step = plan.batches[start : start + world_size]
        assert len({bins[b[0]] for b in step}) == 1
        # equal shares (gathered embeddings need equal shapes), no document twice in the step
        assert len({len(b) for b in step}) == 1
        step_docs = [docs[i] for b in step for i in b]
        assert len(step_docs) == len(set(step_docs))
    # rank r takes batches r, r+W, ...: same count on every rank
    assert len({len(plan.batches[r::world_size]) for r in range(world_size)}) == 1


def test_plan_global_batch_is_dealt_round_robin_by_length():
    bins = ["a"] * 8
    docs = [f"d{i}" for i in range(8)]
    lengths = [5, 80, 20, 60, 10, 70, 40, 30]
    plan = plan_batches(bins, docs, batch_size=8, world_size=2, lengths=lengths)
    rank0, rank1 = plan.batches
    # sorted longest first, then dealt: both ranks get the same mix of lengths
    assert [lengths[i] for i in rank0] == [80, 60, 30, 10]
    assert [lengths[i] for i in rank1] == [70, 40, 20, 5]
    assert plan.dropped_rows == 0 and plan.bins == {"a": 1}


def test_plan_is_deterministic_and_reshuffles_per_epoch():
    bins, docs = _synthetic()
    a = plan_batches(bins, docs, 8, seed=42).batches
    assert a == plan_batches(bins, docs, 8, seed=42).batches
    assert a != plan_batches(bins, docs, 8, seed=43).batches
    assert a != plan_batches(bins, docs, 8, seed=42, epoch=1).batches
    # mostly full batches: duplicates are deferred, not shrinking every batch
    assert sum(len(b) == 8 for b in a) >= len(a) - 3 * 3


def test_plan_drops_only_what_cannot_feed_every_rank():
    bins = ["a"] * 7 + ["tiny"]
    docs = [f"d{i}" for i in range(8)]
    plan = plan_batches(bins, docs, batch_size=4, world_size=2)
    # "a": a full batch of 4 and a tail of 3 trimmed to 2; "tiny": 1 row for 2 ranks
    assert plan.dropped_rows == 2 and plan.bins == {"a": 2, "tiny": 0}
    assert sorted(len(b) for b in plan.batches) == [1, 1, 2, 2]
    dropped = plan_batches(["a"] * 5, [f"d{i}" for i in range(5)], 4, drop_last=True)
    assert dropped.dropped_rows == 1 and [len(b) for b in dropped.batches] == [4]


def test_sampler_factory_as_trainer_calls_it():
    bins, docs = _synthetic(20)
    record: list[list[int]] = []
    factory = SingleBinBatchSamplerFactory(bins, docs, world_size=1, record=record)
    sampler = factory(list(range(len(bins))), batch_size=4, drop_last=False, seed=42)
    first = list(sampler)
    assert len(first) == len(sampler) and record == first
    # the trainer passes the per-device batch: the sampler plans global batches of W times it
    ddp = SingleBinBatchSamplerFactory(bins, docs, world_size=2)(list(range(len(bins))), 4)
    assert ddp.nominal_batch_size == 8 and max(len(b) for b in ddp) == 4
    assert sampler.batch_size is None  # dynamic batches for Accelerate's shard wrapper
    sampler.set_epoch(1)
    assert list(sampler) != first
    with pytest.raises(ValueError):
        factory([0, 1], batch_size=4)


def test_matrix_dry_run_prints_32_commands():
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "run_matrix.py"),
            "--data",
            "d",
            "--out",
            "c",
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=True,
    )
    lines = proc.stdout.strip().splitlines()
    commands = [line for line in lines if line.startswith("accelerate launch ")]
    plans = [line for line in lines if line.startswith("  # ")]
    assert len(commands) == 32 and len(set(commands)) == 32 and len(plans) == 32
    assert all(c.startswith("accelerate launch -m hf_posbias.training.train ") for c in commands)
    assert (
        "--model qwen3-0.6b --config uniform --data d --out c/posbias-qwen3-0.6b-uniform"
        in proc.stdout
    )
    # every command is followed by its settings after the preflight decisions
    assert all(lines[lines.index(c) + 1].startswith("  # ") for c in commands)
    assert "mini-batches of" in plans[0] and "480 steps" in plans[0]
    assert lines[-1].startswith("# 32 runs: pass --throughput")


def test_pooling_ablation_and_shards():
    runs = expand_runs(
        ["modernbert-base"],
        ["begin", "middle", "end", "uniform"],
        "c",
        ["cls", "mean", "max", "lasttoken"],
    )
    assert len(runs) == 16 and len({r.out_dir for r in runs}) == 16
    assert runs[1].launch_command(runs[1].settings("d"))[-2:] == ["--pooling", "mean"]
    shards = [select_shard(runs, f"{i}/3") for i in range(3)]
    assert sorted(r.name for s in shards for r in s) == sorted(r.name for r in runs)


def test_matrix_resume_skips_finished_runs(tmp_path, monkeypatch):
    runs = expand_runs(["bert-base"], ["begin", "end"], tmp_path)
    done = Path(runs[0].out_dir)
    done.mkdir(parents=True)
    for name in ("posbias_training.json", "README.md", "modules.json"):
        (done / name).write_text("{}")
    calls = []
    monkeypatch.setattr(
        "subprocess.run",
        lambda cmd, check=False: calls.append(cmd) or subprocess.CompletedProcess(cmd, 0),
    )
    report = run_matrix([run.settings("data", max_steps=1) for run in runs])
    assert report.skipped == ["posbias-bert-base-begin"] and report.ran == ["posbias-bert-base-end"]
    assert (
        len(calls) == 1
        and "--config" in calls[0]
        and calls[0][calls[0].index("--config") + 1] == "end"
    )
    assert calls[0][-2:] == ["--max-steps", "1"]


def test_a_run_is_a_settings_object_whose_command_line_parses_back_to_it():
    # The matrix takes settings objects; the command line is rendered from them only at
    # launch, and `accelerate launch -m hf_posbias.training.train` reads it back to the same.
    from hf_posbias.training.training_settings import parse_settings

    (run,) = expand_runs(["bert-base"], ["50:25:25"], "c", ["mean"])
    settings = run.settings("d", seed=42, epochs=3, precision="bf16", progress=False)
    args = run.train_args(settings, ["seed", "epochs"])
    assert args == ["--model", "bert-base", "--config", "50:25:25", "--data", "d", "--out",
                    run.out_dir, "--pooling", "mean", "--seed", "42", "--epochs", "3",
                    "--no-progress", "--precision", "bf16"]  # fmt: skip
    assert parse_settings(args) == settings


def test_the_in_process_matrix_trains_the_settings_objects_it_was_given(tmp_path, monkeypatch):
    runs = expand_runs(["bert-base"], ["begin", "end"], tmp_path)
    settings = [run.settings("data", max_steps=1) for run in runs]
    trained = []
    monkeypatch.setattr("hf_posbias.training.train.train_model", trained.append)
    report = run_matrix(settings, in_process=True)
    assert trained == settings and trained[0] is settings[0]
    assert report.ran == ["posbias-bert-base-begin", "posbias-bert-base-end"]
