"""The progress convention: --no-progress on every long verb, plain lines off a terminal."""

from __future__ import annotations

import io

import pytest

from hf_posbias.cli import build_parser
from hf_posbias.progress import LineProgress, progress

LONG_VERBS = [
    ["train", "--model", "m", "--config", "uniform", "--data", "d", "--out", "o"],
    ["evaluate", "--model", "m", "--task", "t", "--out", "o"],
    ["study", "run", "spec.yaml", "--out", "o"],
    ["demo"],
    ["data", "build", "--corpus", "c", "--out", "o"],
    ["leaderboard", "run", "--out", "o"],
    ["listwise", "test", "--reranker", "r", "--task", "t", "--out", "o"],
    ["listwise", "train", "--model", "m", "--data", "d", "--out", "o"],
]


@pytest.mark.parametrize("argv", LONG_VERBS, ids=lambda argv: " ".join(argv[:2]))
def test_every_long_verb_takes_no_progress_and_defaults_to_on(argv):
    parser = build_parser()
    assert parser.parse_args(argv).progress is True
    assert parser.parse_args([*argv, "--no-progress"]).progress is False


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_lines_a_terminal_gets_a_bar_and_no_progress_gets_nothing(
    second_per_reading_clock,
):
    # A rate (and so an eta) is shown only over measurable time: one second per clock reading.
    log = io.StringIO()
    bar = progress(total=40, desc="encode", unit="text", file=log, interval=3600)
    assert isinstance(bar, LineProgress)
    for _ in range(40):
        bar.update(1)
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    # One line each 10 % (and no repeat of the last one at close).
    assert [line.split(" [")[0] for line in lines] == [
        f"encode: {n}/40 ({n * 100 // 40}%)" for n in range(4, 41, 4)
    ]
    assert all("eta " in line for line in lines[:-1])

    terminal = _Terminal()
    bar = progress(total=3, desc="encode", file=terminal)
    assert not isinstance(bar, LineProgress)  # tqdm
    bar.update(3)
    bar.close()
    assert "\r" in terminal.getvalue()

    quiet = io.StringIO()
    for stream in (quiet, _Terminal()):
        bar = progress(total=3, desc="encode", file=stream, disable=True, interval=0)
        bar.update(3)
        bar.close()
        assert stream.getvalue() == ""


def test_the_eta_is_measured_from_the_first_item_not_the_set_up(monkeypatch):
    import hf_posbias.progress as module

    clock = iter([0.0, 100.0, 101.0, 102.0, 102.0])  # start, 3 updates, close
    monkeypatch.setattr(module.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = LineProgress(total=10, desc="steps", file=out, interval=0, every_percent=0)
    for _ in range(3):
        bar.update(1)
    # 100 s of set-up, then 1 s per step: 7 steps left → 7 s, not 7 × 34 s.
    assert out.getvalue().splitlines()[-1].endswith("[1 it/s, eta 7s]")


def test_a_count_that_arrives_whole_at_once_shows_no_rate(monkeypatch):
    import hf_posbias.progress as module

    # Opened after the work was done (mteb scores every query in one call): the whole count
    # arrives 6 µs after the start, and a rate over that would read 1e8 queries a second.
    clock = iter([0.0, 6e-6, 6e-6])  # start, one update, close
    monkeypatch.setattr(module.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = LineProgress(total=631, desc="queries scored", file=out, unit="query", interval=0)
    bar.update(631)
    bar.close()
    assert out.getvalue().splitlines() == ["queries scored: 631/631 (100%) [0s]"]
