"""Device capability decisions: precision, attention kernel, dense peaks (no GPU needed)."""

from __future__ import annotations

import pytest
import torch

from hf_posbias import devices
from hf_posbias.devices import (
    DeviceInfo,
    dense_peak_flops,
    described_device,
    device_info,
    resolve_attn_implementation,
    resolve_inference_dtype,
    resolve_precision,
    world_size,
)
from hf_posbias.errors import InputError

CPU = DeviceInfo(kind="cpu", name="cpu", bf16=True, fp16=False)
H100 = described_device("h100")
V100 = described_device("v100-32gb")
MPS = DeviceInfo(kind="mps", name="Apple MPS", fp16=True)


@pytest.mark.parametrize(
    ("info", "expected"), [(CPU, "fp32"), (H100, "bf16"), (V100, "fp16"), (MPS, "fp32")]
)
def test_auto_precision_follows_the_hardware(info, expected):
    assert resolve_precision("auto", info) == expected


def test_explicit_precision_checked_against_the_hardware():
    assert resolve_precision("bf16", CPU) == "bf16"  # CPU autocast runs bf16
    assert resolve_precision("fp32", V100) == "fp32"
    for requested, info, needle in [
        ("bf16", V100, "has no bf16 support"),
        ("fp16", CPU, "cannot train in fp16"),
        ("fp8", H100, "must be one of"),
    ]:
        with pytest.raises(InputError) as err:
            resolve_precision(requested, info)
        assert needle in str(err.value) and "\n" not in str(err.value)
        assert "--precision" in str(err.value)


def test_attention_default_is_best_installed(monkeypatch):
    assert resolve_attn_implementation(None, H100, "bf16") in ("sdpa", "flash_attention_2")
    monkeypatch.setattr(devices, "attn_implementation_installed", lambda name: True)
    assert resolve_attn_implementation(None, H100, "bf16") == "flash_attention_2"
    assert resolve_attn_implementation(None, H100, "fp32") == "sdpa"  # FA2 has no fp32 kernels
    assert resolve_attn_implementation(None, CPU, "bf16") == "sdpa"
    with pytest.raises(InputError, match="needs a CUDA GPU"):
        resolve_attn_implementation("flash_attention_2", CPU, "bf16")


def test_attention_not_installed_or_unknown_is_one_line(monkeypatch):
    monkeypatch.setattr(devices, "attn_implementation_installed", lambda name: name == "sdpa")
    with pytest.raises(InputError) as err:
        resolve_attn_implementation("flash_attention_2", H100, "bf16")
    assert "flash_attn package is not installed" in str(err.value)
    with pytest.raises(InputError, match="is unknown"):
        resolve_attn_implementation("paged", H100, "bf16")
    assert resolve_attn_implementation("sdpa", H100, "bf16") == "sdpa"


def test_torch_kernels_are_always_installed():
    assert devices.attn_implementation_installed("eager")
    assert devices.attn_implementation_installed("sdpa")
    assert not devices.attn_implementation_installed("paged")


def test_dense_peaks_and_probe(monkeypatch):
    assert dense_peak_flops(H100, "bf16") == pytest.approx(989.4e12)
    assert dense_peak_flops(H100, "fp32") == pytest.approx(66.9e12)
    assert dense_peak_flops(H100, "fp32", tf32=True) == pytest.approx(494.7e12)
    assert dense_peak_flops(V100, "bf16") is None
    assert dense_peak_flops(DeviceInfo("cuda", "Some Future GPU"), "bf16") is None
    assert dense_peak_flops(CPU, "fp32") is None
    probed = device_info("cpu")
    assert probed.kind == "cpu" and probed.total_memory is None and not probed.is_gpu
    assert H100.describe() == "NVIDIA H100 80GB HBM3 (cuda, 74.5 GiB)"
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert world_size() == 4
    monkeypatch.setenv("WORLD_SIZE", "nonsense")
    assert world_size() == 1


@pytest.mark.cuda
def test_cuda_probe_reports_memory_and_precision():
    info = device_info()
    assert info.kind == "cuda" and info.total_memory > 0 and info.fp16
    assert resolve_precision("auto", info) in ("bf16", "fp16")


def test_inference_dtype_rule_differs_from_training_only_on_native_bf16_cpus():
    native = DeviceInfo(kind="cpu", name="cpu", bf16=True, bf16_native=True)
    emulated = DeviceInfo(kind="cpu", name="cpu", bf16=True, bf16_native=False)
    assert resolve_inference_dtype("auto", native) == "bfloat16"
    assert resolve_inference_dtype("auto", emulated) == "float32"
    # training on any CPU stays fp32 (make demo's speed), whatever the CPU can do
    assert resolve_precision("auto", native) == resolve_precision("auto", emulated) == "fp32"
    assert resolve_inference_dtype("auto", H100) == "bfloat16"
    assert resolve_inference_dtype("auto", V100) == "float16"
    assert resolve_inference_dtype("auto", MPS) == "float32"
    assert resolve_inference_dtype("bfloat16", emulated) == "bfloat16"  # asked for: it runs
    assert resolve_inference_dtype("float32", native) == "float32"
    for requested, info, needle in [
        ("bfloat16", V100, "has no bf16 support"),
        ("float8", H100, "unknown --dtype"),
    ]:
        with pytest.raises(InputError) as err:
            resolve_inference_dtype(requested, info)
        assert needle in str(err.value) and "\n" not in str(err.value)


def test_cpu_probe_reports_native_bf16_truthfully():
    probed = device_info("cpu")
    assert probed.bf16  # bf16 runs on every CPU (emulated without bf16 instructions)
    assert probed.bf16_native == devices.cpu_has_native_bf16()
    assert probed.bf16_native == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    assert H100.bf16_native and not V100.bf16_native


# --------------------------------------------------------------------------- a requested device


def _machine(monkeypatch: pytest.MonkeyPatch, *, cuda_build: bool, gpus: int = 0, mac=False):
    """This process as a machine with a CPU-only or CUDA torch, ``gpus`` GPUs, a Mac or not."""
    monkeypatch.setattr(devices, "_torch_build", lambda: ("2.13.0+test", cuda_build))
    monkeypatch.setattr(devices, "_is_mac", lambda: mac)
    found = ["cpu", *(f"cuda:{i}" for i in range(gpus)), *(["mps"] if mac else [])]
    if cuda_build or mac:
        monkeypatch.setattr(devices, "available_devices", lambda: found)


@pytest.mark.parametrize(
    ("machine", "requested", "message"),
    [
        (
            {"cuda_build": False},
            "cuda",
            "--device cuda: no CUDA here (torch 2.13.0+test is built without CUDA); available: cpu",
        ),
        (
            {"cuda_build": True, "gpus": 1},
            "cuda:3",
            "--device cuda:3: 1 CUDA GPU visible; available: cpu, cuda:0",
        ),
        (
            {"cuda_build": True, "gpus": 0},
            "cuda",
            "--device cuda: 0 CUDA GPUs visible; available: cpu",
        ),
        (
            {"cuda_build": False},
            "mps",
            "--device mps: no Apple MPS device here (MPS runs on Apple silicon Macs); "
            "available: cpu",
        ),
        (
            {"cuda_build": True, "gpus": 2},
            "tpu",
            "--device tpu: unknown device (cpu, cuda, cuda:N or mps); "
            "available here: cpu, cuda:0, cuda:1",
        ),
    ],
)
def test_a_device_that_is_not_here_is_one_line_naming_what_is(
    monkeypatch: pytest.MonkeyPatch, machine: dict, requested: str, message: str
) -> None:
    _machine(monkeypatch, **machine)
    with pytest.raises(InputError) as err:
        devices.check_device(requested)
    assert str(err.value) == message


def test_a_device_that_is_here_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, cuda_build=True, gpus=2, mac=False)
    assert [devices.check_device(d) for d in ("cuda", "cuda:1", "cpu", None)] == [
        "cuda",
        "cuda:1",
        "cpu",
        None,
    ]
    _machine(monkeypatch, cuda_build=False, mac=True)
    assert devices.check_device("mps") == "mps"


def test_the_torch_build_is_read_from_its_version_file() -> None:
    # The version file answers a CUDA request: refusing one costs no torch import.
    version, cuda_build = devices._torch_build()
    assert version == torch.__version__.split("+")[0] or version == torch.__version__
    assert cuda_build == (torch.version.cuda is not None or torch.version.hip is not None)


def test_the_training_probe_refuses_a_device_that_is_not_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _machine(monkeypatch, cuda_build=False)
    with pytest.raises(InputError, match=r"^--device cuda: no CUDA here"):
        device_info("cuda")


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--model", "all-MiniLM-L6-v2", "--task", "t", "--device", "cuda:3"],
        ["analyze", "audit", "m", "--task", "t", "--device", "cuda:3"],
        ["analyze", "evidence-moving", "--pairs", "p", "--device", "cuda:3"],
        ["listwise", "test", "--reranker", "bm25", "--task", "t", "--device", "cuda:3"],
    ],
)
def test_every_verb_with_a_device_blames_the_device_before_loading_anything(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path, argv
) -> None:
    from hf_posbias.cli import main

    _machine(monkeypatch, cuda_build=True, gpus=1)
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --device cuda:3: 1 CUDA GPU visible; available: cpu, cuda:0"]
    assert not out.exists()
