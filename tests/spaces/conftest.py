"""Fixtures of the Space tests: the evidence-moving app loaded as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

APP = Path(__file__).resolve().parents[2] / "spaces" / "evidence-moving" / "app.py"


def load_space_app() -> ModuleType:
    """A fresh import of ``spaces/evidence-moving/app.py`` (it reads its env at call time)."""
    spec = importlib.util.spec_from_file_location("evidence_moving_space_app", APP)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def space_app() -> ModuleType:
    """The Space's app module (a fresh import per test: its caches start empty)."""
    return load_space_app()
