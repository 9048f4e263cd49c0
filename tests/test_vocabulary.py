"""One vocabulary: the paired test is ``--method`` and its resamples ``--n-resamples`` in every
verb (the Python keywords ``method=`` and ``n_resamples=`` of the statistics); the former
spellings still work and warn."""

from __future__ import annotations

import typing

import pytest

from hf_posbias.cli import build_parser
from hf_posbias.statistics import PAIRED_TESTS

PAIRED_VERBS = [
    ["compare", "a", "b"],
    ["listwise", "compare-tests", "a", "b"],
    ["listwise", "shuffle-eval", "--task", "t", "--reranker", "r", "--out", "o"],
    ["listwise", "reranker-remedies", "--task", "t", "--reranker", "r", "--out", "o"],
]


def _parse(argv):
    return build_parser().parse_args(argv)


@pytest.mark.parametrize("verb", PAIRED_VERBS, ids=lambda v: " ".join(v[:2]))
def test_every_paired_test_takes_method_and_n_resamples(verb):
    for method in PAIRED_TESTS:
        args = _parse([*verb, "--method", method, "--n-resamples", "7"])
        assert args.method == method
        assert 7 in (getattr(args, "n_resamples", None), getattr(args, "resamples", None))


@pytest.mark.parametrize("verb", PAIRED_VERBS, ids=lambda v: " ".join(v[:2]))
def test_the_method_choices_are_read_from_one_place(verb, capsys):
    with pytest.raises(SystemExit):
        _parse([*verb, "--method", "nonsense"])
    err = capsys.readouterr().err
    assert all(method in err for method in PAIRED_TESTS)


def test_the_statistics_accept_exactly_the_listed_tests():
    from hf_posbias.statistics.uncertainty import Method

    assert set(typing.get_args(Method)) == set(PAIRED_TESTS)


def test_each_verb_keeps_its_default():
    assert _parse(["compare", "a", "b"]).method == "bootstrap"
    assert _parse(["listwise", "compare-tests", "a", "b"]).method == "randomization"
