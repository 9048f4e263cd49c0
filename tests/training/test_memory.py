"""The memory preflight's decisions, with injected capacities and fake trial steps (CPU only)."""

from __future__ import annotations

import pytest

from hf_posbias.errors import BudgetError, InputError, ModelLoadError
from hf_posbias.trainer_base.compute import ComputeSettings
from hf_posbias.trainer_base.memory import (
    GIB,
    MiniBatching,
    candidate_mini_batches,
    choose_memory_plan,
    cpu_plan,
    estimate_trial_peak,
    optimizer_state_bytes,
    usable_bytes,
)
from hf_posbias.trainer_base.shapes import ModelShape, real_config

LONGEST = 2048


class FakeTrials:
    """A device where a step needs ``base`` GiB plus ``per_token`` bytes per mini-batch token
    (a quarter of it with checkpointing); beyond ``oom_gib`` the trial raises OOM (None)."""

    def __init__(self, base_gib: float = 2.0, per_token: float = GIB / 4096, oom_gib=None):
        self.base = base_gib * GIB
        self.per_token = per_token
        self.oom = oom_gib * GIB if oom_gib else None
        self.calls: list[tuple[bool, MiniBatching]] = []

    def __call__(self, checkpointing: bool, mini: MiniBatching) -> int | None:
        self.calls.append((checkpointing, mini))
        peak = self.base + mini.tokens_on(LONGEST) * self.per_token / (4 if checkpointing else 1)
        if self.oom is not None and peak > self.oom:
            return None
        return int(peak)


def _plan(settings: ComputeSettings, trials: FakeTrials, budget_gib: float, **kw):
    return choose_memory_plan(
        settings,
        measure=trials,
        budget_bytes=int(budget_gib * GIB),
        state_bytes=kw.pop("state_bytes", GIB),
        per_device_batch=kw.pop("per_device_batch", 256),
        longest_tokens=LONGEST,
        method="measured",
        device="a test GPU",
        **kw,
    )


def test_auto_keeps_checkpointing_off_when_a_big_mini_batch_fits():
    trials = FakeTrials()
    plan = _plan(ComputeSettings(), trials, budget_gib=70)
    # 2 + t/4096 GiB <= 69 → t <= 274k tokens: 128 rows of 2,048 tokens, no checkpointing
    assert not plan.checkpointing and plan.mini_batching == MiniBatching(tokens=128 * LONGEST)
    assert plan.peak_bytes == int(2 * GIB + 128 * LONGEST * GIB / 4096) + GIB
    assert plan.loss_chunk_rows == 256  # one loss chunk: scores are only rows × batch
    # bisection over 9 candidates, and no checkpointing trial (it could not be faster)
    assert len(trials.calls) <= 4 and not any(c for c, _ in trials.calls)
    assert "measured peak" in plan.summary() and "checkpointing off" in plan.summary()


def test_auto_turns_checkpointing_on_when_only_small_mini_batches_fit():
    trials = FakeTrials()
    plan = _plan(ComputeSettings(), trials, budget_gib=10)
    # off: 8 rows (16k tokens) fit; on: 32 rows (64k tokens) → checkpointing wins the cost model
    assert plan.checkpointing and plan.mini_batching.tokens == 32 * LONGEST
    assert {c for c, _ in trials.calls} == {False, True}


def test_out_of_memory_trials_count_as_not_fitting():
    trials = FakeTrials(oom_gib=20)  # the device fails before the budget says so
    plan = _plan(ComputeSettings(gradient_checkpointing="off"), trials, budget_gib=70)
    # 2 GiB + 32 rows × 2,048 tokens / 4096 = 18 GiB; 64 rows would be 34 GiB → OOM at 20
    assert plan.mini_batching.tokens == 32 * LONGEST
    assert any(t.peak_bytes is None for t in plan.trials)


def test_fixed_settings_that_do_not_fit_name_the_option():
    trials = FakeTrials()
    with pytest.raises(BudgetError) as err:
        _plan(
            ComputeSettings(mini_batch_size="64", gradient_checkpointing="off"),
            trials,
            budget_gib=20,
        )
    message = str(err.value)
    assert "\n" not in message and "does not fit" in message and "a test GPU" in message
    assert "--mini-batch-size" in message and "--gradient-checkpointing on" in message
    assert trials.calls == [(False, MiniBatching(rows=64))]
    with pytest.raises(BudgetError, match="--mini-batch-tokens"):
        _plan(ComputeSettings(mini_batch_tokens=10**6), FakeTrials(), budget_gib=20)
    # nothing fits at all (even 1 row with checkpointing): the remaining levers are named
    with pytest.raises(BudgetError, match="--max-length, use --precision bf16"):
        _plan(ComputeSettings(), FakeTrials(base_gib=30), budget_gib=20)


def test_fixed_settings_that_fit_are_kept():
    plan = _plan(
        ComputeSettings(mini_batch_size="16", gradient_checkpointing="on"), FakeTrials(), 70
    )
    assert plan.checkpointing and plan.mini_batching == MiniBatching(rows=16)
    assert plan.loss_chunk_rows == 16


def test_checkpointing_unsupported():
    plan = _plan(ComputeSettings(), FakeTrials(), 10, checkpointing_supported=False)
    assert not plan.checkpointing
    with pytest.raises(InputError, match="does not support gradient checkpointing"):
        _plan(
            ComputeSettings(gradient_checkpointing="on"),
            FakeTrials(),
            10,
            checkpointing_supported=False,
        )


def test_candidates_and_budget():
    rows = [m.tokens // 100 for m in candidate_mini_batches(ComputeSettings(), 12, 100)]
    assert rows == [12, 8, 4, 2, 1]
    assert candidate_mini_batches(ComputeSettings(mini_batch_size="64"), 32, 9) == [
        MiniBatching(rows=32)
    ]
    assert usable_bytes(80 * GIB, cap_gib=20) == int(20 * GIB * 0.9) - GIB
    assert optimizer_state_bytes(10, world_size=2) == 120


def test_cpu_keeps_the_former_defaults():
    plan = cpu_plan(ComputeSettings(), per_device_batch=256)
    assert plan.mini_batching == MiniBatching(rows=32) and not plan.checkpointing
    assert plan.method == "cpu" and "no device-memory preflight" in plan.summary()
    assert cpu_plan(ComputeSettings(gradient_checkpointing="on"), 8).checkpointing
    assert cpu_plan(ComputeSettings(mini_batch_tokens=512), 8).mini_batching.tokens == 512


def test_estimate_behaves_like_memory():
    shape = ModelShape.from_config(real_config("qwen3-0.6b"))

    def peak(**kw):
        args = dict(
            precision="bf16",
            checkpointing=False,
            mini_batch_tokens=32 * LONGEST,
            longest_tokens=LONGEST,
            attn_implementation="sdpa",
        )
        return estimate_trial_peak(shape, **{**args, **kw})

    assert peak(mini_batch_tokens=64 * LONGEST) > peak() > peak(checkpointing=True)
    assert peak(precision="fp32") > peak()
    assert peak(attn_implementation="eager") > peak()
    # the qwen3-0.6b bf16 run of GPU_NOTES.md (32 rows + checkpointing) peaked at 19.7 GiB
    measured = peak(checkpointing=True) + optimizer_state_bytes(shape.n_params)
    assert 0.8 < measured / (19.7 * GIB) < 1.25


def test_out_of_memory_during_training_is_one_line():
    from hf_posbias.trainer_base.memory import MemoryPlan, is_out_of_memory, out_of_memory_error

    assert is_out_of_memory(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling"))
    assert not is_out_of_memory(RuntimeError("expected scalar type Float"))
    plan = MemoryPlan(False, MiniBatching(tokens=65536), 256, "measured", 60 * GIB, 71 * GIB)
    message = str(out_of_memory_error(plan, "a test GPU"))
    assert "\n" not in message and message.startswith("out of memory during training on a test")
    for option in (
        "--device-memory-gib",
        "--mini-batch-tokens below 65536",
        "--gradient-checkpointing on",
    ):
        assert option in message


def test_every_paper_base_has_one_shape_of_its_family_and_size():
    from hf_posbias.modeling.bases import PAPER_MODELS, get_model_spec
    from hf_posbias.trainer_base.shapes import BASE_SHAPES, base_shape, tiny_shape_config

    assert list(BASE_SHAPES) == list(PAPER_MODELS)
    for name in PAPER_MODELS:
        config = real_config(name)
        family = base_shape(name).family
        assert config.model_type == family == tiny_shape_config(name, 100).model_type
        n_params_m = ModelShape.from_config(config).n_params / 1e6
        assert abs(n_params_m / get_model_spec(name).params_m - 1) < 0.1, name
    with pytest.raises(ModelLoadError, match="no built-in shape for 'bert-larg'"):
        real_config("bert-larg")
