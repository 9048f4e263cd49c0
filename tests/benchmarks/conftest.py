"""``run_benchmark(script, *args)``: a script of benchmarks/ run as a user runs it.

Every script in benchmarks/ runs in the suite at its smallest size (one test module per script,
``test_<script>.py``, checked by test_every_benchmark_has_a_test) so that none rots; the
figures of such a run say nothing (tiny shapes on a shared CPU).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from guards import HANG_GUARD_S

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_benchmark(tmp_path: Path) -> Callable[..., str]:
    """Run ``benchmarks/<script>`` with ``args`` in ``tmp_path``; assert exit 0, return stdout."""

    def run(script: str, *args: str) -> str:
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
        proc = subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / script), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    return run
