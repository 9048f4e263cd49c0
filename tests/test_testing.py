"""hf_posbias.testing: the tiny models every test builds must be the same in every session."""

from __future__ import annotations

from hf_posbias.testing import build_bpe_tokenizer, build_wordpiece_tokenizer


def test_tiny_tokenizers_are_identical_on_every_build() -> None:
    # tokenizers' WordPieceTrainer broke merge ties in hash order (382 or 383 tokens from run to
    # run), so a "seeded" tiny model encoded the same text differently in each session.
    for build in (build_wordpiece_tokenizer, build_bpe_tokenizer):
        first, second = build(), build()
        assert first.backend_tokenizer.to_str() == second.backend_tokenizer.to_str()


def test_wordpiece_tokenizer_covers_unseen_words_with_pieces() -> None:
    tok = build_wordpiece_tokenizer(extra_text="Myanmar lies in Southeast Asia.")
    assert tok.tokenize("Myanmar") == ["myanmar"]
    pieces = tok.tokenize("Mandalay")
    # An unseen word falls back to pieces, never to [UNK], and in fewer pieces than characters.
    assert "[UNK]" not in pieces and len(pieces) < len("Mandalay")
    assert pieces[0] == "m" and all(p.startswith("##") for p in pieces[1:])
    assert len(tok) == 512


def test_the_run_time_package_never_imports_the_testing_module() -> None:
    """testing.py builds on the package (``tiny_config`` lives in training.shapes), not the
    other way round; docstring examples may use it, code may not."""
    import ast
    from pathlib import Path

    import hf_posbias

    root = Path(hf_posbias.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "testing.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "hf_posbias.testing" for n in names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []
