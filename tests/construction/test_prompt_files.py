"""Your own prompts, verbatim: every LLM stage takes a Jinja prompt file, checked before any call;
Zeng et al.'s two filtering stages take their own panels and the Stage-1 judge its own model;
the 2025 "Myopic Trap" tagging gives a straddling chunk's questions both tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_construction_build import ScriptedLLM, _corpus, _settings

from hf_posbias.cli import main
from hf_posbias.construction import build as build_module
from hf_posbias.construction.build import build_benchmark

FAQ = "MY FAQ PROMPT ({{ n }} at most)\n{{ summary }}\n<chunk>\n{{ chunk }}\n</chunk>\n"
JUDGE = 'Passage:\n{{ segment }}\n\nQuestion: {{ query }}\n\nMY JUDGE: grade 0-4 as {"score": n}'


@pytest.fixture
def recording(monkeypatch):
    llm, models = ScriptedLLM(), []
    prompts: list[str] = []
    original = llm.complete_many

    def complete_many(batch, **kw):
        prompts.extend(m[-1]["content"] for m in batch)
        return original(batch, **kw)

    llm.complete_many = complete_many

    def backend(self, model):
        models.append(model)
        return llm

    monkeypatch.setattr(build_module._Build, "backend", backend)
    return prompts, models


def test_builder_prompts_panels_and_judge_model_are_the_users(
    tmp_path: Path, recording, tiny_sentence_transformer: str
) -> None:
    prompts, models = recording
    (tmp_path / "faq.j2").write_text(FAQ)
    (tmp_path / "judge.j2").write_text(JUDGE)
    corpus = _corpus(tmp_path / "corpus.jsonl")
    settings = _settings(
        tmp_path,
        corpus,
        embedder=tiny_sentence_transformer,
        faq_prompt_file=str(tmp_path / "faq.j2"),
        judge_prompt_file=str(tmp_path / "judge.j2"),
        judge_model="my-judge",
        stage2_rerankers="bi:" + tiny_sentence_transformer,
    )
    build_benchmark(settings)
    faq = [p for p in prompts if p.startswith("MY FAQ PROMPT (4 at most)\nLines of tokens.")]
    judged = [p for p in prompts if p.endswith('MY JUDGE: grade 0-4 as {"score": n}')]
    assert len(faq) == 20 and len(judged) > 0  # rendered verbatim, JSON braces as written
    assert "my-judge" in models  # the Stage-1 judge, apart from the generator
    stages = tmp_path / "task" / "stages"
    stage1 = json.loads((stages / "06-stage1-judge/manifest.json").read_text())["params"]
    assert "my-judge" in json.dumps(stage1["llm"])
    recall = json.loads((stages / "07-stage2-recall/manifest.json").read_text())["params"]
    assert "bm25" not in json.dumps(recall["panel"])  # Stage 2's own panel, not Stage 1's


def test_two_tag_variant_gives_straddling_chunks_both_tags(
    tmp_path: Path, recording, tiny_sentence_transformer: str
) -> None:
    from hf_posbias.rows.readers import read_parquet_rows

    corpus = _corpus(tmp_path / "corpus.jsonl")
    settings = _settings(tmp_path, corpus, embedder=tiny_sentence_transformer, tagging="two-tag")
    build_benchmark(settings)
    chunks = read_parquet_rows(tmp_path / "task" / "stages" / "03-chunks" / "chunks.parquet")
    straddling = [c for c in chunks if len(c["tags"]) > 1]
    assert straddling and all(len(c["tags"]) <= 3 for c in chunks)
    table = json.loads((tmp_path / "task" / "construction.json").read_text())
    faq = table[0]
    # One FAQ question per chunk (the scripted LLM), one row per tag of its chunk.
    assert faq["begin"] + faq["middle"] + faq["end"] == sum(len(c["tags"]) for c in chunks)


@pytest.mark.parametrize(
    ("flag", "text", "message"),
    [
        ("--faq-prompt-file", "{{ chunk }} {{ sumary }}", "unknown variable 'sumary' in the faq"),
        ("--judge-prompt-file", "{{ query }", "not a Jinja template"),
        ("--summary-prompt-file", None, "prompt file"),
    ],
)
def test_a_bad_prompt_file_is_one_line_before_any_call(tmp_path, capsys, flag, text, message):
    path = tmp_path / "p.j2"
    if text is not None:
        path.write_text(text)
    argv = [
        "benchmark",
        "from-corpus",
        "--corpus",
        "demo",
        "--out",
        str(tmp_path / "o"),
        flag,
        str(path),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "o").exists()


def test_generation_and_audit_prompt_files(tmp_path, capsys):
    from dataclasses import replace

    from hf_posbias.generation.llm import PROMPTS_FINGERPRINT, build_llm_generator
    from hf_posbias.generation.prompt_files import load_prompt_file
    from hf_posbias.verification.judge import SEGMENT_AUDIT

    stage1 = tmp_path / "stage1.j2"
    stage1.write_text("Doc {{ title }}: {{ document }}\nPick one of\n{{ personas }}\n{}")
    gen = build_llm_generator("openai", model="m", constrained=False, stage1_prompt=str(stage1))
    assert gen.stage1_prompt.format(title="T", document="D", personas="1. a") == (
        "Doc T: D\nPick one of\n1. a\n{}"
    )
    assert gen.params()["prompts"] != PROMPTS_FINGERPRINT
    audit = tmp_path / "audit.j2"
    audit.write_text("Does «{{ segment }}» answer «{{ query }}»? yes/no")
    judge = replace(SEGMENT_AUDIT, template=load_prompt_file(audit, "audit"))
    assert judge.messages("q?", "s.")[1]["content"] == "Does «s.» answer «q?»? yes/no"
    # Flags of the generator and of the audit: one line for an unknown variable.
    stage2 = tmp_path / "stage2.j2"
    stage2.write_text("{{ persona }} {{ target }}")
    argv = ["data", "build", "--corpus", "demo", "--out", str(tmp_path / "w"),
            "--generator", "openai", "--llm-model", "m",
            "--stage2-prompt-file", str(stage2)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown variable 'target' in the stage2 prompt" in err[0]
