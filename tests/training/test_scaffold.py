"""The skeleton both trainers share (hf_posbias.trainer_base.scaffold), the one checkpoint-card
module (hf_posbias.cards) both write through, and where the custom loss and trainer live."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from hf_posbias.cards.checkpoint import CheckpointCardKind, load_card_facts, render_checkpoint_card
from hf_posbias.errors import InputError
from hf_posbias.trainer_base.scaffold import agreed_memory_plan, announce, output_folder, save_card

HEAVY = ("torch", "transformers", "sentence_transformers", "datasets", "mteb")


@pytest.mark.parametrize(
    "module",
    [
        "hf_posbias.cli",
        "hf_posbias.training.train",
        "hf_posbias.listwise.training.train",
        "hf_posbias.trainer_base.scaffold",
        "hf_posbias.training.card",
        "hf_posbias.listwise.training.card",
    ],
)
def test_trainer_modules_import_no_heavy_library(module: str) -> None:
    # The losses and the trainer class import torch at the top: only the run may load them.
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"{module} imports {proc.stdout.strip()}"


def test_custom_loss_and_trainer_are_module_level_classes() -> None:
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss
    from transformers import Trainer

    from hf_posbias.listwise.training.trainer import DebiasFirstTrainer
    from hf_posbias.training.losses import WeightedCachedMNRL

    assert issubclass(WeightedCachedMNRL, CachedMultipleNegativesRankingLoss)
    assert WeightedCachedMNRL.__qualname__ == "WeightedCachedMNRL"
    assert issubclass(DebiasFirstTrainer, Trainer)
    assert DebiasFirstTrainer.__qualname__ == "DebiasFirstTrainer"


def test_output_folder_is_created_and_checked(tmp_path: Path) -> None:
    assert output_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir() and not list((tmp_path / "a" / "b").iterdir())
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="is not writable"):
        output_folder(blocker / "ckpt")


def test_announce_prints_one_line_per_process(capsys: pytest.CaptureFixture[str]) -> None:
    class Args:
        process_index = 1
        world_size = 2

    announce(Args(), "posbias-train", rows=8)
    announce(Args(), "posbias-listwise-train")
    assert capsys.readouterr().err == (
        "posbias-train rank=1 world_size=2 rows=8\nposbias-listwise-train rank=1 world_size=2\n"
    )


def test_agreed_memory_plan_raises_the_preflight_error() -> None:
    from hf_posbias.trainer_base.memory import MemoryPlan, MiniBatching

    plan = MemoryPlan(True, MiniBatching(tokens=512), 4, "measured")
    assert agreed_memory_plan(lambda: plan, 1) is plan

    def refuse() -> MemoryPlan:
        raise InputError("a step of 256 rows does not fit")

    with pytest.raises(InputError, match="does not fit"):
        agreed_memory_plan(refuse, 1)


@pytest.mark.parametrize("kind_name", ["bi-encoder", "listwise"])
def test_both_card_kinds_go_through_one_module(kind_name: str, tmp_path: Path) -> None:
    from hf_posbias.listwise.training.card import LISTWISE_CARD
    from hf_posbias.training.card import BI_ENCODER_CARD

    kind = {"bi-encoder": BI_ENCODER_CARD, "listwise": LISTWISE_CARD}[kind_name]
    assert isinstance(kind, CheckpointCardKind)
    with pytest.raises(InputError, match=f"has no {kind.facts_file}: not {kind.what}"):
        load_card_facts(kind, tmp_path)
    with pytest.raises(InputError, match=f"lacks {', '.join(kind.evaluation_keys)}"):
        render_checkpoint_card(kind, object(), evaluation={})


def test_save_card_writes_the_facts_last_and_the_card_only_when_asked(tmp_path: Path) -> None:
    from hf_posbias.listwise.training.card import LISTWISE_CARD, ListwiseCardInfo

    facts = ListwiseCardInfo(**_listwise_facts())
    plain = tmp_path / "plain"
    plain.mkdir()
    assert save_card(LISTWISE_CARD, plain, facts, card=False) is None
    assert sorted(p.name for p in plain.iterdir()) == [LISTWISE_CARD.facts_file]
    assert load_card_facts(LISTWISE_CARD, plain) == facts

    carded = tmp_path / "carded"
    carded.mkdir()
    path = save_card(LISTWISE_CARD, carded, facts, card=True)
    assert path == str(carded / "README.md")
    written = json.loads((carded / LISTWISE_CARD.facts_file).read_text())
    assert written == asdict(facts)
    card = Path(path).read_text()
    assert card.startswith("---\nlibrary_name: transformers\n") and "L = 0.1 · L_Rank" in card
    # The facts file marks a finished run: it is written after the card.
    assert (carded / LISTWISE_CARD.facts_file).stat().st_mtime_ns >= Path(path).stat().st_mtime_ns


def _listwise_facts() -> dict[str, object]:
    return {
        "base_model": "m",
        "base_model_on_hub": False,
        "base_description": "the local checkpoint `m`",
        "data": "d",
        "data_rows": 4,
        "source_rows": 2,
        "data_labels": "",
        "lam": 0.1,
        "propensity": None,
        "pos_aug": 2,
        "pos_aug_source": "on the fly (--pos-aug)",
        "neftune_alpha": None,
        "identifiers": "letters",
        "passage_tokens": 12,
        "window_sizes": [4],
        "seed": 42,
        "precision": "fp32",
        "attn_implementation": "sdpa",
        "gradient_checkpointing": False,
        "memory": "1 window(s) per forward pass",
        "global_batch": 2,
        "per_device_batch": 2,
        "micro_batch": 1,
        "accumulation": 2,
        "world_size": 1,
        "lr": 5e-6,
        "epochs": 3.0,
        "max_steps": 2,
        "warmup_ratio": 0.0,
        "steps": 2,
        "train_loss": 1.5,
        "rank_loss": 0.2,
        "lm_loss": 1.48,
        "train_seconds": 4.0,
        "device": "cpu (cpu)",
        "longest_tokens": 100,
    }


def test_the_entry_point_leaves_the_process_group_after_a_run_and_keeps_it_after_a_failure(
    tmp_path,
):
    # As under `accelerate launch`: the run finds a gloo group (one process here); a trainer
    # process that exits with it alive can abort in the interpreter's teardown.
    import types
    from dataclasses import dataclass

    import torch.distributed as dist

    from hf_posbias.errors import InputError
    from hf_posbias.settings import setting
    from hf_posbias.trainer_base.scaffold import trainer_main

    @dataclass
    class Steps:
        steps: int = setting("steps", default=1)

    def run(settings: Steps) -> int:
        dist.init_process_group(
            "gloo", init_method=f"file://{tmp_path}/store-{settings.steps}", rank=0, world_size=1
        )
        if settings.steps < 0:
            raise InputError("--steps must be at least 0")
        return settings.steps

    module = types.ModuleType("posbias_toy_trainer", "A toy trainer.")
    try:
        assert trainer_main(["--steps", "2"], module, Steps, run, str) == 0
        assert not dist.is_initialized()
        # A failed run keeps the group: a failed rank does not wait on the others' collectives.
        assert trainer_main(["--steps", "-1"], module, Steps, run, str) == 2
        assert dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
