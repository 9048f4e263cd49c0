"""The README's first screen, timed: each job's command as a newcomer runs it, in a fresh folder.

Reads the runnable ``bash`` block of the README's first screen (the block without a
``# needs:`` line among its first 45 lines, continuation lines joined), runs each ``posbias``
command in order in an empty temporary folder with this interpreter (``python -m
hf_posbias.cli``, offline), and prints its wall time, exit status and the load average when it
ended: the README promises each finishes in under a minute on 2 CPU cores, so a figure taken on
busy cores says how busy they were. Exits 1 when a command fails.

Run:
    .venv/bin/python benchmarks/first_screen.py [--readme README.md]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
FIRST_SCREEN_LINES = 45
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)


def first_screen_commands(readme: Path = README) -> list[list[str]]:
    """The ``posbias`` commands of the first screen's runnable block, each as its words."""
    screen = "\n".join(readme.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN_LINES])
    for match in BLOCK.finditer(screen + "\n"):
        body = match.group(1)
        if "# needs:" not in body:
            lines = re.sub(r"\\\n", " ", body).splitlines()
            words = [shlex.split(line, comments=True) for line in lines]
            return [w for w in words if w and w[0] == "posbias"]
    raise SystemExit(f"{readme}: no runnable bash block in its first {FIRST_SCREEN_LINES} lines")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=README, help="the README to read")
    commands = first_screen_commands(parser.parse_args().readme.resolve())
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="first-screen-") as folder:
        print(f"{'seconds':>8}  {'exit':>4}  {'load':>5}  command")
        for words in commands:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "hf_posbias.cli", *words[1:]],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            seconds = time.perf_counter() - start
            load = os.getloadavg()[0]
            print(f"{seconds:8.1f}  {done.returncode:4d}  {load:5.2f}  {shlex.join(words)}")
            if done.returncode:
                failed += 1
                print(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "")
    print(f"{os.cpu_count()} CPU cores; load average: 1-minute, when each command ended")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
