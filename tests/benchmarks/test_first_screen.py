"""benchmarks/first_screen.py at its smallest: a README whose first screen runs two quick commands
(the real first screen runs in tests/test_docs.py)."""

from __future__ import annotations

import re


def test_each_first_screen_command_is_timed_in_order(run_benchmark, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n\n```bash\n# needs: repo, minutes\nmake demo\n```\n\n"
        "```bash\nposbias list bases       # 1.\nposbias list \\\n    remedies   # 2.\n```\n"
    )
    out = run_benchmark("first_screen.py", "--readme", str(readme))
    rows = re.findall(r"^\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+(posbias .*)$", out, re.M)
    assert [(code, command) for _, code, _, command in rows] == [
        ("0", "posbias list bases"),
        ("0", "posbias list remedies"),
    ]
    assert "load average" in out
