"""Fixtures for the generation tests."""

from __future__ import annotations

import pytest


@pytest.fixture()
def one_torch_thread():
    """Run a tiny-LM generation test on one torch thread (restored afterwards).

    Token-by-token decoding of a hidden-64 model is all per-op overhead: on a shared 2-core
    machine two threads contend and run it ~3x slower than one.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
