"""load_reranker leaves its caller's options as they were."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.rerankers.loading import load_reranker
from hf_posbias.rerankers.options import RerankerOptions


def test_overrides_do_not_write_into_the_callers_options():
    options = RerankerOptions(window=20)
    load_reranker("bm25", options, corpus_texts=["a cat", "a dog"], window=5)
    assert options.window == 20
    with pytest.raises(TypeError):
        load_reranker("bm25", options, corpus_texts=["a"], no_such_option=1)
    with pytest.raises(InputError, match="^window must be >= 1"):
        load_reranker("bm25", options, corpus_texts=["a"], window=0)
