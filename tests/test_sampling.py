"""Controlled sampling: exact cell counts, auto budget, determinism, errors that name the cell."""

from __future__ import annotations

import random
import re

import pytest

from hf_posbias.errors import BudgetError, InputError, PosbiasError
from hf_posbias.positions import POSITIONS
from hf_posbias.sampling.configs import (
    BEGIN,
    END,
    MIDDLE,
    PAPER_CONFIG_NAMES,
    PAPER_CONFIGS,
    UNIFORM,
    PositionConfig,
    config_label,
)
from hf_posbias.sampling.draw import TRAINING_COLUMNS, check_sampling_options, sample_training_set
from hf_posbias.shards import write_parquet

# Retained rows per (bin, position); the 1024-2048 bin has no retained middle row at all.
CELLS = {
    "256-512": {"begin": 10, "middle": 7, "end": 9},
    "512-1024": {"begin": 12, "middle": 8, "end": 20},
    "1024-2048": {"begin": 5, "middle": 0, "end": 4},
}


def make_pool(not_retained_per_cell: int = 2) -> list[dict]:
    rows = []
    for length_bin, cell in CELLS.items():
        for pos, n in cell.items():
            for i in range(n + not_retained_per_cell):
                doc = f"{length_bin}-{pos}-{i:03d}"
                rows.append(
                    {
                        "candidate_id": f"{doc}::{pos}",
                        "doc_id": doc,
                        "title": doc,
                        "query": f"query about {doc}",
                        "positive": f"text of {doc}",
                        "segments": ["a", "b", "c"],
                        "length_bin": length_bin,
                        "target_position": pos,
                        "margin": 0.3 + i / 100 if i < n else -0.1,
                        "retained": i < n,
                    }
                )
    return rows


def by_cell(rows: list[dict]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["length_bin"], row["target_position"])
        counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("B", {"begin": 7, "middle": 0, "end": 0}),
        ("middle", {"begin": 0, "middle": 7, "end": 0}),
        ("E", {"begin": 0, "middle": 0, "end": 7}),
        ("uniform", {"begin": 2, "middle": 2, "end": 2}),
        ("50:25:25", {"begin": 3, "middle": 1, "end": 1}),
    ],
)
def test_exact_counts_per_cell_with_auto_budget(spec: str, expected: dict[str, int]) -> None:
    pool = make_pool()
    rows, report = sample_training_set(pool, spec, seed=1)
    # Budget = smallest cell over the usable bins (256-512 middle), whatever the ratio.
    assert report.budget == 7
    assert "(256-512, middle)" in report.budget_source
    assert report.bins_used == ["256-512", "512-1024"]
    counts = by_cell(rows)
    for length_bin in report.bins_used:
        for pos in POSITIONS:
            assert counts.get((length_bin, pos), 0) == expected[pos]
            assert report.counts[length_bin][pos] == expected[pos]
    assert report.total == len(rows) == 2 * sum(expected.values())
    assert all(list(r) == list(TRAINING_COLUMNS) for r in rows)
    assert all(r["margin"] >= 0.3 for r in rows)  # only retained rows are drawn
    assert report.not_retained_skipped == 2 * 9


def test_excluded_bin_is_reported_not_silently_dropped() -> None:
    rows, report = sample_training_set(make_pool(), "uniform")
    assert "1024-2048" in report.bins_excluded
    assert "(1024-2048, middle) has 0 retained" in report.bins_excluded["1024-2048"]
    assert not any(r["length_bin"] == "1024-2048" for r in rows)
    assert any("1024-2048 excluded" in line for line in report.summary_lines())
    # A stricter minimum cell excludes 256-512 too; the budget moves to the next smallest cell.
    rows, report = sample_training_set(make_pool(), "begin", min_cell=8)
    assert report.bins_used == ["512-1024"]
    assert "(256-512, middle) has 7" in report.bins_excluded["256-512"]
    assert report.budget == 8 and len(rows) == 8


def test_budget_error_names_the_cell() -> None:
    with pytest.raises(
        BudgetError,
        match=r"cell \(256-512, middle\) has 7 retained examples, "
        r"budget needs 9",
    ):
        sample_training_set(make_pool(), "middle", budget=9)
    # Uniform 24 needs 8 per position: the same cell is the first that cannot meet it.
    with pytest.raises(BudgetError, match=r"\(256-512, middle\) has 7 .* needs 8"):
        sample_training_set(make_pool(), "uniform", budget=24)
    # A budget the cells can meet is honoured exactly.
    rows, report = sample_training_set(make_pool(), "uniform", budget=21)
    assert report.budget_source == "given" and len(rows) == 2 * 21


def test_determinism_byte_identical_parquet_and_seed_sensitivity(tmp_path) -> None:
    pool = make_pool()
    shuffled = pool[:]
    random.Random(3).shuffle(shuffled)
    rows_a, _ = sample_training_set(pool, "uniform", seed=42)
    rows_b, _ = sample_training_set(shuffled, "uniform", seed=42)  # input order must not matter
    write_parquet(rows_a, tmp_path / "a.parquet")
    write_parquet(rows_b, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    keys = [(r["length_bin"], r["target_position"], r["candidate_id"]) for r in rows_a]
    assert keys == sorted(
        keys, key=lambda k: (int(k[0].split("-")[0]), POSITIONS.index(k[1]), k[2])
    )

    rows_c, _ = sample_training_set(pool, "uniform", seed=7)
    assert {r["candidate_id"] for r in rows_c} != {r["candidate_id"] for r in rows_a}
    assert by_cell(rows_c) == by_cell(rows_a)


def test_uniform_draws_are_prefixes_of_the_concentrated_draws() -> None:
    # One seeded order per cell: the uniform set's begin rows are among the begin set's rows.
    uniform, _ = sample_training_set(make_pool(), "uniform", seed=5)
    begin, _ = sample_training_set(make_pool(), "begin", seed=5)
    u_begin = {r["candidate_id"] for r in uniform if r["target_position"] == "begin"}
    assert u_begin and u_begin <= {r["candidate_id"] for r in begin}


def test_paper_budget_arithmetic() -> None:
    assert PositionConfig.parse("U").counts(8189) == {"begin": 2729, "middle": 2729, "end": 2729}
    assert PositionConfig.parse("33:33:33").counts(8189)["middle"] == 2729
    assert 5 * sum(PositionConfig.parse("B").counts(8189).values()) == 40945
    assert 5 * sum(PositionConfig.parse("uniform").counts(8189).values()) == 40935


def test_position_config_names() -> None:
    assert PositionConfig.parse("b").name == "begin"
    assert PositionConfig.parse(" Uniform ").name == "uniform"
    assert PositionConfig.parse("0:100:0").name == "middle"
    assert PositionConfig.parse("1:1:1").name == "uniform"
    spec = PositionConfig.parse("50:25:25")
    assert (spec.name, spec.distribution) == ("r50-25-25", "50:25:25")
    assert PositionConfig.parse("0.5:0.3:0.2").name == "r0p5-0p3-0p2"


def test_the_papers_four_and_every_spelling_of_a_configuration() -> None:
    assert PAPER_CONFIGS == (BEGIN, MIDDLE, END, UNIFORM)
    assert PAPER_CONFIG_NAMES == ("begin", "middle", "end", "uniform")
    assert [c.label for c in PAPER_CONFIGS] == ["100:0:0", "0:100:0", "0:0:100", "33:33:33"]
    # The canonical name parses back to the same configuration (what training looks up).
    for text in ("50:25:25", "0.5:0.3:0.2", "3:0:1"):
        config = PositionConfig.parse(text)
        assert PositionConfig.parse(config.name) == config
        assert PositionConfig.parse(config.label) == config
    for config in PAPER_CONFIGS:
        assert PositionConfig.parse(config.name) is config
        assert PositionConfig.parse(config.label) is config
        assert PositionConfig.parse(config) is config
    assert config_label("r50-25-25") == "50:25:25" and config_label("ips") == ""
    # A uniform set reports the label the paper writes, not its internal weights.
    _, report = sample_training_set(make_pool(), UNIFORM)
    assert report.distribution == "33:33:33"


@pytest.mark.parametrize(
    ("budget", "min_cell", "message"),
    [
        (0, 1, "budget must be >= 1, got 0"),
        (2.5, 1, "budget must be a whole number, got 2.5"),
        (True, 1, "budget must be a whole number, got True"),
        (None, 0, "min_cell must be >= 1, got 0"),
    ],
)
def test_sampling_options_are_checked_before_any_pool_is_read(budget, min_cell, message) -> None:
    with pytest.raises(InputError, match=f"^{re.escape(message)}$"):
        check_sampling_options(budget, min_cell)


@pytest.mark.parametrize("text", ["", "1:2", "a:b:c", "0:0:0", "-1:1:1", "sideways", "1:nan:1"])
def test_bad_ratio_specs(text: str) -> None:
    with pytest.raises(PosbiasError):
        PositionConfig.parse(text)


def test_bad_inputs() -> None:
    with pytest.raises(InputError, match="empty"):
        sample_training_set([], "uniform")
    pool = make_pool()
    del pool[0]["margin"]
    with pytest.raises(InputError, match="margin"):
        sample_training_set(pool, "uniform")
    with pytest.raises(InputError, match="budget"):
        sample_training_set(make_pool(), "uniform", budget=0)
    nothing = [dict(r, retained=False) for r in make_pool()]
    with pytest.raises(InputError, match="no length bin"):
        sample_training_set(nothing, "uniform")


def test_tiny_pool_still_gives_every_weighted_position_an_example() -> None:
    # Only two retained rows in the scarcest cell: floor(2 / 3) would leave uniform empty.
    pool = [
        r
        for r in make_pool()
        if r["length_bin"] == "256-512"
        and (r["target_position"] != "middle" or r["candidate_id"] < "256-512-middle-002")
    ]
    rows, report = sample_training_set(pool, PositionConfig.parse("uniform"), seed=1)
    assert report.budget == 2
    assert by_cell(rows) == {("256-512", p): 1 for p in POSITIONS}
    begin, _ = sample_training_set(pool, PositionConfig.parse("begin"), seed=1)
    assert by_cell(begin) == {("256-512", "begin"): 2}


def test_a_pool_read_lazily_draws_the_rows_a_list_draws(tmp_path) -> None:
    """The build samples from its scored pool read a row group at a time (two passes over
    light columns, then over the chosen rows): the same rows and report as from a list."""
    from hf_posbias.rows.arrow import ParquetRows
    from hf_posbias.shards import ParquetRowWriter

    pool = make_pool()
    random.Random(3).shuffle(pool)
    with ParquetRowWriter(tmp_path / "pool.parquet", row_group_rows=7) as out:
        out.write(pool)
    lazy = ParquetRows([tmp_path / "pool.parquet"])
    for spec in ("uniform", "begin", "50:25:25"):
        assert sample_training_set(lazy, spec, seed=5) == sample_training_set(pool, spec, seed=5)
