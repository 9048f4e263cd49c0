"""Dataset cards of the pool and training sets: measured tables, stated parameters, round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from publish_rows import DELTA, load, make_info, make_pool, make_train_sets, split_card

from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS
from hf_posbias.publish.dataset_card import (
    DatasetCardInfo,
    bin_position_table,
    write_pool_repo,
    write_train_repo,
)
from hf_posbias.publish.repo import write_dataset_repo
from hf_posbias.verification.report import VerificationReport


def test_train_repo_round_trips_every_config(tmp_path: Path) -> None:
    pool = make_pool()
    sets = make_train_sets(pool)
    folder = write_train_repo(sets, tmp_path / "train", make_info())

    header, body = split_card(folder)
    assert [c["config_name"] for c in header["configs"]] == list(sets)
    defaults = [c["config_name"] for c in header["configs"] if c.get("default")]
    assert defaults == ["uniform"]
    assert header["license"] == "cc-by-sa-4.0"
    assert header["task_categories"] == ["text-retrieval"]
    assert "position-bias" in header["tags"]
    assert header["size_categories"] == ["n<1K"]
    # The Hub's dataset_info block states each config's measured size.
    sizes = {i["config_name"]: i["splits"][0]["num_examples"] for i in header["dataset_info"]}
    assert sizes == {config: len(rows) for config, rows in sets.items()}
    for config in sets:
        assert load(folder, config, tmp_path / "cache") == sets[config]
        assert (folder / "data" / config / "train-00000-of-00001.parquet").is_file()
    assert (folder / ".gitattributes").read_text().count("*.parquet filter=lfs") == 1

    # Measured numbers reach the card: the uniform set's 512-1024 row, counted independently.
    uniform = sets["uniform"]
    cell = [
        sum(1 for r in uniform if r["length_bin"] == "512-1024" and r["target_position"] == p)
        for p in POSITIONS
    ]
    assert f"| 512-1024 | {cell[0]} | {cell[1]} | {cell[2]} | {sum(cell)} |" in body
    n_middle = len(sets["middle"])
    assert f"| `middle` | 0:100:0 | {n_middle} | 0 | {n_middle} | 0 | 0.0:100.0:0.0 |" in body
    for fact in (
        "1234",
        "openai:gpt-4o-mini",
        "BAAI/bge-reranker-v2-m3",
        "| bm25 |  | share |",
        "| 577 |",
        "10,033",
        "parse_failures",
        "2605.26578",
        "Zeng",
        'load_dataset("posbias-test/demo-train", "end", split="train")',
        "length_bin",
    ):
        assert fact in body, fact
    assert "{{" not in body and "{%" not in body


def test_pool_repo_round_trip_and_filter_table(tmp_path: Path) -> None:
    pool = make_pool()
    folder = write_pool_repo(pool, tmp_path / "pool", make_info(budget=None))
    assert load(folder, "default", tmp_path / "cache") == pool

    header, body = split_card(folder)
    assert [(c["config_name"], c.get("default")) for c in header["configs"]] == [("default", True)]
    assert 'ds = load_dataset("posbias-test/demo-train", "default", split="train")' in body
    assert 'ds.filter(lambda r: r["margin"] >= 0.2)' in body
    n_retained = sum(r["retained"] for r in pool)
    assert f"| retained at δ = 0.3 | {n_retained} |" in body
    # The filter row at δ, counted here independently of the module.
    at_delta = [r for r in pool if r["margin"] >= DELTA]
    counts = [sum(r["target_position"] == p for r in at_delta) for p in POSITIONS]
    pct = f"{100 * len(at_delta) / len(pool):.2f}".rstrip("0").rstrip(".")
    assert (
        f"| m ≥ 0.3 | {len(at_delta)} | {pct} | {counts[0]} | {counts[1]} | {counts[2]} |" in body
    )
    failed = sum(r["margin"] < 0 for r in pool)
    assert f"| fails top-rank check (m < 0, removed) | {failed} |" in body
    assert "{{" not in body and "{%" not in body


def test_filter_table_and_bin_counts_exact() -> None:
    rows = [
        {"margin": -0.2, "target_position": "begin", "length_bin": "512-1024"},
        {"margin": 0.05, "target_position": "middle", "length_bin": "256-512"},
        {"margin": 0.3, "target_position": "end", "length_bin": "256-512"},
        {"margin": float("nan"), "target_position": "end", "length_bin": "256-512"},
    ]
    # The card's filtering table is the verification report's (YHP26 Table 6), computed once.
    table = VerificationReport.from_rows(rows, delta=0.3).filter_rows()
    assert table[0] == {"filter": "fails top-rank check (m < 0, removed)", "retained": 1, "%": 25.0}
    assert table[1]["retained"] == 1  # the NaN row is counted, not lost
    assert [r["filter"] for r in table[2:]] == ["m ≥ 0", "m ≥ 0.1", "m ≥ 0.2", "m ≥ 0.3"]
    assert table[2] == {
        "filter": "m ≥ 0",
        "retained": 2,
        "%": 50.0,
        "begin": 0,
        "middle": 1,
        "end": 1,
    }
    assert table[-1]["retained"] == 1 and table[-1]["end"] == 1
    counts = bin_position_table(rows)
    assert [r["length bin"] for r in counts] == ["256-512", "512-1024", "total"]
    assert counts[0] == {"length bin": "256-512", "begin": 0, "middle": 1, "end": 2, "total": 3}


def test_bad_inputs_are_refused(tmp_path: Path) -> None:
    pool = make_pool()
    sets = make_train_sets(pool)
    with pytest.raises(InputError, match="no rows"):
        write_train_repo({**sets, "end": []}, tmp_path / "t1", make_info())
    with pytest.raises(InputError, match="config name"):
        write_train_repo({"../up": sets["end"]}, tmp_path / "t2", make_info())
    with pytest.raises(InputError, match="retained"):
        # The pool was verified at δ = 0.3; a card claiming δ = 0.1 would state wrong numbers.
        write_pool_repo(pool, tmp_path / "p", make_info(delta=0.1))
    with pytest.raises(InputError, match="unknown field"):
        make_info(licence="typo")
    with pytest.raises(InputError, match="do not match"):
        write_dataset_repo(tmp_path / "r", {"a": [{"x": 1}]}, "---\nconfigs: []\n---\n")


def test_card_info_round_trips_through_json() -> None:
    info = make_info()
    again = DatasetCardInfo.from_dict(json.loads(json.dumps(info.to_dict())))
    assert again == info
    assert [m["normalization"] for m in again.panel.members] == ["sigmoid", "share"]
    with pytest.raises(InputError, match="members with names"):
        make_info(panel={"members": []})


def test_cards_state_the_seeds_and_cite_each_source_once(tmp_path: Path) -> None:
    pool = make_pool()
    info = make_info(generator={"name": "ict", "params": {"seed": 7}}, generation_seed=7)
    _, pool_body = split_card(write_pool_repo(pool, tmp_path / "pool", info))
    assert "| generation seed | 7 |" in pool_body
    assert "Sampling seed" not in pool_body
    _, train_body = split_card(write_train_repo(make_train_sets(pool), tmp_path / "t", info))
    assert "Sampling seed: 1234." in train_body and "Generation seed: 7." in train_body
    # One BibTeX entry per source (hf_posbias.citations): YHP26, Zeng et al. 2025, and ICT.
    for key in ("yu2026positionbias", "zeng2025positionbias", "lee-etal-2019-latent"):
        assert train_body.count("{" + key + ",") == 1, key


def test_train_card_states_each_configs_nominal_ratio(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    custom = {"r50-25-25": sets["uniform"], **sets}
    _, body = split_card(write_train_repo(custom, tmp_path / "train", make_info()))
    assert "| `r50-25-25` | 50:25:25 |" in body
    assert "| `uniform` | 33:33:33 |" in body and "| `begin` | 100:0:0 |" in body
