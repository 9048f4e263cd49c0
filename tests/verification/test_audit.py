"""YHP26's LLM segment audit: per-stratum agreement, seeded draws, failures counted, the judge's
reply decoded under its JSON schema (as query generation is) or free-form."""

from __future__ import annotations

import json

import pytest
from verification_rows import row

from hf_posbias.errors import InputError
from hf_posbias.rows.arrow import TableRows
from hf_posbias.verification.audit import AUDIT_SCHEMA, AuditReport, audit_segments


class SubstringJudge:
    """A ChatBackend-protocol judge: 'yes' iff the question text occurs in the passage."""

    def __init__(self) -> None:
        self.requests: list[list[dict[str, str]]] = []
        self.schemas: list[dict | None] = []

    def complete_many(
        self, batch, *, temperature=1.0, top_p=1.0, max_tokens=256, seeds=None, json_schema=None
    ):
        assert seeds is not None and len(seeds) == len(batch)
        self.schemas.append(json_schema)
        out: list[str | Exception] = []
        for messages in batch:
            self.requests.append(messages)
            user = messages[-1]["content"]
            passage = user.split("Passage:\n", 1)[1].split("\n\nQuestion: ", 1)[0]
            question = user.split("\n\nQuestion: ", 1)[1].split("\n\n", 1)[0]
            if "garble" in question:
                out.append("I am not sure.")
            elif "broken" in question and "zzz" in passage:
                out.append(RuntimeError("HTTP 500"))
            elif json_schema is not None:
                out.append(json.dumps({"answer": "yes" if question in passage else "no"}))
            else:
                out.append("Yes." if question in passage else "No")
        return out


@pytest.mark.parametrize("constrained", [True, False])
def test_audit_segments_counts_per_stratum(constrained: bool) -> None:
    rows = [
        # ≥0.3: exclusive (target yes, both distractors no)
        dict(row("a::begin", "begin", ["owls nest", "fish", "lions"], "owls nest"), margin=0.5),
        # ≥0.3: target yes but a distractor also yes → not exclusive
        dict(row("b::end", "end", ["fish swim", "owls", "fish swim"], "fish swim"), margin=0.4),
        # failed: target judged no, one distractor yes
        dict(row("c::middle", "middle", ["cats", "dogs", "birds"], "cats"), margin=-0.2),
        # [0,0.1): every reply unparseable
        dict(row("d::begin", "begin", ["x", "y", "z"], "garble"), margin=0.05),
        # [0.1,0.2): one failed call (on the middle segment) → incomplete, excluded from Exclusive
        dict(row("e::begin", "begin", ["broken", "zzz", "q"], "broken"), margin=0.15),
    ]
    judge = SubstringJudge()
    report = audit_segments(
        rows, judge, per_stratum=10, seed=1, progress=False, batch_size=4, constrained=constrained
    )
    assert isinstance(report, AuditReport)
    assert all(schema == (AUDIT_SCHEMA if constrained else None) for schema in judge.schemas)
    # Plain strings from a backend that does not say how it decoded count as free-form.
    assert report.decodings == {"free_form": 14}
    assert len(judge.requests) == 15
    # The judge never learns which segment is the target.
    assert not any("target" in m[-1]["content"].lower() for m in judge.requests)
    s = {x.stratum: x for x in report.strata}
    top = s[">=0.3"]
    assert (top.audited, top.target_yes, top.distractor_no, top.exclusive) == (2, 100.0, 75.0, 50.0)
    failed = s["failed"]
    assert (failed.target_yes, failed.distractor_no, failed.exclusive) == (0.0, 50.0, 0.0)
    low = s["[0,0.1)"]
    assert (low.unparsed_answers, low.target_yes, low.exclusive) == (3, None, None)
    mid = s["[0.1,0.2)"]
    assert (mid.failed_calls, mid.incomplete_candidates, mid.target_yes) == (1, 1, 100.0)
    assert mid.exclusive is None and mid.distractor_no == 100.0
    assert s["[0.2,0.3)"].audited == 0
    assert "| >=0.3 | 2 | 100.0 | 75.0 | 50.0 |" in report.to_markdown()


def test_audit_sampling_is_seeded_and_capped() -> None:
    rows = [
        dict(row(f"d{i}::begin", "begin", [f"w{i}", "a", "b"], f"w{i}"), margin=0.5)
        for i in range(20)
    ]
    first = SubstringJudge()
    audit_segments(rows, first, per_stratum=5, seed=3, progress=False)
    second = SubstringJudge()
    audit_segments(list(reversed(rows)), second, per_stratum=5, seed=3, progress=False)
    assert len(first.requests) == 15 and first.requests == second.requests
    third = SubstringJudge()
    audit_segments(rows, third, per_stratum=5, seed=4, progress=False)
    assert third.requests != first.requests
    with pytest.raises(InputError, match="no margin"):
        audit_segments([row("x::begin", "begin", ["a", "b", "c"])], first, progress=False)


class CountingRows(TableRows):
    """A lazy pool as the verify stage hands it (arrow rows whose columns can be read alone)
    that counts the whole rows read and refuses to be read whole."""

    whole_rows_read = 0

    def __iter__(self):
        raise AssertionError("the audit reads the pool's light columns, not every whole row")

    def __getitem__(self, i):
        self.whole_rows_read += 1
        return super().__getitem__(i)


def test_the_audit_reads_only_the_drawn_rows_of_a_lazy_pool() -> None:
    import pyarrow as pa

    rows = [
        dict(row(f"d{i}::begin", "begin", [f"w{i}", "a", "b"], f"w{i}"), margin=m)
        for i in range(30)
        for m in (0.5, -0.1)
    ]
    plain, lazy = SubstringJudge(), SubstringJudge()
    expected = audit_segments(rows, plain, per_stratum=4, seed=3, progress=False)
    pool = CountingRows(pa.Table.from_pylist(rows))
    report = audit_segments(pool, lazy, per_stratum=4, seed=3, progress=False)
    assert report.to_dict() == expected.to_dict() and lazy.requests == plain.requests
    assert pool.whole_rows_read == 8  # 4 drawn in each of the two strata that have rows
    no_margin = CountingRows(pa.Table.from_pylist([row("x::begin", "begin", ["a", "b", "c"])]))
    with pytest.raises(InputError, match="no margin column"):
        audit_segments(no_margin, lazy, progress=False)


def _tiny_judge(tmp_path, family: str = "llama"):
    from hf_posbias.generation.backends import TransformersChatBackend
    from hf_posbias.testing import build_tiny_checkpoint

    path = build_tiny_checkpoint(family, tmp_path / family, head="causal-lm", max_positions=2048)
    return TransformersChatBackend(path, device="cpu")


def test_a_random_lm_judge_answers_every_segment_under_the_schema(tmp_path) -> None:
    """Even random weights give a parseable verdict for every segment when the reply is decoded
    under AUDIT_SCHEMA; free-form, the replies are counted as free-form."""
    import torch

    torch.set_num_threads(1)
    rows = [
        dict(row(f"d{i}::begin", "begin", [f"w{i} owl", "fish", "lion"], f"w{i}"), margin=m)
        for i, m in enumerate((0.5, 0.4, -0.2, 0.05))
    ]
    judge = _tiny_judge(tmp_path)
    report = audit_segments(rows, judge, per_stratum=5, seed=0, progress=False, temperature=1.0)
    assert report.decodings == {"json_schema": 12}
    assert sum(s.unparsed_answers + s.failed_calls for s in report.strata) == 0
    assert sum(s.audited for s in report.strata) == 4
    assert all(s.target_yes is not None for s in report.strata if s.audited)

    free = audit_segments(
        rows, judge, per_stratum=5, seed=0, progress=False, temperature=1.0, constrained=False
    )
    assert free.decodings == {"free_form": 12}
