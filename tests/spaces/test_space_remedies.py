"""The Space's remedy control, in-process: the remedy's curve beside the plain one, bad combos."""

from __future__ import annotations

import json
import shutil

import pytest

from hf_posbias.errors import PosbiasError


@pytest.fixture
def tiny_space(space_app, monkeypatch, tmp_path, tiny_sentence_transformer):
    root = tmp_path / "ckpts"
    shutil.copytree(tiny_sentence_transformer, root / "tiny")
    monkeypatch.setenv("POSBIAS_SPACE_CHECKPOINTS", str(root))
    return space_app


def test_a_remedy_curve_is_drawn_and_tabled_beside_the_plain_one(tiny_space):
    app = tiny_space
    example = app.EXAMPLES[1]
    args = (["local:tiny"], example["query"], example["document"], example["evidence"])
    result = app.compute(*args, remedy=app.remedy_settings("firstp", 24, 12))
    assert list(result.curves) == ["local:tiny", "local:tiny +firstp"]
    firstp = result.curves["local:tiny +firstp"].cosines
    # Every variant's first passage is the document's opening once the evidence moves past it.
    assert max(firstp[2:]) - min(firstp[2:]) < 1e-6 and firstp[0] != pytest.approx(firstp[-1])
    assert any("+firstp: 10 of 10 variants are not read to their end" in n for n in result.notes)
    payload = json.loads(app.curve_payload(result))
    assert payload["remedy"]["remedy"] == "firstp" and payload["remedy"]["passage_tokens"] == 24
    assert set(payload["evidence_moving"]) == {"local:tiny", "local:tiny +firstp"}
    rows = app.summary_rows(result)
    assert [r[0] for r in rows] == ["local:tiny", "local:tiny +firstp"]
    assert len(app.evidence_figure(result, 3).axes[0].lines) >= 2
    assert list(result.profiles) == ["local:tiny"]  # the segment profile is the plain model's
    plain = app.compute(*args, remedy=app.remedy_settings("none"))
    assert (
        list(plain.curves) == ["local:tiny"]
        and json.loads(app.curve_payload(plain))["remedy"] is None
    )


@pytest.mark.parametrize(
    ("numbers", "message"),
    [
        ((2, 1, 4), "passage_tokens 2 leaves no room for text"),
        ((100_000, 8, 4), "above the model's limit"),
        ((16, 20, 4), "stride must be at most passage_tokens (16), got 20"),
        ((16, 0, 4), "stride must be >= 1, got 0"),
    ],
)
def test_bad_remedy_numbers_are_one_line_in_the_ui(tiny_space, numbers, message):
    app = tiny_space
    example = app.EXAMPLES[0]
    with pytest.raises(PosbiasError) as err:
        app.compute(
            ["local:tiny"],
            example["query"],
            example["document"],
            example["evidence"],
            remedy=app.remedy_settings("maxp", *numbers),
        )
    line = app.error_message(err.value, "evidence moving")
    assert message in line and "\n" not in line and not line.startswith("internal error")
