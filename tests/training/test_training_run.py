"""End-to-end training runs through the real entry points (tiny models of every family)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from guards import HANG_GUARD_S

from hf_posbias.cli import main as cli_main
from hf_posbias.positions import POSITIONS
from hf_posbias.shards import write_parquet
from hf_posbias.training.train import ips_weights, train_model
from hf_posbias.training.training_settings import TrainingSettings

BINS = ("0-1k", "1k-2k")


WORDS = [
    *[
        "fox",
        "dog",
        "model",
        "query",
        "document",
        "vector",
        "science",
        "history",
        "music",
        "sport",
        "river",
        "city",
    ],
    *[
        "protein",
        "cell",
        "gene",
        "drug",
        "climate",
        "claim",
        "story",
        "answer",
        "evidence",
        "number",
        "year",
    ],
]


def _text(seed: int, n: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n)) + "."


def _rows(n_docs: int, positions_per_doc=POSITIONS, retained_every: int = 0) -> list[dict]:
    rows = []
    for d in range(n_docs):
        bin_name = BINS[d % 2]
        doc = _text(d, 20 if bin_name == BINS[0] else 40)
        for k, pos in enumerate(
            positions_per_doc(d) if callable(positions_per_doc) else positions_per_doc
        ):
            rows.append(
                {
                    "query": f"q{d}-{pos} " + _text(d + k, 5),
                    # ICT-like: the three positives of one document differ slightly
                    "positive": doc + f" ({pos})",
                    "doc_id": f"doc{d}",
                    "length_bin": bin_name,
                    "target_position": pos,
                    "candidate_id": f"doc{d}::{pos}",
                    "margin": 0.5,
                    **({"retained": (d + k) % retained_every != 0} if retained_every else {}),
                }
            )
    return rows


def write_repo(folder: Path, configs: dict[str, list[dict]]) -> str:
    """A Hub-identical dataset folder: README.md with YAML configs + one parquet per config."""
    lines = ["---", "configs:"]
    import pyarrow as pa

    schema = pa.Table.from_pylist(next(r for r in configs.values() if r)).schema
    for name, rows in configs.items():
        # an empty config still has the contract's columns (a schema-only parquet file)
        table = pa.Table.from_pylist(rows, schema=schema if not rows else None)
        write_parquet(table, folder / "data" / name / "train-00000-of-00001.parquet")
        lines += [
            f"- config_name: {name}",
            "  data_files:",
            "  - split: train",
            f"    path: data/{name}/train-*.parquet",
        ]
    (folder / "README.md").write_text("\n".join(lines + ["---", "", "test data", ""]))
    return str(folder)


@pytest.fixture(scope="module")
def train_repo(tmp_path_factory) -> str:
    rows = _rows(8)
    return write_repo(
        tmp_path_factory.mktemp("train"),
        {
            "uniform": rows,
            "begin": [r for r in rows if r["target_position"] == "begin"],
            "r50-25-25": rows,
            "empty": [],
            "nobin": [{k: v for k, v in r.items() if k != "length_bin"} for r in rows],
        },
    )


@pytest.fixture(scope="module")
def pool_repo(tmp_path_factory) -> str:
    # Skewed pool: every doc has a begin query, only some have middle/end.
    def positions(d: int):
        return (
            ("begin", "middle", "end")
            if d % 4 == 0
            else ("begin", "middle")
            if d % 2
            else ("begin",)
        )

    return write_repo(tmp_path_factory.mktemp("pool"), {"default": _rows(12, positions, 5)})


FAMILIES = [
    ("bert", "base", "cls", "query: "),
    ("longformer", "base", "mean", "query: "),
    ("modernbert", "base", "cls", "query: "),
    ("gpt2", "causal-lm", "lasttoken", "Retrieve a relevant passage: "),
    ("bloom", "causal-lm", "lasttoken", "Retrieve a relevant passage: "),
    ("llama", "causal-lm", "lasttoken", "Retrieve a relevant passage: "),
    ("qwen3", "causal-lm", "lasttoken", "Retrieve a relevant passage: "),
]


@pytest.mark.parametrize(("family", "head", "pooling", "prefix"), FAMILIES)
def test_every_family_trains_saves_and_reloads(
    family, head, pooling, prefix, tiny_models, train_repo, tmp_path, monkeypatch
):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.data_collator import BaseDataCollator

    # Instrument the real trainer run: record the rows of every batch the collator receives.
    seen: list[list[dict]] = []
    original = BaseDataCollator.__call__

    def recording_call(self, features):
        seen.append([dict(f) for f in features])
        return original(self, features)

    monkeypatch.setattr(BaseDataCollator, "__call__", recording_call)
    out = tmp_path / "ckpt"
    result = train_model(
        TrainingSettings(
            model=tiny_models(family, head=head),
            config="uniform",
            data=train_repo,
            out=str(out),
            max_steps=2,
            global_batch=6,
            mini_batch_size=4,
            record_batches=True,
        )
    )
    assert result.steps == 2
    assert result.train_loss > 0
    # Only text columns reach the collator (bins/doc ids stay in the sampler).
    assert seen and all(set(f) == {"query", "positive"} for batch in seen for f in batch)
    rows = result.rows
    by_query = {q: i for i, q in enumerate(rows.queries)}
    for batch in seen[:3]:
        idx = [by_query[f["query"]] for f in batch]
        assert len({rows.bins[i] for i in idx}) == 1, "batch mixes length bins"
        assert len({rows.doc_ids[i] for i in idx}) == len(idx), "duplicate positive document"
    assert [len(b) for b in seen[:3]] == [len(b) for b in result.batches[:3]]

    model = SentenceTransformer(str(out), device="cpu")
    assert model[1].pooling_mode == pooling
    assert model.prompts["query"] == prefix
    assert model.prompts.get("document", "") == ""
    emb = model.encode(["the fox and the river"], prompt_name="query")
    assert emb.shape == (1, 64)
    card = (out / "README.md").read_text()
    assert f"pooling | {pooling}" in card
    if head == "causal-lm":
        assert model.tokenizer.pad_token == model.tokenizer.eos_token
        assert model.tokenizer.padding_side == "right"


def test_card_content_and_push(tiny_models, train_repo, tmp_path, monkeypatch):
    import huggingface_hub

    sent: dict = {}

    def fake_create(self, repo_id, **kw):
        sent.update(repo=repo_id, token=self.token, repo_type=kw.get("repo_type"))

    def fake_upload(self, *, folder_path, repo_id, **kw):
        sent["files"] = sorted(p.name for p in Path(folder_path).iterdir())
        sent["readme"] = (Path(folder_path) / "README.md").read_text()
        sent["upload_repo"] = repo_id

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", fake_create)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", fake_upload)
    out = tmp_path / "bert-begin"
    result = train_model(
        TrainingSettings(
            model=tiny_models("bert"),
            config="begin",
            data=train_repo,
            out=str(out),
            max_steps=2,
            global_batch=4,
            lr=3e-5,
            seed=7,
            push_to_hub="me/posbias-bert-begin",
            hub_token="hf_test",
        )
    )
    assert result.hub_url == "https://huggingface.co/me/posbias-bert-begin"
    assert sent["repo"] == sent["upload_repo"] == "me/posbias-bert-begin"
    assert sent["token"] == "hf_test" and sent["repo_type"] == "model"
    assert {"README.md", "modules.json", "posbias_training.json"} <= set(sent["files"])
    assert sent["readme"] == (out / "README.md").read_text()
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: sentence-transformers\n")
    assert "- position-bias" in card
    # A local training folder is named in the text, not as Hub `datasets:` metadata.
    assert f"- {train_repo}" not in card and f"`{train_repo}`" in card
    assert "base_model:" not in card  # the tiny base is a local folder, not a Hub id
    assert "Measured distribution of the rows used: **begin (100:0:0)**" in card
    assert "nominal begin:middle:end = 100:0:0" in card
    assert "config `begin` — 8 rows used" in card
    # per-bin × position counts of the rows actually used: 4 docs per bin, begin only
    assert "| 0-1k | 4 | 0 | 0 | 4 |" in card and "| 1k-2k | 4 | 0 | 0 | 4 |" in card
    for needle in (
        "learning rate 3e-05",
        "| seed | 7 |",
        "| batch size | 4 ",
        "scale 20.0",
        # CPU: 32-row mini-batches capped at the batch; a GPU's preflight picks tokens
        "| mini-batch size (gradient cache) | "
        + ("4" if result.memory.method == "cpu" else result.memory.mini_batching.describe()),
        "| optimisation steps | 2 |",
        # 8 rows in two bins of 4 at batch 4: 2 steps a pass; max_steps 2 = one pass
        "| epochs | 1.00 trained (2 steps, 2 per pass over the rows); 3.0 requested, capped at 2",
        '`"query: "`',
        "| pooling | cls |",
        "Not evaluated yet",
    ):
        assert needle in card, needle
    assert f"**{result.train_loss:.4f}**" in card

    from hf_posbias.cards.checkpoint import write_checkpoint_card
    from hf_posbias.training.card import BI_ENCODER_CARD

    write_checkpoint_card(
        BI_ENCODER_CARD,
        out,
        evaluation={
            "benchmark": "SQuAD-PosQ",
            "ndcg_at_10": {"begin": 0.8, "end": 0.5},
            "psi": 0.375,
        },
    )
    card = (out / "README.md").read_text()
    assert "## Evaluation: SQuAD-PosQ" in card and "| end | 0.5000 |" in card and "0.3750" in card
    assert "| 0-1k | 4 | 0 | 0 | 4 |" in card  # training facts survive the re-render


def test_ips_weights_hand_computed():
    # bin s: 3 begin, 1 end → shares 3/4, 1/4 → raw 4/3, 4; bin l: 1 begin 1 middle → raw 2, 2
    bins = ["s", "s", "s", "s", "l", "l"]
    pos = ["begin", "begin", "begin", "end", "begin", "middle"]
    raw = [4 / 3, 4 / 3, 4 / 3, 4, 2, 2]
    mean = sum(raw) / 6
    assert ips_weights(bins, pos) == pytest.approx([r / mean for r in raw])
    assert sum(ips_weights(bins, pos)) / 6 == pytest.approx(1.0)


def test_weighted_loss_equals_cached_mnrl_at_unit_weights_and_scales(tiny_models):
    import torch
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss

    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.training.builder import build_sentence_transformer
    from hf_posbias.training.losses import weighted_cached_mnrl

    model = build_sentence_transformer(get_model_spec(tiny_models("bert")))
    torch.manual_seed(0)
    reps = [[torch.randn(5, 8)], [torch.randn(5, 8)]]
    plain = CachedMultipleNegativesRankingLoss(model, scale=20.0, mini_batch_size=2)
    weighted = weighted_cached_mnrl(model, 20.0, 2)
    assert weighted.calculate_loss(reps, torch.ones(5)).item() == pytest.approx(
        plain.calculate_loss(reps).item(), rel=1e-5
    )
    w = torch.tensor([0.0, 0.0, 0.0, 0.0, 5.0])
    only_last = weighted.calculate_loss(reps, w).item()
    single = weighted.calculate_loss(reps, torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0])).item()
    assert only_last == pytest.approx(5 * single) and only_last != pytest.approx(
        weighted.calculate_loss(reps, torch.ones(5)).item()
    )


def test_ips_training_runs_on_the_pool(tiny_models, pool_repo, tmp_path):
    out = tmp_path / "ips"
    result = train_model(
        TrainingSettings(
            model=tiny_models("bert"),
            config="ips",
            data=pool_repo,
            out=str(out),
            max_steps=2,
            global_batch=4,
        )
    )
    rows = result.rows
    assert rows.weights is not None and all(rows.bins)  # only retained rows
    assert len(rows) < rows.n_source_rows
    assert sum(rows.weights) / len(rows) == pytest.approx(1.0)
    card = (out / "README.md").read_text()
    assert "Inverse-propensity weighting" in card and "IPS-weighted" in card
    assert "config `default`" in card


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["--config", "70:20:10"], "config '70:20:10' is not in"),
        (["--config", "empty"], "has no rows to train on"),
        (["--config", "nobin"], "lacks column(s) length_bin"),
        (["--out", "/proc/posbias-cannot-write"], "is not writable"),
        (["--push-to-hub", "me/x"], "no Hub token"),
    ],
)
def test_bad_inputs_one_line_exit_2(
    args, message, tiny_models, train_repo, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored token
    base = {
        "--model": tiny_models("bert"),
        "--config": "uniform",
        "--data": train_repo,
        "--out": str(tmp_path / "o"),
    }
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    argv = [
        "train",
        *[x for kv in base.items() for x in kv],
        "--max-steps",
        "1",
        "--global-batch",
        "4",
    ]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in err, err


def test_ratio_config_maps_to_repo_config(train_repo):
    from hf_posbias.training.train import resolve_repo_config

    assert resolve_repo_config(train_repo, "50:25:25") == "r50-25-25"
    assert resolve_repo_config(train_repo, "uniform") == "uniform"


def test_packaged_sentence_transformer_loads_as_is(minilm_path, train_repo, tmp_path):
    out = tmp_path / "minilm"
    result = train_model(
        TrainingSettings(
            model=minilm_path,
            config="uniform",
            data=train_repo,
            out=str(out),
            max_steps=1,
            global_batch=4,
        )
    )
    info = json.loads((out / "posbias_training.json").read_text())
    assert info["pooling"] == "mean" and info["kind"] == "encoder" and result.steps == 1


def test_accelerate_two_process_ddp(tiny_models, pool_repo, tmp_path):
    # The IPS-weighted loss on the pool: our own loss code gathers the documents of both ranks
    # (the plain cached loss gathers in sentence-transformers' code).
    out = tmp_path / "ddp"
    # CPU processes on any host: a visible GPU would make accelerate pick CUDA (and one GPU
    # cannot host two processes).
    env = {
        **os.environ,
        "ACCELERATE_USE_CPU": "true",
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        "29517",
        "-m",
        "hf_posbias.training.train",
        "--model",
        tiny_models("bert"),
        "--config",
        "ips",
        "--data",
        pool_repo,
        "--out",
        str(out),
        "--max-steps",
        "2",
        "--global-batch",
        "4",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "posbias-train rank=0 world_size=2" in proc.stderr
    assert "posbias-train rank=1 world_size=2" in proc.stderr
    assert proc.stdout.count("trained ") == 1  # reported (and saved) once, by rank 0
    info = json.loads((out / "posbias_training.json").read_text())
    assert info["world_size"] == 2 and info["steps"] == 2 and info["weighted"]
    # the paper's in-batch negatives survive DDP: 4 in all = 2 processes × 2 rows, gathered
    assert info["batch_size"] == 4 and info["per_device_batch"] == 2
    card = (out / "README.md").read_text()
    assert "4 in all = 2 processes × 2 rows, embeddings gathered across processes" in card
    assert (out / "modules.json").is_file()


class LayerProbe:
    """A trainer callback that counts forward passes of the first linear layer inside the first
    transformer layer (inside it, so that checkpointing's recomputation counts too: transformers
    checkpoints the layer's ``forward``, outside its own hooks) and records its output dtype
    (autocast shows up there)."""

    def __init__(self) -> None:
        self.calls = 0
        self.dtypes: set = set()
        self.in_step = False

    def callback(self):
        from transformers import TrainerCallback

        probe = self

        class _Probe(TrainerCallback):
            def on_train_begin(self, args, state, control, model=None, **kw):
                import torch
                from transformers.modeling_layers import GradientCheckpointingLayer

                layer = next(
                    m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)
                )
                linear = next(m for m in layer.modules() if isinstance(m, torch.nn.Linear))

                def record(module, inputs, output):
                    if probe.in_step:  # not the model card's widget examples
                        probe.calls += 1
                        probe.dtypes.add(output.dtype)

                linear.register_forward_hook(record)

            def on_step_begin(self, args, state, control, **kw):
                probe.in_step = True

            def on_step_end(self, args, state, control, **kw):
                probe.in_step = False

        return _Probe()


def test_bf16_autocast_and_checkpointing_run_on_cpu(tiny_models, train_repo, tmp_path):
    import torch

    runs = {}
    for name, precision, checkpointing in [("plain", "fp32", "off"), ("fast", "bf16", "on")]:
        probe = LayerProbe()
        result = train_model(
            TrainingSettings(
                model=tiny_models("bert"),
                config="uniform",
                data=train_repo,
                out=str(tmp_path / name),
                max_steps=2,
                global_batch=4,
                mini_batch_size=2,
                precision=precision,
                gradient_checkpointing=checkpointing,
            ),
            callbacks=[probe.callback()],
        )
        runs[name] = (result, probe)
    plain, fast = runs["plain"], runs["fast"]
    assert plain[1].dtypes == {torch.float32} and fast[1].dtypes == {torch.bfloat16}
    # gradient cache: a no-grad forward + a replayed forward per mini-batch; checkpointing
    # recomputes the replayed forward in the backward pass: 3 layer calls instead of 2
    assert plain[1].calls > 0 and fast[1].calls * 2 == plain[1].calls * 3
    assert fast[0].precision == "bf16" and fast[0].memory.checkpointing
    assert fast[0].train_loss > 0 and plain[0].train_loss > 0
    card = (tmp_path / "fast" / "README.md").read_text()
    assert "| precision | bf16 mixed precision" in card
    assert (
        "| gradient checkpointing | on |" in card and "| attention implementation | sdpa |" in card
    )
    info = json.loads((tmp_path / "fast" / "posbias_training.json").read_text())
    assert info["precision"] == "bf16" and info["gradient_checkpointing"] is True


def test_ips_loss_packs_mini_batches_by_tokens(tiny_models, pool_repo, tmp_path):
    from hf_posbias.training.train import prepare_run

    settings = TrainingSettings(
        model=tiny_models("bert"),
        config="ips",
        data=pool_repo,
        out=str(tmp_path / "a"),
        max_steps=2,
        global_batch=4,
    )
    longest = prepare_run(settings).longest_tokens
    probe = LayerProbe()
    result = train_model(
        dataclasses.replace(settings, out=str(tmp_path / "b"), mini_batch_tokens=longest + 1),
        callbacks=[probe.callback()],
    )
    assert result.rows.weights is not None and result.train_loss > 0
    assert result.memory.mini_batching.tokens == longest + 1
    # documents of ~longest tokens: about one per mini-batch, so more than one mini-batch per
    # column and step (2 steps × 2 columns × 2 passes would be 8 calls with one mini-batch)
    assert probe.calls > 8
    assert (
        "mini-batch size (gradient cache) | " + f"{longest + 1} tokens"
        in (tmp_path / "b" / "README.md").read_text()
    )


def test_weighted_loss_gathers_like_one_big_batch(tiny_models, monkeypatch):
    """Two simulated ranks with gathered documents: the mean loss and the summed gradients
    equal W × those of one process holding the whole batch (DDP then averages by W)."""
    import sentence_transformers.util as st_util
    import torch

    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.training.builder import build_sentence_transformer
    from hf_posbias.training.losses import weighted_cached_mnrl

    model = build_sentence_transformer(get_model_spec(tiny_models("bert")))
    torch.manual_seed(0)
    q_all, d_all = torch.randn(8, 16), torch.randn(8, 16)
    weights = torch.rand(8) + 0.5

    q = q_all.clone().requires_grad_()
    d = d_all.clone().requires_grad_()
    single = weighted_cached_mnrl(model, 20.0, 3)
    full = single.calculate_loss([[q], [d]], weights, with_backward=True)

    shards_q = [q_all[:4].clone().requires_grad_(), q_all[4:].clone().requires_grad_()]
    shards_d = [d_all[:4].clone().requires_grad_(), d_all[4:].clone().requires_grad_()]
    losses = []
    for rank in (0, 1):
        # all_gather_with_grad: every rank sees all documents; gradients flow back to the
        # owner and are summed over ranks (here: accumulated into the shared leaves)
        monkeypatch.setattr(st_util, "all_gather_with_grad", lambda t: torch.cat(shards_d))
        monkeypatch.setattr(st_util, "get_rank", lambda r=rank: r)
        loss = weighted_cached_mnrl(model, 20.0, 3, gather_across_devices=True)
        local = slice(4 * rank, 4 * rank + 4)
        value = loss.calculate_loss(
            [[shards_q[rank]], [shards_d[rank]]], weights[local], with_backward=True
        )
        losses.append(float(value))
    # each rank normalises by its own 4 rows: mean over ranks = the one-process loss
    assert sum(losses) / 2 == pytest.approx(float(full), rel=1e-5)
    assert torch.allclose(torch.cat([g.grad for g in shards_q]), 2 * q.grad, atol=1e-6)
    assert torch.allclose(torch.cat([g.grad for g in shards_d]), 2 * d.grad, atol=1e-6)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--precision", "bf16"], "v100", "--precision bf16: Tesla V100-SXM2-32GB (cuda"),
        (["--mini-batch-tokens", "3"], None, "--mini-batch-tokens 3 is smaller than the longest"),
        (["--global-batch", "4"], "world3", "--global-batch 4 is not divisible by the 3 processes"),
        (["--attn-implementation", "flash_attention_2"], "noflash", "package is not installed"),
    ],
)
def test_bad_compute_settings_stop_before_the_model_loads(
    args, env, message, tiny_models, train_repo, tmp_path, capsys, monkeypatch
):
    import hf_posbias.devices as devices
    import hf_posbias.training.builder as builder

    def no_model(*a, **k):
        raise AssertionError("the model was loaded before the settings were checked")

    monkeypatch.setattr(builder, "build_sentence_transformer", no_model)
    if env == "v100":
        monkeypatch.setattr(
            devices, "device_info", lambda *a: devices.described_device("v100-32gb")
        )
    elif env == "world3":
        monkeypatch.setenv("WORLD_SIZE", "3")
    elif env == "noflash":
        monkeypatch.setattr(devices, "attn_implementation_installed", lambda name: name == "sdpa")
    argv = ["train", "--model", tiny_models("bert"), "--config", "uniform", "--data", train_repo]
    argv += ["--out", str(tmp_path / "o"), *args]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in err, err


@pytest.mark.cuda  # the memory preflight trial needs CUDA
def test_cuda_preflight_measures_and_refuses_what_does_not_fit(tiny_models, train_repo, tmp_path):
    from hf_posbias.errors import BudgetError

    result = train_model(
        TrainingSettings(
            model=tiny_models("bert"),
            config="uniform",
            data=train_repo,
            out=str(tmp_path / "gpu"),
            max_steps=1,
            global_batch=4,
        )
    )
    assert result.memory.method == "measured" and result.memory.trials
    assert result.memory.peak_bytes > 0 and result.precision in ("bf16", "fp16")
    with pytest.raises(BudgetError) as err:
        train_model(
            TrainingSettings(
                model=tiny_models("bert"),
                config="uniform",
                data=train_repo,
                out=str(tmp_path / "tiny-budget"),
                max_steps=1,
                global_batch=4,
                mini_batch_size=4,
                gradient_checkpointing="off",
                device_memory_gib=0.5,
            )
        )
    assert "--mini-batch-size" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("progress", [True, False])
def test_training_reports_steps_loss_and_eta_in_lines(
    progress, tiny_models, train_repo, tmp_path, capsys, second_per_reading_clock
):
    # stderr is not a terminal under pytest: plain lines (no carriage return), the last one
    # with every step done and the last logged loss; --no-progress prints none of them.
    # (sentence-transformers' own "Computing widget examples" bar at the trainer's start is
    # not ours.) The counter reads a one-second clock: a tiny model's steps take milliseconds.
    train_model(
        TrainingSettings(
            model=tiny_models("bert"),
            config="uniform",
            data=train_repo,
            out=str(tmp_path / "ckpt"),
            max_steps=3,
            global_batch=6,
            logging_steps=1,
            progress=progress,
        )
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("train: ")]
    assert not any("\r" in line for line in lines)
    assert "{'loss'" not in err  # transformers' raw log dicts are replaced
    if not progress:
        assert lines == []
        return
    assert lines[-1].startswith("train: 3/3 (100%) [")
    assert "loss=" in lines[-1]
    # Each 10 % of the steps gives a line; before the end each carries an ETA.
    assert any(line.startswith("train: 1/3 (33%)") and "eta " in line for line in lines)
