"""One judge abstraction, two prompts: the audit's yes/no and Z25's 0–4 relevance grade."""

from __future__ import annotations

from hf_posbias.errors import BackendError
from hf_posbias.verification import audit
from hf_posbias.verification.judge import (
    RELEVANCE_0_4,
    SEGMENT_AUDIT,
    judge_pairs,
    parse_relevance_score,
)


class Replies:
    """Hands out fixed replies in order; records what it was asked."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.asked = []

    def complete_many(self, batch, *, seeds=None, json_schema=None, max_tokens=None, **_):
        self.asked.append((len(batch), json_schema, max_tokens, list(seeds)))
        return [self.replies.pop(0) for _ in batch]


def test_relevance_grades_outside_0_to_4_are_none() -> None:
    assert [parse_relevance_score(t) for t in ('{"score": 4}', '{"score": -1}', "5", "")] == [
        4,
        None,
        None,
        None,
    ]
    assert parse_relevance_score('{"score": 2.5}') is None
    assert parse_relevance_score('{"grade": 3}') is None  # JSON without the field


def test_judge_pairs_counts_unparsed_and_failed_replies() -> None:
    backend = Replies(['{"score": 3}', "banana", BackendError("refused"), '{"score": 9}'])
    verdicts = judge_pairs(backend, RELEVANCE_0_4, [("q", "p")] * 4, batch_size=2, progress=False)
    assert verdicts.values == [3, None, None, None]
    assert (verdicts.unparsed, verdicts.failed) == (2, 1)
    assert [a[0] for a in backend.asked] == [2, 2]
    assert all(a[1] is RELEVANCE_0_4.schema and a[2] == 12 for a in backend.asked)


def test_both_prompts_share_the_seeding_and_the_audit_keeps_its_seeds() -> None:
    backend = Replies(['{"answer": "yes"}', "no"])
    verdicts = judge_pairs(backend, SEGMENT_AUDIT, [("q", "a"), ("q", "b")], progress=False)
    assert verdicts.values == [True, False]
    from hf_posbias.generation.base import stable_seed

    # the audit's request seeds are unchanged by the refactor: stable_seed("audit", seed, i)
    assert backend.asked[0][3] == [stable_seed("audit", 42, 0), stable_seed("audit", 42, 1)]
    assert audit.AUDIT_SCHEMA is SEGMENT_AUDIT.schema
    assert audit.audit_messages("q", "s") == SEGMENT_AUDIT.messages("q", "s")
