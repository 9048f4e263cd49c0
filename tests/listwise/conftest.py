"""Fixtures of the listwise tests: a tiny BEIR task and a tiny causal LM with a bad tokenizer
(``tiny_llm``, the good one, is in tests/conftest.py: the Space tests use it too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TOPICS = [
    "apple", "banana", "cherry", "dolphin", "eagle", "falcon", "giraffe", "harbor", "island",
    "jungle", "kettle", "lantern", "meadow", "nebula", "orchid", "pepper", "quartz", "river",
    "saddle", "tunnel", "umbrella", "violin", "walnut", "yacht", "zebra", "anchor", "basket",
    "candle", "desert", "engine",
]  # fmt: skip


def write_beir(folder: Path, n_docs: int = 30, n_queries: int = 8) -> Path:
    """A BEIR folder: one document per topic, queries ``what is a <topic>`` with test and train
    qrels (even queries test, odd train)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w") as handle:
        for i, topic in enumerate(TOPICS[:n_docs]):
            text = (
                f"A {topic} is the subject of this note. People study the {topic} closely. "
                f"Another remark mentions {TOPICS[(i + 1) % n_docs]} in passing."
            )
            handle.write(json.dumps({"_id": f"d{i:02d}", "title": topic, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w") as handle:
        for i in range(n_queries):
            handle.write(json.dumps({"_id": f"q{i}", "text": f"what is a {TOPICS[i]}"}) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    for split, parity in (("test", 0), ("train", 1)):
        lines = ["query-id\tcorpus-id\tscore"]
        lines += [f"q{i}\td{i:02d}\t1" for i in range(n_queries) if i % 2 == parity]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def beir_task(tmp_path: Path) -> Path:
    """A fresh tiny BEIR folder (30 documents, 4 test and 4 train queries)."""
    return write_beir(tmp_path / "beir")


@pytest.fixture(scope="session")
def shared_beir_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same tiny BEIR folder, built once per session (for module- and session-scoped
    fixtures; tests that write into the task use ``beir_task``)."""
    return write_beir(tmp_path_factory.mktemp("shared-beir") / "beir")


@pytest.fixture(scope="session")
def merged_identifier_llm(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny Llama whose BPE tokenizer (no punctuation split) merges ``[A``, ``[B`` … into single
    tokens, so the letter after ``[`` is not a token of its own."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from hf_posbias.trainer_base.shapes import tiny_config

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.BPEDecoder()
    text = [" ".join(f"[{c}" for c in "ABCDEFGHIJKLMNOPQRST") + " the passage query"] * 50
    alphabet = list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789[]>.,:?'- ")
    tok.train_from_iterator(
        text, BpeTrainer(vocab_size=300, special_tokens=["<eos>"], initial_alphabet=alphabet)
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<eos>", unk_token="<eos>", pad_token="<eos>"
    )
    out = tmp_path_factory.mktemp("merged-identifiers")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(tiny_config("llama", vocab_size=len(tokenizer)))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


@pytest.fixture(scope="session")
def train_set(tmp_path_factory: pytest.TempPathFactory, shared_beir_task: Path) -> Path:
    """``posbias listwise build-train`` over the tiny BEIR task's train split (k = 8)."""
    from hf_posbias.cli import main

    root = tmp_path_factory.mktemp("lw-train")
    code = main(
        ["listwise", "build-train", "--task", str(shared_beir_task), "--split", "train"]
        + ["--k", "8", "--out", str(root / "train"), "--no-progress"]
    )
    assert code == 0
    return root / "train"


class SlotBiased:
    """A scoring reranker (``kind`` ``first`` unless told) whose score is a strong slot prior
    plus a small bonus for the given relevant documents: its plain ranking follows the input
    slots, a calibrated one follows relevance only. Counts its calls and windows."""

    window_size = 20

    def __init__(self, relevant, name="slot-biased", kind="first"):
        self.relevant, self.name, self.kind = set(relevant), name, kind
        self.calls = self.windows = 0

    def rank_windows(self, windows):
        from hf_posbias.rerankers.records import WindowRanking, order_by_score

        self.calls += 1
        self.windows += len(windows)
        out = []
        for _, passages in windows:
            scores = [
                10.0 - 2.0 * i + (1.0 if p.doc_id in self.relevant else 0.0)
                for i, p in enumerate(passages)
            ]
            out.append(WindowRanking(order_by_score(scores, [p.doc_id for p in passages]), scores))
        return out

    def describe(self):
        return {"name": self.name, "kind": self.kind}


@pytest.fixture
def slot_biased() -> type:
    """The :class:`SlotBiased` test reranker class."""
    return SlotBiased


@pytest.fixture(scope="session")
def make_beir():
    """:func:`write_beir`, for tests that need another tiny BEIR folder of their own size."""
    return write_beir


@pytest.fixture(scope="session")
def tiny_listt5(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random ListT5 checkpoint saved as ListT5's FiDT5 class saves it."""
    from hf_posbias.testing import build_tiny_listt5

    return build_tiny_listt5(tmp_path_factory.mktemp("tiny-listt5"))
